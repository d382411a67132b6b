"""Unusual input found by an adversarial pass over the public API: zero-byte
elements, offsets past int64, pad values a cast would change, shapes of floats
that equal ints, TensorRT versions given as floats, unknown dtype names and
outputs too large to exist. Each must raise a named error, never crash or
return wrong bytes."""

from __future__ import annotations

import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import layoutkit as lk


def _in_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, so that a crash fails the test instead of the run."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


ZERO_BYTE_CALLS = {
    "pack": "lk.Layout('NCHW4c').pack(np.zeros((1, 1, 1, 2), 'V0'))",
    "convert": "lk.convert(np.zeros(2, 'V0'), (1, 1, 1, 2), 'NCHW', 'NCHW4c')",
    "vitis": "lk.vitis.to_hw(np.zeros((1, 3, 2, 2), 'V0'), 'NCHW', 'HCWNC4')",
    "htp": "lk.htp.layout('R4CroutonLayout').pack(np.zeros((1, 3, 2, 2), 'V0'))",
    "kernel": "lk.kernels.RepackKernel('NCHW', 'NCHW4c', (1, 3, 2, 2), 'V0')",
}


@pytest.mark.parametrize("call", ZERO_BYTE_CALLS.values(), ids=ZERO_BYTE_CALLS.keys())
def test_zero_byte_elements_are_refused_not_a_crash(call: str) -> None:
    code = (
        "import numpy as np, layoutkit as lk\n"
        f"try:\n    {call}\nexcept lk.LayoutError as e:\n    print('refused:', e)\n"
    )
    done = _in_child(code)
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "0-byte elements" in done.stdout


def test_offsets_past_int64_raise_instead_of_wrapping() -> None:
    layout = lk.Layout("NCHW")
    shape, index = (2**32, 2**32, 1, 1), (2**32 - 1, 2**32 - 1, 0, 0)
    assert layout.offset(shape, index) == 2**64 - 1  # exact, in Python ints
    with pytest.raises(lk.LayoutError, match="int64"):
        layout.offsets(shape, np.array([index]))
    with pytest.raises(lk.LayoutError, match="int64"):
        layout.offsets((2**62, 2**62, 2, 2), np.array([[1, 1, 1, 1]]))


def test_unsigned_indices_past_int64_are_reported_as_given() -> None:
    layout = lk.Layout("NCHW")
    with pytest.raises(lk.LayoutError, match="9223372036854775808"):
        layout.offsets((4, 4, 4, 4), np.array([[0, 2**63, 0, 0]], np.uint64))
    got = layout.offsets((4, 4, 4, 4), np.array([[0, 3, 0, 0]], np.uint64))
    assert got.tolist() == [48]


@pytest.mark.parametrize("dtype", ["S2", "U2"])
def test_string_padding_is_zero_bytes(dtype: str) -> None:
    x = np.array(["ab"], dtype).reshape(1, 1, 1, 1)
    packed = lk.Layout("NCHW4c").pack(x)
    raw = packed.tobytes()
    itemsize = np.dtype(dtype).itemsize
    assert raw[:itemsize] == x.tobytes()
    assert raw[itemsize:] == bytes(3 * itemsize)
    text = lk.Layout("NCHW4c").pack(x, pad_value="z")
    assert text.ravel()[1:].tolist() == ["z"] * 3 if dtype == "U2" else [b"z"] * 3
    with pytest.raises(lk.LayoutError, match="pad_value=5"):
        lk.Layout("NCHW4c").pack(x, pad_value=5)


@pytest.mark.parametrize(
    ("dtype", "pad_value", "match"),
    [
        (np.uint8, 1.5, "would become 1"),
        (np.int8, float("inf"), "int8"),
        (np.float16, 1e6, "float16"),
        (np.bool_, 2, "would become True"),
        (ml_dtypes.int4, 20, "would become 4"),
        (ml_dtypes.float8_e4m3fn, 1e6, "float8_e4m3fn"),
        (np.float32, None, "pad_value=None"),
    ],
)
def test_pad_values_a_cast_would_change_are_refused(dtype, pad_value, match) -> None:
    x = np.ones((1, 1, 1, 1), dtype)
    with pytest.raises(lk.LayoutError, match=match):
        lk.Layout("NCHW4c").pack(x, pad_value=pad_value)


@pytest.mark.parametrize(
    ("dtype", "pad_value"),
    [
        (np.uint8, 2.0),
        (np.float16, 0.1),
        (np.float32, float("nan")),
        (np.float16, float("-inf")),
        (ml_dtypes.bfloat16, -1.0),
        (ml_dtypes.bfloat16, float("-inf")),
        (ml_dtypes.int4, -3),
        (np.int64, 2**62),
        (np.uint64, 2**64 - 1),
    ],
)
def test_numeric_pad_values_are_written_as_numpy_casts_them(dtype, pad_value) -> None:
    x = np.ones((1, 1, 1, 1), dtype)
    packed = lk.Layout("NCHW4c").pack(x, pad_value=pad_value)
    want = np.array(pad_value, dtype=dtype).tobytes()
    assert packed.tobytes()[np.dtype(dtype).itemsize :] == want * 3


def test_float_extents_are_refused_however_warm_the_caches() -> None:
    layout = lk.Layout("NCHW4c")
    x = np.arange(12, dtype=np.uint8).reshape(1, 3, 2, 2)
    packed = layout.pack(x)
    for _ in range(2):  # the second round has every cache warm
        assert layout.padded_shape((1, 3, 2, 2)) == (1, 4, 2, 2)
        np.testing.assert_array_equal(layout.unpack(packed, (1, 3, 2, 2)), x)
        for call in (
            lambda: layout.padded_shape((1, 3.0, 2, 2)),
            lambda: layout.size((1, 3.0, 2, 2)),
            lambda: layout.unpack(packed, (1, 3.0, 2, 2)),
            lambda: layout.unpack(packed, (1, 3.0, 2, 2), out=np.empty_like(x)),
            lambda: lk.convert(packed, (1, 3.0, 2, 2), "NCHW4c", "NCHW"),
            lambda: lk.vitis.to_cpu(np.zeros(16, np.int8), "HCWNC4", (1, 3.0, 2, 2), "NCHW"),
        ):
            with pytest.raises((TypeError, lk.LayoutError), match=r"3\.0"):
                call()


@pytest.mark.parametrize(
    ("version", "error"),
    [
        (10.1, TypeError),  # 10.10 and 10.1 are the same float
        ("10.-1", lk.LayoutError),
        (("a", "b"), lk.LayoutError),
        ((None, 1), lk.LayoutError),
        ((10, -1), lk.LayoutError),
        ("x", lk.LayoutError),
        (True, TypeError),
    ],
)
def test_tensorrt_versions_that_are_ambiguous_or_malformed(version, error) -> None:
    with pytest.raises(error, match="version"):
        lk.tensorrt.format_info("kCHW4", version=version)


def test_tensorrt_version_strings_and_pairs() -> None:
    info = lk.tensorrt.format_info
    assert info("kCHW4", version="10.10").rules == "TensorRT 10.9-10.11 rules"
    assert info("kCHW4", version=(10, 9)).rules == "TensorRT 10.9-10.11 rules"
    assert info("kCHW4", version="10.9.1").rules == "TensorRT 10.9-10.11 rules"
    assert info("kCHW4", version="10.1").rules == info("kCHW4", version="10.8").rules


@pytest.mark.parametrize("strict", [None, "yes", 1])
def test_tensorrt_strict_must_be_a_bool(strict) -> None:
    with pytest.raises(TypeError, match="strict"):
        lk.tensorrt.format_info("kCHW4", strict=strict)


def test_dla_dtype_message_names_kfloat() -> None:
    x = np.zeros((1, 3, 2, 9), np.float32)
    with pytest.raises(lk.LayoutError, match="got kFLOAT"):
        lk.tensorrt.to_format(x, "kLINEAR", device="dla")


def test_tensorrt_from_format_reads_raw_bytes() -> None:
    x = np.arange(24, dtype=np.int8).reshape(1, 3, 2, 4)
    raw = lk.tensorrt.to_format(x, "kCHW4").tobytes()
    back = lk.tensorrt.from_format(raw, "kCHW4", x.shape, dtype="int8")
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize(
    "call",
    [
        lambda: lk.Layout("NCHW4c").pack(np.zeros((1, 3, 2, 2), np.float32), dtype="int9"),
        lambda: lk.htp.chunk_bytes(lk.htp.layout("R4CroutonLayout"), "floaty"),
        lambda: lk.Layout("NCHW", element_sizes=(1,)).check_dtype("floaty"),
    ],
)
def test_unknown_dtype_names_name_the_argument(call) -> None:
    with pytest.raises(lk.LayoutError, match=r"'(int9|floaty)': not a numpy dtype"):
        call()


def test_larod_dtype_none_is_not_float64() -> None:
    with pytest.raises(TypeError, match="got None"):
        lk.larod.pitches((1, 3, 4, 4), None)


def test_outputs_too_large_to_address_are_refused_before_numpy() -> None:
    x = np.zeros((1, 3, 2, 2), np.uint8)
    with pytest.raises(lk.LayoutError, match="more than this process can address"):
        lk.Layout("NCHW99999999999999999999c").pack(x)
    with pytest.raises(lk.LayoutError, match="more than this process can address"):
        lk.larod.pack(np.zeros((1, 1, 1, 1), np.uint8), (2**70, 2**69, 256000, 1024))


def test_raw_bytes_are_a_buffer_of_uint8_like_bytearray() -> None:
    x = np.arange(12, dtype=np.uint8).reshape(1, 3, 2, 2)
    want = lk.convert(bytearray(x.tobytes()), x.shape, "NCHW", "NCHW4c")
    got = lk.convert(x.tobytes(), x.shape, "NCHW", "NCHW4c")
    np.testing.assert_array_equal(got, want)
    hw = lk.vitis.to_hw(x.view(np.int8), "NCHW", "HCWNC4")
    back = lk.vitis.to_cpu(hw.tobytes(), "HCWNC4", x.shape, "NCHW")
    np.testing.assert_array_equal(back.view(np.uint8), x)


@pytest.mark.parametrize(
    ("src", "dst", "shape"),
    [
        (lk.Layout("N2n"), lk.Layout("N", left_pad=(1,)), (2,)),
        (
            lk.htp.layout("R4CroutonLayout"),
            lk.Layout("NHWC", left_pad=(0, 1, 1, 0)),
            (1, 5, 6, 3),
        ),
        (lk.Layout("NCHW4c"), lk.Layout("NCHW", left_pad=(0, 3, 0, 0)), (2, 5, 3, 2)),
    ],
)
def test_destination_left_pad_beyond_the_source_frame_is_written(src, dst, shape) -> None:
    """A destination whose left pad exceeds the source's on a dim the source blocks:
    every padding slot is written (it was left as the output held it)."""
    rng = np.random.default_rng(0)
    x = rng.integers(1, 200, shape).astype(np.uint8)
    buf = src.pack(x)
    out = np.full(dst.size(shape), 99, np.uint8)
    got = lk.convert(buf, shape, src, dst, pad_value=7, out=out)
    np.testing.assert_array_equal(got, dst.pack(x, pad_value=7))


def test_scale_past_float32_is_an_error_not_a_warning() -> None:
    x = np.zeros((1, 3, 2, 2), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(lk.LayoutError, match="scale=1e"):
            lk.Layout("NCHW4c").pack(x, dtype=np.int8, scale=1e300)


def test_bools_are_not_extents() -> None:
    with pytest.raises(TypeError, match="not a bool"):
        lk.Layout("NCHW4c").size((True, 3, 2, 2))
    with pytest.raises(TypeError, match="not a bool"):
        lk.Layout("NCHW4c").unpack(np.zeros(16, np.uint8), (1, np.True_, 2, 2))


def test_ggml_tensor_extents_name_ne_and_fit_ggml() -> None:
    with pytest.raises(TypeError, match="ne: expected"):
        lk.ggml.new_tensor("F32", 2.5)
    with pytest.raises(lk.LayoutError, match="more than ggml's sizes hold"):
        lk.ggml.new_tensor("F32", 2**62, 2**62, no_alloc=True)
    assert lk.ggml.new_tensor("F32", [4, 2]).nb == (4, 16, 32, 32)
