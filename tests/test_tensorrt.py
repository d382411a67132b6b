"""layoutkit.tensorrt against seed-systems.md §4 and an independent numpy model.

The model below (pad -> reshape -> transpose) is written from the format
descriptions in §4.3/§4.5 without using layoutkit; every §4.7 row is checked
against both the model and the library.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import tensorrt as trt

# --------------------------------------------------------------------------------------
# Independent reference model
# --------------------------------------------------------------------------------------

MAJOR = {"kCHW2": (2, 3), "kCHW4": (4, 3), "kCHW16": (16, 3), "kCHW32": (32, 3), "kCDHW32": (32, 4)}
MINOR = {"kHWC8": (8, 3), "kHWC16": (16, 3), "kDHWC8": (8, 4), "kHWC": (1, 3), "kDHWC": (1, 4)}
LINE = {"orin": 64, "xavier": 32}


def _pad_axis(x: np.ndarray, axis: int, to: int) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, to - x.shape[axis])
    return np.pad(x, widths)


def ref_to_format(x: np.ndarray, fmt: str, dla: str = "orin") -> np.ndarray:
    r = x.ndim
    if fmt == "kLINEAR":
        return x.copy()
    if fmt in MAJOR:
        V, k = MAJOR[fmt]
        v = r - k
        C = x.shape[v]
        xp = _pad_axis(x, v, -(-C // V) * V)
        sh = xp.shape
        xr = xp.reshape(*sh[:v], sh[v] // V, V, *sh[v + 1 :])
        perm = [*range(v + 1), *range(v + 2, r + 1), v + 1]
        return np.ascontiguousarray(xr.transpose(perm))
    if fmt in MINOR:
        V, k = MINOR[fmt]
        v = r - k
        C = x.shape[v]
        xp = _pad_axis(x, v, -(-C // V) * V)
        perm = [*range(v), *range(v + 1, r), v]
        return np.ascontiguousarray(xp.transpose(perm))
    e = x.dtype.itemsize
    if fmt == "kDLA_LINEAR":
        W = x.shape[3]
        b = 64 // e
        return _pad_axis(x, 3, -(-W // b) * b)
    if fmt == "kDLA_HWC4":
        C, W = x.shape[1], x.shape[3]
        cp = {1: 1, 3: 4, 4: 4}[C]
        b = LINE[dla] // cp // e
        xp = _pad_axis(_pad_axis(x, 1, cp), 3, -(-W // b) * b)
        return np.ascontiguousarray(xp.transpose(0, 2, 3, 1))
    raise AssertionError(fmt)


def ref_position(shape, dtype, fmt, coord, dla="orin"):
    """(element offset, storage shape) by packing a marker tensor with the model."""
    n = math.prod(shape)
    marker = (np.arange(n, dtype=np.int64) + 1).reshape(shape)
    if fmt in ("kDLA_LINEAR", "kDLA_HWC4"):  # padding depends on the real element size
        store = ref_to_format_wide(marker, fmt, dla, np.dtype(dtype).itemsize)
    else:
        store = ref_to_format(marker, fmt, dla)
    pos = int(np.flatnonzero(store.reshape(-1) == marker[tuple(coord)])[0])
    return pos, store.shape


def ref_to_format_wide(x: np.ndarray, fmt: str, dla: str, e: int) -> np.ndarray:
    """DLA model with element size ``e`` for the padding rule but any marker dtype."""
    if fmt == "kDLA_LINEAR":
        b = 64 // e
        return _pad_axis(x, 3, -(-x.shape[3] // b) * b)
    C, W = x.shape[1], x.shape[3]
    cp = {1: 1, 3: 4, 4: 4}[C]
    b = LINE[dla] // cp // e
    xp = _pad_axis(_pad_axis(x, 1, cp), 3, -(-W // b) * b)
    return np.ascontiguousarray(xp.transpose(0, 2, 3, 1))


# --------------------------------------------------------------------------------------
# Enums (§4.2)
# --------------------------------------------------------------------------------------


def test_tensor_format_values():
    expected = [
        "kLINEAR",
        "kCHW2",
        "kHWC8",
        "kCHW4",
        "kCHW16",
        "kCHW32",
        "kDHWC8",
        "kCDHW32",
        "kHWC",
        "kDLA_LINEAR",
        "kDLA_HWC4",
        "kHWC16",
        "kDHWC",
    ]
    assert [m.name for m in trt.TensorFormat] == expected
    assert [int(m) for m in trt.TensorFormat] == list(range(13))


def test_data_type_values_and_sizes():
    names = "kFLOAT kHALF kINT8 kINT32 kBOOL kUINT8 kFP8 kBF16 kINT64 kINT4 kFP4 kE8M0".split()
    assert [m.name for m in trt.DataType] == names
    assert [int(m) for m in trt.DataType] == list(range(12))
    assert [m.bits for m in trt.DataType] == [32, 16, 8, 32, 8, 8, 8, 16, 64, 4, 4, 8]
    assert trt.numpy_dtype("kBF16") == np.dtype(ml_dtypes.bfloat16)
    assert trt.numpy_dtype(trt.DataType.kFP8) == np.dtype(ml_dtypes.float8_e4m3fn)
    assert trt.data_type(np.float16) is trt.DataType.kHALF
    assert trt.data_type("int8") is trt.DataType.kINT8
    assert trt.data_type("HALF") is trt.DataType.kHALF
    assert trt.data_type("bf16") is trt.DataType.kBF16
    assert trt.data_type(3) is trt.DataType.kINT32


@pytest.mark.parametrize("spelling", ["kCHW32", "CHW32", "chw32", 5, trt.TensorFormat.kCHW32])
def test_format_spellings(spelling):
    assert trt.format_info(spelling).name == "kCHW32"


# --------------------------------------------------------------------------------------
# §4.7 worked examples
# --------------------------------------------------------------------------------------

# fmt, dtype, dims, storage, coord, elem, byte, total, dla
ROWS = [
    ("kLINEAR", np.float32, (2, 3, 4, 5), (2, 3, 4, 5), (1, 2, 3, 4), 119, 476, 480, "orin"),
    ("kCHW2", np.float16, (1, 3, 2, 2), (1, 2, 2, 2, 2), (0, 2, 1, 1), 14, 28, 32, "orin"),
    ("kHWC8", np.float16, (1, 3, 2, 2), (1, 2, 2, 8), (0, 2, 1, 1), 26, 52, 64, "orin"),
    ("kHWC8", np.float16, (2, 10, 3, 4), (2, 3, 4, 16), (1, 9, 2, 3), 377, 754, 768, "orin"),
    ("kCHW4", np.int8, (2, 5, 3, 3), (2, 2, 3, 3, 4), (1, 4, 2, 1), 136, 136, 144, "orin"),
    ("kCHW16", np.float16, (1, 17, 2, 2), (1, 2, 2, 2, 16), (0, 16, 1, 1), 112, 224, 256, "orin"),
    (
        "kCHW32",
        np.float16,
        (1, 40, 7, 9),
        (1, 2, 7, 9, 32),
        (0, 35, 3, 4),
        3011,
        6022,
        8064,
        "orin",
    ),
    (
        "kCHW32",
        np.int8,
        (3, 40, 7, 9),
        (3, 2, 7, 9, 32),
        (2, 35, 3, 4),
        11075,
        11075,
        12096,
        "orin",
    ),
    ("kDHWC8", np.float16, (1, 3, 2, 2, 2), (1, 2, 2, 2, 8), (0, 2, 1, 0, 1), 42, 84, 128, "orin"),
    (
        "kCDHW32",
        np.int8,
        (1, 33, 2, 2, 2),
        (1, 2, 2, 2, 2, 32),
        (0, 32, 1, 1, 1),
        480,
        480,
        512,
        "orin",
    ),
    ("kHWC", np.float32, (1, 3, 2, 2), (1, 2, 2, 3), (0, 2, 1, 0), 8, 32, 48, "orin"),
    ("kHWC16", np.int8, (1, 20, 2, 3), (1, 2, 3, 32), (0, 17, 1, 2), 177, 177, 192, "orin"),
    ("kDHWC", np.float32, (1, 3, 2, 2, 2), (1, 2, 2, 2, 3), (0, 1, 1, 1, 1), 22, 88, 96, "orin"),
    ("kDLA_LINEAR", np.float16, (1, 3, 5, 10), (1, 3, 5, 32), (0, 2, 4, 9), 457, 914, 960, "orin"),
    ("kDLA_LINEAR", np.int8, (1, 1, 2, 65), (1, 1, 2, 128), (0, 0, 1, 0), 128, 128, 256, "orin"),
    ("kDLA_HWC4", np.int8, (1, 3, 2, 5), (1, 2, 16, 4), (0, 2, 1, 4), 82, 82, 128, "orin"),
    ("kDLA_HWC4", np.int8, (1, 3, 2, 5), (1, 2, 8, 4), (0, 2, 1, 4), 50, 50, 64, "xavier"),
    ("kDLA_HWC4", np.float16, (1, 1, 3, 10), (1, 3, 32, 1), (0, 0, 2, 9), 73, 146, 192, "orin"),
    ("kDLA_HWC4", np.float16, (1, 1, 3, 10), (1, 3, 16, 1), (0, 0, 2, 9), 41, 82, 96, "xavier"),
    ("kDLA_HWC4", np.float16, (1, 4, 2, 3), (1, 2, 8, 4), (0, 3, 1, 2), 43, 86, 128, "orin"),
    ("kDLA_HWC4", np.float16, (1, 4, 2, 3), (1, 2, 4, 4), (0, 3, 1, 2), 27, 54, 64, "xavier"),
]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r[0]}-{r[8]}-{i}" for i, r in enumerate(ROWS)])
def test_spec_rows(row):
    fmt, dtype, dims, storage, coord, elem, byte, total, dla = row
    e = np.dtype(dtype).itemsize
    # the independent model agrees with the spec row
    pos, shape = ref_position(dims, dtype, fmt, coord, dla)
    assert shape == storage and pos == elem and pos * e == byte
    assert math.prod(storage) * e == total
    # and so does the library
    assert trt.storage_shape(fmt, dims, dtype, dla) == storage
    assert trt.offset(fmt, dims, coord, dtype, dla) == elem
    assert trt.offset(fmt, dims, coord, dtype, dla, bytes=True) == byte
    assert trt.nbytes(fmt, dims, dtype, dla) == total
    # pack/unpack agree with the model, padding zero
    rng = np.random.default_rng(0)
    x = rng.integers(1, 100, size=dims).astype(dtype)
    buf = trt.to_format(x, fmt, dla)
    assert buf.shape == storage and buf.dtype == x.dtype and buf.flags.c_contiguous
    np.testing.assert_array_equal(buf, ref_to_format(x, fmt, dla))
    assert buf.reshape(-1)[elem] == x[coord]
    np.testing.assert_array_equal(trt.from_format(buf, fmt, dims, dla), x)


def test_hand_checks():
    assert (((2 * 2 + 1) * 7 + 3) * 9 + 4) * 32 + 3 == 11075
    assert trt.offset("kCHW32", (3, 40, 7, 9), (2, 35, 3, 4)) == 11075
    assert ((1 * 3 + 2) * 4 + 3) * 16 + 9 == 377


# --------------------------------------------------------------------------------------
# format_info (§4.4, §4.6)
# --------------------------------------------------------------------------------------

D = trt.DataType
CURRENT = {
    "kLINEAR": set(D),
    "kCHW2": {D.kHALF, D.kBF16},
    "kHWC8": {D.kHALF, D.kBF16},
    "kCHW4": {D.kINT8},
    "kCHW16": {D.kHALF},
    "kCHW32": {D.kINT8, D.kFLOAT, D.kHALF},
    "kDHWC8": {D.kHALF, D.kBF16},
    "kCDHW32": {D.kHALF, D.kINT8},
    "kHWC": {D.kFLOAT, D.kUINT8},
    "kDLA_LINEAR": {D.kHALF, D.kINT8},
    "kDLA_HWC4": {D.kHALF, D.kINT8},
    "kHWC16": {D.kHALF, D.kINT8, D.kFP8},
    "kDHWC": {D.kFLOAT},
}
# (fmt) -> vector size, min rank, vectorized dim at rank 4 and 5
GEOM = {
    "kLINEAR": (1, 0, -1, -1),
    "kCHW2": (2, 3, 1, 2),
    "kHWC8": (8, 3, 1, 2),
    "kCHW4": (4, 3, 1, 2),
    "kCHW16": (16, 3, 1, 2),
    "kCHW32": (32, 3, 1, 2),
    "kDHWC8": (8, 4, 0, 1),
    "kCDHW32": (32, 4, 0, 1),
    "kHWC": (1, 3, -1, -1),
    "kDLA_LINEAR": (1, 4, -1, None),
    "kDLA_HWC4": (1, 4, -1, None),
    "kHWC16": (16, 3, 1, 2),
    "kDHWC": (1, 4, -1, -1),
}


@pytest.mark.parametrize("fmt", list(CURRENT))
def test_format_info_current(fmt):
    info = trt.format_info(fmt)
    assert info.name == fmt and info.value == int(trt.TensorFormat[fmt])
    assert set(info.dtypes) == CURRENT[fmt]
    V, min_rank, vd4, vd5 = GEOM[fmt]
    assert info.vector_size == V and info.min_rank == min_rank
    assert info.components_per_element == (V if V > 1 else -1)
    assert info.vectorized_dim(4) == vd4
    if vd5 is not None:
        assert info.vectorized_dim(5) == vd5
    if V > 1:
        assert info.bytes_per_component("fp16") == 2
        assert info.bytes_per_component("int8") == 1
    else:
        assert info.bytes_per_component("fp32") == -1
    assert info.description and info.history


def test_engine_query_examples():
    # §4.6: 4-D kCHW32 -> 1; 5-D kCDHW32 -> 1; 4-D kHWC8 -> 1; 3-D [C,H,W] kCHW4 -> 0
    assert trt.format_info("kCHW32").vectorized_dim(4) == 1
    assert trt.format_info("kCDHW32").vectorized_dim(5) == 1
    assert trt.format_info("kHWC8").vectorized_dim(4) == 1
    assert trt.format_info("kCHW4").vectorized_dim(3) == 0


def test_dla_only_flag():
    assert trt.format_info("kCHW16").dla_only
    assert not trt.format_info("kCHW16", version="10.11").dla_only
    assert not trt.format_info("kCHW32").dla_only


# version -> fmt -> allowed (from the §4.4 history column)
HISTORY = [
    ("8.x", "kCHW4", {D.kINT8, D.kHALF}),
    ("10.8", "kCHW4", {D.kINT8, D.kHALF}),
    ("10.9", "kCHW4", {D.kINT8, D.kHALF, D.kBF16}),
    ("10.11", "kCHW4", {D.kINT8, D.kHALF, D.kBF16}),
    ("10.12", "kCHW4", {D.kINT8}),
    ("11.1", "kCHW4", {D.kINT8}),
    ("8.6", "kCHW2", {D.kHALF}),
    ("10.7", "kCHW2", {D.kHALF}),
    ("8.x", "kHWC8", {D.kHALF}),
    ("8.x", "kDHWC8", {D.kHALF}),
    ("8.x", "kCHW16", {D.kHALF}),
    ("10.2", "kCHW16", {D.kINT8, D.kHALF}),
    ("10.6", "kCHW16", {D.kHALF}),
    ("8.x", "kCHW32", {D.kFLOAT, D.kHALF, D.kINT32, D.kINT8}),
    ("8.x", "kHWC", {D.kFLOAT}),
    ("10.7", "kHWC", {D.kFLOAT, D.kHALF, D.kUINT8, D.kINT64, D.kBF16}),
    ("8.x", "kHWC16", {D.kHALF}),
    ("10.3", "kHWC16", {D.kHALF}),
    ("10.6", "kHWC16", {D.kHALF, D.kINT8}),
    ("10.7", "kHWC16", {D.kHALF, D.kINT8}),
    ("10.8", "kHWC16", {D.kHALF, D.kINT8, D.kFP8}),
    ("8.x", "kDHWC", set()),
    ("10.0", "kDHWC", {D.kFLOAT}),
    ("8.x", "kCDHW32", {D.kHALF, D.kINT8}),
]


@pytest.mark.parametrize("version,fmt,allowed", HISTORY)
def test_version_profiles(version, fmt, allowed):
    assert set(trt.format_info(fmt, version=version).dtypes) == allowed


def test_union_and_rule_labels():
    u = trt.format_info("kCHW4", strict=False)
    assert set(u.dtypes) == {D.kINT8, D.kHALF, D.kBF16}
    assert set(trt.format_info("kHWC", strict=False).dtypes) == {
        D.kFLOAT,
        D.kHALF,
        D.kUINT8,
        D.kINT64,
        D.kBF16,
    }
    assert trt.format_info("kCHW4").rules == "TensorRT 10.12+ rules"
    assert trt.format_info("kCHW4", version="10.10").rules == "TensorRT 10.9-10.11 rules"
    assert trt.format_info("kCHW4", version="8.6").rules == "TensorRT 8.x-10.8 rules"
    assert [h[0] for h in trt.format_info("kCHW4").history] == [
        "TensorRT 8.x-10.8",
        "TensorRT 10.9-10.11",
        "TensorRT 10.12+",
    ]


# --------------------------------------------------------------------------------------
# Every dtype rule: allowed dtypes pack, the others raise quoting the rule
# --------------------------------------------------------------------------------------

NUMPY_OF = {
    D.kFLOAT: np.float32,
    D.kHALF: np.float16,
    D.kINT8: np.int8,
    D.kINT32: np.int32,
    D.kBOOL: np.bool_,
    D.kUINT8: np.uint8,
    D.kFP8: ml_dtypes.float8_e4m3fn,
    D.kBF16: ml_dtypes.bfloat16,
    D.kINT64: np.int64,
    D.kE8M0: ml_dtypes.float8_e8m0fnu,
}
GPU_FORMATS = ["kCHW2", "kHWC8", "kCHW4", "kCHW32", "kDHWC8", "kCDHW32", "kHWC", "kHWC16", "kDHWC"]


@pytest.mark.parametrize("fmt", GPU_FORMATS)
@pytest.mark.parametrize("dt", list(NUMPY_OF))
def test_dtype_rules(fmt, dt):
    rank = 5 if fmt in ("kDHWC8", "kCDHW32", "kDHWC") else 4
    shape = (1, 5, 2, 3, 2)[:rank] if rank == 5 else (1, 5, 2, 3)
    x = np.ones(shape, dtype=NUMPY_OF[dt])
    if dt in CURRENT[fmt]:
        buf = trt.to_format(x, fmt)
        np.testing.assert_array_equal(buf, ref_to_format(x, fmt))
    else:
        with pytest.raises(
            lk.LayoutError, match=rf"{fmt} requires .*\(TensorRT \d+\.(x|\d+)\+ rules\)"
        ):
            trt.to_format(x, fmt)


def test_rule_message_quotes_rule():
    x = np.zeros((1, 4, 2, 2), np.float16)
    with pytest.raises(lk.LayoutError, match=r"kCHW4 requires INT8 \(TensorRT 10.12\+ rules\)"):
        trt.to_format(x, "kCHW4")
    # allowed under an older profile or the union
    np.testing.assert_array_equal(
        trt.to_format(x, "kCHW4", version="10.8"), ref_to_format(x, "kCHW4")
    )
    np.testing.assert_array_equal(
        trt.to_format(x, "kCHW4", strict=False), ref_to_format(x, "kCHW4")
    )
    with pytest.raises(lk.LayoutError, match=r"kDHWC is not available under TensorRT 8\.x"):
        trt.to_format(np.zeros((1, 3, 2, 2, 2), np.float32), "kDHWC", version="8.x")


def test_linear_all_types():
    for dt in NUMPY_OF.values():
        x = np.ones((2, 3, 4), dtype=dt)
        np.testing.assert_array_equal(trt.to_format(x, "kLINEAR"), x)
    with pytest.raises(lk.LayoutError, match="packed two per byte"):
        trt.to_format(np.zeros((2, 2), ml_dtypes.int4), "kLINEAR")
    with pytest.raises(lk.LayoutError, match="no TensorRT DataType"):
        trt.to_format(np.zeros((2, 2), np.float64), "kLINEAR")


def test_raw_bits_with_dtype():
    x = (np.arange(24).astype(ml_dtypes.bfloat16)).reshape(1, 3, 2, 4)
    bits = x.view(np.uint16)
    with pytest.raises(lk.LayoutError, match="no TensorRT DataType"):
        trt.to_format(bits, "kHWC8")
    b = trt.to_format(bits, "kHWC8", dtype="kBF16")
    np.testing.assert_array_equal(b.view(ml_dtypes.bfloat16), ref_to_format(x, "kHWC8"))
    raw = b.view(np.uint8)
    back = trt.from_format(raw, "kHWC8", x.shape, dtype="kBF16")
    np.testing.assert_array_equal(back, x)
    with pytest.raises(lk.LayoutError, match="2 bytes"):
        trt.to_format(np.zeros((1, 3, 2, 2), np.float32), "kHWC8", dtype="kHALF")


# --------------------------------------------------------------------------------------
# Rank, DLA and channel rules
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt,rank", [("kCHW4", 2), ("kHWC8", 2), ("kCDHW32", 3), ("kDHWC8", 3), ("kDHWC", 3)]
)
def test_rank_too_small(fmt, rank):
    dt = next(iter(sorted(CURRENT[fmt])))
    x = np.zeros((2,) * rank, NUMPY_OF[dt])
    with pytest.raises(lk.LayoutError, match=rf"{fmt} is only available for dimensions >= "):
        trt.to_format(x, fmt)


def test_rank_too_large():
    with pytest.raises(lk.LayoutError, match="at most 8 dims"):
        trt.storage_shape("kCHW32", (1,) * 9)


@pytest.mark.parametrize("fmt", ["kCHW2", "kHWC8", "kCHW32", "kHWC", "kHWC16"])
@pytest.mark.parametrize("shape", [(5, 2, 3), (2, 1, 5, 2, 3), (1, 2, 3, 2, 2, 3)])
def test_ranks_3_to_6(fmt, shape):
    dt = {"kCHW2": np.float16, "kHWC8": np.float16, "kCHW32": np.int8, "kHWC": np.float32}.get(
        fmt, np.int8
    )
    x = np.random.default_rng(1).integers(1, 50, size=shape).astype(dt)
    buf = trt.to_format(x, fmt)
    np.testing.assert_array_equal(buf, ref_to_format(x, fmt))
    np.testing.assert_array_equal(trt.from_format(buf, fmt, shape), x)
    assert trt.format_info(fmt).vectorized_dim(len(shape)) in (len(shape) - 3, -1)


@pytest.mark.parametrize("fmt", ["kCDHW32", "kDHWC8", "kDHWC"])
@pytest.mark.parametrize("shape", [(33, 2, 3, 2), (2, 9, 2, 1, 3), (1, 2, 3, 2, 2, 3)])
def test_5d_formats_ranks(fmt, shape):
    dt = {"kCDHW32": np.int8, "kDHWC8": np.float16, "kDHWC": np.float32}[fmt]
    x = np.random.default_rng(2).integers(1, 50, size=shape).astype(dt)
    buf = trt.to_format(x, fmt)
    np.testing.assert_array_equal(buf, ref_to_format(x, fmt))
    np.testing.assert_array_equal(trt.from_format(buf, fmt, shape), x)


def test_dla_hwc4_channels():
    for c in (2, 5, 8):
        with pytest.raises(lk.LayoutError, match=r"C=\d; kDLA_HWC4 takes C in \{1, 3, 4\}"):
            trt.to_format(np.zeros((1, c, 2, 2), np.int8), "kDLA_HWC4")
    with pytest.raises(lk.LayoutError, match="FP16 or INT8"):
        trt.to_format(np.zeros((1, 3, 2, 2), np.float32), "kDLA_HWC4")
    with pytest.raises(lk.LayoutError, match="4-D NCHW"):
        trt.to_format(np.zeros((3, 2, 2), np.int8), "kDLA_LINEAR")
    with pytest.raises(lk.LayoutError, match=r"dla='tegra'"):
        trt.to_format(np.zeros((1, 3, 2, 2), np.int8), "kDLA_HWC4", dla="tegra")
    with pytest.raises(lk.LayoutError, match=r"\[1, 8192\]"):
        trt.storage_shape("kDLA_LINEAR", (1, 1, 1, 8193), "int8")
    with pytest.raises(lk.LayoutError, match=r"\[1, 8192\]"):
        trt.storage_shape("kDLA_LINEAR", (1, 0, 1, 1), "int8")
    with pytest.raises(lk.LayoutError, match="needs the dtype"):
        trt.storage_shape("kDLA_LINEAR", (1, 1, 1, 1))


@pytest.mark.parametrize("dla", ["orin", "xavier"])
@pytest.mark.parametrize("c", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.int8, np.float16])
@pytest.mark.parametrize("w", [1, 5, 16, 33])
def test_dla_hwc4_model(dla, c, dtype, w):
    x = np.random.default_rng(3).integers(1, 100, size=(2, c, 3, w)).astype(dtype)
    buf = trt.to_format(x, "kDLA_HWC4", dla)
    ref = ref_to_format(x, "kDLA_HWC4", dla)
    np.testing.assert_array_equal(buf, ref)
    # H stride is a multiple of the line size in bytes
    assert buf.strides[1] % LINE[dla] == 0
    assert trt.strides("kDLA_HWC4", x.shape, dtype, dla, unit="bytes")[2] == buf.strides[1]
    np.testing.assert_array_equal(trt.from_format(buf, "kDLA_HWC4", x.shape, dla), x)


@pytest.mark.parametrize("dtype", [np.int8, np.float16])
@pytest.mark.parametrize("w", [1, 31, 32, 33, 65])
def test_dla_linear_model(dtype, w):
    x = np.random.default_rng(4).integers(1, 100, size=(1, 2, 3, w)).astype(dtype)
    buf = trt.to_format(x, "kDLA_LINEAR")
    np.testing.assert_array_equal(buf, ref_to_format(x, "kDLA_LINEAR"))
    assert buf.strides[2] % 64 == 0
    np.testing.assert_array_equal(trt.from_format(buf, "kDLA_LINEAR", x.shape), x)


def test_chw16_is_dla_only_now():
    x = np.ones((1, 17, 2, 2), np.float16)
    np.testing.assert_array_equal(trt.to_format(x, "kCHW16"), ref_to_format(x, "kCHW16"))
    with pytest.raises(lk.LayoutError, match=r"kCHW16 is DLA-only \(TensorRT 10.12\+ rules\)"):
        trt.to_format(x, "kCHW16", device="gpu")
    np.testing.assert_array_equal(
        trt.to_format(x, "kCHW16", device="gpu", version="10.8"), ref_to_format(x, "kCHW16")
    )
    with pytest.raises(lk.LayoutError, match=r"\[1, 8192\]"):
        trt.storage_shape("kCHW16", (1, 16, 1, 9000), "fp16")


def test_dla_device_rules():
    x = np.ones((1, 4, 2, 16), np.int8)
    with pytest.raises(lk.LayoutError, match="kHWC8 is not a DLA format"):
        trt.storage_shape("kHWC8", (1, 8, 2, 2), "fp16", device="dla")
    # kCHW4 on DLA: C <= 4 and line stride W*4*e multiple of 64 (Orin) / 32 (Xavier)
    np.testing.assert_array_equal(
        trt.to_format(x, "kCHW4", device="dla"), ref_to_format(x, "kCHW4")
    )
    with pytest.raises(lk.LayoutError, match="multiple of 64"):
        trt.to_format(np.ones((1, 4, 2, 8), np.int8), "kCHW4", device="dla")
    trt.to_format(np.ones((1, 4, 2, 8), np.int8), "kCHW4", "xavier", device="dla")
    with pytest.raises(lk.LayoutError, match="C <= 4"):
        trt.to_format(np.ones((1, 5, 2, 16), np.int8), "kCHW4", device="dla")
    with pytest.raises(lk.LayoutError, match="device='gpu'"):
        trt.to_format(x, "kDLA_LINEAR", device="gpu")
    with pytest.raises(lk.LayoutError, match="FP16 or INT8"):
        trt.storage_shape("kCHW32", (1, 4, 2, 2), "fp32", device="dla")


# --------------------------------------------------------------------------------------
# Strides
# --------------------------------------------------------------------------------------


def test_strides_examples():
    assert trt.strides("kLINEAR", (2, 3, 4, 5)) == (60, 20, 5, 1)
    assert trt.strides("kCHW32", (1, 40, 7, 9)) == (126, 63, 9, 1)
    assert trt.strides("kCHW32", (1, 40, 7, 9), "fp16", unit="bytes") == (8064, 4032, 576, 64)
    assert trt.strides("kHWC", (1, 3, 2, 2)) == (12, 1, 6, 3)
    assert trt.strides("kDLA_LINEAR", (1, 3, 5, 10), "fp16") == (480, 160, 32, 1)
    assert trt.storage_strides("kCHW4", (2, 5, 3, 3), "int8", unit="bytes") == (72, 36, 12, 4, 1)


@settings(max_examples=40, deadline=None)
@given(
    fmt=st.sampled_from(sorted(MAJOR) + sorted(MINOR) + ["kLINEAR"]),
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    c=st.integers(1, 40),
    rest=st.lists(st.integers(1, 5), min_size=3, max_size=3),
    data=st.data(),
)
def test_strides_and_offsets_match_model(fmt, lead, c, rest, data):
    k = MAJOR.get(fmt, MINOR.get(fmt, (1, 3)))[1]
    shape = (*lead, c, *rest[: k - 1])
    V = trt.format_info(fmt).vector_size
    dt = NUMPY_OF[min(CURRENT[fmt])]
    n = math.prod(shape)
    marker = (np.arange(n, dtype=np.int64)).reshape(shape)
    store = ref_to_format(marker + 1, fmt).reshape(-1)
    coord = tuple(data.draw(st.integers(0, s - 1)) for s in shape)
    pos = int(np.flatnonzero(store == marker[coord] + 1)[0])
    assert trt.offset(fmt, shape, coord, dt) == pos
    assert trt.offset(fmt, shape, coord, dt, bytes=True) == pos * np.dtype(dt).itemsize
    # strides (TensorRT elements = vectors of V scalars): offset of a vector-aligned coord
    s = trt.strides(fmt, shape)
    v = len(shape) - k
    vec = list(coord)
    if V > 1:
        vec[v] -= vec[v] % V
    base = sum(i * st_ for i, st_ in zip([*vec[:v], vec[v] // V, *vec[v + 1 :]], s)) * V
    if fmt in MINOR:  # C stride counts vectors of the C axis itself
        base = sum(i * st_ for d, (i, st_) in enumerate(zip(vec, s)) if d != v) * V + vec[v]
    assert trt.offset(fmt, shape, tuple(vec), dt) == base


@settings(max_examples=40, deadline=None)
@given(
    fmt=st.sampled_from(sorted(MAJOR) + sorted(MINOR)),
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    c=st.integers(1, 70),
    rest=st.lists(st.integers(1, 6), min_size=3, max_size=3),
)
def test_round_trip_model_property(fmt, lead, c, rest):
    k = MAJOR.get(fmt, MINOR.get(fmt))[1]
    shape = (*lead, c, *rest[: k - 1])
    allowed = trt.format_info(fmt, strict=False).dtypes
    dt = NUMPY_OF[allowed[0]]
    x = np.random.default_rng(c).integers(1, 100, size=shape).astype(dt)
    buf = trt.to_format(x, fmt, strict=False)
    np.testing.assert_array_equal(buf, ref_to_format(x, fmt))
    np.testing.assert_array_equal(trt.from_format(buf, fmt, shape, strict=False), x)


# --------------------------------------------------------------------------------------
# Layout bridge, inputs, errors
# --------------------------------------------------------------------------------------


def test_layout_bridge():
    assert trt.layout("kCHW4", (1, 5, 2, 2)) == lk.Layout("NCHW4c")
    assert trt.layout("kHWC8", (1, 5, 2, 2)) == lk.Layout("NHWC8c", dims="NCHW")
    assert trt.layout("kCDHW32", (1, 5, 2, 2, 2)) == lk.Layout("NCDHW32c")
    assert trt.layout("kDHWC8", (1, 5, 2, 2, 2)) == lk.Layout("NDHWC8c", dims="NCDHW")
    assert trt.layout("kDLA_LINEAR", (1, 5, 2, 2), "fp16") == lk.Layout("NCHW32w")
    # convert between formats through the core
    x = np.arange(2 * 10 * 3 * 4, dtype=np.float16).reshape(2, 10, 3, 4)
    a = trt.to_format(x, "kCHW2")
    b = lk.convert(a, x.shape, trt.layout("kCHW2", x.shape), trt.layout("kHWC8", x.shape))
    np.testing.assert_array_equal(
        b.reshape(trt.storage_shape("kHWC8", x.shape)), ref_to_format(x, "kHWC8")
    )


def test_non_contiguous_and_out():
    x = np.random.default_rng(5).integers(-100, 100, size=(2, 70, 5, 6)).astype(np.int8)
    xt = np.asfortranarray(x)[:, ::2]
    buf = trt.to_format(xt, "kCHW32")
    np.testing.assert_array_equal(buf, ref_to_format(np.ascontiguousarray(xt), "kCHW32"))
    out = np.full(trt.storage_shape("kCHW32", xt.shape), 7, np.int8)
    res = trt.to_format(xt, "kCHW32", out=out)
    assert np.shares_memory(res, out)
    np.testing.assert_array_equal(out, buf)
    back = np.empty(xt.shape, np.int8)
    trt.from_format(buf, "kCHW32", xt.shape, out=back)
    np.testing.assert_array_equal(back, xt)
    # flat buffers are accepted
    np.testing.assert_array_equal(trt.from_format(buf.reshape(-1), "kCHW32", xt.shape), xt)


def test_pad_value():
    x = np.ones((1, 3, 1, 1), np.float16)
    assert trt.to_format(x, "kHWC8", pad_value=-1).reshape(-1).tolist() == [1, 1, 1] + [-1] * 5


def test_errors():
    with pytest.raises(lk.LayoutError, match="did you mean 'kCHW4'"):
        trt.format_info("kCHW5")
    with pytest.raises(lk.LayoutError, match=r"0\.\.12"):
        trt.format_info(13)
    with pytest.raises(TypeError, match="fmt"):
        trt.format_info(1.5)
    with pytest.raises(lk.LayoutError, match="version="):
        trt.format_info("kCHW4", version="seven")
    with pytest.raises(lk.LayoutError, match=r"8\.x and later"):
        trt.format_info("kCHW4", version="7.2")
    with pytest.raises(lk.LayoutError, match=r"buf holds 10 elements but kCHW4 .* needs 144"):
        trt.from_format(np.zeros(10, np.int8), "kCHW4", (2, 5, 3, 3))
    with pytest.raises(lk.LayoutError, match="entry 1"):
        trt.offset("kCHW4", (2, 5, 3, 3), (0, 5, 0, 0))
    with pytest.raises(lk.LayoutError, match="entry 1"):
        trt.offset("kCHW4", (2, 5, 3, 3), (0, -1, 0, 0))
    with pytest.raises(lk.LayoutError, match="extents must be >= 0"):
        trt.storage_shape("kCHW4", (2, -5, 3, 3))
    with pytest.raises(TypeError, match="x"):
        trt.to_format("not an array", "kLINEAR")
    with pytest.raises(lk.LayoutError, match="unit="):
        trt.strides("kCHW4", (1, 4, 1, 1), unit="vectors")
    with pytest.raises(lk.LayoutError, match="needs the dtype"):
        trt.strides("kCHW4", (1, 4, 1, 1), unit="bytes")
    with pytest.raises(lk.LayoutError, match="rank=2"):
        trt.format_info("kCHW4").vectorized_dim(2)


def test_zero_extent():
    x = np.zeros((0, 5, 2, 2), np.int8)
    buf = trt.to_format(x, "kCHW4")
    assert buf.shape == (0, 2, 2, 2, 4)
    assert trt.from_format(buf, "kCHW4", x.shape).shape == x.shape


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def test_cli_trt_formats(capsys):
    from layoutkit.cli import main

    assert main(["trt-formats"]) == 0
    out = capsys.readouterr().out
    for f in trt.TensorFormat:
        assert f" {f.name} " in out
    assert "kCHW4       vector-major   4        1         3  INT8\n" in out
    assert "FP16 (DLA only)" in out
    assert main(["trt-formats", "--trt-version", "8.x", "-v"]) == 0
    out = capsys.readouterr().out
    assert "kCHW4       vector-major   4        1         3  INT8, FP16\n" in out
    assert "TensorRT 10.9-10.11: INT8, FP16, BF16" in out
    assert main(["trt-formats", "--shape", "2x10x3x4", "--dtype", "fp16"]) == 0
    out = capsys.readouterr().out
    assert "| [2][3][4][16]" in out
    assert main(["trt-formats", "--trt-version", "seven"]) == 2
    assert "version=" in capsys.readouterr().err


def test_cli_union_and_rank8(capsys):
    from layoutkit.cli import main

    assert main(["trt-formats", "--union"]) == 0
    out = capsys.readouterr().out
    assert "kCHW4       vector-major   4        1         3  FP16, INT8, BF16\n" in out
    shape = (1, 2, 1, 2, 1, 5, 2, 3)
    x = np.arange(math.prod(shape), dtype=np.int8).reshape(shape) % 100
    buf = trt.to_format(x, "kCHW32")
    np.testing.assert_array_equal(buf, ref_to_format(x, "kCHW32"))
    np.testing.assert_array_equal(trt.from_format(buf, "kCHW32", shape), x)
    assert trt.format_info("kCHW32").vectorized_dim(8) == 5


def test_rank_0_to_2_linear():
    assert trt.to_format(np.float32(3), "kLINEAR") == 3
    assert trt.from_format(np.array([5.0], np.float32), "kLINEAR", ()) == 5
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(trt.to_format(x, "LINEAR"), x)
    np.testing.assert_array_equal(trt.from_format(x.ravel(), 0, (2, 3)), x)
