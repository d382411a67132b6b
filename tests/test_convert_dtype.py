"""Element conversion fused into the repack: quantize, dequantize, float casts.

References are written here with numpy (ONNX QuantizeLinear / DequantizeLinear
formulas, numpy's and ml_dtypes' round-to-nearest-even casts) and compared byte
for byte, over layouts that reach every kernel path.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import ref_pack

import layoutkit as lk

FLOATS = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
INTS = [np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.uint16)]
LAYOUTS = [
    ("NCHW", "NCHW"),
    ("NHWC", "NCHW"),
    ("NCHW4c", "NCHW"),
    ("HCWN4c", "NCHW"),
    ("HCWN8c", "NCHW"),
    ("NCHW32c", "NCHW"),
    ("NHWC8h8w32c", "NCHW"),
    ("NCHW3c", "NCHW"),
]


def quantize_ref(x, scale, zero_point, dtype):
    """ONNX QuantizeLinear in float32; NaN -> zero point (layoutkit policy)."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = x.astype(np.float32) / np.float32(scale)
        r = np.rint(v) + np.float32(zero_point)
        r[np.isnan(v)] = zero_point
        info = np.iinfo(dtype)
        return np.clip(r, info.min, info.max).astype(dtype)


def dequantize_ref(q, scale, zero_point, dtype):
    return ((q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)).astype(dtype)


def _image(shape, dtype, seed=0, special=True):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 150).astype(np.float32)
    if special:
        flat = x.reshape(-1)
        flat[::53] = np.nan
        flat[1::97] = np.inf
        flat[2::89] = -np.inf
        flat[3::31] = 0.5  # exact ties after division by 1
        flat[4::37] = -2.5
    return x.astype(dtype)


@pytest.mark.parametrize(("tag", "dims"), LAYOUTS)
@pytest.mark.parametrize("src", FLOATS, ids=str)
@pytest.mark.parametrize("dst", INTS, ids=str)
def test_quantize_pack(tag, dims, src, dst, store_mode):
    shape = (2, 5, 11, 37)
    x = _image(shape, src)
    scale, zp = (1.0, 3) if dst.kind == "i" else (0.75, 128)
    layout = lk.Layout(tag, dims=dims)
    got = layout.pack(x, dtype=dst, scale=scale, zero_point=zp)
    want = ref_pack(quantize_ref(x, scale, zp, dst), tag, dims=dims)
    assert got.dtype == dst
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("tag", "dims"), LAYOUTS)
@pytest.mark.parametrize("q", INTS, ids=str)
@pytest.mark.parametrize("dst", FLOATS, ids=str)
def test_dequantize_unpack(tag, dims, q, dst, store_mode):
    shape = (1, 7, 13, 29)
    rng = np.random.default_rng(1)
    info = np.iinfo(q)
    logical = rng.integers(info.min, info.max, shape, endpoint=True).astype(q)
    layout = lk.Layout(tag, dims=dims)
    buf = layout.pack(logical)
    got = layout.unpack(buf, shape, dtype=dst, scale=0.0078125, zero_point=int(info.min) + 5)
    want = dequantize_ref(logical, 0.0078125, int(info.min) + 5, dst)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("tag", "dims"), LAYOUTS)
@pytest.mark.parametrize("src", FLOATS, ids=str)
@pytest.mark.parametrize("dst", FLOATS, ids=str)
def test_float_casts(tag, dims, src, dst):
    if src == dst:
        pytest.skip("no conversion")
    shape = (1, 9, 10, 33)
    x = _image(shape, src, seed=2)
    layout = lk.Layout(tag, dims=dims)
    got = layout.pack(x, dtype=dst)
    with np.errstate(over="ignore"):
        want = ref_pack(x.astype(np.float32).astype(dst), tag, dims=dims)
    # NaN payloads are not pinned; everything else is bit-exact.
    gv, wv = got.astype(np.float32), want.astype(np.float32)
    assert np.array_equal(np.isnan(gv), np.isnan(wv))
    ok = ~np.isnan(wv)
    assert (
        got.view(f"u{got.dtype.itemsize}")[ok].tobytes()
        == want.view(f"u{want.dtype.itemsize}")[ok].tobytes()
    )


def test_every_half_to_float32_exact():
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(1, 1, 1, -1)
    got = lk.Layout("NCHW").pack(halves, dtype=np.float32)
    want = halves.astype(np.float32)
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))
    assert np.isnan(got[~ok]).all()


def test_random_float32_bits_round_to_nearest_even():
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).reshape(1, 1, 1, -1)
    ok = ~np.isnan(x)
    with np.errstate(over="ignore", invalid="ignore"):
        for dt in (np.float16, ml_dtypes.bfloat16):
            got = lk.Layout("NCHW").pack(x, dtype=dt)
            want = x.astype(dt)
            assert np.array_equal(got.view(np.uint16)[ok], want.view(np.uint16)[ok])
            assert np.isnan(got[~ok].astype(np.float32)).all()


@settings(max_examples=60, deadline=None)
@given(
    c=st.integers(1, 40),
    hw=st.integers(1, 300),
    scale=st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False),
    zp=st.integers(-128, 127),
    tag=st.sampled_from(["HCWN4c", "HCWN8c", "HCWN16c", "NHWC", "NCHW4c"]),
    seed=st.integers(0, 2**16),
)
def test_quantize_property(c, hw, scale, zp, tag, seed):
    x = _image((1, c, 1, hw), np.float32, seed=seed)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=np.int8, scale=scale, zero_point=zp)
    assert (
        got.tobytes() == ref_pack(quantize_ref(x, scale, zp, np.int8), tag, dims="NCHW").tobytes()
    )
    back = layout.unpack(got, x.shape, dtype=np.float32, scale=scale, zero_point=zp)
    assert (
        back.tobytes()
        == dequantize_ref(quantize_ref(x, scale, zp, np.int8), scale, zp, np.float32).tobytes()
    )


def test_convert_with_quantize_between_layouts():
    x = _image((1, 3, 50, 70), np.float32)
    a, b = lk.Layout("NHWC", dims="NCHW"), lk.Layout("HCWN4c", dims="NCHW")
    got = lk.convert(
        a.pack(x), x.shape, a, b, dtype=np.uint8, scale=1 / 64, zero_point=128, pad_value=0
    )
    assert (
        got.tobytes()
        == ref_pack(quantize_ref(x, 1 / 64, 128, np.uint8), "HCWN4c", dims="NCHW").tobytes()
    )


def test_pad_value_in_output_dtype():
    x = np.ones((1, 3, 2, 2), np.float32)
    got = lk.Layout("NCHW4c").pack(x, dtype=np.int8, scale=1.0, zero_point=0, pad_value=-7)
    assert got[..., 3].ravel().tolist() == [-7] * 4


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"dtype": np.int8}, lk.LayoutError, "needs scale"),
        ({"dtype": np.int8, "scale": 0.0}, lk.LayoutError, "scale"),
        ({"dtype": np.int8, "scale": float("nan")}, lk.LayoutError, "scale"),
        ({"dtype": np.int8, "scale": 1.0, "zero_point": 300}, lk.LayoutError, "zero_point"),
        ({"dtype": np.int8, "scale": 1.0, "zero_point": 1.5}, TypeError, "zero_point"),
        ({"scale": 1.0}, lk.LayoutError, "without dtype"),
        ({"dtype": np.float64}, lk.LayoutError, "supported"),
        ({"dtype": np.float16, "scale": 2.0}, lk.LayoutError, "float cast"),
        ({"dtype": np.float32, "scale": 2.0}, lk.LayoutError, "nothing to quantize"),
    ],
)
def test_conversion_errors(kwargs, exc, match):
    x = np.zeros((1, 3, 2, 2), np.float32)
    with pytest.raises(exc, match=match):
        lk.Layout("NCHW4c").pack(x, **kwargs)


def test_integer_to_integer_is_refused():
    q = np.zeros((1, 4, 2, 2), np.int8)
    with pytest.raises(lk.LayoutError, match="integer-to-integer"):
        lk.Layout("NCHW4c").pack(q, dtype=np.uint8, scale=1.0)


def test_quantize_through_the_gather_fallback():
    """Blocks of 3 and 4 on one dim have no linear plan; the result must not change."""
    x = _image((1, 7, 5, 6), np.float32)
    a, b = lk.Layout("NCHW3c"), lk.Layout("NCHW4c")
    got = lk.convert(a.pack(x), x.shape, a, b, dtype=np.int8, scale=0.5, zero_point=-3)
    assert got.tobytes() == ref_pack(quantize_ref(x, 0.5, -3, np.int8), "NCHW4c").tobytes()


@pytest.mark.parametrize("scale", [1 / 128, 0.37, 3.0, 1e-3, 7.25e-5, 1 / 3])
@pytest.mark.parametrize("dst", [np.int8, np.uint8])
def test_quantize_near_ties_is_exact(scale, dst):
    """Values whose quotient is at or next to a half-integer, where x * (1/scale)
    and x / scale can round differently; the result must follow the division."""
    k = np.arange(-300, 300, dtype=np.float32)
    base = (k + np.float32(0.5)) * np.float32(scale)
    neighbours = [np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))]
    x = np.concatenate([base, *neighbours, base * np.float32(1.0000001)]).astype(np.float32)
    x = np.resize(x, 32 * ((x.size + 31) // 32) + 7).reshape(1, 1, 1, -1)  # SIMD body + scalar tail
    got = lk.Layout("NCHW").pack(x, dtype=dst, scale=scale, zero_point=0 if dst == np.int8 else 128)
    want = quantize_ref(x, scale, 0 if dst == np.int8 else 128, dst)
    assert got.tobytes() == want.tobytes()


def test_cached_validation_still_tells_bool_from_int():
    """Conversions are validated once per (dtype, scale, zero_point); True is not 1."""
    x = np.zeros((1, 3, 4, 4), np.float32)
    layout = lk.Layout("NCHW4c")
    assert layout.pack(x, dtype=np.int8, scale=0.5, zero_point=1).ravel()[0] == 1
    with pytest.raises(TypeError, match="zero_point"):
        layout.pack(x, dtype=np.int8, scale=0.5, zero_point=True)
    with pytest.raises(TypeError, match="zero_point"):
        layout.pack(x, dtype=np.int8, scale=0.5, zero_point=1.0)


@pytest.mark.parametrize("scale", [1 / 128, 0.37, 1 / 3])
@pytest.mark.parametrize(
    ("dst", "zero_point"),
    [(np.int8, -128), (np.int8, -5), (np.int8, 127), (np.uint8, 7), (np.uint8, 255)],
)
def test_quantize_saturation_and_far_ties(scale, dst, zero_point):
    """Zero points at the ends of the range, quotients far beyond it (ties near
    +-1024 and +-32768 included), infinities and NaN, in the SIMD body and tail."""
    k = np.concatenate([np.arange(-1100, -900), np.arange(-60, 60), np.arange(900, 1100)])
    base = (k.astype(np.float32) + np.float32(0.5)) * np.float32(scale)
    far = np.float32(scale) * np.array([32767.5, -32768.5, 40000.0, -40000.0, 2.0**31, -(2.0**31)])
    special = np.array([np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 0.0, -0.0])
    up, down = np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))
    parts = [base, up, down, far.astype(np.float32), special.astype(np.float32)]
    x = np.concatenate(parts).astype(np.float32)
    x = np.resize(x, 32 * ((x.size + 31) // 32) + 5).reshape(1, 1, 1, -1)
    got = lk.Layout("NCHW").pack(x, dtype=dst, scale=scale, zero_point=zero_point)
    want = quantize_ref(x, scale, zero_point, dst)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("tag", "channels"),
    [
        ("NCHW4c", 3), ("NCHW4c", 4), ("NCHW4c", 6), ("HCWN4c", 3), ("HCWN4c", 1),
        ("NCHW8c", 5), ("HCWN8c", 8), ("HCWN8c", 1), ("NCHW16c", 13), ("NCHW16c", 3),
        ("HCWN16c", 16), ("HCWN4c", 17), ("HCWN8c", 20), ("HCWN16c", 40),
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    ("dst", "scale", "zero_point", "pad_value"),
    [
        (np.int8, 1 / 128, 0, 0), (np.int8, 0.37, -3, -7), (np.int8, 1 / 3, 127, 100),
        (np.uint8, 1 / 64, 128, 0), (np.uint8, 0.05, 255, 250),
    ],
)  # fmt: skip
@pytest.mark.parametrize("source", ["dense", "wide", "strided"])
def test_quantize_into_byte_lanes(tag, channels, dst, scale, zero_point, pad_value, source):
    """float32 planes quantized into rows of 4/8/16 byte lanes, padding lanes
    included, rows not a multiple of 8 (the last step overlaps the one before),
    several channel blocks per H row: by the fused quantize-and-interleave kernel
    (rows of 32+ pixels, and rows of any length read from a strided source), or
    converted first and then repacked (a dense source of HCWN rows under 32)."""
    width = 40 if source == "wide" else 29
    x = _image((1, channels, 13, width + (source == "strided")), np.float32, seed=channels)
    if source == "strided":
        x = x[..., 1:]
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(
        x, dtype=dst, scale=scale, zero_point=zero_point, pad_value=pad_value
    )  # fmt: skip
    want = ref_pack(quantize_ref(x, scale, zero_point, dst), tag, dims="NCHW", pad_value=pad_value)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("tag", "shape"), [("HCWN4c", (1, 4096, 7, 7)), ("HCWN8c", (1, 1024, 14, 14)),
                                            ("HCWN16c", (1, 700, 14, 15)), ("HCWN4c", (2, 256, 9, 9)),
                                            ("HCWN8c", (1, 16384, 12, 12))])  # fmt: skip
@pytest.mark.parametrize("threads", [1, 2])
def test_quantize_large_dense_sources_first(tag, shape, threads):
    """A dense float32 source of short rows past 512 KiB (up to 16 MiB) is
    quantized as one run and then repacked as bytes; the last shape's 2.3 MiB
    output is also split between two threads, whose slices are not dense and go
    through the fused kernel."""
    x = _image(shape, np.float32, seed=shape[1])
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=np.int8, scale=0.37, zero_point=-3, threads=threads)
    want = ref_pack(quantize_ref(x, 0.37, -3, np.int8), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("tag", "channels"), [("HCWN4c", 3), ("HCWN4c", 4), ("HCWN8c", 1),
                                               ("HCWN8c", 6), ("HCWN16c", 16), ("NCHW4c", 4),
                                               ("NCHW8c", 7), ("NCHW16c", 16), ("NCHW16c", 9)])  # fmt: skip
@pytest.mark.parametrize(("dst", "zero_point"), [(np.int8, 0), (np.int8, -100), (np.uint8, 200)])
def test_quantize_into_byte_lanes_far_values(tag, channels, dst, zero_point):
    """The lane kernel's rare path: quotients at and beyond +-2^31, infinities and
    NaN scattered among ordinary values, so some steps of eight rows hold one."""
    scale = 0.37
    rng = np.random.default_rng(channels)
    x = (rng.standard_normal((1, channels, 7, 40)) * 60).astype(np.float32)
    flat = x.reshape(-1)
    far = np.float32(scale) * np.array(
        [2.0**31, -(2.0**31), 2.0**32, -(2.0**33), 32767.5, -32768.5]
    )
    flat[5::23] = np.resize(far.astype(np.float32), flat[5::23].size)
    flat[11::61] = np.resize(np.array([np.nan, np.inf, -np.inf], np.float32), flat[11::61].size)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=dst, scale=scale, zero_point=zero_point)
    want = ref_pack(quantize_ref(x, scale, zero_point, dst), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("tag", ["NCHW4c", "NCHW8c", "NCHW16c", "HCWN8c", "HCWN16c"])
@pytest.mark.parametrize("scale", [0.37, 1 / 3, 7.25e-5])
@pytest.mark.parametrize(("dst", "zero_point"), [(np.int8, -3), (np.uint8, 128)])
def test_quantize_into_byte_lanes_near_ties(tag, scale, dst, zero_point):
    """Quotients at and next to half-integers in every lane of long rows (the
    16-row AVX-512 kernel on CPUs that have it, the 8-row one after it): the
    result must follow the division, not x * (1/scale)."""
    k = np.arange(-200, 200, dtype=np.float32)
    base = (k + np.float32(0.5)) * np.float32(scale)
    up, down = np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))
    x = np.concatenate([base, up, down]).astype(np.float32)
    x = np.random.default_rng(7).permutation(np.resize(x, 16 * 3 * 100)).reshape(1, 16, 3, 100)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=dst, scale=scale, zero_point=zero_point)
    want = ref_pack(quantize_ref(x, scale, zero_point, dst), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("tag", "channels"), [("HCWN4c", 3), ("HCWN4c", 8), ("HCWN8c", 13),
                                               ("HCWN16c", 16)])  # fmt: skip
@pytest.mark.parametrize("batch", [2, 3])
@pytest.mark.parametrize(
    ("dst", "scale", "zero_point"), [(np.int8, 1 / 128, 0), (np.uint8, 0.37, 128)]
)
def test_quantize_into_byte_lanes_of_a_batch(tag, channels, batch, dst, scale, zero_point):
    """HCWN4c/8c/16c with N > 1: each destination row holds N x k lanes, so the
    fused kernel writes rows N * k bytes apart (W of 70: a ragged last step)."""
    x = _image((batch, channels, 5, 70), np.float32, seed=channels + batch)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=dst, scale=scale, zero_point=zero_point, pad_value=0)
    want = ref_pack(quantize_ref(x, scale, zero_point, dst), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("tag", "shape"),
    [
        ("HCWN4c", (8, 64, 5, 12)),  # every H row of each lane in one stage
        ("HCWN8c", (8, 16, 100, 56)),  # the stage ends part-way through H
        ("HCWN8c", (64, 16, 2, 600)),  # rows longer than the stage: W in pieces
        ("HCWN4c", (65, 8, 3, 9)),  # more batch indices than the staged kernel takes
        ("HCWN4c", (3, 6, 4, 33)),  # padding lanes, W not a multiple of 8
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_quantize_batch_through_the_stage(tag, shape, threads):
    """HCWNC4/8 of a batch: each batch index's lanes quantized into an L2 stage
    (several H rows at once where they fit), then interleaved N at a time."""
    x = _image(shape, np.float32, seed=sum(shape))
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=np.int8, scale=0.37, zero_point=-3, threads=threads)
    want = ref_pack(quantize_ref(x, 0.37, -3, np.int8), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 12),
    c=st.integers(1, 40),
    h=st.integers(1, 12),
    w=st.integers(1, 80),
    tag=st.sampled_from(["HCWN4c", "HCWN8c", "HCWN16c"]),
    dst=st.sampled_from([np.int8, np.uint8]),
    threads=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**16),
)
def test_quantize_batch_property(n, c, h, w, tag, dst, threads, seed):
    x = _image((n, c, h, w), np.float32, seed=seed)
    zero_point = -5 if dst is np.int8 else 120
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, dtype=dst, scale=0.37, zero_point=zero_point, threads=threads)
    want = ref_pack(quantize_ref(x, 0.37, zero_point, dst), tag, dims="NCHW")
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("tag", ["HCWN4c", "HCWN8c", "HCWN16c", "NCHW8c"])
@pytest.mark.parametrize(
    "shape", [(1, 64, 7, 7), (2, 16, 3, 5), (1, 32, 9, 12), (1, 2048, 7, 7), (3, 40, 7, 7)]
)
@pytest.mark.parametrize(
    ("src", "dst", "zero_point"), [(np.float32, np.int8, -3), (np.float16, np.uint8, 100)]
)
def test_quantize_small_planes_into_byte_lanes(tag, shape, src, dst, zero_point):
    """Rows too short for the fused kernel's step of eight (7x7 planes of many
    channels): the two-pass paths (the dense source converted first, then
    repacked as bytes; or repacked, then converted), and small boxes through
    a stack buffer; with 2 threads the same bytes."""
    x = _image(shape, src, seed=shape[1])
    layout = lk.Layout(tag, dims="NCHW")
    want = ref_pack(quantize_ref(x, 0.37, zero_point, dst), tag, dims="NCHW")
    for threads in (1, 2):
        got = layout.pack(x, dtype=dst, scale=0.37, zero_point=zero_point, threads=threads)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("scale", [1 / 128, 0.37, 1 / 3, 7.25e-5])
@pytest.mark.parametrize(
    ("dst", "zero_point"), [(np.int8, 0), (np.int8, -5), (np.uint8, 128), (np.uint8, 0)]
)
@pytest.mark.parametrize("pad", [0, 3])
@pytest.mark.parametrize("block", [4, 8])
def test_rgb_planes_quantized_into_padded_pixels(scale, dst, zero_point, pad, block):
    """Three float32 planes quantized into NCHW4c/8c and HCWNC4/8 pixels in one
    pass (an AVX-512 kernel on Intel, 64 pixels a step; AVX2 elsewhere): ties
    and their neighbours, saturation far beyond the range, infinities and NaN,
    in planes of whole steps and with a ragged end, against QuantizeLinear then
    numpy's pad and transpose."""
    k = np.arange(-400, 400, dtype=np.float32)
    base = (k + np.float32(0.5)) * np.float32(scale)
    special = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30, 0.0, -0.0], np.float32)
    far = np.float32(scale) * np.array([32767.5, -32768.5, 40000.0, 2.0**31, -(2.0**31)])
    parts = [base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))]
    values = np.concatenate([*parts, special, far.astype(np.float32)]).astype(np.float32)
    tag = f"NCHW{block}c"
    for w in (64, 200, 7 * 64 + 13):
        x = np.resize(np.random.default_rng(w).permutation(values), 3 * 2 * w).reshape(1, 3, 2, w)
        q = quantize_ref(x, scale, zero_point, dst)
        got = lk.Layout(tag).pack(x, pad_value=pad, dtype=dst, scale=scale, zero_point=zero_point)
        assert got.tobytes() == ref_pack(q, tag, pad_value=pad).tobytes(), w
    hw = lk.vitis.load_hsi(
        {
            "inputs": [
                {
                    "name": "x",
                    "cpu_shape": [1, 3, 2, w],
                    "cpu_format": "NCHW",
                    "cpu_dtype": "float32",
                    "hw_shape": [2, 1, w, 1, block],
                    "hw_format": f"HCWNC{block}",
                    "hw_dtype": np.dtype(dst).name,
                    "scale_factor": scale,
                    "zero_point": zero_point,
                }
            ],
            "outputs": [],
        }
    ).inputs[0]
    padded = np.zeros((1, block, 2, w), dst)
    padded[:, :3] = q
    want = padded.reshape(1, 1, block, 2, w).transpose(3, 1, 4, 0, 2)  # [H][C/b][W][N][b]
    assert hw.to_hw(x).tobytes() == want.tobytes()


@pytest.mark.parametrize(("dst", "zero_point"), [(np.int16, 0), (np.int16, -300), (np.int16, 32767),
                                                 (np.uint16, 0), (np.uint16, 32768)])  # fmt: skip
@pytest.mark.parametrize("scale", [0.37, 1 / 3, 7.3, 2.0**-7])
def test_quantize_to_16_bits_near_ties(dst, zero_point, scale):
    """float32 -> int16 / uint16 by the vector loop: values at and next to every
    tie from -70000 to 70000 steps (where x * (1/scale) and x / scale may round
    apart, a window that grows with the quotient), NaN, infinities and far
    values, exactly as dividing."""
    rng = np.random.default_rng(int(scale * 1000) + abs(zero_point))
    k = rng.integers(-70000, 70000, 20000)
    ties = ((k + 0.5) * np.float32(scale)).astype(np.float32)
    near = np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))
    # quotients at the edges of int32 (where adding the zero point could wrap),
    # at every position of a vector step
    edges = np.float32(scale) * np.array([2**31 - 128, -(2**31 - 128), 2**30, -(2**30), 2.0**31,
                                          -(2.0**31), 2.0**32, -(2.0**33)])  # fmt: skip
    edges = np.resize(edges.astype(np.float32), 16 * 9)
    x = np.concatenate([ties, *near, (rng.standard_normal(20000) * 4e4).astype(np.float32), edges,
                        np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 0.0, -0.0], np.float32)])  # fmt: skip
    x = x.reshape(1, 1, 1, -1)
    got = lk.Layout("NCHW").pack(x, dtype=dst, scale=scale, zero_point=zero_point)
    assert got.tobytes() == quantize_ref(x, scale, zero_point, dst).tobytes()
