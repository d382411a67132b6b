"""layoutkit.larod against seed 002, seed-systems.md §3 and direct formulas."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import larod

# --------------------------------------------------------------------------------------
# Direct reference formulas (written from §3.3/§3.4, not via the library)
# --------------------------------------------------------------------------------------

SIZES = {
    "BOOL": 1,
    "UINT8": 1,
    "INT8": 1,
    "UINT16": 2,
    "INT16": 2,
    "UINT32": 4,
    "INT32": 4,
    "UINT64": 8,
    "INT64": 8,
    "FLOAT16": 2,
    "FLOAT32": 4,
    "FLOAT64": 8,
}


def ceil_div(a, b):
    return -(-a // b)


def ref_pitches(dims, e, align):
    n = len(dims)
    p = [0] * n
    p[n - 1] = ceil_div(dims[n - 1] * e, align[n - 1]) * align[n - 1]
    for i in reversed(range(n - 1)):
        p[i] = ceil_div(dims[i] * p[i + 1], align[i]) * align[i]
    return tuple(p)


def ref_pitches_420sp(h, w, e, a_total, a_plane, a_row):
    row = ceil_div(2 * ceil_div(w, 2) * e, a_row) * a_row
    plane = ceil_div(h * row, a_plane) * a_plane
    total = ceil_div(plane + ceil_div(h, 2) * row, a_total) * a_total
    return (total, plane, row)


def ref_offset(index, pitches, e):
    return sum(i * p for i, p in zip(index[:-1], pitches[1:])) + index[-1] * e


def ref_pack(x, pitches):
    """Byte-by-byte model: every element's bytes at its offset, the rest 0."""
    out = bytearray(pitches[0])
    e = x.dtype.itemsize
    for idx in itertools.product(*map(range, x.shape)):
        off = ref_offset(idx, pitches, e)
        out[off : off + e] = x[idx].tobytes()
    return np.frombuffer(bytes(out), np.uint8)


def ref_pack_420sp(y, uv, pitches):
    out = bytearray(pitches[0])
    _, p1, p2 = pitches
    for h, w in itertools.product(*map(range, y.shape)):
        out[h * p2 + w] = int(y[h, w])
        out[p1 + (h // 2) * p2 + (w // 2) * 2] = int(uv[h // 2, w // 2, 0])  # Cb
        out[p1 + (h // 2) * p2 + (w // 2) * 2 + 1] = int(uv[h // 2, w // 2, 1])  # Cr
    return np.frombuffer(bytes(out), np.uint8)


# --------------------------------------------------------------------------------------
# Enums (§3.2)
# --------------------------------------------------------------------------------------


def test_enum_values():
    assert [(m.name, int(m)) for m in larod.TensorLayout] == [
        ("INVALID", 0),
        ("UNSPECIFIED", 1),
        ("NHWC", 2),
        ("NCHW", 3),
        ("LAYOUT_420SP", 4),
        ("MAX", 5),
    ]
    assert larod.TensorLayout.LAYOUT_420SP.larod_name == "LAROD_TENSOR_LAYOUT_420SP"
    names = ["INVALID", "UNSPECIFIED", *SIZES, "MAX"]
    assert [m.name for m in larod.DataType] == names
    assert [int(m) for m in larod.DataType] == list(range(15))
    assert larod.DataType.FLOAT32.larod_name == "LAROD_TENSOR_DATA_TYPE_FLOAT32"
    assert larod.MAX_LEN == 12


@pytest.mark.parametrize("name,size", list(SIZES.items()))
def test_element_sizes_and_names(name, size):
    assert larod.element_size(name) == size
    assert larod.element_size("LAROD_TENSOR_DATA_TYPE_" + name) == size
    assert larod.element_size(name.lower()) == size
    assert larod.element_size(larod.DataType[name]) == size
    assert larod.element_size(int(larod.DataType[name])) == size


def test_numpy_dtypes():
    assert larod.data_type(np.float32) is larod.DataType.FLOAT32
    assert larod.data_type("float16") is larod.DataType.FLOAT16
    assert larod.data_type(np.bool_) is larod.DataType.BOOL
    assert larod.data_type(np.dtype("u8")) is larod.DataType.UINT64


@pytest.mark.parametrize(
    "spelling,member",
    [
        ("NCHW", "NCHW"),
        ("nhwc", "NHWC"),
        ("420SP", "LAYOUT_420SP"),
        ("LAROD_TENSOR_LAYOUT_420SP", "LAYOUT_420SP"),
        ("unspecified", "UNSPECIFIED"),
        (3, "NCHW"),
    ],
)
def test_layout_spellings(spelling, member):
    assert larod.tensor_layout(spelling) is larod.TensorLayout[member]


# --------------------------------------------------------------------------------------
# §3.7 worked examples (the seed's three included)
# --------------------------------------------------------------------------------------


def test_seed_example_1_nchw_float32():
    p = larod.pitches((1, 3, 250, 250), "FLOAT32", "NCHW", align=(1, 1, 1, 32))
    assert p == (768000, 768000, 256000, 1024)
    assert p == (1 * 3 * 250 * 1024, 3 * 250 * 1024, 250 * 1024, 1024)  # the seed's form
    assert larod.offset((1, 3, 250, 250), "float32", p, (0, 1, 2, 3)) == 258060
    assert larod.offset((1, 3, 250, 250), "float32", p, (0, 2, 249, 249)) == 767972
    assert ref_offset((0, 1, 2, 3), p, 4) == 258060


def test_seed_example_2_nhwc_uint8():
    p = larod.pitches((1, 224, 300, 3), "LAROD_TENSOR_DATA_TYPE_UINT8", "NHWC", align=(1, 1, 32, 4))
    assert p == (1 * 224 * 1216, 224 * 1216, 1216, 4) == (272384, 272384, 1216, 4)
    assert p[2] == 1216  # the row pitch is the 3rd pitch for NHWC
    assert larod.offset((1, 224, 300, 3), "uint8", p, (0, 10, 20, 2), "NHWC") == 12242
    assert larod.offset((1, 224, 300, 3), "uint8", p, (0, 223, 299, 2), "NHWC") == 272366


def test_seed_example_3_420sp():
    p = larod.pitches((3, 224, 300), "uint8", "420SP", align=(1, 32, 32))
    assert p == (107520, 71680, 320)
    assert p[0] == 224 * 320 + 224 * 320 // 2
    d = (3, 224, 300)
    off = {
        (0, 10, 20): 3220,
        (1, 10, 20): 73300,
        (2, 10, 20): 73301,
        (0, 223, 299): 71659,
        (1, 223, 299): 107498,
        (2, 223, 299): 107499,
    }
    for idx, want in off.items():
        assert larod.offset(d, "uint8", p, idx, "420SP") == want
    assert max(off.values()) < p[0]


def test_extra_example_4_nchw_uint8():
    p = larod.pitches((1, 3, 224, 300), "uint8", align=(1, 1, 1, 64))
    assert p == (215040, 215040, 71680, 320)
    assert larod.offset((1, 3, 224, 300), "uint8", p, (0, 2, 10, 5)) == 146565


def test_extra_example_5_odd_420sp():
    p = larod.pitches((3, 225, 301), "uint8", "420SP", align=(1, 4096, 64))
    assert p == (109888, 73728, 320)
    assert larod.offset((3, 225, 301), "uint8", p, (1, 224, 300), "420SP") == 109868
    assert larod.offset((3, 225, 301), "uint8", p, (2, 224, 300), "420SP") == 109869 < p[0]


def test_decision_9_odd_width_row_pitch():
    # an odd width without alignment still fits its last CbCr pair
    assert larod.pitches((3, 3, 5), "uint8", "420SP") == (30, 18, 6)
    assert larod.pitches((3, 4, 6), "uint8", "420SP") == (36, 24, 6)


def test_align_none_and_unspecified():
    assert larod.pitches((2, 3), "int16", "UNSPECIFIED") == (12, 6)
    assert larod.pitches((5,), "float64", "UNSPECIFIED", align=(16,)) == (48,)
    assert larod.pitches((), "uint8", "UNSPECIFIED") == ()
    assert larod.pitches((1,) * 12, "uint8", "UNSPECIFIED") == (1,) * 12


# --------------------------------------------------------------------------------------
# Properties against the direct formula
# --------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(1, 300), min_size=1, max_size=12),
    dtype=st.sampled_from(list(SIZES)),
    data=st.data(),
)
def test_pitches_formula(dims, dtype, data):
    align = data.draw(
        st.lists(
            st.sampled_from([1, 2, 3, 4, 16, 32, 64, 100]), min_size=len(dims), max_size=len(dims)
        )
    )
    e = SIZES[dtype]
    want = ref_pitches(dims, e, align)
    assert larod.pitches(dims, dtype, "UNSPECIFIED", align) == want
    if len(dims) == 4:
        assert larod.pitches(dims, dtype, "NCHW", align) == want
        assert larod.pitches(dims, dtype, "NHWC", align) == want
    assert larod.validate_pitches(dims, dtype, want, "UNSPECIFIED", align) == want
    assert larod.strides(dims, dtype, want) == (*want[1:], e)


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(1, 600),
    w=st.integers(1, 600),
    e=st.sampled_from(["uint8", "uint16"]),
    a=st.tuples(*[st.sampled_from([1, 2, 32, 64, 4096])] * 3),
)
def test_pitches_420sp_formula(h, w, e, a):
    want = ref_pitches_420sp(h, w, SIZES[e.upper()], *a)
    assert larod.pitches((3, h, w), e, "420SP", a) == want
    assert larod.validate_pitches((3, h, w), e, want, "420SP", a) == want


@settings(max_examples=30, deadline=None)
@given(
    dims=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    dtype=st.sampled_from([np.uint8, np.int16, np.float32, np.float64]),
    data=st.data(),
)
def test_pack_view_against_byte_model(dims, dtype, data):
    align = data.draw(
        st.lists(st.sampled_from([1, 4, 8, 32]), min_size=len(dims), max_size=len(dims))
    )
    extra = data.draw(st.lists(st.integers(0, 3), min_size=len(dims), max_size=len(dims)))
    p = list(larod.pitches(dims, dtype, "UNSPECIFIED", align))
    # user pitches bigger than needed, still valid
    p[-1] += extra[-1] * np.dtype(dtype).itemsize
    for i in reversed(range(len(p) - 1)):
        p[i] = max(p[i], dims[i] * p[i + 1]) + extra[i]
    p = tuple(p)
    rng = np.random.default_rng(len(dims))
    x = (rng.integers(1, 100, size=dims)).astype(dtype)
    buf = larod.pack(x, p, "UNSPECIFIED")
    assert buf.dtype == np.uint8 and buf.shape == (p[0],)
    np.testing.assert_array_equal(buf, ref_pack(x, p))
    v = larod.view(buf, dims, dtype, p, "UNSPECIFIED")
    assert np.shares_memory(v, buf) and v.strides == (*p[1:], np.dtype(dtype).itemsize)
    np.testing.assert_array_equal(v, x)


# --------------------------------------------------------------------------------------
# pack / view round trips
# --------------------------------------------------------------------------------------


def test_pack_view_seed_example_1():
    dims = (1, 3, 250, 250)
    p = larod.pitches(dims, "float32", align=(1, 1, 1, 32))
    x = np.random.default_rng(0).random(dims, dtype=np.float32)
    buf = larod.pack(x, p)
    assert buf.nbytes == 768000
    rows = buf.view(np.float32).reshape(3, 250, 256)
    np.testing.assert_array_equal(rows[..., :250], x[0])
    assert not rows[..., 250:].any()  # padding bytes zero
    v = larod.view(buf, dims, "FLOAT32", p)
    np.testing.assert_array_equal(v, x)
    v[0, 1, 2, 3] = 7.5  # zero-copy and writeable
    assert buf[258060:258064].view(np.float32)[0] == 7.5


def test_pack_view_seed_example_2():
    dims = (1, 224, 300, 3)
    p = larod.pitches(dims, "uint8", "NHWC", align=(1, 1, 32, 4))
    x = np.random.default_rng(1).integers(0, 256, size=dims, dtype=np.uint8)
    buf = larod.pack(x, p, "NHWC")
    px = buf.reshape(224, 1216)[:, :1200].reshape(224, 300, 4)
    np.testing.assert_array_equal(px[..., :3], x[0])
    assert not px[..., 3].any() and not buf.reshape(224, 1216)[:, 1200:].any()
    np.testing.assert_array_equal(larod.view(buf, dims, "uint8", p, "NHWC"), x)


@pytest.mark.parametrize("h,w", [(224, 300), (225, 301), (1, 1), (2, 3), (5, 4)])
def test_pack_view_420sp(h, w):
    p = larod.pitches((3, h, w), "uint8", "420SP", align=(1, 64, 32))
    rng = np.random.default_rng(h * w)
    y = rng.integers(1, 256, size=(h, w), dtype=np.uint8)
    uv = rng.integers(1, 256, size=(-(-h // 2), -(-w // 2), 2), dtype=np.uint8)
    buf = larod.pack((y, uv), p, "420SP")
    if h * w < 400:
        np.testing.assert_array_equal(buf, ref_pack_420sp(y, uv, p))
    assert int(buf.astype(np.int64).sum()) == int(y.sum(dtype=np.int64) + uv.sum(dtype=np.int64))
    vy, vuv = larod.view(buf, (3, h, w), "uint8", p, "420SP")
    np.testing.assert_array_equal(vy, y)
    np.testing.assert_array_equal(vuv, uv)
    assert np.shares_memory(vy, buf) and np.shares_memory(vuv, buf)
    assert vuv.shape == (-(-h // 2), -(-w // 2), 2)


def test_view_of_bytes_and_larger_buffers():
    dims = (1, 2, 2, 3)
    p = larod.pitches(dims, "uint8", "NHWC", align=(1, 1, 1, 4))
    x = np.arange(12, dtype=np.uint8).reshape(dims)
    raw = bytes(larod.pack(x, p, "NHWC"))
    v = larod.view(raw, dims, "uint8", p, "NHWC")
    np.testing.assert_array_equal(v, x)
    assert not v.flags.writeable
    big = np.zeros(100, np.uint8)
    big[: p[0]] = np.frombuffer(raw, np.uint8)
    np.testing.assert_array_equal(larod.view(big, dims, "uint8", p, "NHWC"), x)
    # a buffer of another dtype is viewed by its bytes
    as32 = np.zeros(25, np.uint32)
    as32.view(np.uint8)[: p[0]] = np.frombuffer(raw, np.uint8)
    np.testing.assert_array_equal(larod.view(as32, dims, "uint8", p, "NHWC"), x)
    np.testing.assert_array_equal(larod.view(bytearray(raw), dims, "uint8", p, "NHWC"), x)


def test_view_unaligned_pitch_float():
    # a row pitch that is not a multiple of the element size still views correctly
    dims = (1, 1, 2, 3)
    p = (30, 30, 30, 15)
    x = np.arange(6, dtype=np.float32).reshape(dims)
    buf = larod.pack(x, p)
    np.testing.assert_array_equal(larod.view(buf, dims, np.float32, p), x)


def test_nv12_conversions():
    h, w = 4, 6
    p = larod.pitches((3, h, w), "uint8", "420SP", align=(1, 1, 8))
    y = np.arange(h * w, dtype=np.uint8).reshape(h, w) + 16
    uv = np.stack(
        [np.full((2, 3), 128, np.uint8), np.arange(6, dtype=np.uint8).reshape(2, 3) + 100], -1
    )
    buf = larod.pack((y, uv), p, "420SP")
    yuv = larod.nv12_to_yuv(buf, (3, h, w), p)
    assert yuv.shape == (h, w, 3)
    np.testing.assert_array_equal(yuv[..., 0], y)
    np.testing.assert_array_equal(yuv[..., 2], np.repeat(np.repeat(uv[..., 1], 2, 0), 2, 1))
    planar = larod.nv12_to_yuv(buf, (3, h, w), p, planar=True)
    np.testing.assert_array_equal(planar, yuv.transpose(2, 0, 1))
    # grey stays grey: Cb = Cr = 128
    grey = larod.pack(
        (np.full((2, 2), 126, np.uint8), np.full((1, 1, 2), 128, np.uint8)), (6, 4, 2), "420SP"
    )
    rgb = larod.nv12_to_rgb(grey, (3, 2, 2), (6, 4, 2))
    assert rgb.shape == (2, 2, 3) and (rgb == round((126 - 16) * 255 / 219)).all()
    full = larod.nv12_to_rgb(grey, (3, 2, 2), (6, 4, 2), full_range=True, planar=True)
    assert full.shape == (3, 2, 2) and (full == 126).all()
    # pure red in BT.601 full range: Y=76, Cb=85, Cr=255 -> about (254, 0, 0)
    red = larod.pack(
        (np.full((2, 2), 76, np.uint8), np.array([[[85, 255]]], np.uint8)), (6, 4, 2), "420SP"
    )
    r, g, b = larod.nv12_to_rgb(red, (3, 2, 2), (6, 4, 2), full_range=True)[0, 0].tolist()
    assert r >= 250 and g <= 3 and b <= 3


# --------------------------------------------------------------------------------------
# Validation and errors (§3.6)
# --------------------------------------------------------------------------------------

E = lk.LayoutError


def test_validate_errors_general():
    d = (1, 3, 250, 250)
    good = (768000, 768000, 256000, 1024)
    with pytest.raises(E, match=r"pitches\[3\] = 999 is smaller than dims\[3\] \* 4 bytes = 1000"):
        larod.validate_pitches(d, "float32", (768000, 768000, 256000, 999))
    with pytest.raises(E, match=r"pitches\[2\] = 255999 is smaller than dims\[2\] \* pitches\[3\]"):
        larod.validate_pitches(d, "float32", (768000, 768000, 255999, 1024))
    with pytest.raises(E, match=r"pitches\[0\] = 1 is smaller"):
        larod.validate_pitches(d, "float32", (1, 768000, 256000, 1024))
    with pytest.raises(E, match="equal lengths"):
        larod.validate_pitches(d, "float32", good[1:])
    with pytest.raises(E, match="at most 12 pitches"):
        larod.validate_pitches((1,) * 12, "uint8", (1,) * 13, "UNSPECIFIED")
    with pytest.raises(E, match="at most 12 dims"):
        larod.pitches((1,) * 13, "uint8", "UNSPECIFIED")
    with pytest.raises(E, match=r"pitches\[3\] = 0; every pitch must be > 0"):
        larod.validate_pitches((1, 1, 1, 0 + 1), "uint8", (1, 1, 1, 0))
    with pytest.raises(E, match=r"not a multiple of its alignment align\[3\] = 32"):
        larod.validate_pitches(d, "float32", (753000, 753000, 251000, 1004), align=(1, 1, 1, 32))
    assert larod.validate_pitches(d, "float32", good, align=(1, 1, 1, 32)) == good
    assert larod.validate_pitches(d, "float32", ()) == ()  # len 0 = unspecified, no check


def test_validate_errors_420sp():
    d = (3, 224, 300)
    with pytest.raises(E, match=r"pitches\[2\] = 299 \(row pitch\)"):
        larod.validate_pitches(d, "uint8", (107520, 71680, 299), "420SP")
    with pytest.raises(E, match=r"pitches\[2\] = 301 \(row pitch\).*2\*ceil\(W/2\)"):
        larod.validate_pitches((3, 10, 301), "uint8", (9000, 6000, 301), "420SP")
    with pytest.raises(E, match=r"pitches\[1\] = 71000 \(Y plane\)"):
        larod.validate_pitches(d, "uint8", (107520, 71000, 320), "420SP")
    with pytest.raises(E, match=r"pitches\[0\] = 107519 \(total\)"):
        larod.validate_pitches(d, "uint8", (107519, 71680, 320), "420SP")
    with pytest.raises(E, match=r"dims \(3, H, W\)"):
        larod.pitches((1, 224, 300), "uint8", "420SP")
    with pytest.raises(E, match=r"dims \(3, H, W\)"):
        larod.pitches((3, 224, 300, 1), "uint8", "420SP")
    with pytest.raises(E, match=r"3 byte alignments \(total, plane, row\)"):
        larod.pitches((3, 224, 300), "uint8", "420SP", align=(32,))


def test_dims_layout_dtype_errors():
    with pytest.raises(E, match="layout NCHW needs 4 dims"):
        larod.pitches((3, 224, 224), "uint8", "NCHW")
    with pytest.raises(E, match="layout NHWC needs 4 dims"):
        larod.pitches((1, 3, 224, 224, 1), "uint8", "NHWC")
    with pytest.raises(E, match=r"dims\[1\] = 0"):
        larod.pitches((1, 0, 2, 2), "uint8")
    with pytest.raises(E, match="INVALID"):
        larod.pitches((1, 1, 1, 1), "uint8", "INVALID")
    with pytest.raises(E, match="MAX"):
        larod.pitches((1, 1, 1, 1), "uint8", 5)
    with pytest.raises(E, match=r"0\.\.5"):
        larod.pitches((1, 1, 1, 1), "uint8", 9)
    with pytest.raises(E, match="'NCWH'"):
        larod.pitches((1, 1, 1, 1), "uint8", "NCWH")
    for bad in ("INVALID", "UNSPECIFIED", "MAX", "LAROD_TENSOR_DATA_TYPE_MAX", 0):
        with pytest.raises(E, match="no element size"):
            larod.pitches((1, 1, 1, 1), bad)
    with pytest.raises(E, match="not a larod data type"):
        larod.pitches((1, 1, 1, 1), "FLOAT8")
    with pytest.raises(E, match="has no larod data type"):
        larod.pitches((1, 1, 1, 1), np.complex64)
    with pytest.raises(E, match=r"align\[3\] = 0"):
        larod.pitches((1, 1, 1, 1), "uint8", align=(1, 1, 1, 0))
    with pytest.raises(E, match="4 byte alignments one per dim"):
        larod.pitches((1, 1, 1, 1), "uint8", align=(1, 32))
    with pytest.raises(TypeError, match="dims"):
        larod.pitches("1x3", "uint8")
    with pytest.raises(TypeError, match="layout"):
        larod.pitches((1, 1, 1, 1), "uint8", 3.0)


def test_pack_view_errors():
    dims = (1, 1, 2, 2)
    p = larod.pitches(dims, "uint8")
    with pytest.raises(E, match="holds 3 bytes but pitches\\[0\\] = 4"):
        larod.view(np.zeros(3, np.uint8), dims, "uint8", p)
    with pytest.raises(E, match="contiguous"):
        larod.view(np.zeros(8, np.uint8)[::2], dims, "uint8", p)
    with pytest.raises(E, match=r"pitches\[3\] = 2 is smaller than dims\[3\] \* 2 bytes = 4"):
        larod.view(np.zeros(4, np.uint8), dims, "uint16", p)
    with pytest.raises(E, match="cannot be viewed"):
        larod.view(np.zeros(4, np.uint8), dims, "uint8", ())
    with pytest.raises(E, match="has no larod data type"):
        larod.pack(np.zeros(dims, np.complex64), (32, 32, 32, 16))
    with pytest.raises(E, match=r"pitches\[3\] = 2 is smaller than dims\[3\] \* 4"):
        larod.pack(np.zeros(dims, np.float32), p)
    with pytest.raises(TypeError, match=r"\(y, uv\)"):
        larod.pack(np.zeros((2, 2), np.uint8), (6, 4, 2), "420SP")
    with pytest.raises(E, match=r"uv has shape \(1, 1\)"):
        larod.pack((np.zeros((2, 2), np.uint8), np.zeros((1, 1), np.uint8)), (6, 4, 2), "420SP")
    with pytest.raises(TypeError, match="buf"):
        larod.view(object(), dims, "uint8", p)
    with pytest.raises(E, match=r"index=.*entry 2 is 2"):
        larod.offset(dims, "uint8", p, (0, 0, 2, 0))
    with pytest.raises(E, match="entry 3 is -1"):
        larod.offset(dims, "uint8", p, (0, 0, 0, -1))


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def test_cli_pitches(capsys):
    from layoutkit.cli import main

    argv = ["pitches", "--dims", "1,3,250,250", "--dtype", "float32", "--layout", "NCHW"]
    assert main([*argv, "--align", "1,1,1,32"]) == 0
    out = capsys.readouterr().out
    assert "pitches: 768000,768000,256000,1024" in out and "row pitch: 1024" in out
    assert (
        main(
            [
                "pitches",
                "--dims",
                "3,224,300",
                "--dtype",
                "UINT8",
                "--layout",
                "420SP",
                "--align",
                "1,32,32",
            ]
        )
        == 0
    )
    assert "pitches: 107520,71680,320" in capsys.readouterr().out
    assert (
        main(
            [
                "pitches",
                "--dims",
                "1,224,300,3",
                "--dtype",
                "uint8",
                "--layout",
                "NHWC",
                "--align",
                "1,1,32,4",
            ]
        )
        == 0
    )
    assert "pitches: 272384,272384,1216,4" in capsys.readouterr().out
    assert main([*argv, "--pitches", "768000,768000,256000,1024"]) == 0
    assert "are valid" in capsys.readouterr().out
    assert main([*argv, "--pitches", "1,2,3,4"]) == 2
    assert "pitches[3] = 4 is smaller" in capsys.readouterr().err
    assert main(["pitches", "--dims", "1,3,x", "--dtype", "uint8"]) == 2
    assert main(["pitches", "--dims", "1,3,4", "--dtype", "uint8"]) == 2
    assert "needs 4 dims" in capsys.readouterr().err
