"""Bad input, as a new user would try it: seed-systems.md §1.11 and the api.md
conventions. Every error is a ``layoutkit.LayoutError`` (a ``ValueError``), or a
``TypeError`` for wrong types, and its message names the problem."""

from __future__ import annotations

import re

import numpy as np
import pytest

import layoutkit as lk

NCHW = (1, 3, 5, 7)


def _msg(excinfo) -> str:
    return str(excinfo.value)


def _parse(parser: str, text: str):
    return lk.Layout(text) if parser == "core" else lk.htp.layout(text)


PARSERS = pytest.mark.parametrize("parser", ["core", "htp"])


def _points_at(msg: str, text: str, pos: int) -> bool:
    """The message gives the position (0- or 1-based) or draws a caret under it."""
    if re.search(rf"(?<!\d)({pos}|{pos + 1})(?!\d)", msg):
        return True
    lines = msg.splitlines()
    for i, line in enumerate(lines[:-1]):
        j = line.find(text)
        if j >= 0 and lines[i + 1].rstrip().endswith("^"):
            if lines[i + 1].rstrip().rfind("^") == j + pos:
                return True
    return False


def test_layout_error_is_value_error():
    assert issubclass(lk.LayoutError, ValueError)
    with pytest.raises(ValueError):
        lk.Layout("NCHW0c")


# ---- tag notation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "char", "pos"),
    [
        ("NC-HW", "-", 2),
        ("NCHW4.5c", ".", 5),
        ("NCH W", " ", 3),
        ("NCHW4C", "C", 5),  # an upper-case letter after a block
        ("NC4cHW", "H", 4),
        ("nchw", "n", 0),
        ("NCHW4", "4", 4),  # a size without its letter
        ("NCHW4c_", "_", 6),
        ("NCHW\u00e9", "\u00e9", 4),
    ],
)
def test_malformed_tag_points_at_character(tag, char, pos):
    with pytest.raises(lk.LayoutError) as ei:
        lk.Layout(tag)
    msg = _msg(ei)
    assert char in msg, msg
    assert _points_at(msg, tag, pos), msg


def test_empty_tag():
    with pytest.raises(lk.LayoutError, match=r"(?i)empty|tag|no dim"):
        lk.Layout("")


def test_duplicate_upper_case_letter():
    with pytest.raises(lk.LayoutError, match="C") as ei:
        lk.Layout("NCHWC")
    assert re.search(r"(?i)duplicate|twice|more than once|repeat|again", _msg(ei)), _msg(ei)


def test_block_for_dim_without_upper_case_letter():
    with pytest.raises(lk.LayoutError, match=r"x|X") as ei:
        lk.Layout("NCHW4x")
    assert "x" in _msg(ei).lower()


@pytest.mark.parametrize("tag", ["NCHW0c", "NCHW4c0h", "NCHW00c"])
def test_block_size_zero(tag):
    with pytest.raises(lk.LayoutError, match="0") as ei:
        lk.Layout(tag)
    assert re.search(r"(?i)size|block|zero|positive|>= ?1|at least", _msg(ei)), _msg(ei)


@pytest.mark.parametrize(
    ("tag", "dims", "needle"),
    [
        ("NCHW", "NCH", "dims"),  # rank differs
        ("NCHW", "NCHX", "dims"),  # letter missing from the tag
        ("NCHW", "NCHH", "dims"),  # duplicate in dims
        ("NCHW4c", "NCHWD", "dims"),
    ],
)
def test_dims_disagree_with_tag(tag, dims, needle):
    with pytest.raises(lk.LayoutError, match=needle):
        lk.Layout(tag, dims=dims)


@pytest.mark.parametrize("bad", [123, None, b"NCHW", ["N", "C"]])
def test_layout_wrong_type(bad):
    with pytest.raises(TypeError):
        lk.Layout(bad)


# ---- ChunkedMemoryLayout strings --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 4,8>", "4"),  # pair dim >= rank
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 7,0>", "7"),
        ("ChunkedMemoryLayout<2, 0,0, 1,0, 2,4>", "2"),
    ],
)
@PARSERS
def test_pair_dim_out_of_range(parser, text, needle):
    with pytest.raises(lk.LayoutError) as ei:
        _parse(parser, text)
    msg = _msg(ei)
    assert needle in msg, msg
    assert re.search(r"(?i)dim|rank|range", msg), msg


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0>", "3"),  # dim 3 missing from the outer order
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 1,0, 3,0>", "1"),  # dim 1 twice, 2 missing
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 1,8, 2,8, 3,32>", "3"),
        ("ChunkedMemoryLayout<2, 0,8, 1,8>", "0"),  # no outer pairs at all
    ],
)
@PARSERS
def test_outer_order_not_a_permutation(parser, text, needle):
    with pytest.raises(lk.LayoutError) as ei:
        _parse(parser, text)
    msg = _msg(ei)
    assert needle in msg, msg
    assert re.search(r"(?i)outer|order|permutation|once|missing|twice|duplicate", msg), msg


@pytest.mark.parametrize(
    ("text", "char"),
    [
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,x>", "x"),
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, -1,8>", "-"),
        ("ChunkedMemoryLayout<4; 0,0, 1,0, 2,0, 3,0>", ";"),
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8.5>", "."),
    ],
)
@PARSERS
def test_malformed_chunked_points_at_character(parser, text, char):
    with pytest.raises(lk.LayoutError) as ei:
        _parse(parser, text)
    msg = _msg(ei)
    assert char in msg, msg
    assert _points_at(msg, text, text.index(char)), msg


@pytest.mark.parametrize(
    "text",
    [
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0",  # no closing '>'
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3>",  # odd number of pair parameters
        "ChunkedMemoryLayout<>",
        "ChunkedMemoryLayout<0>",  # rank 0
        "FlatMemoryLayout<0>",
        "FlatMemoryLayout<4, 0,0>",
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0> Foo Bar",  # junk after the layout
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0>>",
        "ChunkedMemoryLayout<4, 0,0, 1,0, /* unterminated 2,0, 3,0>",
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,0>",  # outer dim 1 twice
    ],
)
@PARSERS
def test_malformed_chunked(parser, text):
    with pytest.raises(lk.LayoutError) as ei:
        _parse(parser, text)
    assert len(_msg(ei)) > 10


def test_chunked_size_zero_block_is_outer_and_duplicate():
    # in a Chunked string, size 0 means "outer"; after the 4 outer pairs a 5th is a duplicate
    with pytest.raises(lk.LayoutError):
        lk.htp.layout("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 3,32, 2,0>")


def test_unknown_preset_name():
    with pytest.raises(lk.LayoutError, match="R4Crouton8Layout"):
        lk.htp.layout("R4Crouton8Layout")


def test_wrong_dims_for_preset():
    with pytest.raises(lk.LayoutError, match="dims"):
        lk.htp.layout("R4CroutonLayout", dims="NCH")


# ---- strict mode (SDK rules) --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 3,24>", "24"),
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,3, 3,32>", "3"),
        ("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 2,6>", "6"),
    ],
)
def test_strict_rejects_non_power_of_two(text, needle):
    L = lk.htp.layout(text)  # non-strict: a superset of the SDK (decision 3)
    assert L.size((1, 1, 1, 1)) >= 1
    with pytest.raises(lk.LayoutError) as ei:
        lk.htp.layout(text, strict=True)
    msg = _msg(ei)
    assert needle in msg, msg
    assert re.search(r"(?i)power of (two|2)|power-of-two|pow2", msg), msg


@pytest.mark.parametrize(
    "text",
    [
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,8, 3,0>",
        "ChunkedMemoryLayout<4, 1,8, 0,0, 1,0, 2,0, 3,0>",
    ],
)
def test_strict_rejects_outer_after_chunk(text):
    with pytest.raises(lk.LayoutError) as ei:
        lk.htp.layout(text, strict=True)
    assert re.search(r"(?i)outer|size[- ]?0|after|before|chunk", _msg(ei)), _msg(ei)


def test_strict_dtype_pairing():
    """§1.11: element size incompatible with the SDK's dtype-layout pairing (strict)."""
    L = lk.htp.layout("R4CroutonLayout", strict=True)
    x = np.zeros((1, 8, 8, 32), dtype=np.float32)
    with pytest.raises(lk.LayoutError, match=r"(?i)dtype|element size|itemsize|byte"):
        L.pack(x)
    # non-strict accepts any dtype (§1.6 LIBRARY POLICY)
    assert lk.htp.layout("R4CroutonLayout").pack(x).dtype == np.float32


# ---- shapes and indices -----------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.padded_shape((1, 3, 5)),
        lambda L: L.physical_shape((1, 3, 5, 7, 1)),
        lambda L: L.size((3, 5)),
        lambda L: L.offset((1, 3, 5), (0, 0, 0)),
        lambda L: L.index((1, 3, 5), 0),
        lambda L: L.unpack(np.zeros(15), (1, 3, 5)),
        lambda L: L.offsets((1, 3, 5), np.zeros((2, 3), np.int64)),
    ],
)
def test_shape_rank_mismatch(call):
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError) as ei:
        call(L)
    msg = _msg(ei)
    assert re.search(r"(?i)shape|rank", msg), msg
    assert "4" in msg, msg  # the expected rank


@pytest.mark.parametrize("index", [(0, 0, 0), (0, 0, 0, 0, 0), ()], ids=["short", "long", "empty"])
def test_index_rank_mismatch(index):
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError, match=r"(?i)index|rank"):
        L.offset(NCHW, index)


def test_pack_rank_mismatch():
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError, match=r"(?i)shape|rank|ndim|dim"):
        L.pack(np.zeros((3, 5, 7)))
    with pytest.raises(lk.LayoutError, match=r"(?i)shape|rank|ndim|dim"):
        L.pack(np.zeros(()))


def test_offsets_bad_array_shape():
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError, match=r"(?i)indices|shape|rank"):
        L.offsets(NCHW, np.zeros((2, 3), np.int64))
    with pytest.raises(lk.LayoutError, match=r"(?i)indices|shape|rank|2-d|2d"):
        L.offsets(NCHW, np.zeros(4, np.int64))


@pytest.mark.parametrize("shape", [(1, -3, 5, 7), (1, 3, -1, 7)])
def test_negative_extent(shape):
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError, match=r"(?i)shape|extent|negative|-"):
        L.size(shape)


@pytest.mark.parametrize(
    ("index", "value"),
    [
        ((0, 3, 0, 0), "3"),  # C = 3
        ((1, 0, 0, 0), "1"),
        ((0, 0, 5, 0), "5"),
        ((0, 0, 0, 7), "7"),
        ((0, 0, 0, -1), "-1"),  # no wrap-around
        ((-1, 0, 0, 0), "-1"),
        ((0, -3, 0, 0), "-3"),
    ],
)
def test_index_out_of_range(index, value):
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError) as ei:
        L.offset(NCHW, index)
    msg = _msg(ei)
    assert value in msg, msg
    assert re.search(r"(?i)index|range|bound", msg), msg
    with pytest.raises(lk.LayoutError):
        L.offsets(NCHW, np.array([(0, 0, 0, 0), index], dtype=np.int64))


@pytest.mark.parametrize(
    "index", [(0, 3, 0, 0), (1, 0, 0, 0), (0, 0, 5, 0), (0, 0, 0, 7), (0, 0, 0, -1)]
)
def test_htp_chunk_index_out_of_range(index):
    L = lk.htp.layout("R4CroutonLayout")
    with pytest.raises(lk.LayoutError, match=r"(?i)index|range|bound"):
        lk.htp.chunk_index(L, NCHW, index)
    with pytest.raises(lk.LayoutError, match=r"(?i)index|range|bound"):
        lk.htp.chunk_start(L, NCHW, index)


def test_index_in_padding_region_is_out_of_range():
    """C = 3 pads to 4: channel 3 exists in memory but is not a valid index."""
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError, match="3"):
        L.offset(NCHW, (0, 3, 0, 0))


@pytest.mark.parametrize("offset", [-1, 140, 141, 10**6])
def test_offset_out_of_range_in_index(offset):
    L = lk.Layout("NCHW4c")
    assert L.size(NCHW) == 140
    with pytest.raises(lk.LayoutError) as ei:
        L.index(NCHW, offset)
    msg = _msg(ei)
    assert str(offset) in msg, msg
    assert re.search(r"(?i)offset|range", msg), msg


def test_index_padding_is_none_not_error():
    L = lk.Layout("NCHW4c")
    assert L.index(NCHW, 3) is None  # channel 3 of (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda L: L.offset(NCHW, (0, 0.5, 0, 0)), TypeError),
        (lambda L: L.offset(NCHW, "0000"), (TypeError, lk.LayoutError)),
        (lambda L: L.index(NCHW, 1.5), TypeError),
        (lambda L: L.offsets(NCHW, np.zeros((2, 4), np.float64)), (TypeError, lk.LayoutError)),
        (lambda L: L.size((1, 3.0, 5, 7)), TypeError),
        (lambda L: L.pack(np.zeros((1, 3, 5, 7)), out=[0] * 140), TypeError),
    ],
)
def test_wrong_types(call, exc):
    with pytest.raises(exc):
        call(lk.Layout("NCHW4c"))


def test_bool_is_not_an_index():
    # True is an int subclass, but an index of True is almost certainly a bug; either
    # reject it or treat it as 1 -- never crash.
    L = lk.Layout("NCHW4c")
    try:
        assert L.offset(NCHW, (0, True, 0, 0)) == L.offset(NCHW, (0, 1, 0, 0))
    except (TypeError, lk.LayoutError):
        pass


# ---- left pad -----------------------------------------------------------------------


@pytest.mark.parametrize("left_pad", [(0, -1, 0, 0), (-4, 0, 0, 0)])
def test_negative_left_pad(left_pad):
    with pytest.raises(lk.LayoutError, match=r"(?i)left_pad|left pad|negative") as ei:
        lk.Layout("NHWC8h8w32c", left_pad=left_pad)
    assert "-" in _msg(ei)


@pytest.mark.parametrize("left_pad", [(0, -1, 0, 0), (-4, 0, 0, 0)])
def test_negative_left_pad_htp(left_pad):
    with pytest.raises(lk.LayoutError, match=r"(?i)left_pad|left pad|negative"):
        lk.htp.layout("R4CroutonLayout", left_pad=left_pad)


@pytest.mark.parametrize("left_pad", [(0, 2, 4), (0, 2, 4, 0, 0)])
def test_left_pad_wrong_length(left_pad):
    with pytest.raises(lk.LayoutError, match=r"(?i)left_pad|left pad"):
        lk.Layout("NHWC8h8w32c", left_pad=left_pad)


# ---- buffers ------------------------------------------------------------------------


@pytest.mark.parametrize("n", [139, 141, 0, 280])
def test_unpack_buffer_wrong_size(n):
    L = lk.Layout("NCHW4c")
    with pytest.raises(lk.LayoutError) as ei:
        L.unpack(np.zeros(n, np.float32), NCHW)
    msg = _msg(ei)
    assert "140" in msg, msg  # the expected element count
    assert re.search(r"(?i)buf|size|element", msg), msg


def test_convert_buffer_wrong_size():
    with pytest.raises(lk.LayoutError, match="140"):
        lk.convert(np.zeros(139, np.float32), NCHW, lk.Layout("NCHW4c"), lk.Layout("NCHW"))


def _outs():
    good = (1, 1, 5, 7, 4)
    ro = np.empty(good, np.float32)
    ro.setflags(write=False)
    return [
        pytest.param(np.empty((1, 1, 5, 7, 3), np.float32), r"(?i)size|shape", id="size"),
        pytest.param(np.empty(139, np.float32), r"(?i)size|shape", id="size-flat"),
        pytest.param(np.empty(good, np.float64), r"(?i)dtype", id="dtype"),
        pytest.param(np.empty(good, np.int32), r"(?i)dtype", id="dtype-same-size"),
        pytest.param(
            np.empty((1, 1, 5, 7, 8), np.float32)[..., ::2], r"(?i)contiguous", id="strided"
        ),
        pytest.param(np.empty(good[::-1], np.float32).T, r"(?i)contiguous", id="fortran"),
        pytest.param(ro, r"(?i)writ|read-only|readonly", id="read-only"),
    ]


@pytest.mark.parametrize(("out", "pattern"), _outs())
def test_pack_bad_out(out, pattern):
    L = lk.Layout("NCHW4c")
    x = np.zeros(NCHW, np.float32)
    with pytest.raises(lk.LayoutError, match=pattern) as ei:
        L.pack(x, out=out)
    assert "out" in _msg(ei), _msg(ei)


@pytest.mark.parametrize(("out", "pattern"), _outs())
def test_convert_bad_out(out, pattern):
    buf = np.zeros(NCHW, np.float32)
    with pytest.raises(lk.LayoutError, match=pattern) as ei:
        lk.convert(buf, NCHW, lk.Layout("NCHW"), lk.Layout("NCHW4c"), out=out)
    assert "out" in _msg(ei), _msg(ei)


@pytest.mark.parametrize(
    ("out", "pattern"),
    [
        pytest.param(np.empty((1, 3, 5, 6), np.float32), r"(?i)size|shape", id="size"),
        pytest.param(np.empty(NCHW, np.float16), r"(?i)dtype", id="dtype"),
        pytest.param(np.empty((1, 3, 5, 14), np.float32)[..., ::2], r"(?i)contig", id="strided"),
        pytest.param(
            np.broadcast_to(np.empty(1, np.float32), NCHW), r"(?i)writ|read|contig", id="ro"
        ),
    ],
)
def test_unpack_bad_out(out, pattern):
    L = lk.Layout("NCHW4c")
    buf = np.zeros(140, np.float32)
    with pytest.raises(lk.LayoutError, match=pattern) as ei:
        L.unpack(buf, NCHW, out=out)
    assert "out" in _msg(ei), _msg(ei)


def test_out_aliasing_input_is_rejected_or_correct():
    """out= that overlaps the input must not silently corrupt the result."""
    x = np.arange(2 * 4 * 3, dtype=np.int32).reshape(2, 4, 3)
    L = lk.Layout("ACB", dims="ABC")
    expected = np.ascontiguousarray(x.transpose(0, 2, 1))
    buf = x.copy()
    try:
        r = L.pack(buf, out=buf.reshape(2, 3, 4))
    except lk.LayoutError:
        return
    np.testing.assert_array_equal(r, expected)


# ---- convert: dims must agree -------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (("NCHW",), ("NCH",)),  # rank
        (("NCHW",), ("NCHX",)),  # different letters
        (("NCHW",), ("NHWC",)),  # same letters, other logical order
        (("NCHW4c",), ("HCWN4c", "NHWC")),
    ],
    ids=["rank", "letters", "order", "explicit-dims"],
)
def test_convert_dims_mismatch(src, dst):
    src, dst = lk.Layout(*src), lk.Layout(*dst)
    buf = np.zeros(src.size(NCHW) if src.rank == 4 else 1, np.float32)
    with pytest.raises(lk.LayoutError, match=r"(?i)dims") as ei:
        lk.convert(buf, NCHW, src, dst)
    msg = _msg(ei)
    assert src.dims in msg or dst.dims in msg, msg


def test_convert_tag_strings_must_agree():
    """Tag strings take their default dims, which must agree (NCHW vs NHWC do not)."""
    buf = np.zeros(105, np.float32)
    with pytest.raises(lk.LayoutError, match=r"(?i)dims"):
        lk.convert(buf, NCHW, "NCHW", "NHWC")


# ---- HTP block tables ---------------------------------------------------------------


def test_unpack_blocks_wrong_count_or_size():
    L = lk.htp.layout("R4CroutonLayout")
    shape = (1, 9, 8, 32)  # 2 blocks of 2048
    x = np.zeros(shape, np.uint8)
    blocks = lk.htp.pack_blocks(x, L)
    assert len(blocks) == 2
    with pytest.raises(lk.LayoutError, match=r"(?i)block"):
        lk.htp.unpack_blocks(blocks[:1], L, shape)
    with pytest.raises(lk.LayoutError, match=r"(?i)block"):
        lk.htp.unpack_blocks([*blocks, blocks[0]], L, shape)
    with pytest.raises(lk.LayoutError, match=r"(?i)block|size|2048"):
        lk.htp.unpack_blocks([blocks[0], blocks[1][:-1]], L, shape)
