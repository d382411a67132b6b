"""Golden vectors of seed-systems.md §1.8 (HTP layouts), against the library AND
the independent reference model in ``tests/reference.py``.

Every number below is copied from the spec. Each vector is checked twice: by
the reference model (so a typo in a vector, or a bug in the model, shows up on
its own) and by ``layoutkit`` (offset, chunk index, padded shape, size,
inverse, pack).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import (
    as_layout,
    ref_chunk_index,
    ref_index,
    ref_offset,
    ref_pack,
    ref_padded_shape,
    ref_physical_shape,
    ref_size,
    ref_unpack,
)


@pytest.fixture(scope="module")
def lk():
    import layoutkit

    return layoutkit


# --------------------------------------------------------------------------------------
# Presets (§1.5): SDK name -> (literal parameters, default dims, equivalent tag)
# --------------------------------------------------------------------------------------

PRESETS = {
    "R4FlatMemoryLayout": ("FlatMemoryLayout<4>", "NHWC", "NHWC"),
    "R4NCHWMemoryLayout": ("ChunkedMemoryLayout<4, 0,0, 3,0, 2,0, 1,0>", "NHWC", "NCWH"),
    "R4Depth32MemoryLayout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 3,0, 2,0, 2,4, 3,32>",
        "NHWC",
        "NHCW4w32c",
    ),
    "R4CroutonLayout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>",
        "NHWC",
        "NHWC8h8w32c",
    ),
    "R4Crouton4x1Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32, 2,4>",
        "NHWC",
        "NHWC8h2w32c4w",
    ),
    "R4Crouton2x2Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,4, 2,4, 3,32, 1,2, 2,2>",
        "NHWC",
        "NHWC4h4w32c2h2w",
    ),
    "R4Crouton2Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32, 2,2>",
        "NHWC",
        "NHWC8h2w32c2w",
    ),
    "R4Crouton4Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32>",
        "NHWC",
        "NHWC8h2w32c",
    ),
    "R4WideCroutonLayout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,2, 2,32, 3,32>",
        "NHWC",
        "NHWC2h32w32c",
    ),
    "R4WideCrouton2x2Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 2,16, 3,32, 1,2, 2,2>",
        "NHWC",
        "NHWC16w32c2h2w",
    ),
    "R4WideCrouton4Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,2, 2,8, 3,32>",
        "NHWC",
        "NHWC2h8w32c",
    ),
    # a weight layout: like the conv weight layout it defaults to HWIO dims (§1.2 "for
    # conv weights it is dim 0 filter height, 1 filter width, 2 Cin, 3 Cout").
    "R4Weights8x4Layout": (
        "ChunkedMemoryLayout<4, 0,0, 1,0, 3,0, 2,0, 0,8, 1,4, 2,16, 3,32, 2,2>",
        "HWIO",
        "HWOI8h4w16i32o2i",
    ),
    "ConvWeightLayout": (
        "ChunkedMemoryLayout<4, 3,0, 2,0, 0,0, 1,0, 2,8, 3,32, 2,4>",
        "HWIO",
        "OIHW8i32o4i",
    ),
}

# The seed's prose NCHW storage, which is not an SDK preset (§1.9 item 6, §8 decision 1).
PROSE_NCHW = "ChunkedMemoryLayout<4, 0,0, 3,0, 1,0, 2,0>"

# Chunk elements per preset (§1.5 table, "chunk elems").
CHUNK_ELEMS = {
    "R4FlatMemoryLayout": 1,
    "R4NCHWMemoryLayout": 1,
    "R4Depth32MemoryLayout": 128,
    "R4CroutonLayout": 2048,
    "R4Crouton4x1Layout": 2048,
    "R4Crouton2x2Layout": 2048,
    "R4Crouton2Layout": 1024,
    "R4Crouton4Layout": 512,
    "R4WideCroutonLayout": 2048,
    "R4WideCrouton2x2Layout": 2048,
    "R4WideCrouton4Layout": 512,
    "ConvWeightLayout": 1024,
    "R4Weights8x4Layout": 32768,
}


def _ref(name):
    if name == "PROSE_NCHW":
        return as_layout(PROSE_NCHW, "NHWC")
    chunked, dims, _ = PRESETS[name]
    return as_layout(chunked, dims)


def _lib(lk, name):
    if name == "PROSE_NCHW":
        return lk.htp.layout(PROSE_NCHW)
    return lk.htp.layout(name)


# --------------------------------------------------------------------------------------
# §1.8.1 and §1.8.2 tables. A cell is an offset, or (offset, block, offset_in_block).
# --------------------------------------------------------------------------------------

SHAPE_1 = (1, 3, 5, 30)
IDX_1 = {
    "A": (0, 0, 0, 0),
    "B": (0, 0, 0, 29),
    "C": (0, 0, 1, 0),
    "D": (0, 0, 4, 29),
    "E": (0, 1, 0, 0),
    "F": (0, 1, 2, 3),
    "G": (0, 2, 4, 29),
}
# preset -> (padded dims, total elems, #blocks or None, [A..G])
TABLE_1 = {
    "R4FlatMemoryLayout": ((1, 3, 5, 30), 450, None, [0, 29, 30, 149, 150, 213, 449]),
    "R4NCHWMemoryLayout": ((1, 3, 5, 30), 450, None, [0, 435, 3, 447, 1, 52, 449]),
    "PROSE_NCHW": ((1, 3, 5, 30), 450, None, [0, 435, 1, 439, 5, 52, 449]),
    "R4Depth32MemoryLayout": (
        (1, 3, 8, 32),
        768,
        6,
        [0, 29, 32, (157, 1, 29), (256, 2, 0), (323, 2, 67), (669, 5, 29)],
    ),
    "R4CroutonLayout": ((1, 8, 8, 32), 2048, 1, [0, 29, 32, 157, 256, 323, 669]),
    "R4Crouton4x1Layout": ((1, 8, 8, 32), 2048, 1, [0, 116, 1, 244, 256, 270, 756]),
    "R4Crouton2x2Layout": ((1, 8, 8, 32), 2048, 1, [0, 116, 1, 372, 2, 142, 884]),
    "R4Crouton2Layout": (
        (1, 8, 8, 32),
        2048,
        2,
        [0, 58, 1, (1082, 1, 58), 128, 198, (1338, 1, 314)],
    ),
    "R4Crouton4Layout": (
        (1, 8, 6, 32),
        1536,
        3,
        [0, 29, 32, (1053, 2, 29), 64, (579, 1, 67), (1181, 2, 157)],
    ),
    "ConvWeightLayout": (
        (1, 3, 32, 32),
        3072,
        3,
        [0, 116, 1, 244, (1024, 1, 0), (1038, 1, 14), (2292, 2, 244)],
    ),
}

SHAPE_2 = (2, 9, 20, 50)
IDX_2 = {
    "A": (0, 0, 0, 31),
    "B": (0, 0, 0, 32),
    "C": (0, 0, 8, 0),
    "D": (0, 8, 0, 0),
    "E": (1, 0, 0, 0),
    "F": (0, 3, 5, 7),
    "G": (1, 5, 13, 40),
    "H": (1, 8, 19, 49),
}
TABLE_2 = {
    "R4FlatMemoryLayout": (
        (2, 9, 20, 50),
        18000,
        None,
        [31, 32, 400, 8000, 9000, 3257, 14690, 17999],
    ),
    "R4NCHWMemoryLayout": (
        (2, 9, 20, 50),
        18000,
        None,
        [5580, 5760, 72, 8, 9000, 1308, 16322, 17999],
    ),
    "PROSE_NCHW": (
        (2, 9, 20, 50),
        18000,
        None,
        [5580, 5760, 8, 160, 9000, 1325, 16313, 17999],
    ),
    "R4Depth32MemoryLayout": (
        (2, 9, 20, 64),
        23040,
        180,
        [
            31,
            (640, 5, 0),
            (256, 2, 0),
            (10240, 80, 0),
            (11520, 90, 0),
            (4007, 31, 39),
            (18984, 148, 40),
            (23025, 179, 113),
        ],
    ),
    "R4CroutonLayout": (
        (2, 16, 24, 64),
        49152,
        24,
        [
            31,
            (2048, 1, 0),
            (4096, 2, 0),
            (12288, 6, 0),
            (24576, 12, 0),
            (935, 0, 935),
            (32168, 15, 1448),
            (47217, 23, 113),
        ],
    ),
    "R4Crouton4x1Layout": (
        (2, 16, 24, 64),
        49152,
        24,
        [124, 2048, 4096, 12288, 24576, 925, (32161, 15, 1441), (47175, 23, 71)],
    ),
    "R4Crouton2x2Layout": (
        (2, 16, 24, 64),
        49152,
        24,
        [124, 2048, 4096, 12288, 24576, 799, (32035, 15, 1315), (47301, 23, 197)],
    ),
    "R4Crouton2Layout": (
        (2, 16, 20, 64),
        40960,
        40,
        [
            62,
            (1024, 1, 0),
            (4096, 4, 0),
            (10240, 10, 0),
            (20480, 20, 0),
            (2447, 2, 399),
            (28305, 27, 657),
            (40035, 39, 99),
        ],
    ),
    "R4Crouton4Layout": (
        (2, 16, 20, 64),
        40960,
        80,
        [
            31,
            (512, 1, 0),
            (4096, 8, 0),
            (10240, 20, 0),
            (20480, 40, 0),
            (2279, 4, 231),
            (27496, 53, 360),
            (40497, 79, 49),
        ],
    ),
    "ConvWeightLayout": (
        (2, 9, 32, 64),
        36864,
        36,
        [
            124,
            (18432, 18, 0),
            (256, 0, 256),
            (8192, 8, 0),
            (9216, 9, 0),
            (3229, 3, 157),
            (33185, 32, 417),
            (36423, 35, 583),
        ],
    ),
}


def _cells(table, idx_names):
    out = []
    for name, (_padded, _total, _nblocks, cells) in table.items():
        assert len(cells) == len(idx_names), name
        for letter, cell in zip(idx_names, cells, strict=True):
            if isinstance(cell, tuple):
                off, blk, inner = cell
            else:
                off, blk, inner = cell, None, None
            out.append(pytest.param(name, letter, off, blk, inner, id=f"{name}-{letter}"))
    return out


def _rows(table):
    return [
        pytest.param(name, padded, total, nblocks, id=name)
        for name, (padded, total, nblocks, _) in table.items()
    ]


TABLES = [
    pytest.param(SHAPE_1, IDX_1, TABLE_1, id="1x3x5x30"),
    pytest.param(SHAPE_2, IDX_2, TABLE_2, id="2x9x20x50"),
]

CELLS = [(SHAPE_1, IDX_1, p) for p in _cells(TABLE_1, list(IDX_1))] + [
    (SHAPE_2, IDX_2, p) for p in _cells(TABLE_2, list(IDX_2))
]
CELL_PARAMS = [
    pytest.param(shape, idx[p.values[1]], *p.values, id="x".join(map(str, shape)) + "-" + p.id)
    for shape, idx, p in CELLS
]
ROW_PARAMS = [pytest.param(SHAPE_1, *p.values, id="1x3x5x30-" + p.id) for p in _rows(TABLE_1)] + [
    pytest.param(SHAPE_2, *p.values, id="2x9x20x50-" + p.id) for p in _rows(TABLE_2)
]


# ---- the reference model reproduces the spec by itself --------------------------------


@pytest.mark.parametrize(("shape", "index", "name", "letter", "off", "blk", "inner"), CELL_PARAMS)
def test_reference_model_offsets(shape, index, name, letter, off, blk, inner):
    lay = _ref(name)
    assert ref_offset(lay, None, shape, index) == off
    b, o = ref_chunk_index(lay, None, shape, index)
    assert b * lay.chunk_total + o == off
    if blk is not None:
        assert (b, o) == (blk, inner)
    assert ref_index(lay, None, shape, off) == index


@pytest.mark.parametrize(("shape", "name", "padded", "total", "nblocks"), ROW_PARAMS)
def test_reference_model_shapes(shape, name, padded, total, nblocks):
    lay = _ref(name)
    assert ref_padded_shape(lay, None, shape) == padded
    assert ref_size(lay, None, shape) == total
    phys = ref_physical_shape(lay, None, shape)
    assert math.prod(phys) == total
    if nblocks is not None:
        assert math.prod(phys[: lay.rank]) == nblocks
        assert nblocks * lay.chunk_total == total


def test_reference_model_chunk_elems():
    for name, elems in CHUNK_ELEMS.items():
        assert _ref(name).chunk_total == elems, name


def test_reference_model_presets_tags():
    for name, (_chunked, dims, tag) in PRESETS.items():
        lay = _ref(name)
        assert lay.tag == tag, name
        assert as_layout(tag, dims) == lay, name


@pytest.mark.parametrize("name", list(TABLE_2))
def test_reference_pack_is_bijection(name):
    """Packing an arange puts each element at ref_offset (pad -> reshape -> transpose
    agrees with the SDK algorithm), and every offset is hit once."""
    lay = _ref(name)
    shape = SHAPE_2
    x = np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape)
    buf = ref_pack(x, lay).reshape(-1)
    for index in IDX_2.values():
        assert buf[ref_offset(lay, None, shape, index)] == x[index]
    got = np.sort(buf[buf > 0])
    np.testing.assert_array_equal(got, x.reshape(-1))
    np.testing.assert_array_equal(ref_unpack(buf, lay, None, shape), x)


# ---- the library --------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "index", "name", "letter", "off", "blk", "inner"), CELL_PARAMS)
def test_offset(lk, shape, index, name, letter, off, blk, inner):
    L = _lib(lk, name)
    assert L.offset(shape, index) == off
    assert type(L.offset(shape, index)) is int


@pytest.mark.parametrize(("shape", "index", "name", "letter", "off", "blk", "inner"), CELL_PARAMS)
def test_offset_via_tag(lk, shape, index, name, letter, off, blk, inner):
    """The same vector through the equivalent tag (core `Layout`, no htp)."""
    if name == "PROSE_NCHW":
        L = lk.Layout("NCHW", dims="NHWC")
    else:
        _, dims, tag = PRESETS[name]
        L = lk.Layout(tag, dims=dims)
    assert L.offset(shape, index) == off


@pytest.mark.parametrize(("shape", "index", "name", "letter", "off", "blk", "inner"), CELL_PARAMS)
def test_chunk_index_and_start(lk, shape, index, name, letter, off, blk, inner):
    L = _lib(lk, name)
    ct = CHUNK_ELEMS.get(name, 1)
    exp_blk, exp_inner = divmod(off, ct)
    if blk is not None:
        assert (exp_blk, exp_inner) == (blk, inner)  # the spec's pair is consistent
    assert tuple(lk.htp.chunk_index(L, shape, index)) == (exp_blk, exp_inner)
    assert lk.htp.chunk_start(L, shape, index) == exp_blk * ct


@pytest.mark.parametrize(("shape", "index", "name", "letter", "off", "blk", "inner"), CELL_PARAMS)
def test_index_inverts(lk, shape, index, name, letter, off, blk, inner):
    L = _lib(lk, name)
    assert L.index(shape, off) == index
    got = L.offsets(shape, np.array([index], dtype=np.int64))
    assert got.dtype == np.int64
    assert got.tolist() == [off]


@pytest.mark.parametrize(("shape", "name", "padded", "total", "nblocks"), ROW_PARAMS)
def test_shapes(lk, shape, name, padded, total, nblocks):
    L = _lib(lk, name)
    assert tuple(L.padded_shape(shape)) == padded
    assert L.size(shape) == total
    phys = tuple(L.physical_shape(shape))
    assert phys == ref_physical_shape(_ref(name), None, shape)
    if nblocks is not None:
        assert math.prod(phys[:4]) == nblocks


@pytest.mark.parametrize(("shape", "idx", "table"), TABLES)
def test_pack_places_every_vector(lk, shape, idx, table):
    """Pack an arange with each preset; the table's offsets hold the right values,
    and the whole buffer equals the reference packing."""
    x = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    for name, (_, total, _, cells) in table.items():
        L = _lib(lk, name)
        buf = L.pack(x, pad_value=-1)
        assert buf.dtype == np.int32
        assert buf.flags.c_contiguous
        assert buf.size == total
        expected = ref_pack(x, _ref(name), pad_value=-1)
        assert buf.shape == expected.shape, name
        np.testing.assert_array_equal(buf, expected, err_msg=name)
        flat = buf.reshape(-1)
        for letter, cell in zip(idx, cells, strict=True):
            off = cell[0] if isinstance(cell, tuple) else cell
            assert flat[off] == x[idx[letter]], (name, letter)
        np.testing.assert_array_equal(L.unpack(buf, shape), x)


# ---- presets, names, strings ----------------------------------------------------------


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_tag_and_chunked(lk, name):
    chunked, dims, tag = PRESETS[name]
    L = lk.htp.layout(name)
    assert L.dims == dims
    assert L.rank == 4
    assert str(L) == tag
    # the preset equals its literal parameters and its tag
    assert L == lk.htp.layout(chunked, dims=dims)
    assert L == lk.Layout(tag, dims=dims)
    assert hash(L) == hash(lk.Layout(tag, dims=dims))
    # to_chunked round-trips through the literal form
    assert lk.htp.layout(L.to_chunked(), dims=dims) == L
    if name != "R4FlatMemoryLayout":
        assert L.to_chunked() == _ref(name).to_chunked()


def test_crouton_str_and_chunked_exact(lk):
    L = lk.htp.layout("R4CroutonLayout")
    assert str(L) == "NHWC8h8w32c"
    assert L.to_chunked() == "ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>"
    assert lk.Layout("NHWC8h8w32c").to_chunked() == L.to_chunked()


def test_weight_layout_default_dims(lk):
    L = lk.htp.layout("ConvWeightLayout")
    assert L.dims == "HWIO"
    assert L.offset((3, 3, 32, 32), (0, 0, 4, 0)) == 128


def test_r5_crouton(lk):
    L = lk.htp.layout("R5CroutonLayout", dims="NDHWC")
    assert L.rank == 5
    assert str(L) == "NDHWC8h8w32c"
    ref = as_layout("ChunkedMemoryLayout<5, 0,0, 1,0, 2,0, 3,0, 4,0, 2,8, 3,8, 4,32>", "NDHWC")
    shape = (2, 3, 9, 5, 33)
    assert tuple(L.padded_shape(shape)) == (2, 3, 16, 8, 64)
    for index in [(0, 0, 0, 0, 0), (1, 2, 8, 4, 32), (1, 1, 3, 2, 1)]:
        assert L.offset(shape, index) == ref_offset(ref, None, shape, index)


def test_flat_is_chunked_without_blocks(lk):
    a = lk.htp.layout("FlatMemoryLayout<4>")
    b = lk.htp.layout("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0>")
    c = lk.htp.layout("R4FlatMemoryLayout")
    assert a == b == c == lk.Layout("NHWC")
    assert lk.Layout("FlatMemoryLayout<4>") == a
    assert lk.Layout("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>") == (
        lk.htp.layout("R4CroutonLayout")
    )
    assert lk.Layout("ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>").dims == "NHWC"


# The seed's three commented structs, verbatim up to the closing '>' (seed 000).
SEED_CHANNEL_MAJOR = """ChunkedMemoryLayout<
        /* RANK */ 4,
        /* Least Major: Batch Dim, all the rest */ 0,0,
        /* Next least major: height, all the rest */ 1,0,
        /* Next least major: width, all the rest */ 2,0,
        /* Next least major: depth, all the rest */ 3,0,
        /* 8 rows high */ 1,8,
        /* 8 columns wide */ 2,8,
        /* 32 channels deep */ 3,32>"""
SEED_SPATIAL_XY = """ChunkedMemoryLayout<
        /* RANK */ 4,
        /* Least Major: Batch Dim, all the rest */ 0,0,
        /* Next least major: height, all the rest */ 1,0,
        /* Next least major: width, all the rest */ 2,0,
        /* Next least major: depth, all the rest */ 3,0,
        /* 4 high */ 1,4,
        /* 4 wide */ 2,4,
        /* 32 channels deep */ 3,32,
        /* 2 rows */ 1,2,
        /* 2 cols */ 2,2>"""
SEED_SPATIAL_X = """ChunkedMemoryLayout<
        /* RANK */ 4,
        /* Least Major: Batch Dim, all the rest */ 0,0,
        /* Next least major: height, all the rest */ 1,0,
        /* Next least major: width, all the rest */ 2,0,
        /* Next least major: depth, all the rest */ 3,0,
        /* 8 high */ 1,4,
        /* 2 wide */ 2,2,
        /* 32 channels deep */ 3,32,
        /* 4 cols */ 2,4>"""


def test_seed_structs_verbatim(lk):
    assert lk.htp.layout(SEED_CHANNEL_MAJOR) == lk.htp.layout("R4CroutonLayout")
    assert str(lk.htp.layout(SEED_CHANNEL_MAJOR)) == "NHWC8h8w32c"
    assert lk.htp.layout(SEED_SPATIAL_XY) == lk.htp.layout("R4Crouton2x2Layout")
    assert str(lk.htp.layout(SEED_SPATIAL_XY)) == "NHWC4h4w32c2h2w"
    # SpatialXMajor carries the seed typo 1,4 (§1.9 item 4): a literal string is
    # taken literally (4x8x32 chunks of 1024), it is NOT silently "corrected".
    sx = lk.htp.layout(SEED_SPATIAL_X)
    assert str(sx) == "NHWC4h2w32c4w"
    assert sx != lk.htp.layout("R4Crouton4x1Layout")
    assert sx.size((1, 3, 5, 30)) == 1024
    assert as_layout(SEED_SPATIAL_X).chunk_total == 1024
    assert as_layout(SEED_SPATIAL_XY) == _ref("R4Crouton2x2Layout")


def test_seed_struct_with_declarator(lk):
    """The seed's struct text with its trailing name, e.g. ``> ChannelMajorCrouton;``."""
    text = SEED_CHANNEL_MAJOR + " ChannelMajorCrouton;"
    assert lk.htp.layout(text) == lk.htp.layout("R4CroutonLayout")


# ---- left padding vector (§1.8.2) -----------------------------------------------------

LP = (0, 2, 4, 0)
LP_VECTORS = [
    ((0, 0, 0, 0), 640, 0, 640),
    ((0, 2, 4, 29), 3101, 1, 1053),
    ((0, 1, 3, 7), 999, 0, 999),
]


def test_left_pad_reference():
    lay = as_layout("NHWC8h8w32c", left_pad=LP)
    assert ref_padded_shape(lay, None, SHAPE_1) == (1, 8, 16, 32)
    assert ref_size(lay, None, SHAPE_1) // lay.chunk_total == 2
    for index, off, blk, inner in LP_VECTORS:
        assert ref_offset(lay, None, SHAPE_1, index) == off
        assert ref_chunk_index(lay, None, SHAPE_1, index) == (blk, inner)
        assert ref_index(lay, None, SHAPE_1, off) == index
    assert ref_index(lay, None, SHAPE_1, 0) is None


@pytest.mark.parametrize("via", ["core", "htp"])
def test_left_pad_library(lk, via):
    if via == "core":
        L = lk.Layout("NHWC8h8w32c", left_pad=LP)
    else:
        L = lk.htp.layout("R4CroutonLayout", left_pad=LP)
    assert tuple(L.padded_shape(SHAPE_1)) == (1, 8, 16, 32)
    assert L.size(SHAPE_1) == 4096
    assert tuple(L.physical_shape(SHAPE_1)) == (1, 1, 2, 1, 8, 8, 32)
    for index, off, blk, inner in LP_VECTORS:
        assert L.offset(SHAPE_1, index) == off
        assert L.index(SHAPE_1, off) == index
        assert tuple(lk.htp.chunk_index(L, SHAPE_1, index)) == (blk, inner)
        assert lk.htp.chunk_start(L, SHAPE_1, index) == blk * 2048
    # the left-pad region and the layout padding are padding
    assert L.index(SHAPE_1, 0) is None
    assert L.index(SHAPE_1, 639) is None
    assert L.index(SHAPE_1, 4095) is None
    x = np.arange(1, 451, dtype=np.uint16).reshape(SHAPE_1)
    buf = L.pack(x, pad_value=7)
    ref = ref_pack(x, "NHWC8h8w32c", pad_value=7, left_pad=LP)
    np.testing.assert_array_equal(buf, ref)
    assert buf.reshape(-1)[640] == 1
    assert buf.reshape(-1)[0] == 7
    np.testing.assert_array_equal(L.unpack(buf, SHAPE_1), x)


# ---- §1.8.3: the seed's listings reproduced ------------------------------------------


def _check_order(lk, L, lay, shape, order):
    """``order`` lists (offset, padded coordinate) pairs. Check library and reference:
    the coordinate's offset in the padded tensor, and index() on the real shape
    (None exactly when the coordinate is padding)."""
    padded = ref_padded_shape(lay, None, shape)
    if L is not None:
        assert tuple(L.padded_shape(shape)) == padded
    for off, coord in order:
        real = all(c < s for c, s in zip(coord, shape, strict=True))
        assert ref_offset(lay, None, padded, coord) == off, (coord, off)
        assert ref_index(lay, None, shape, off) == (coord if real else None)
        if L is not None:
            assert L.offset(padded, coord) == off, (coord, off)
            assert L.index(padded, off) == coord
            assert L.index(shape, off) == (coord if real else None), (coord, off)
            if real:
                assert L.offset(shape, coord) == off


def _flat_listing():
    # seed: FlatMemoryLayout<4>, 2x3x5x30, laid out as (n, h, w, d) row-major.
    order, k = [], 0
    for n in range(2):
        for h in range(3):
            for w in range(5):
                for d in range(30):
                    order.append((k, (n, h, w, d)))
                    k += 1
    return order


def _crouton_1x3x5x30_listing():
    # seed: padded to 1x8x8x32, one chunk: h rows of w rows of 32 depth elements.
    order, k = [], 0
    for h in range(8):
        for w in range(8):
            for d in range(32):
                order.append((k, (0, h, w, d)))
                k += 1
    return order


def _crouton_2x9x20x50_listing():
    # seed: padded 2x16x24x64; 8-row bands, chunk by chunk (w block, then d block).
    order, k = [], 0
    for n in range(2):
        for hb in range(2):
            for wb in range(3):
                for db in range(2):
                    for h in range(8):
                        for w in range(8):
                            for d in range(32):
                                order.append((k, (n, 8 * hb + h, 8 * wb + w, 32 * db + d)))
                                k += 1
    return order


def _weight_listing(H, W, Cin, Cout):
    # seed: chunks of [cin/4 % 8][cout % 32][cin % 4], chunks over (Cout/32, Cin/32, H, W).
    order, k = [], 0
    for ob in range(-(-Cout // 32)):
        for ib in range(-(-Cin // 32)):
            for h in range(H):
                for w in range(W):
                    for i8 in range(8):
                        for o in range(32):
                            for i4 in range(4):
                                order.append((k, (h, w, 32 * ib + 4 * i8 + i4, 32 * ob + o)))
                                k += 1
    return order


LISTINGS = {
    "flat-2x3x5x30": ("R4FlatMemoryLayout", (2, 3, 5, 30), _flat_listing),
    "crouton-1x3x5x30": ("R4CroutonLayout", (1, 3, 5, 30), _crouton_1x3x5x30_listing),
    "crouton-2x9x20x50": ("R4CroutonLayout", (2, 9, 20, 50), _crouton_2x9x20x50_listing),
    "weight-3x3x32x32": ("ConvWeightLayout", (3, 3, 32, 32), lambda: _weight_listing(3, 3, 32, 32)),
    "weight-3x3x64x96": ("ConvWeightLayout", (3, 3, 64, 96), lambda: _weight_listing(3, 3, 64, 96)),
    "weight-3x3x32x50": ("ConvWeightLayout", (3, 3, 32, 50), lambda: _weight_listing(3, 3, 32, 50)),
}


@pytest.mark.parametrize("key", list(LISTINGS))
def test_listing_full_order_reference(key):
    name, shape, make = LISTINGS[key]
    lay = _ref(name)
    order = make()
    padded = ref_padded_shape(lay, None, shape)
    assert len(order) == math.prod(padded)
    # the whole memory order, vectorised through ref_pack of an arange over the padded shape
    x = np.arange(math.prod(padded), dtype=np.int64).reshape(padded)
    buf = ref_pack(x, lay).reshape(-1)
    coords = np.array([c for _, c in order])
    expected = np.ravel_multi_index(coords.T, padded)
    np.testing.assert_array_equal(buf, expected)


@pytest.mark.parametrize("key", list(LISTINGS))
def test_listing_full_order_library(lk, key):
    name, shape, make = LISTINGS[key]
    L = _lib(lk, name)
    lay = _ref(name)
    order = make()
    padded = ref_padded_shape(lay, None, shape)
    coords = np.array([c for _, c in order], dtype=np.int64)
    offs = np.array([k for k, _ in order], dtype=np.int64)
    np.testing.assert_array_equal(L.offsets(padded, coords), offs)
    # pack an arange of the real shape: every real element lands at its listed offset,
    # every padding slot holds the pad value.
    x = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    buf = L.pack(x, pad_value=-1).reshape(-1)
    real = np.all(coords < np.array(shape), axis=1)
    expected = np.full(len(order), -1, dtype=np.int64)
    expected[offs[real]] = np.ravel_multi_index(coords[real].T, shape)
    np.testing.assert_array_equal(buf, expected)


def test_listing_crouton_1x3x5x30_points(lk):
    L, lay, shape = _lib(lk, "R4CroutonLayout"), _ref("R4CroutonLayout"), (1, 3, 5, 30)
    order = [(d, (0, 0, 0, d)) for d in range(30)]
    order += [(30, (0, 0, 0, 30)), (31, (0, 0, 0, 31))]  # pad
    order += [(32, (0, 0, 1, 0)), (255, (0, 0, 7, 31)), (256, (0, 1, 0, 0)), (2047, (0, 7, 7, 31))]
    _check_order(lk, L, lay, shape, order)
    assert L.index(shape, 30) is None
    assert L.index(shape, 31) is None
    assert L.index(shape, 255) is None
    assert L.index(shape, 2047) is None


def test_listing_crouton_2x9x20x50_points(lk):
    L, lay, shape = _lib(lk, "R4CroutonLayout"), _ref("R4CroutonLayout"), (2, 9, 20, 50)
    order = [
        (0, (0, 0, 0, 0)),
        (2047, (0, 7, 7, 31)),
        (2048, (0, 0, 0, 32)),
        (4096, (0, 0, 8, 0)),
        (6144, (0, 0, 8, 32)),
        (12288, (0, 8, 0, 0)),
        (24576, (1, 0, 0, 0)),
        (49151, (1, 15, 23, 63)),
    ]
    _check_order(lk, L, lay, shape, order)
    assert L.size(shape) == 49152
    assert math.prod(tuple(L.physical_shape(shape))[:4]) == 24
    for chunk, coord in [(0, (0, 0, 0, 0)), (1, (0, 0, 0, 32)), (2, (0, 0, 8, 0))]:
        assert tuple(lk.htp.chunk_index(L, shape, coord)) == (chunk, 0)
        assert lk.htp.chunk_start(L, shape, coord) == chunk * 2048
    for chunk, coord in [(3, (0, 0, 8, 32)), (6, (0, 8, 0, 0)), (12, (1, 0, 0, 0))]:
        assert tuple(lk.htp.chunk_index(L, shape, coord)) == (chunk, 0)
        assert lk.htp.chunk_start(L, shape, coord) == chunk * 2048
    # chunk_start of any element is its chunk's first element offset (get_raw use)
    assert lk.htp.chunk_start(L, shape, (0, 7, 7, 31)) == 0
    assert lk.htp.chunk_start(L, shape, (1, 5, 13, 40)) == 15 * 2048


def test_listing_weights_points(lk):
    L, lay = _lib(lk, "ConvWeightLayout"), _ref("ConvWeightLayout")
    shape = (3, 3, 32, 32)
    first = [(0, 0, 0, 0), (0, 0, 1, 0), (0, 0, 2, 0), (0, 0, 3, 0), (0, 0, 0, 1)]
    order = list(enumerate(first))
    order += [(127, (0, 0, 3, 31)), (128, (0, 0, 4, 0)), (132, (0, 0, 4, 1))]
    order += [(1023, (0, 0, 31, 31)), (1024, (0, 1, 0, 0)), (2048, (0, 2, 0, 0))]
    order += [(3072, (1, 0, 0, 0))]
    _check_order(lk, L, lay, shape, order)
    assert tuple(L.padded_shape(shape)) == (3, 3, 32, 32)
    for k in range(9):  # chunk k holds (h, w) = (k // 3, k % 3)
        h, w = divmod(k, 3)
        assert tuple(lk.htp.chunk_index(L, shape, (h, w, 0, 0))) == (k, 0)
        assert tuple(lk.htp.chunk_index(L, shape, (h, w, 31, 31))) == (k, 1023)

    shape = (3, 3, 64, 96)
    assert L.size(shape) == 55296
    assert math.prod(tuple(L.physical_shape(shape))[:4]) == 54
    for k in range(54):
        ob, rest = divmod(k, 18)
        ib, hw = divmod(rest, 9)
        h, w = divmod(hw, 3)
        coord = (h, w, 32 * ib, 32 * ob)
        assert L.offset(shape, coord) == 1024 * k
        assert ref_offset(lay, None, shape, coord) == 1024 * k
    assert L.offset(shape, (0, 0, 0, 32)) == 18 * 1024
    assert L.offset(shape, (2, 2, 31, 31)) == 9 * 1024 - 1
    assert L.offset(shape, (0, 0, 32, 0)) == 9 * 1024

    assert tuple(L.padded_shape((3, 3, 32, 50))) == (3, 3, 32, 64)


# ---- 16- and 32-bit data: byte addresses (§1.8.2 hand checks) --------------------------


@pytest.mark.parametrize(
    ("name", "dtype", "block", "in_block_byte", "contiguous_byte"),
    [
        ("R4Crouton2Layout", np.uint16, 27, 1314, 56610),
        ("R4Crouton4Layout", np.uint32, 53, 1440, 109984),
    ],
)
def test_byte_addresses(lk, name, dtype, block, in_block_byte, contiguous_byte):
    shape, G = SHAPE_2, IDX_2["G"]
    isz = np.dtype(dtype).itemsize
    lay = _ref(name)
    assert lay.chunk_total * isz == 2048
    assert ref_offset(lay, None, shape, G) * isz == contiguous_byte
    assert block * 2048 + in_block_byte == contiguous_byte

    L = _lib(lk, name)
    assert L.offset(shape, G) * isz == contiguous_byte
    b, o = lk.htp.chunk_index(L, shape, G)
    assert (b, o * isz) == (block, in_block_byte)
    assert lk.htp.chunk_start(L, shape, G) * isz == block * 2048

    x = np.arange(1, math.prod(shape) + 1, dtype=dtype).reshape(shape)
    buf = L.pack(x)
    raw = buf.view(np.uint8).reshape(-1)
    assert raw[contiguous_byte : contiguous_byte + isz].tobytes() == x[G].tobytes()

    blocks = lk.htp.pack_blocks(x, L)
    assert len(blocks) == math.prod(tuple(L.physical_shape(shape))[:4])
    for blk in blocks:
        assert blk.ndim == 1
        assert blk.dtype == np.dtype(dtype)
        assert blk.nbytes == 2048
        assert blk.ctypes.data % 2048 == 0
    got = blocks[block].view(np.uint8)[in_block_byte : in_block_byte + isz].tobytes()
    assert got == x[G].tobytes()
    assert np.concatenate(blocks).tobytes() == buf.tobytes()
    np.testing.assert_array_equal(lk.htp.unpack_blocks(blocks, L, shape), x)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
@pytest.mark.parametrize(("shape", "idx", "table"), TABLES)
def test_wide_dtype_offsets_scale(lk, dtype, shape, idx, table):
    """'For 16- or 32-bit data multiply offsets by 2 or 4': every table cell."""
    isz = np.dtype(dtype).itemsize
    x = np.arange(1, math.prod(shape) + 1, dtype=dtype).reshape(shape)
    for name, (_, _, _, cells) in table.items():
        raw = _lib(lk, name).pack(x).view(np.uint8).reshape(-1)
        for letter, cell in zip(idx, cells, strict=True):
            off = cell[0] if isinstance(cell, tuple) else cell
            assert raw[off * isz : (off + 1) * isz].tobytes() == x[idx[letter]].tobytes()


def test_pack_blocks_uint8_crouton(lk):
    L = lk.htp.layout("R4CroutonLayout")
    x = np.arange(math.prod(SHAPE_2), dtype=np.uint32).reshape(SHAPE_2).astype(np.uint8)
    blocks = lk.htp.pack_blocks(x, L, pad_value=3)
    assert len(blocks) == 24
    ref = ref_pack(x, _ref("R4CroutonLayout"), pad_value=3).reshape(24, 2048)
    for k, blk in enumerate(blocks):
        assert blk.shape == (2048,)
        assert blk.ctypes.data % 2048 == 0
        np.testing.assert_array_equal(blk, ref[k])
    np.testing.assert_array_equal(lk.htp.unpack_blocks(blocks, L, SHAPE_2), x)


def test_strict_accepts_sdk_presets(lk):
    for name in PRESETS:
        assert lk.htp.layout(name, strict=True) == lk.htp.layout(name)
    assert lk.htp.layout(PRESETS["R4CroutonLayout"][0], strict=True) == lk.htp.layout(
        "R4CroutonLayout"
    )


# ---- block tables: alignment check, indirect ranks (§1.4) ------------------------------


def test_unpack_blocks_alignment_check(lk):
    L = lk.htp.layout("R4CroutonLayout")
    shape = (1, 9, 8, 32)
    x = (np.arange(math.prod(shape)) % 251).astype(np.uint8).reshape(shape)
    blocks = lk.htp.pack_blocks(x, L)
    raw = np.empty(2 * 2049, np.uint8)
    mis = [raw[1:2049], raw[2050 : 2050 + 2048]]
    mis[0][:] = blocks[0]
    mis[1][:] = blocks[1]
    assert mis[0].ctypes.data % 2048 != 0
    np.testing.assert_array_equal(lk.htp.unpack_blocks(mis, L, shape), x)
    with pytest.raises(lk.LayoutError, match=r"(?i)align"):
        lk.htp.unpack_blocks(mis, L, shape, check_alignment=True)
    np.testing.assert_array_equal(lk.htp.unpack_blocks(blocks, L, shape, check_alignment=True), x)


def test_pack_blocks_left_pad_and_pad_value(lk):
    L = lk.htp.layout("R4CroutonLayout", left_pad=LP)
    x = np.arange(1, 451, dtype=np.uint16).reshape(SHAPE_1)
    blocks = lk.htp.pack_blocks(x, L, pad_value=9)
    assert len(blocks) == 2
    ref = ref_pack(x, "NHWC8h8w32c", pad_value=9, left_pad=LP).reshape(2, 2048)
    for k in range(2):
        np.testing.assert_array_equal(blocks[k], ref[k])
        assert blocks[k].ctypes.data % 4096 == 0
    assert blocks[1][1053] == x[0, 2, 4, 29]
    np.testing.assert_array_equal(lk.htp.unpack_blocks(blocks, L, SHAPE_1), x)


@pytest.mark.parametrize(("name", "wblk"), [("R4DeepAR4_16bLayout", 4), ("R4DeepAR8_16bLayout", 8)])
def test_indirect_ranks_deep_ar(lk, name, wblk):
    """IChunked<4,3,...>: blocks of 1 h x (4 or 8) w x full depth (§1.4)."""
    L = lk.htp.layout(name)
    shape = (2, 3, 2 * wblk - 1, 40)  # W pads to 2*wblk, C pads to 64
    assert tuple(L.padded_shape(shape)) == (2, 3, 2 * wblk, 64)
    x = np.arange(math.prod(shape), dtype=np.uint16).reshape(shape)
    blocks = lk.htp.pack_blocks(x, L, indirect_ranks=3)
    assert len(blocks) == 2 * 3 * 2
    for blk in blocks:
        assert blk.size == wblk * 64
        assert blk.nbytes == wblk * 64 * 2
    assert np.concatenate(blocks).tobytes() == L.pack(x).tobytes()
    # (n, h, w) -> block n*6 + h*2 + w // wblk; depth 32 lives in the second chunk of it
    b = 1 * 6 + 2 * 2 + 1
    inner = ref_offset(_ref_deep(wblk), None, shape, (1, 2, wblk + 1, 33)) - b * wblk * 64
    assert 0 <= inner < wblk * 64
    assert blocks[b][inner] == x[1, 2, wblk + 1, 33]
    np.testing.assert_array_equal(lk.htp.unpack_blocks(blocks, L, shape, indirect_ranks=3), x)


def _ref_deep(wblk):
    return as_layout(
        f"ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 2,{wblk // 2}, 3,32, 2,2>", "NHWC"
    )


def test_ichunked_literal(lk):
    text = "IChunkedMemoryLayout<4,3, 0,0,1,0,2,0,3,0, 2,2,3,32,2,2>"
    assert lk.htp.layout(text) == lk.htp.layout("R4DeepAR4_16bLayout")


@pytest.mark.parametrize(
    "spec", ["R4DeepAR4_16bLayout", "IChunkedMemoryLayout<4,3, 0,0,1,0,2,0,3,0, 2,2,3,32,2,2>"]
)
def test_indirect_ranks_default_from_sdk_parameters(lk, spec):
    """The SDK declares R4DeepAR4_16bLayout with IndirRanks = 3 (§1.4): its block table
    has one entry per (n, h, w/4), without the caller passing indirect_ranks."""
    L = lk.htp.layout(spec)
    x = np.zeros((2, 3, 7, 40), np.uint16)
    blocks = lk.htp.pack_blocks(x, L)
    assert len(blocks) == 2 * 3 * 2
    assert blocks[0].size == 4 * 64
