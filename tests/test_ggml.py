"""GGML type table and block (de)quantization: byte-exactness with ggml's reference C code.

The ``gguf`` package (0.19.0, a test dependency) reproduces ggml's ``*_ref``
quantizers except in the cases ggml.md documents (blocks of zeros starting
with -0.0 for Q4_0/Q5_0, Q4_1/Q5_1 blocks whose minimum is a zero); those and
the types gguf cannot produce are pinned with golden vectors measured on
ggml's C code (ggml.md §2).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import layoutkit as lk
from layoutkit import LayoutError
from layoutkit import _ggml_quants as K

G = lk.ggml

GGUF_QUANT = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]
GGUF_DEQUANT = [
    *GGUF_QUANT,
    "Q2_K",
    "Q3_K",
    "Q4_K",
    "Q5_K",
    "Q6_K",
    "IQ2_XXS",
    "IQ2_XS",
    "IQ2_S",
    "IQ3_XXS",
    "IQ3_S",
    "IQ1_S",
    "IQ1_M",
    "IQ4_NL",
    "IQ4_XS",
    "NVFP4",
]
QUANTIZE_TYPES = [
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "TQ1_0", "TQ2_0", "MXFP4",
]  # fmt: skip
EXTRA_DEQUANT = ["Q8_K", "Q1_0", "Q2_0", "Q8_1", "F32"]


def gguf_mod():
    return pytest.importorskip("gguf")


def gq(name):
    gguf = gguf_mod()
    return gguf.GGMLQuantizationType[name]


def gg_quantize(x, name):
    import warnings

    from gguf import quants

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return quants.quantize(x, gq(name))


def gg_dequantize(q, name):
    import warnings

    from gguf import quants

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return quants.dequantize(q, gq(name))


def as_bytes(a):
    return np.ascontiguousarray(a).view(np.uint8).reshape(*a.shape[:-1], -1)


# ---------------------------------------------------------------------------
# type table
# ---------------------------------------------------------------------------

SIZES = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
    "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "IQ2_XXS": (16, 256, 66), "IQ2_XS": (17, 256, 74), "IQ3_XXS": (18, 256, 98),
    "IQ1_S": (19, 256, 50), "IQ4_NL": (20, 32, 18), "IQ3_S": (21, 256, 110),
    "IQ2_S": (22, 256, 82), "IQ4_XS": (23, 256, 136), "I8": (24, 1, 1), "I16": (25, 1, 2),
    "I32": (26, 1, 4), "I64": (27, 1, 8), "F64": (28, 1, 8), "IQ1_M": (29, 256, 56),
    "BF16": (30, 1, 2), "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66), "MXFP4": (39, 32, 17),
    "NVFP4": (40, 64, 36), "Q1_0": (41, 128, 18), "Q2_0": (42, 64, 18),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SIZES))
def test_type_table_sizes(name):
    tid, bs, ts = SIZES[name]
    for key in (name, name.lower(), f"ggml_type_{name.lower()}", tid, G.GGMLType(tid)):
        info = G.type_info(key)
        assert (info.name, info.id, info.block_size, info.type_size) == (name, tid, bs, ts)
        assert not info.removed
    assert info.is_quantized == (bs > 1)


def test_type_table_removed_and_complete():
    removed = {i.id for i in G.types() if i.removed}
    assert removed == {4, 5, 31, 32, 33, 36, 37, 38}
    assert [i.id for i in G.types()] == list(range(43))
    assert G.type_info(4).type_size == 0
    with pytest.raises(LayoutError, match="removed"):
        G.quantize(np.zeros(32, np.float32), 31)
    with pytest.raises(LayoutError, match="removed"):
        G.new_tensor("Q4_0_4_4", 32)
    assert {i.name for i in G.types() if i.can_quantize} >= set(QUANTIZE_TYPES)
    assert {i.name for i in G.types() if i.can_dequantize} >= set(GGUF_DEQUANT + EXTRA_DEQUANT)


def test_type_table_matches_gguf_except_q8_1():
    gguf = gguf_mod()
    for t, (bs, ts) in gguf.GGML_QUANT_SIZES.items():
        info = G.type_info(t)  # gguf's IntEnum members work as ids
        if t.name == "Q8_1":
            assert (bs, ts) == (32, 40) and info.type_size == 36  # gguf-py's known error
            continue
        assert info.name == t.name
        assert (info.block_size, info.type_size) == (bs, ts)


@pytest.mark.parametrize("bad", [1.5, None, b"Q4_0", [2], True])
def test_type_info_wrong_type(bad):
    with pytest.raises(TypeError, match="type"):
        G.type_info(bad)


@pytest.mark.parametrize("bad", ["Q4", "q4_0x", "", 43, -1, 10**6])
def test_type_info_unknown(bad):
    with pytest.raises(LayoutError, match="expected"):
        G.type_info(bad)


def test_row_size():
    assert G.row_size("Q4_0", 4096) == 2304
    assert G.row_size("Q8_0", 4096) == 4352
    assert G.row_size("Q4_K", 4096) == 2304
    with pytest.raises(LayoutError, match="multiple"):
        G.row_size("Q4_0", 33)


# ---------------------------------------------------------------------------
# byte-exactness against gguf on random data
# ---------------------------------------------------------------------------


def _data(kind, shape, seed):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    if kind == "uniform":
        return rng.uniform(-1, 1, shape).astype(np.float32)
    if kind == "laplace":
        return rng.laplace(0, 1, shape).astype(np.float32)
    if kind == "tiny":
        return (rng.standard_normal(shape) * 1e-6).astype(np.float32)
    if kind == "huge":
        return (rng.standard_normal(shape) * 1e4).astype(np.float32)
    if kind == "ints":  # exact ties for the +0.5 / roundf / nearest rules
        return rng.integers(-20, 21, shape).astype(np.float32) / np.float32(2)
    raise AssertionError(kind)


def _edge_rows(n):
    rows = [
        np.zeros(n),
        np.full(n, -0.0),
        np.where(np.arange(n) % 2 == 0, 0.0, -0.0),
        np.full(n, 3.0),
        np.full(n, -1e-30),
        np.full(n, 1e-40),  # float32 subnormals
        np.linspace(-1, 1, n),
        (np.arange(n) % 32) - 16.0,
        np.tile([127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5], n // 8),
        np.where(np.arange(n) % 3 == 0, 1e5, -1e5),
        np.where(np.arange(n) % 7 == 0, 3e-7, 1e-7),
        np.tile([8.0, -8.0, 0, 0], n // 4),
        np.tile([0.49999997, -0.49999997, 1.0, -1.0], n // 4),
        np.tile([1.0, -3.0, 3.0, 0.5], n // 4),  # +a/-a ties: the first one sets the sign
        np.tile([3.0, -3.0], n // 2),
        np.where(np.arange(n) % 5 == 0, np.nan, 1.0),  # NaN never wins the max search
    ]
    return np.array(rows, dtype=np.float32)


def _known_divergence(name, x):
    """Blocks where gguf-py differs from ggml's C (ggml.md §0 item 9), and NaN blocks."""
    bs = G.type_info(name).block_size
    blocks = x.reshape(-1, bs)
    if np.isnan(blocks).any(axis=1).any():
        return np.isnan(blocks).any(axis=1) | _known_divergence(name, np.nan_to_num(x))
    if name in ("Q4_0", "Q5_0"):
        return np.all(blocks == 0, axis=1)
    if name in ("Q4_1", "Q5_1"):
        return blocks.min(axis=1) == 0
    return np.zeros(len(blocks), bool)


def _compare_with_gguf(name, x):
    ours = G.quantize(x, name)
    theirs = as_bytes(gg_quantize(x, name))
    assert ours.shape == theirs.shape
    ts = G.type_info(name).type_size
    bad = np.any(ours.reshape(-1, ts) != theirs.reshape(-1, ts), axis=1)
    bad &= ~_known_divergence(name, x)
    assert not bad.any(), f"{name}: {bad.sum()} blocks differ, first {np.flatnonzero(bad)[:5]}"
    return ours


@pytest.mark.parametrize("name", GGUF_QUANT)
@pytest.mark.parametrize("kind", ["normal", "uniform", "laplace", "tiny", "huge", "ints"])
def test_quantize_matches_gguf_random(name, kind):
    gguf_mod()
    x = _data(kind, (16, 2048), hash((name, kind)) % 2**32)  # 1024 blocks of 32, 128 of 256
    _compare_with_gguf(name, x)


@pytest.mark.parametrize("name", GGUF_QUANT)
def test_quantize_matches_gguf_edge_rows(name):
    gguf_mod()
    _compare_with_gguf(name, _edge_rows(256))


@pytest.mark.parametrize("name", GGUF_QUANT)
def test_quantize_large_matches_gguf(name):
    gguf_mod()
    if name == "MXFP4":
        shape = (64, 1024)  # gguf's MXFP4 is very slow
    else:
        shape = (256, 4096)
    x = _data("normal", shape, 7)
    _compare_with_gguf(name, x)


@pytest.mark.parametrize("name", GGUF_DEQUANT)
def test_dequantize_random_bytes_matches_gguf(name):
    gguf_mod()
    info = G.type_info(name)
    rng = np.random.default_rng(info.id)
    q = rng.integers(0, 256, (8, 16 * info.type_size), dtype=np.uint8)
    # keep fp16 / bf16 scales finite so that NaN payload conventions do not matter
    if name in ("F16", "BF16"):
        q.view(np.uint16)[...] &= 0xBBFF
    ours = G.dequantize(q, name)
    theirs = gg_dequantize(q, name).astype(np.float32)
    assert ours.shape == theirs.shape == (8, 16 * info.block_size)
    assert np.array_equal(ours, theirs, equal_nan=True)
    fin = np.isfinite(theirs)
    assert np.array_equal(ours.view(np.uint32)[fin], theirs.view(np.uint32)[fin])


@pytest.mark.parametrize("name", GGUF_QUANT)
def test_dequantize_of_quantized_matches_gguf(name):
    gguf_mod()
    x = _data("normal", (8, 1024), 3)
    q = G.quantize(x, name)
    ours = G.dequantize(q, name)
    theirs = gg_dequantize(q, name)
    assert np.array_equal(ours.view(np.uint32), theirs.astype(np.float32).view(np.uint32))


# ---------------------------------------------------------------------------
# golden vectors (ggml's C output, from ggml.md §2)
# ---------------------------------------------------------------------------


def _hex(a):
    return a.tobytes().hex()


def test_golden_zero_blocks():
    z32 = np.zeros(32, np.float32)
    z256 = np.zeros(256, np.float32)
    assert _hex(G.quantize(z32, "Q4_0")) == "0080" + "88" * 16
    assert _hex(G.quantize(z32, "Q5_0")) == "0080ffffffff" + "00" * 16
    assert _hex(G.quantize(z32, "Q8_0")) == "00" * 34
    assert _hex(G.quantize(z32, "MXFP4")) == "00" * 17
    assert _hex(G.quantize(z32, "Q4_1")) == "00" * 20
    assert _hex(G.quantize(z32, "Q5_1")) == "00" * 24
    assert _hex(G.quantize(z256, "TQ1_0")) == "80" * 48 + "7f" * 4 + "0000"
    assert _hex(G.quantize(z256, "TQ2_0")) == "55" * 64 + "0000"
    # the block that gguf-py gets wrong: zeros starting with -0.0 keep C's scale 0x8000
    m = np.zeros(32, np.float32)
    m[0] = -0.0
    assert _hex(G.quantize(m, "Q4_0")) == "0080" + "88" * 16
    assert _hex(G.quantize(m, "Q5_0")) == "0080ffffffff" + "00" * 16
    # Q4_1/Q5_1 store the sign of the first zero met by the sequential min
    assert _hex(G.quantize(m, "Q4_1")[:4]) == "00000080"
    assert _hex(G.quantize(-m, "Q4_1")[:4]) == "00000000"
    assert _hex(G.quantize(m, "Q5_1")[:4]) == "00000080"


def test_golden_q4_0():
    x = np.zeros(32, np.float32)
    x[:2] = [8, -8]
    assert _hex(G.quantize(x, "Q4_0")) == "00bc808f" + "88" * 14
    x = np.arange(32, dtype=np.float32) - 16
    assert _hex(G.quantize(x, "Q4_0")) == "0040809191a2a2b3b3c4c4d5d5e6e6f7f7f8"
    x = np.full(32, 1e6, np.float32)
    x[1] = -1e6
    assert _hex(G.quantize(x, "Q4_0")) == "00fc000f" + "00" * 14  # d overflows to -inf
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    x[5] = np.inf
    assert _hex(G.quantize(x, "Q4_0")) == "00fc" + "88" * 5 + "80" + "88" * 10


def test_golden_q4_0_fma_regression():
    # element 12 has x*id = -3.5000002: separate rounding gives code 5, a fused
    # multiply-add gives 4 (ggml.md §2.9)
    bits = (
        "bea47912 bf88c4bb bf889b10 3e869823 bf3e0873 bf576b2a 3e9783e9 bed8fbeb "
        "3b8f3a6c 3f932297 3f5fef7b bef2e12f 3f4e4b56 bd0b72c2 3f143b64 bf10095a "
        "3f8cb1b4 be5a2815 3ed254b8 bfa0c4b7 bfc420b6 3e57e171 3febc3cf bfc3b916 "
        "be7f77a4 3e5b558e bfd098d2 3fc70a79 3f8c883e 3f2da93e bf163beb 3ebcfc62"
    )
    x = np.array([int(b, 16) for b in bits.split()], np.uint32).view(np.float32)
    assert _hex(G.quantize(x, "Q4_0")) == "5eb3399d6dd7fb7c07fa9873f41a3558b56a"


def test_golden_q8_0_q8_1():
    x = np.zeros(32, np.float32)
    x[:8] = [127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5]
    assert _hex(G.quantize(x, "Q8_0")) == "003c7f010203fffefd7f" + "00" * 24
    x = np.zeros(32, np.float32)
    x[1] = -1e-9
    assert _hex(G.quantize(x, "Q8_0")) == "00000081" + "00" * 30
    x = np.full(32, 1e-7, np.float32)
    x[0] = 3e-7
    assert _hex(G.quantize(x, "Q8_0"))[:10] == "00007f2a2a"
    x = np.arange(32, dtype=np.float32) - 16
    q = G.quantize(x, "Q8_1")
    assert q.shape == (36,)
    assert _hex(q).startswith("083000cc81899199")


def test_golden_q1_0_q2_0():
    x = np.zeros(128, np.float32)
    x[:4] = [1, -1, -0.0, 2]
    assert _hex(G.quantize(x, "Q1_0")) == "0028fd" + "ff" * 15
    x = np.zeros(64, np.float32)
    x[:5] = [1, 0.49999997, -0.49999997, -1, 2]
    assert _hex(G.quantize(x, "Q2_0")) == "00401656" + "55" * 14


def test_q4_1_constant_block():
    assert _hex(G.quantize(np.full(32, 3.0, np.float32), "Q4_1")) == "00000042" + "00" * 16


# ---------------------------------------------------------------------------
# types gguf cannot produce: reference models written here
# ---------------------------------------------------------------------------


def test_q8_1_matches_q8_0_plus_sum():
    x = _data("normal", (4, 512), 11)
    q8 = G.quantize(x, "Q8_0").reshape(-1, 34)
    q81 = G.quantize(x, "Q8_1").reshape(-1, 36)
    assert np.array_equal(q81[:, :2], q8[:, :2])
    assert np.array_equal(q81[:, 4:], q8[:, 2:])
    qs = q8[:, 2:].view(np.int8).astype(np.int64).sum(axis=1, keepdims=True)
    d32 = np.abs(x.reshape(-1, 32)).max(axis=1, keepdims=True) / np.float32(127)
    s = (qs.astype(np.float32) * d32).astype(np.float16)
    assert np.array_equal(q81[:, 2:4].copy().view(np.float16), s)
    y81 = G.dequantize(q81.reshape(4, -1), "Q8_1")
    assert np.array_equal(y81, G.dequantize(q8.reshape(4, -1), "Q8_0"))


def test_q8_k_reference():
    x = _data("normal", (2, 512), 5)
    x[1, 256:] = 0
    q = G.quantize(x, "Q8_K").reshape(-1, 292)
    blocks = x.reshape(-1, 256)
    for b, row in zip(blocks, q, strict=True):
        amax_i = int(np.argmax(np.abs(b)))
        if b[amax_i] == 0:
            assert not row.any()
            continue
        iscale = np.float32(-127) / b[amax_i]
        v = np.rint((iscale * b).astype(np.float32)).astype(np.int64)
        qs = np.minimum(127, v)
        assert np.array_equal(row[4:260].view(np.int8), qs)
        assert np.array_equal(row[260:].view("<i2"), qs.reshape(16, 16).sum(axis=1))
        assert row[:4].view("<f4")[0] == np.float32(1) / iscale
    y = G.dequantize(q.reshape(2, -1), "Q8_K")
    d = q[:, :4].copy().view("<f4")
    ref = (d * q[:, 4:260].view(np.int8).astype(np.float32)).reshape(2, -1)
    assert np.array_equal(y, ref)


def test_q1_0_reference():
    x = _data("normal", (4, 1024), 9)
    q = G.quantize(x, "Q1_0").reshape(-1, 18)
    for b, row in zip(x.reshape(-1, 128), q, strict=True):
        s = np.float32(0)
        for v in np.abs(b):  # sequential fp32 sum, as ggml
            s = np.float32(s + v)
        assert row[:2].view("<f2")[0] == np.float16(s / np.float32(128))
        assert np.array_equal(np.unpackbits(row[2:], bitorder="little").astype(bool), b >= 0)
    y = G.dequantize(q.reshape(4, -1), "Q1_0").reshape(-1, 128)
    d = q[:, :2].copy().view("<f2").astype(np.float32)
    assert np.array_equal(y, np.where(x.reshape(-1, 128) >= 0, d, -d))


def test_nvfp4_quantize_reference():
    gguf = gguf_mod()
    x = _data("normal", (4, 1024), 13)
    q = G.quantize(x, "NVFP4")
    nv = gguf.quants.NVFP4
    sub = x.reshape(-1, 16)
    amax = np.abs(sub).max(axis=1)
    ue = nv.fp32_to_ue4m3((amax / np.float32(6)).astype(np.float32)).astype(np.uint8)
    d = nv.ue4m3_to_fp32(ue).astype(np.float32)
    kv = np.array(nv.kvalues, np.float32)
    err = np.abs(d[:, None, None] * kv[None, None, :] - sub[:, :, None])
    codes = np.argmin(err, axis=-1).astype(np.uint8)  # first minimum, like ggml's strict <
    qs = codes[:, :8] | (codes[:, 8:] << 4)
    ref = np.concatenate([ue.reshape(-1, 4), qs.reshape(-1, 32)], axis=1).reshape(4, -1)
    assert np.array_equal(q, ref)
    assert np.array_equal(G.dequantize(q, "NVFP4"), gg_dequantize(q, "NVFP4"))


# ---------------------------------------------------------------------------
# fp16 conversion (GGML_FP32_TO_FP16 / GGML_FP16_TO_FP32)
# ---------------------------------------------------------------------------


def test_fp16_to_fp32_all_patterns():
    h = np.arange(65536, dtype=np.uint16)
    out = np.empty(65536, np.float32)
    K.fp16_bits_to_fp32(h, out)
    ref = h.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(out.view(np.uint32)[~nan], ref.view(np.uint32)[~nan])
    assert np.isnan(out[nan]).all()
    # ggml quiets signalling NaNs (bit 22 set)
    assert np.all(out.view(np.uint32)[nan] & 0x00400000)


def test_fp32_to_fp16_matches_numpy_rne():
    rng = np.random.default_rng(0)
    u = rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32)
    special = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x477FEFFF, 0x477FF000, 0x477FE000, 0x33000000,
         0x33000001, 0x387FC000, 0x38800000, 0x387FFFFF, 0x3F800000, 0x3F801000, 0x3F803000],
        np.uint32,
    )  # fmt: skip
    # every fp16 value and the midpoints between neighbours (ties to even)
    h = np.arange(0x7C00, dtype=np.uint16)
    fv = h.view(np.float16).astype(np.float32)
    f = fv.view(np.uint32)
    mids = ((fv[:-1].astype(np.float64) + fv[1:]) / 2).astype(np.float32).view(np.uint32)
    a = np.concatenate([u, special, f, f | 0x80000000, f[1:] - 1, f[1:] + 1, mids, mids + 1])
    x = a.view(np.float32)
    out = np.empty(x.size, np.uint16)
    K.fp32_to_fp16_bits(np.ascontiguousarray(x), out)
    nan = np.isnan(x)
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(out[~nan], ref[~nan])
    assert np.array_equal(out[nan], (a[nan] >> 16 & 0x8000).astype(np.uint16) | 0x7E00)


def test_bf16_rounding_and_nan():
    x = np.array([1.0, 1.00390625, 1.01171875, -3e38, 3.4e38, np.nan, -np.inf, 1e-40], np.float32)
    q = G.quantize(x, "BF16").view("<u2")
    u = x.view(np.uint32)
    ref = np.where(
        (u & 0x7FFFFFFF) > 0x7F800000,
        (u >> 16) | 0x40,
        (u.astype(np.uint64) + 0x7FFF + ((u >> 16) & 1)) >> 16,
    ).astype(np.uint16)
    assert np.array_equal(q, ref)


# ---------------------------------------------------------------------------
# shapes, dtypes, validation
# ---------------------------------------------------------------------------


def test_shapes_like_gguf():
    x = _data("normal", (2, 3, 64), 1)
    q = G.quantize(x, "Q4_0")
    assert q.shape == (2, 3, 36) and q.dtype == np.uint8
    y = G.dequantize(q, "Q4_0")
    assert y.shape == (2, 3, 64) and y.dtype == np.float32
    assert G.quantize(np.zeros((0, 32), np.float32), "Q8_0").shape == (0, 34)
    assert G.quantize(np.zeros((3, 0), np.float32), "Q8_0").shape == (3, 0)
    assert G.dequantize(np.zeros((5, 0), np.uint8), "Q4_K").shape == (5, 0)
    assert G.quantize(x, "F32").view(np.float32).reshape(x.shape).tolist() == x.tolist()


def test_input_forms():
    x = _data("normal", (4, 64), 2)
    ref = G.quantize(x, "Q8_0")
    assert np.array_equal(G.quantize(x.astype(np.float64), "Q8_0"), ref)
    big = np.zeros((4, 128), np.float32)
    big[:, ::2] = x
    assert np.array_equal(G.quantize(big[:, ::2], "Q8_0"), ref)  # non-contiguous
    ro = x.copy()
    ro.flags.writeable = False
    assert np.array_equal(G.quantize(ro, "Q8_0"), ref)
    assert np.array_equal(G.quantize(x.tolist(), "Q8_0"), ref)
    y = G.dequantize(ref, "Q8_0")
    assert np.array_equal(G.dequantize(ref[0].tobytes(), "Q8_0"), y[0])
    assert np.array_equal(G.dequantize(bytearray(ref[0].tobytes()), "Q8_0"), y[0])
    ref_ro = ref.copy()
    ref_ro.flags.writeable = False
    assert np.array_equal(G.dequantize(ref_ro, "Q8_0"), y)
    assert np.array_equal(G.dequantize(np.asfortranarray(ref), "Q8_0"), y)
    import ml_dtypes

    xb = x.astype(ml_dtypes.bfloat16)
    assert np.array_equal(G.quantize(xb, "Q8_0"), G.quantize(xb.astype(np.float32), "Q8_0"))


def test_validation_errors():
    x = np.zeros((2, 32), np.float32)
    with pytest.raises(LayoutError, match="block size 32"):
        G.quantize(np.zeros((2, 48), np.float32), "Q4_0")
    with pytest.raises(LayoutError, match="block size 256"):
        G.quantize(np.zeros(32, np.float32), "TQ1_0")
    with pytest.raises(TypeError, match="float array"):
        G.quantize(np.zeros(32, np.int32), "Q4_0")
    with pytest.raises(LayoutError, match="float array"):
        G.quantize(np.zeros(32, bool), "Q4_0")
    with pytest.raises(LayoutError, match="0-d"):
        G.quantize(np.float32(1), "F32")
    with pytest.raises(LayoutError, match="quantize is not supported"):
        G.quantize(np.zeros((2, 256), np.float32), "IQ2_XS")
    with pytest.raises(LayoutError, match="quantize is not supported"):
        G.quantize(x, "I8")
    with pytest.raises(LayoutError, match="dequantize is not supported"):
        G.dequantize(np.zeros(4, np.uint8), "I32")
    with pytest.raises(TypeError, match="uint8"):
        G.dequantize(np.zeros(18, np.int8), "Q4_0")
    with pytest.raises(TypeError, match="uint8"):
        G.dequantize(np.zeros((2, 32), np.float32), "Q4_0")
    with pytest.raises(LayoutError, match="multiple of 18"):
        G.dequantize(np.zeros((2, 20), np.uint8), "Q4_0")
    with pytest.raises(LayoutError, match="0-d"):
        G.dequantize(np.uint8(3), "F32")
    with pytest.raises(TypeError):
        G.quantize(x, 2.0)
    # the raw kernels re-check sizes (no out-of-bounds even when called directly)
    with pytest.raises(ValueError, match="out must hold"):
        K.quantize_blocks(2, 32, 18, np.zeros(64, np.float32), np.zeros(18, np.uint8))
    with pytest.raises(ValueError, match="whole blocks"):
        K.dequantize_blocks(2, 32, 18, np.zeros(19, np.uint8), np.zeros(32, np.float32))
    with pytest.raises(ValueError, match="no quantize kernel"):
        K.quantize_blocks(17, 256, 74, np.zeros(256, np.float32), np.zeros(74, np.uint8))


@pytest.mark.parametrize("name", [*QUANTIZE_TYPES, "NVFP4", "Q1_0", "Q2_0", "Q8_K"])
def test_nan_inf_do_not_crash(name):
    bs = G.type_info(name).block_size
    n = max(bs, 256)
    x = _data("normal", (6, n), 4)
    x[0, 5] = np.nan
    x[1, :] = np.nan
    x[2, 3] = np.inf
    x[3, -1] = -np.inf
    x[4, ::3] = np.nan
    x[5, 0] = np.float32(3e38)
    q = G.quantize(x, name)
    assert q.shape == (6, n // bs * G.type_info(name).type_size)
    G.dequantize(q, name)


def test_dequantize_every_type_random_bytes_no_crash():
    rng = np.random.default_rng(0)
    for info in G.types():
        if not info.can_dequantize:
            continue
        q = rng.integers(0, 256, (3, 5 * info.type_size), dtype=np.uint8)
        y = G.dequantize(q, info.id)
        assert y.shape == (3, 5 * info.block_size)


# ---------------------------------------------------------------------------
# round trips within each type's error bound (hypothesis)
# ---------------------------------------------------------------------------

_ROUNDTRIP = {
    # type: (block, bound(block) -> max allowed |x - y| per block)
    # half a step, plus the fp16 rounding of the scale times the largest code
    "Q8_0": lambda b: np.abs(b).max() * (0.5 / 127 + 2**-10),
    "Q8_1": lambda b: np.abs(b).max() * (0.5 / 127 + 2**-10),
    "Q4_0": lambda b: 1.01 * np.abs(b).max() / 8 + 1e-30,
    "Q5_0": lambda b: 1.01 * np.abs(b).max() / 16 + 1e-30,
    "Q4_1": lambda b: (b.max() - b.min()) * (0.5 / 15 + 2**-10) + abs(b.min()) * 2**-10,
    "Q5_1": lambda b: (b.max() - b.min()) * (0.5 / 31 + 2**-10) + abs(b.min()) * 2**-10,
    "F16": lambda b: np.abs(b).max() * 2**-11,
    "BF16": lambda b: np.abs(b).max() * 2**-8,
    "F32": lambda b: 0.0,
}

_finite = st.floats(-1e4, 1e4, width=32, allow_subnormal=False)


@pytest.mark.parametrize("name", sorted(_ROUNDTRIP))
@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float32, st.tuples(st.integers(1, 3), st.just(64)), elements=_finite))
def test_roundtrip_error_bound(name, x):
    y = G.dequantize(G.quantize(x, name), name)
    bs = max(G.type_info(name).block_size, 32)
    for xb, yb in zip(x.reshape(-1, bs), y.reshape(-1, bs), strict=True):
        xb64 = xb.astype(np.float64)
        # fp16 scales (and F16 values) lose precision below 2^-14: allow their absolute step
        slack = 0.0 if name in ("F32", "BF16") else 128 * 2.0**-24
        assert np.abs(xb64 - yb).max() <= _ROUNDTRIP[name](xb64) * (1 + 1e-6) + slack


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float32, (2, 256), elements=st.floats(-2, 2, width=32)))
def test_ternary_roundtrip(x):
    for name in ("TQ1_0", "TQ2_0"):
        y = G.dequantize(G.quantize(x, name), name)
        for xb, yb in zip(x.reshape(-1, 256), y.reshape(-1, 256), strict=True):
            amax = np.float32(np.abs(xb).max())
            d = np.float32(np.float16(amax))
            # each value becomes -d, 0 or d: the nearest of the three to x/amax
            t = np.where(np.abs(xb) * 2 >= amax, np.sign(xb), 0).astype(np.float32)
            assert np.array_equal(yb, t * d) or amax == 0


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float32, (1, 64), elements=st.floats(-100, 100, width=32)))
def test_mxfp4_roundtrip_picks_nearest(x):
    q = G.quantize(x, "MXFP4")
    y = G.dequantize(q, "MXFP4")
    kv = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)
    for xb, yb, qb in zip(x.reshape(-1, 32), y.reshape(-1, 32), q.reshape(-1, 17), strict=True):
        if np.abs(xb).max() < 2.0**-125:
            continue  # ggml's exponent cast is undefined there (ggml.md §2.7)
        e = qb[0]
        d = np.float32(2.0) ** (int(e) - 128) if e >= 2 else np.float32(2.0**-128 * 2**e)
        err = np.abs(kv[None, :] * np.float32(d) - xb[:, None])
        assert np.all(np.abs(yb - xb) <= err.min(axis=1) * (1 + 1e-6) + 1e-37)


@pytest.mark.parametrize("name", ["Q4_0", "Q8_0"])
def test_simd_and_portable_kernels_agree(name):
    before = K.kernels()
    x = np.concatenate(
        [_data("normal", (8, 256), 21), _data("ints", (8, 256), 22), _edge_rows(256)]
    )
    x = np.concatenate([x, np.where(np.isnan(x), np.float32(0), x) * np.float32(1e-39)])
    try:
        K.kernels("portable")
        ref = G.quantize(x, name)
        if K.kernels("avx2") != "avx2":
            pytest.skip("no AVX2 on this CPU")
        assert np.array_equal(G.quantize(x, name), ref)
    finally:
        K.kernels(before)


def test_nan_follows_ggml_sequential_semantics():
    # ggml.md §2.13 (C on x86-64): NaN is skipped by Q4_0's max search and its code is 0;
    # Q8_0's MAX() loop restarts after a NaN; a NaN last element makes d NaN (0x7e00).
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    x[5] = np.nan
    clean = x.copy()
    clean[5] = 0
    want = bytearray(G.quantize(clean, "Q4_0").tobytes())
    want[2 + 5] &= 0xF0  # element 5 is the low nibble of qs[5]
    assert G.quantize(x, "Q4_0").tobytes() == bytes(want)
    q = G.quantize(x, "Q8_0").tobytes()
    tail_amax = np.abs(x[6:]).max()
    assert q[:2] == np.float16(tail_amax / np.float32(127)).tobytes()
    assert q[2 + 5] == 0
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    x[31] = np.nan
    assert G.quantize(x, "Q8_0").tobytes() == bytes.fromhex("007e") + bytes(32)


def test_out_and_threads():
    x = _data("normal", (64, 4096), 31)  # 8192 blocks: enough to split
    ref = G.quantize(x, "Q4_0")
    assert np.array_equal(G.quantize(x, "Q4_0", threads=2), ref)
    buf = np.empty_like(ref)
    assert G.quantize(x, "Q4_0", out=buf) is buf and np.array_equal(buf, ref)
    y = G.dequantize(ref, "Q4_0")
    assert np.array_equal(G.dequantize(ref, "Q4_0", threads=3), y)
    ybuf = np.empty_like(y)
    assert G.dequantize(ref, "Q4_0", out=ybuf) is ybuf and np.array_equal(ybuf, y)
    k = G.quantize(x[:2, :256] * 0, "Q8_K", out=np.full((2, 292), 7, np.uint8))
    assert not k.any()  # bsums of zero blocks are 0, even in a reused buffer
    with pytest.raises(LayoutError, match="shape"):
        G.quantize(x, "Q4_0", out=np.empty((64, 10), np.uint8))
    with pytest.raises(LayoutError, match="dtype"):
        G.dequantize(ref, "Q4_0", out=np.empty(y.shape, np.float64))
    with pytest.raises(LayoutError, match="C-contiguous"):
        G.dequantize(ref, "Q4_0", out=np.empty(y.shape[::-1], np.float32).T)
    with pytest.raises(TypeError, match="numpy array"):
        G.quantize(x, "Q4_0", out=bytearray(ref.size))
    with pytest.raises(LayoutError, match="threads"):
        G.quantize(x, "Q4_0", threads=0)
    q = np.zeros(34 * 16, np.uint8)
    with pytest.raises(LayoutError, match="overlap"):
        G.dequantize(q[:136], "Q8_0", out=q[:512].view(np.float32))


@pytest.mark.parametrize(
    ("name", "max_rel_rmse"),
    [("Q2_K", 0.40), ("Q3_K", 0.20), ("Q4_K", 0.10), ("Q5_K", 0.05), ("Q6_K", 0.025)],
)
def test_k_quants_roundtrip_quality(name, max_rel_rmse):
    # byte-exactness of the K-quant quantizers is checked against ggml's C code
    # (test_ggml_c_oracle.py, test_ggml_golden.py); here: they are sane quantizers
    x = _data("normal", (16, 1024), 41)
    y = G.dequantize(G.quantize(x, name), name)
    rel = np.sqrt(np.mean((x - y) ** 2)) / np.sqrt(np.mean(x**2))
    assert rel < max_rel_rmse
    z = np.zeros((1, 256), np.float32)
    assert not G.dequantize(G.quantize(z, name), name).any()


# Streaming stores on Intel from 2 MiB of output for Q4_0 / Q8_0 (16384 blocks
# of 32) and 8 MiB for Q4_K (8192 blocks of 256); from four times that on AMD.
@pytest.mark.parametrize(
    ("name", "nblocks"),
    [(t, n) for t in ("Q4_0", "Q8_0") for n in (1, 37, 20000, 70000)]
    + [("Q4_K", n) for n in (1, 37, 2500, 9000)],
)
def test_simd_and_portable_dequantize_agree(name, nblocks):
    info = G.type_info(name)
    q = np.random.default_rng(nblocks).integers(0, 256, nblocks * info.type_size, dtype=np.uint8)
    before = K.kernels()
    try:
        K.kernels("portable")
        ref = G.dequantize(q, name)
        if K.kernels("avx2") != "avx2":
            pytest.skip("no AVX2 on this CPU")
        got = G.dequantize(q, name)
        assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))
        out = np.empty(ref.size + 1, np.float32)[1:]  # misaligned destination: no streaming
        assert np.array_equal(G.dequantize(q, name, out=out).view(np.uint32), ref.view(np.uint32))
    finally:
        K.kernels(before)


def test_repeated_calls_with_out_check_every_array():
    """Repeats with out= and one thread are checked and run in C: they must give
    the first call's bytes for every type kept side by side, and refuse what
    the first call would have refused."""
    x = _data("normal", (3, 2, 256), 43)
    names = ["Q4_0", "Q8_0", "Q4_K", "Q6_K", "Q8_K"]
    want = {t: (G.quantize(x, t), G.dequantize(G.quantize(x, t), t)) for t in names}
    for _ in range(3):
        for t in names:
            q, y = want[t]
            qo = np.full_like(q, 7)
            assert G.quantize(x, t, out=qo) is qo and qo.tobytes() == q.tobytes(), t
            yo = np.empty_like(y)
            assert G.dequantize(q, t, out=yo) is yo and yo.tobytes() == y.tobytes(), t
    q, y = want["Q8_0"]
    with pytest.raises(LayoutError, match="shape"):
        G.dequantize(q, "Q8_0", out=np.empty((3, 2, 255), np.float32))
    with pytest.raises(LayoutError, match="shape"):
        G.quantize(x, "Q8_0", out=np.empty((2, 3, q.shape[-1]), np.uint8))
    with pytest.raises(LayoutError, match="dtype"):
        G.quantize(x, "Q8_0", out=q.view(np.int8))
    read_only = np.empty_like(y)
    read_only.flags.writeable = False
    with pytest.raises(LayoutError, match="writeable"):
        G.dequantize(q, "Q8_0", out=read_only)
    shared = np.zeros(x.size + q.size, np.float32)
    with pytest.raises(LayoutError, match="overlap"):
        G.dequantize(shared.view(np.uint8)[: q.size].reshape(q.shape), "Q8_0",
                     out=shared[: y.size].reshape(y.shape))  # fmt: skip
    with pytest.raises(TypeError, match="bool"):
        G.quantize(x, True, out=np.empty_like(q))
    raw = np.empty(y.nbytes + 1, np.uint8)[1:].view(np.float32).reshape(y.shape)  # unaligned
    assert G.dequantize(q, "Q8_0", out=raw).tobytes() == y.tobytes()
    strided = np.empty((3, 2, 2 * x.shape[-1]), np.float32)[..., ::2]
    strided[...] = x
    assert G.quantize(strided, "Q8_0", out=np.empty_like(q)).tobytes() == q.tobytes()
