"""Shapes large enough to reach every specialised path of the repack kernel.

The property tests use small shapes; these use channel counts and spatial
extents that exercise the vectorised interleaves (2, 3, 4, 8, 16 lanes), the
register-tile transposes (full tiles plus ragged edges in both directions),
padded lanes, and the portable build (``LAYOUTKIT_SIMD=portable``, run in a
subprocess because the choice is made once per process).
"""

import itertools
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ref_pack, ref_unpack

import layoutkit as lk
from layoutkit import _engine, _repack

DTYPES = [np.uint8, np.uint16, np.float32, np.float64, np.dtype("V3"), np.complex128]
CHANNELS = [2, 3, 4, 5, 8, 16, 17, 32, 33, 64]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, (*shape, dtype.itemsize), dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize(
    ("tag", "dims"),
    [
        ("NHWC", "NCHW"),
        ("NCHW", "NHWC"),
        ("NCHW4c", None),
        ("NCHW16c", None),
        ("NCHW32c", None),
        ("HCWN8c", "NCHW"),
        ("NHWC8c", "NCHW"),
    ],
)
def test_pack_matches_reference(tag, dims, c, dtype):
    shape = (2, c, 19, 37) if dims != "NHWC" else (2, 19, 37, c)
    x = _data(shape, dtype, seed=c)
    layout = lk.Layout(tag, dims=dims)
    got = layout.pack(x)
    want = ref_pack(x, tag, dims=dims)
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    back = layout.unpack(got, shape)
    assert back.tobytes() == x.tobytes()
    assert ref_unpack(got, tag, dims=dims, shape=shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize(
    ("src", "dst", "dims"),
    [
        ("NCHW4c", "NHWC8h8w32c", "NCHW"),
        ("NHWC8h8w32c", "HCWN16c", "NCHW"),
        ("NCHW32c", "NHWC", "NCHW"),
        ("NHWC4h4w32c2h2w", "NHWC8h2w32c2w", "NHWC"),
    ],
)
def test_convert_between_blocked_layouts(src, dst, dims, dtype):
    shape = (1, 45, 70, 21) if dims == "NCHW" else (1, 21, 45, 70)
    x = _data(shape, dtype, seed=7)
    a = lk.Layout(src, dims=dims)
    b = lk.Layout(dst, dims=dims)
    got = lk.convert(a.pack(x), shape, a, b, pad_value=0)
    assert got.tobytes() == ref_pack(x, dst, dims=dims).tobytes()


def test_large_image_round_trip():
    x = _data((1, 3, 512, 640), np.uint8, seed=3)
    for tag in ["NHWC", "NCHW4c", "NCHW32c", "HCWN4c", "NHWC8h8w32c"]:
        layout = lk.Layout(tag, dims="NCHW")
        packed = layout.pack(x)
        assert packed.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()
        assert np.array_equal(layout.unpack(packed, x.shape), x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=str)
@pytest.mark.parametrize("shape", [(1, 128, 96, 64), (2, 48, 64, 128), (1, 72, 104, 96)])
def test_crouton_runs_past_l2(shape, dtype):
    """NHWC <-> crouton of 32-channel runs of 64 / 128 bytes in operations
    past L2 (the 512-bit run copies), against the reference both ways."""
    x = _data(shape, dtype, seed=5)
    layout = lk.Layout("NHWC8h8w32c", dims="NHWC")
    packed = layout.pack(x)
    assert packed.tobytes() == ref_pack(x, "NHWC8h8w32c", dims="NHWC").tobytes()
    got = layout.unpack(packed, x.shape)
    assert got.tobytes() == ref_unpack(packed, "NHWC8h8w32c", dims="NHWC", shape=x.shape).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 7, 7, 2048), (2, 9, 5, 544), (1, 16, 16, 512), (1, 3, 2, 1024)]
)
def test_crouton_unpack_of_many_chunks(shape, dtype):
    """Crouton -> NHWC of 16+ chunks of channels a multiple of 2 KiB apart:
    the runs of every pixel a block of 8 chunks at a time (copy_levels),
    the last block partial (544 channels: 17 chunks); against the reference."""
    x = _data(shape, dtype, seed=7)
    layout = lk.Layout("NHWC8h8w32c", dims="NHWC")
    packed = layout.pack(x)
    got = layout.unpack(packed, x.shape)
    assert got.tobytes() == x.tobytes()
    assert got.tobytes() == ref_unpack(packed, "NHWC8h8w32c", dims="NHWC", shape=x.shape).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("c", [2, 3, 4, 5, 8, 16, 33, 64])
@pytest.mark.parametrize("tag", ["NHWC", "NCHW4c", "NCHW32c", "HCWN4c", "NHWC8h8w32c"])
def test_streamed_stores_match(store_mode, tag, c, dtype):
    """Staged, non-temporal output (used for outputs larger than the cache) is exact."""
    shape = (2, c, 23, 150)
    x = _data(shape, dtype, seed=c)
    layout = lk.Layout(tag, dims="NCHW")
    packed = layout.pack(x)
    assert packed.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()
    nhwc = lk.Layout("NHWC", dims="NCHW")
    back = lk.convert(packed, shape, layout, nhwc)
    assert back.tobytes() == ref_pack(x, "NHWC", dims="NCHW").tobytes()
    assert nhwc.unpack(nhwc.pack(x), shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("offset", [0, 8, 16, 24, 32, 40, 48, 56])
@pytest.mark.parametrize(("src_tag", "dst_tag"), [("NHWC", "NCHW"), ("NCHW", "NHWC")])
@pytest.mark.parametrize(
    "shape",
    [
        (1, 64, 32, 48),  # planes of 1536 pixels: staged pieces narrower than a row
        (1, 128, 16, 64),  # 128 channels: NHWC -> NCHW by the row-run kernel, unstaged
        (1, 64, 64, 64),  # 4096 pixels, 64 channels: NCHW -> NHWC unstaged
    ],
)
def test_streamed_output_at_every_line_offset(store_mode, shape, src_tag, dst_tag, offset, dtype):
    """Output arrays starting anywhere in a cache line: the streamed path aligns its
    pieces to the destination's lines and stores partial lines through the cache."""
    dtype = np.dtype(dtype)
    x = _data(shape, dtype, seed=offset)
    src = lk.Layout(src_tag, dims="NCHW")
    dst = lk.Layout(dst_tag, dims="NCHW")
    packed = src.pack(x)
    n = x.size * dtype.itemsize
    raw = np.zeros(n + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset - offset % dtype.itemsize
    out = raw[start : start + n].view(dtype)
    got = lk.convert(packed, shape, src, dst, out=out)
    assert got.tobytes() == ref_pack(x, dst_tag, dims="NCHW").tobytes()
    assert not raw[:start].any() and not raw[start + n :].any()


@pytest.mark.parametrize("dtype", ["V3", "V6", "V12", "V48", np.complex128], ids=str)
@pytest.mark.parametrize("offset", [0, 5, 16, 24, 33, 48, 63])
def test_streamed_output_odd_element_sizes(store_mode, dtype, offset):
    """Elements that do not divide a cache line, output anywhere in a line: the
    streamed pieces keep their plain widths and every byte lands once."""
    dtype = np.dtype(dtype)
    shape = (1, 64, 8, 100)
    x = _data(shape, dtype, seed=offset)
    src = lk.Layout("NHWC", dims="NCHW")
    packed = src.pack(x)
    n = x.size * dtype.itemsize
    raw = np.zeros(n + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start : start + n].view(dtype)
    got = lk.convert(packed, shape, src, "NCHW", out=out)
    assert got.tobytes() == x.tobytes()
    assert not raw[:start].any() and not raw[start + n :].any()


SIMD_CHECK = """
import sys
import numpy as np
import layoutkit as lk
from layoutkit import _repack
from reference import ref_pack, ref_unpack

assert _repack.simd_name() == sys.argv[1], _repack.simd_name()
rng = np.random.default_rng(1)
# Byte transposes of 16, 32, 48 and 64 lanes long enough for the pipelined
# kernel (AVX2 tiles here when AVX-512 VBMI is switched off).
for shape, tag in (
    ((1, 64, 40, 52), "NCHW32c"),
    ((2, 64, 33, 64), "NHWC"),
    ((2, 32, 20, 64), "NCHW16c"),
    ((1, 48, 30, 40), "NHWC"),
):
    x = rng.integers(0, 256, shape).astype(np.uint8)
    if lk.Layout(tag, dims="NCHW").pack(x).tobytes() != ref_pack(x, tag, dims="NCHW").tobytes():
        sys.exit(f"pack mismatch {tag} {shape}")
for stream in (-1, 0):
    _repack.set_stream_threshold(stream)
    for c in (3, 4, 16, 33, 64):
        for dt in (np.uint8, np.uint16, np.float32, np.float64):
            for tag in ("NHWC", "NCHW4c", "NCHW16c", "NCHW8h2w32c4w", "NCHW8h2w32c2w"):
                x = rng.integers(0, 200, (2, c, 21, 35)).astype(dt)
                layout = lk.Layout(tag, dims="NCHW")
                got = layout.pack(x)
                if got.tobytes() != ref_pack(x, tag, dims="NCHW").tobytes():
                    sys.exit(f"pack mismatch {tag} C={c} {np.dtype(dt)} stream={stream}")
                if layout.unpack(got, x.shape).tobytes() != x.tobytes():
                    sys.exit(f"unpack mismatch {tag} C={c} {np.dtype(dt)} stream={stream}")
"""


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_vbmi_kernels_chosen_where_the_cpu_has_them():
    """The AVX-512 VBMI byte kernels are what the default build runs on a CPU
    with them, so that this suite tests them (and on others, never)."""
    flags = _cpu_flags()
    if flags is None or os.environ.get("LAYOUTKIT_SIMD"):
        pytest.skip("needs /proc/cpuinfo and the default kernel choice")
    has_vbmi = {"avx512f", "avx512bw", "avx512vl", "avx512vbmi"} <= flags
    assert _repack.simd_name().endswith("+avx512vbmi") == has_vbmi, _repack.simd_name()


def _check_in_fresh_process(tmp_path, source, env_var, value, *args):
    """Run a check script with ``env_var=value`` in a new interpreter (the
    kernels read their environment once per process); it exits non-zero with a
    message on a mismatch."""
    script = tmp_path / "check.py"
    script.write_text(source)
    env = dict(os.environ, **{env_var: value})
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(__file__), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.parametrize(
    ("simd", "name"), [("portable", "portable"), ("sse4.1", "sse4.1"), ("avx2", "sse4.1+avx2")]
)
def test_other_kernel_builds_match(tmp_path, simd, name):
    """The same checks with the portable (non-SIMD) kernels, with SSE4.1 but no
    AVX2, and with AVX2 but not AVX-512, each in a fresh process (the choice is
    made once per process)."""
    if simd != "portable" and not _repack.simd_name().startswith(name):
        pytest.skip(f"this CPU has no {name} kernels ({_repack.simd_name()})")
    _check_in_fresh_process(tmp_path, SIMD_CHECK, "LAYOUTKIT_SIMD", simd, name)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("c", [1, 3, 5, 32, 35])
@pytest.mark.parametrize("tag", ["NHWC8h2w32c4w", "NHWC8h2w32c2w", "NHWC8h8w32c"])
def test_crouton_family_rows_of_padding(store_mode, tag, c, dtype):
    """Channel padding above a W block (R4Crouton4x1/R4Crouton2) and short rows."""
    shape = (2, 19, 21, c)
    x = _data(shape, dtype, seed=c)
    layout = lk.Layout(tag, dims="NHWC")
    packed = layout.pack(x, pad_value=3)
    assert packed.tobytes() == ref_pack(x, tag, dims="NHWC", pad_value=3).tobytes()
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float64], ids=str)
@pytest.mark.parametrize(("c", "left"), [(3, 5), (29, 3), (1, 31), (30, 2)])
@pytest.mark.parametrize("tag", ["NHWC8h2w32c4w", "NHWC8h2w32c2w", "NHWC8h4w32c2w"])
def test_crouton_family_padding_rows_before_and_after(tag, c, left, dtype):
    """Boxes of padded rows with padding rows before the data too (left padding of C)."""
    shape = (1, 11, 13, c)
    x = _data(shape, dtype, seed=c + left)
    layout = lk.Layout(tag, dims="NHWC", left_pad=(0, 0, 0, left))
    packed = layout.pack(x, pad_value=7)
    want = ref_pack(x, tag, dims="NHWC", pad_value=7, left_pad=(0, 0, 0, left))
    assert packed.tobytes() == want.tobytes()
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()


LONG_LANE_SHAPES = [
    (1, 13, 71, 67),
    (1, 64, 65, 67),
    (2, 9, 64, 128),
    (1, 40, 70, 61),
    (1, 72, 64, 65),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("shape", LONG_LANE_SHAPES)
def test_long_lane_transposes(shape, dtype):
    """Planes of 4096+ pixels take the direct AVX2 tiles; ragged lane and row
    counts, and more lanes than one group of 64, exercise their edges."""
    x = _data(shape, dtype, seed=shape[1])
    for tag in ("NHWC", "NHWC8c", "NCHW32c"):
        layout = lk.Layout(tag, dims="NCHW")
        packed = layout.pack(x, pad_value=9)
        assert packed.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=9).tobytes()
        assert layout.unpack(packed, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize(
    "shape", [(2, 64, 40, 41), (1, 32, 56, 56), (1, 96, 33, 40), (2, 256, 28, 29), (1, 64, 64, 64)]
)
def test_byte_lanes_of_medium_planes(shape):
    """Bytes in planes of 784-4096 pixels with 32+ lanes: wide tiles straight
    from the lanes where their starts spread over the cache sets (NHWC of
    8x256x56x56), the pipelined 32-lane tiles where they do not (planes of
    4096, a power of two) or for 32-byte rows: whole 256-row units, then the
    rows after the last unit."""
    x = _data(shape, np.uint8, seed=shape[3])
    for tag in ("NCHW32c", "NHWC"):
        layout = lk.Layout(tag, dims="NCHW")
        packed = layout.pack(x, pad_value=9)
        assert packed.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=9).tobytes()
        assert layout.unpack(packed, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("offset", [0, 8, 16, 48])
def test_streamed_byte_lanes_of_a_batch(offset):
    """NCHW -> NCHW32c of bytes in an operation of 12 MiB+ (8 images of 256
    channels): the 32-lane pipeline streams its rows out, 16-byte aligned
    outputs only (8 bytes past a line keeps ordinary stores). Nothing outside
    the output is written."""
    shape = (8, 256, 56, 57)
    x = _data(shape, np.uint8, seed=offset)
    layout = lk.Layout("NCHW32c", dims="NCHW")
    raw, start, out = _output_at(layout.physical_shape(shape), np.uint8, offset)
    got = layout.pack(x, out=out)
    assert got.tobytes() == ref_pack(x, "NCHW32c", dims="NCHW").tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("offset", [0, 2, 16, 40])
@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        ("NCHW8c", np.uint8),
        ("NCHW16c", np.uint8),
        ("NCHW32c", np.uint8),
        ("HCWN4c", np.uint8),
        ("HCWN8c", np.uint8),
        ("NCHW4c", np.float16),
        ("NCHW8c", np.float16),
        ("NCHW16c", np.float16),
        ("HCWN4c", np.float16),
        ("HCWN8c", np.float16),
        ("NCHW4c", np.float32),
        ("NCHW8c", np.float32),
        ("HCWN4c", np.float32),
        ("HCWN8c", np.float32),
    ],
    ids=str,
)
def test_short_lanes_at_every_length(tag, dtype, offset):
    """Planes of 1-140 elements into dense pixels (7x7 planes of 2048
    channels): whole 64-byte steps, then a last step under masks; the zips stop
    at planes of 256 bytes (128 for 16 byte lanes). Every length, with and
    without padding channels in the last block, at odd output offsets; nothing
    outside the output is written."""
    layout = lk.Layout(tag, dims="NCHW")
    lanes = int(tag[4:-1])
    for w, c in itertools.product([*range(1, 70), 71, 96, 100, 127, 128, 129, 140], [0, 3]):
        shape = (1, 32 * lanes + c, 1, w)
        x = _data(shape, dtype, seed=w)
        raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
        raw[:] = 0xA5  # masked loads read zeros past a lane: a stray store would not be 0xA5
        got = layout.pack(x, pad_value=5, out=out)
        want = ref_pack(x, tag, dims="NCHW", pad_value=5)
        assert got.tobytes() == want.tobytes(), w
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("offset", [0, 16, 40])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("tag", ["NHWC8h8w32c", "NHWC8h2w32c2w", "NHWC8h2w32c4w"])
def test_many_channel_runs_into_small_padded_planes(tag, dtype, offset):
    """Pixels of 9+ runs of 32 channels into croutons of small planes: padded
    and given their data a slice of the output at a time, and a pixel's runs
    copied a group at a time (the last group shorter); nothing outside the
    output is written."""
    layout = lk.Layout(tag, dims="NHWC")
    for c, h, w in [(288, 7, 7), (320, 3, 9), (544, 9, 5), (2048, 7, 7), (300, 7, 7)]:
        x = _data((1, h, w, c), dtype, seed=c + h)
        raw, start, out = _output_at(layout.physical_shape(x.shape), dtype, offset)
        raw[:] = 0xA5
        got = layout.pack(x, pad_value=5, out=out)
        want = ref_pack(x, tag, dims="NHWC", pad_value=5)
        assert got.tobytes() == want.tobytes(), (c, h, w)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("offset", [0, 2, 16, 40])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("direction", ["NCHW->NHWC", "NHWC->NCHW"])
def test_chunk_transposes_at_every_edge(direction, dtype, offset):
    """Transposes within L2 (7x7 planes of 2048 channels, and back) by the
    chunk tiles: lane counts around a tile of 64 bytes (a partial tile under a
    mask, an overlapping last tile, a head tile up to the output's first line)
    and row counts around one and four groups of rows. Checked against numpy's
    transpose; nothing outside the output is written."""
    src_tag, dst_tag = direction.split("->")
    for c, hw in itertools.product(
        [16, 31, 32, 33, 49, 63, 64, 65, 100, 256, 300, 512], [16, 17, 31, 33, 49, 64, 65, 127, 200]
    ):
        logical = _data((1, c, 1, hw), dtype, seed=c + hw)
        x = logical if src_tag == "NCHW" else np.ascontiguousarray(logical.transpose(0, 2, 3, 1))
        want = logical if dst_tag == "NCHW" else logical.transpose(0, 2, 3, 1)
        raw, start, out = _output_at(want.shape, dtype, offset)
        raw[:] = 0xA5
        src, dst = (lk.Layout(tag, dims="NCHW") for tag in (src_tag, dst_tag))
        got = lk.convert(x, logical.shape, src, dst, out=out)
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (c, hw)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 1, 17, 63])
def test_byte_lane_tiles_into_streamed_planes(offset, threads):
    """NHWC -> NCHW uint8 whose planes stream out (4 MiB+ of output, or the
    slices of a batch): 64 pixels at a time through all channels, a masked
    tile up to the output's first line and for the last pixels, and a last
    block of channels overlapping the one before; on one thread and split
    over two. Checked against numpy's transpose; nothing outside the output
    is written."""
    for n, c, hw in [
        (1, 128, 32768),
        (1, 130, 32832),
        (1, 191, 22016),
        (1, 300, 14016),
        (1, 512, 8192),
        (9, 130, 4096),
        (8, 256, 3136),
    ]:
        logical = _data((n, c, 1, hw), np.uint8, seed=c + hw)
        x = np.ascontiguousarray(logical.transpose(0, 2, 3, 1))
        raw, start, out = _output_at(logical.shape, np.uint8, offset)
        raw[:] = 0xA5
        got = lk.convert(
            x,
            logical.shape,
            lk.Layout("NHWC", dims="NCHW"),
            lk.Layout("NCHW", dims="NCHW"),
            out=out,
            threads=threads,
        )
        assert got.tobytes() == logical.tobytes(), (n, c, hw)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("tag", ["HCWN4c", "HCWN8c"])
def test_staged_rows_of_every_length(tag, dtype):
    """HCWN4c / HCWN8c of short planes: each block of channels is interleaved
    into an L1 stage and its W rows gathered into the destination rows (runs
    of 4-256 bytes, each two overlapping moves). Nothing outside the output is
    written."""
    layout = lk.Layout(tag, dims="NCHW")
    for w, h, c in itertools.product([1, 2, 3, 5, 7, 9, 13, 16], [1, 3, 7], [600, 603]):
        shape = (1, c, h, w)
        x = _data(shape, dtype, seed=w)
        raw, start, out = _output_at(layout.physical_shape(shape), dtype, 8)
        raw[:] = 0xA5
        got = layout.pack(x, pad_value=5, out=out)
        assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=5).tobytes(), (w, h, c)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


def _check_lanes_of_a_batch(tag, dtype, offset, batches, widths):
    """HCWN4c / HCWN8c of batches of 3-row images, 7 or 8 channels (a block
    partly padding), into an output at ``offset``: against the reference,
    nothing outside the output written, and back."""
    layout = lk.Layout(tag, dims="NCHW")
    for n, c, w in itertools.product(batches, [8, 7], widths):
        shape = (n, c, 3, w)
        x = _data(shape, dtype, seed=n * w + c)
        raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
        raw[:] = 0xA5
        got = layout.pack(x, pad_value=3, out=out)
        want = ref_pack(x, tag, dims="NCHW", pad_value=3)
        assert got.tobytes() == want.tobytes(), (n, c, w)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()
        assert layout.unpack(got, shape).tobytes() == x.tobytes(), (n, c, w)


@pytest.mark.parametrize("offset", [0, 16, 48])
@pytest.mark.parametrize("dtype", [np.uint32, np.float32], ids=str)
@pytest.mark.parametrize("tag", ["HCWN4c", "HCWN8c"])
def test_four_byte_lanes_of_a_batch(store_mode, tag, dtype, offset):
    """HCWN4c / HCWN8c of a batch, 4-byte elements: each W row of the output
    holds N x 4 (N x 8) lanes of far-apart planes, moved by 16-lane by 16-row
    512-bit tiles where the CPU has AVX-512, the last tile of lanes and of
    rows moved back to end at the box's edge. Lane counts 16-64, rows of 16
    to 57, channels that leave a block partly padding; nothing outside the
    output is written."""
    _check_lanes_of_a_batch(tag, dtype, offset, [4, 5, 8], [16, 17, 40, 57])


@pytest.mark.parametrize("offset", [0, 16, 40])
@pytest.mark.parametrize("dtype", [np.uint16, np.float16], ids=str)
@pytest.mark.parametrize("tag", ["HCWN4c", "HCWN8c"])
def test_two_byte_lanes_of_a_batch(tag, dtype, offset):
    """HCWN4c / HCWN8c of a batch, 2-byte elements: 32 lanes by 8 rows at a
    time in 512-bit registers on Zen 5 (lk_interleave_wide_z16), the last
    tile of lanes and of rows moved back to end at the box's edge. Lane
    counts 16-96, rows of 8 to 57, channels that leave a block partly
    padding; nothing outside the output is written."""
    _check_lanes_of_a_batch(tag, dtype, offset, [4, 8, 9, 12], [8, 9, 23, 57])


@pytest.mark.parametrize("offset", [1, 2, 3, 6])
@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("tag", ["NCHW4c", "NCHW8c", "NCHW16c", "HCWN8c"])
@pytest.mark.parametrize("shape", [(1, 3, 40, 41), (1, 259, 1, 9)])
def test_padded_pixels_at_element_misaligned_outputs(shape, tag, dtype, offset):
    """An output view that starts between element boundaries (numpy allows
    it) gets the same bytes: the VBMI padded-row kernel merges a pad vector of
    whole elements, so it leaves such outputs to the other kernels (its pad
    bytes came out shifted). Nothing outside the output is written."""
    x = _data(shape, dtype, seed=offset)
    layout = lk.Layout(tag, dims="NCHW")
    raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
    raw[:] = 0xA5
    got = layout.pack(x, pad_value=5, out=out)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=5).tobytes()
    assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("offset", [0, 8, 16, 32, 48])
@pytest.mark.parametrize("shape", [(1, 3, 1024, 1027), (2, 19, 7, 37)])
def test_three_byte_channels_in_blocks_of_16(shape, offset):
    """3 byte channels (or a last block of 3) into NCHW16c: two padded rows a
    store, streamed 16 bytes at a time in a large operation (16 MiB here) when
    the output is 16-byte aligned. Padding holds pad_value; nothing outside the
    output is written."""
    x = _data(shape, np.uint8, seed=offset)
    layout = lk.Layout("NCHW16c")
    raw, start, out = _output_at(layout.physical_shape(shape), np.uint8, offset)
    got = layout.pack(x, pad_value=7, out=out)
    assert got.tobytes() == ref_pack(x, "NCHW16c", pad_value=7).tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("offset", [0, 16, 32])
@pytest.mark.parametrize(
    ("tag", "c", "hw", "dtype"),
    [
        ("NCHW16c", 3, (1, 70), np.uint8),
        ("NCHW32c", 1, (1, 33), np.uint8),
        ("NCHW32c", 4, (3, 45), np.uint8),
        ("NCHW64c", 3, (2, 50), np.uint8),
        ("NCHW128c", 2, (1, 40), np.uint8),
        ("NCHW32c", 35, (2, 33), np.uint8),
        ("NCHW64c", 3, (512, 300), np.uint8),  # 10 MB: streamed stores
        ("NCHW8c", 3, (1, 37), np.uint16),
        ("NCHW32c", 3, (2, 50), np.uint16),
        ("NCHW8c", 3, (600, 700), np.uint16),  # 9 MB: streamed
        ("NCHW8c", 2, (600, 700), np.uint16),
        ("NCHW8c", 4, (600, 700), np.uint16),
        ("NCHW4c", 2, (2, 40), np.float32),
        ("NCHW8c", 2, (1, 37), np.float32),
        ("NCHW16c", 3, (3, 45), np.float32),
        ("NCHW32c", 3, (1, 33), np.float32),
        ("NCHW4c", 2, (600, 700), np.float32),  # 10 MB: streamed
        ("NCHW8c", 3, (600, 700), np.float32),
    ],
    ids=str,
)
def test_few_channels_into_padded_rows(tag, c, hw, dtype, offset):
    """Up to four channels into rows of 16-256 bytes, built in registers (32, 16
    or 8 rows a step for 1-, 2- and 4-byte elements; the rest through the
    staging kernel): every padding slot written with pad_value over an output
    that held other bytes, and nothing outside the output touched."""
    x = _data((1, c, *hw), dtype, seed=c + hw[1])
    layout = lk.Layout(tag, dims="NCHW")
    raw, start, out = _output_at(layout.physical_shape(x.shape), dtype, offset)
    raw[...] = 0xEE
    got = layout.pack(x, pad_value=7, out=out)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=7).tobytes()
    assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64], ids=str)
def test_padded_rows_at_every_line_offset(dtype):
    """Up to four channels into rows of 4-64 bytes (the VBMI kernel on Intel:
    one step unaligned before the first line boundary, then line-aligned
    pieces that run a phase into the rows, the piece crossing into the next
    step's rows from both steps, and unaligned steps for the last rows): at
    every element offset within a line, for row counts either side of one and
    two steps, with left padding, pad_value in every slot of an output that
    held other bytes and nothing outside it written."""
    es = np.dtype(dtype).itemsize
    per = 16 // es  # pixels a step
    tags = [f"NCHW{n}c" for n in (4, 8, 16, 32, 64) if 4 * es <= n * es <= 64 and n * per >= 64]
    for tag in tags:
        block = int(tag[4:-1])
        for c, left in [(1, 0), (3, 0), (4, 0), (2, block // 2 - 2 if block >= 8 else 0)]:
            layout = lk.Layout(tag, dims="NCHW", left_pad=(0, left, 0, 0))
            for w in (per - 1, per, 2 * per - 1, 2 * per, 2 * per + 1, 3 * per + 5, 77):
                x = _data((1, c, 1, w), dtype, seed=w + c)
                want = ref_pack(x, tag, dims="NCHW", pad_value=7, left_pad=(0, left, 0, 0))
                for offset in range(0, 64, es):
                    raw, start, out = _output_at(want.shape, dtype, offset)
                    raw[...] = 0xEE
                    got = layout.pack(x, pad_value=7, out=out)
                    assert got.tobytes() == want.tobytes(), (tag, c, left, w, offset)
                    assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64], ids=str)
def test_interleaves_at_every_line_offset(dtype):
    """Whole pixels of 2, 4, 8 and 16 lanes (NCHW of as many channels ->
    NCHW{k}c) through the compiler's interleave loops, whose rows before the
    output's first line boundary go first, and (8 lanes of 2 bytes on Intel
    with VBMI) the zip kernel with its last step ending at m: at every element
    offset in a line, row counts around a line's worth and a step's, nothing
    outside the output written."""
    es = np.dtype(dtype).itemsize
    for k in (2, 4, 8, 16):
        layout = lk.Layout(f"NCHW{k}c", dims="NCHW")
        for w in (1, 3, 64 // (k * es) + 1, 77, 300):
            x = _data((1, k, 1, w), dtype, seed=w + k)
            want = ref_pack(x, f"NCHW{k}c", dims="NCHW")
            for offset in range(0, 64, es):
                raw, start, out = _output_at(want.shape, dtype, offset)
                raw[...] = 0xEE
                got = layout.pack(x, out=out)
                assert got.tobytes() == want.tobytes(), (k, w, offset)
                assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
def test_three_channels_to_and_from_planes_at_every_line_offset(dtype):
    """NCHW <-> NHWC of 3 channels (the VBMI kernels on Intel: 64 bytes of each
    plane a step, a head before the first line boundary, a last step ending at
    the plane's end): planes around one and two steps long and longer, the
    output at every element offset in a line, nothing outside it written."""
    es = np.dtype(dtype).itemsize
    planar = lk.Layout("NCHW", dims="NCHW")
    pixels = lk.Layout("NHWC", dims="NCHW")
    for hw in (64 // es - 1, 128 // es - 1, 128 // es, 128 // es + 5, 1000):
        x = _data((1, 3, 1, hw), dtype, seed=hw)
        shape = x.shape
        nhwc = ref_pack(x, "NHWC", dims="NCHW")
        for offset in range(0, 64, es):
            raw, start, out = _output_at(nhwc.shape, dtype, offset)
            raw[...] = 0xEE
            got = lk.convert(x, shape, planar, pixels, out=out)
            assert got.tobytes() == nhwc.tobytes(), (hw, offset)
            assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()
            raw, start, back = _output_at(shape, dtype, offset)
            raw[...] = 0xEE
            got = lk.convert(nhwc, shape, pixels, planar, out=back)
            assert got.tobytes() == x.tobytes(), (hw, offset)
            assert (raw[:start] == 0xEE).all() and (raw[start + back.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("offset", [0, 5, 16, 40, 48])
@pytest.mark.parametrize(
    ("tag", "c", "dtype"),
    [
        ("NCHW16c", 3, np.uint8),
        ("NCHW32c", 3, np.uint8),
        ("NCHW8c", 3, np.uint8),
        ("NCHW8c", 3, np.float32),
        ("NCHW16c", 4, np.float16),
        ("NCHW4c", 3, np.float64),
        ("NCHW4c", 3, np.uint8),
        ("NCHW4c", 3, np.float32),
        ("NCHW8c", 5, np.float16),
    ],
    ids=str,
)
def test_streamed_padded_rows_at_line_offsets(tag, c, dtype, offset):
    """The same kernel streaming its aligned pieces (an operation of 8 MiB+),
    the output at element offsets that put rows a phase into the lines; rows
    of more data than padding (3 channels into NCHW4c) take it only then."""
    es = np.dtype(dtype).itemsize
    offset -= offset % es
    row_bytes = int(tag[4:-1]) * es
    x = _data((1, c, -(-(4 << 20) // (1001 * row_bytes)), 1001), dtype, seed=offset)
    layout = lk.Layout(tag, dims="NCHW")
    want = ref_pack(x, tag, dims="NCHW", pad_value=3)
    assert 2 * want.nbytes >= 8 << 20  # the footprint the plan streams from
    raw, start, out = _output_at(want.shape, dtype, offset)
    raw[...] = 0xEE
    got = layout.pack(x, pad_value=3, out=out)
    assert got.tobytes() == want.tobytes()
    assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("left", [1, 2, 4, 8, 12])
@pytest.mark.parametrize(
    ("tag", "c"), [("NCHW16c", 3), ("NCHW32c", 3), ("NCHW32c", 4), ("NCHW64c", 2)]
)
def test_few_byte_channels_after_left_padding(tag, c, left):
    """Data lanes that start inside the row (left padding of C): on a 4-byte
    boundary the register kernel, elsewhere the staging one."""
    x = _data((1, c, 3, 45), np.uint8, seed=c + left)
    layout = lk.Layout(tag, dims="NCHW", left_pad=(0, left, 0, 0))
    got = layout.pack(x, pad_value=7)
    want = ref_pack(x, tag, dims="NCHW", pad_value=7, left_pad=(0, left, 0, 0))
    assert got.tobytes() == want.tobytes()
    assert layout.unpack(got, x.shape).tobytes() == x.tobytes()


LONG_LANE_CHECK = """
import sys
import numpy as np
import layoutkit as lk
from reference import ref_pack

rng = np.random.default_rng(2)
# Destination rows 4 KiB apart (2048 channels of 2 bytes) over 4096 rows too.
cases = [(shape, dt) for shape in SHAPES for dt in (np.uint16, np.float32, np.float64)]
# 4 MiB+ of 64 channels of 2 bytes: the staged and streamed transpose (AMD).
for shape, dt in cases + [((1, 2048, 64, 64), np.uint16), ((1, 64, 127, 259), np.uint16)]:
    x = rng.integers(0, 60000, shape).astype(dt)
    for tag in ("NHWC", "NHWC8c"):
        layout = lk.Layout(tag, dims="NCHW")
        packed = layout.pack(x, pad_value=9)
        if packed.tobytes() != ref_pack(x, tag, dims="NCHW", pad_value=9).tobytes():
            sys.exit(f"pack mismatch {tag} {shape} {np.dtype(dt)}")
        if layout.unpack(packed, shape).tobytes() != x.tobytes():
            sys.exit(f"unpack mismatch {tag} {shape} {np.dtype(dt)}")
"""


VENDOR_CHECK = """
import sys
import numpy as np
import layoutkit as lk
from layoutkit import _repack
from reference import ref_pack

assert _repack.tuned_for() == sys.argv[1], _repack.tuned_for()
rng = np.random.default_rng(2)
# The choices made per maker: padded rows of 16 / 32 bytes (3 channels into
# NCHW16c / NCHW32c / NCHW8c / kCHW32 / kHWC8), cached and streamed,
# NHWC -> NCHW and the order of crouton packing (below).
for dt in (np.uint8, np.float16, np.float32):
    for c in (128, 256, 512):  # 4, 8 and 16 runs a pixel
        x = rng.integers(0, 200, (2, 16, 24, c)).astype(dt)
        got = lk.Layout("NHWC8h8w32c", dims="NHWC").pack(x)
        if got.tobytes() != ref_pack(x, "NHWC8h8w32c", dims="NHWC").tobytes():
            sys.exit(f"crouton pack mismatch C={c} {np.dtype(dt)}")
# 2-byte lanes of a batch (HCWNC4 / HCWNC8: 32 lanes a tile on Zen 5).
for tag in ("HCWN4c", "HCWN8c"):
    for shape in ((8, 8, 5, 56), (9, 7, 3, 13)):
        x = rng.integers(0, 200, shape).astype(np.float16)
        got = lk.Layout(tag, dims="NCHW").pack(x, pad_value=5)
        if got.tobytes() != ref_pack(x, tag, dims="NCHW", pad_value=5).tobytes():
            sys.exit(f"batch lanes {tag} mismatch {shape}")
# 3 channels padded into pixels of 4-32 lanes, large enough that the maker's
# rule streams them or not (Zen 5: through the cache up to 20 MiB moved).
for dt in (np.uint8, np.float32):
    x = rng.integers(0, 200, (1, 3, 1024, 1030)).astype(dt)
    for tag in ("NCHW4c", "NCHW8c") + (("NCHW16c", "NCHW32c") if dt == np.uint8 else ()):
        got = lk.Layout(tag, dims="NCHW").pack(x, pad_value=5)
        if got.tobytes() != ref_pack(x, tag, dims="NCHW", pad_value=5).tobytes():
            sys.exit(f"large padded {tag} mismatch {np.dtype(dt)}")
for stream in (-1, 0):
    _repack.set_stream_threshold(stream)
    for dt in (np.uint8, np.float16, np.float32):
        for tag in ("NCHW8c", "NCHW16c", "NCHW32c", "NHWC8c"):
            for shape in ((1, 3, 17, 45), (2, 3, 8, 64), (1, 4, 5, 7)):
                x = rng.integers(0, 200, shape).astype(dt)
                layout = lk.Layout(tag, dims="NCHW")
                got = layout.pack(x, pad_value=5)
                want = ref_pack(x, tag, dims="NCHW", pad_value=5)
                if got.tobytes() != want.tobytes():
                    sys.exit(f"pack mismatch {tag} {shape} {np.dtype(dt)} stream={stream}")
    # Streamed rows of 16 bytes of 2-byte elements (registers on Intel).
    for c in (2, 3, 4):
        x = rng.integers(0, 200, (1, c, 600, 700)).astype(np.float16)
        got = lk.Layout("NCHW8c", dims="NCHW").pack(x, pad_value=5)
        if got.tobytes() != ref_pack(x, "NCHW8c", dims="NCHW", pad_value=5).tobytes():
            sys.exit(f"streamed NCHW8c mismatch C={c} stream={stream}")
    # NHWC -> NCHW: lanes 4 KiB apart, row runs of more than 64 planes
    # (rows or lane groups outer), and pixels of 1024-2048 channels (float32:
    # lanes a multiple of 4 KiB apart, 16x16 tiles on Zen 5).
    for shape in ((1, 64, 64, 24), (1, 48, 48, 256), (2, 40, 60, 200), (1, 7, 7, 1024),
                  (1, 4, 5, 2048), (2, 3, 6, 1024)):
        for dt in (np.uint8, np.float16, np.float32):
            x = rng.integers(0, 200, shape).astype(dt)
            nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
            got = lk.convert(x, nchw.shape, lk.Layout("NHWC", dims="NCHW"), "NCHW")
            if got.tobytes() != nchw.tobytes():
                sys.exit(f"NHWC -> NCHW mismatch {shape} {np.dtype(dt)} stream={stream}")
"""


@pytest.mark.parametrize(
    ("vendor", "tuned"), [("amd", "amd"), ("zen5", "amd-zen5"), ("intel", "other")]
)
def test_cpu_maker_choices_match(tmp_path, vendor, tuned):
    """The few kernel choices made by the CPU's maker and generation (see
    lk_is_amd and lk_split_avx512), each set forced in a fresh process, so
    that all three are tested on any machine."""
    _check_in_fresh_process(tmp_path, VENDOR_CHECK, "LAYOUTKIT_CPU_VENDOR", vendor, tuned)


@pytest.mark.parametrize("order", ["columns", "strips"])
def test_long_lane_orders_match(tmp_path, order):
    """Both orders of the long-lane transpose (the CPU's maker picks one; see
    lk_long_lanes_by_columns), each forced in a fresh process."""
    source = LONG_LANE_CHECK.replace("SHAPES", repr(LONG_LANE_SHAPES))
    _check_in_fresh_process(tmp_path, source, "LAYOUTKIT_LONG_LANES", order)


@pytest.mark.parametrize("offset", [0, 16, 32, 48])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((1, 64, 127, 259), np.uint16),
        ((1, 48, 171, 257), np.uint16),
        ((1, 32, 256, 257), np.uint16),
        ((1, 16, 256, 257), np.uint16),
        ((1, 64, 127, 131), np.float32),
        ((1, 40, 160, 257), np.float32),
        ((1, 32, 128, 259), np.float32),
        ((1, 16, 128, 257), np.float32),
        ((1, 8, 256, 257), np.float32),
    ],
    ids=str,
)
def test_staged_and_streamed_long_lanes(shape, dtype, offset):
    """NCHW -> NHWC of 8-64 channels of 2 and 4 bytes into 2 MiB+ (on AMD:
    staged in L1 and streamed out): outputs 0-48 bytes past a line, so that the
    streamed 32-byte chunks straddle rows; rows past the last whole block and
    past the last tile. Nothing outside the output is written."""
    x = _data(shape, dtype, seed=offset + shape[1])
    nhwc = lk.Layout("NHWC", dims="NCHW")
    out_shape = (shape[0], shape[2], shape[3], shape[1])
    raw, start, out = _output_at(out_shape, dtype, offset)
    got = lk.convert(x, shape, "NCHW", nhwc, out=out)
    assert got.tobytes() == np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("offset", [0, 16, 32, 48])
@pytest.mark.parametrize(
    ("tag", "shape", "dtype"),
    [
        ("NCHW32c", (12, 64, 56, 56), np.float16),
        ("NCHW32c", (10, 96, 61, 63), np.float16),  # lane tiles: rows past whole steps
        ("NCHW16c", (12, 64, 56, 56), np.float16),  # 100 KB a block of 16 channels
        ("NCHW32c", (6, 64, 56, 57), np.float32),
        ("NHWC", (6, 256, 40, 40), np.float16),
        ("NHWC", (4, 240, 48, 48), np.float16),
        ("NHWC", (4, 136, 48, 49), np.float32),
    ],
    ids=str,
)
def test_staged_and_streamed_blocks_of_a_batch(store_mode, tag, shape, dtype, offset):
    """NCHW -> NCHW16c, NCHW32c and NHWC of up to 256 channels, a batch of 8
    MiB+ whose images or blocks of channels are 100 KB-1.2 MB each (on AMD:
    staged and streamed, the plan's footprint telling the kernel the whole is
    large; with every output streamed, taken instead of the caller's staging):
    rows past the last whole staging block, outputs 0-48 bytes past a line. Nothing
    outside the output is written."""
    x = _data(shape, dtype, seed=offset + shape[0])
    layout = lk.Layout(tag, dims="NCHW")
    raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
    got = layout.pack(x, out=out)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("src_offset", [0, 2, 16, 31])
@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize(
    ("tag", "shape", "dtype"),
    [
        ("NHWC", (1, 64, 128, 256), np.float16),  # 4 MiB, one call
        ("NHWC", (1, 16, 256, 512), np.float16),
        ("NHWC", (6, 256, 32, 48), np.float16),  # 768 KB an image, 9 MiB in and out
        ("NHWC", (5, 192, 48, 64), np.float16),
        ("NCHW32c", (1, 64, 128, 130), np.uint8),  # 32-lane byte pipeline
        ("NHWC", (1, 64, 96, 128), np.uint8),
    ],
    ids=str,
)
def test_transposes_of_misaligned_lanes(tag, shape, dtype, offset, src_offset):
    """NCHW -> NHWC / NCHW32c whose lanes (a multiple of 32 bytes apart) start
    1-31 bytes past a 32-byte boundary: the first rows go on their own so that
    the 32-byte loads of the staged float16 kernel and of the byte pipeline's
    lane copies are aligned (on AMD; odd offsets of float16 keep the loads as
    they are: the array is unaligned). Nothing outside the output is written."""
    x = _data(shape, dtype, seed=src_offset + shape[1])
    _, _, src = _output_at(shape, dtype, src_offset)
    src[...] = x
    layout = lk.Layout(tag, dims="NCHW")
    raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
    got = layout.pack(src, out=out)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("offset", [0, 16, 40])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((1, 64, 256, 256), np.uint8),
        ((1, 64, 200, 328), np.uint16),
        ((1, 64, 128, 160), np.float32),
        ((1, 128, 96, 100), np.float32),
        ((5, 128, 64, 64), np.float16),  # 1 MiB an image, 10 MiB in all
        ((12, 256, 48, 48), np.uint8),  # 576 KiB an image, 13.5 MiB in all
    ],
    ids=str,
)
def test_streamed_row_runs(shape, dtype, offset):
    """NHWC -> NCHW of 64-256 channels with 4 MiB+ of output (or 512 KiB+ an
    image of a batch moving 8 MiB+) writes its row runs with streaming stores,
    once the first lanes (by tiles) have brought the runs to whole lines:
    outputs 0, 16 and 40 bytes past a line; a lane count that is not a whole
    number of runs (65600 of 2 bytes) leaves a tail. Nothing outside the
    output is written."""
    x = _data(shape, dtype, seed=offset)
    nhwc = lk.Layout("NHWC", dims="NCHW")
    packed = nhwc.pack(x)
    raw, start, out = _output_at(shape, dtype, offset)
    got = lk.convert(packed, shape, nhwc, "NCHW", out=out)
    assert got.tobytes() == x.tobytes()
    n = out.nbytes
    assert not raw[:start].any() and not raw[start + n :].any()


@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 2048, 7, 7), (1, 1024, 9, 5), (2, 512, 7, 9), (1, 264, 17, 19), (1, 72, 3, 11)]
)
def test_transposes_of_short_planes(shape, dtype):
    """Planes under 4096 pixels take the direct tiles too: destination rows a
    multiple of 4 KiB apart (1024 channels of float32, 512 of float64) go in
    strips of single 16-byte tiles, while 2-byte elements with lanes or rows
    4 KiB apart (2048 channels of uint16, either direction) stay on the staged
    loops; lane groups past 64 and ragged rows exercise the edges."""
    x = _data(shape, dtype, seed=shape[1])
    nhwc = lk.Layout("NHWC", dims="NCHW")
    packed = nhwc.pack(x)
    assert packed.tobytes() == np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes()
    back = lk.convert(packed, shape, nhwc, lk.Layout("NCHW"))
    assert back.tobytes() == x.tobytes()


@pytest.mark.parametrize(("tag", "c"), [("HCWN4c", 2050), ("HCWN8c", 67), ("HCWN16c", 35)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64, "V3"])
@pytest.mark.parametrize("hw", [(7, 7), (1, 5), (3, 32)])
def test_tiny_planes_of_many_channels(tag, c, dtype, hw):
    """Rows of a few elements per box (7x7 planes of 2048 channels): the lanes are
    moved element by element, padding lanes included, for every element size."""
    shape = (1, c, *hw)
    x = np.random.default_rng(c).integers(0, 250, shape).astype(np.uint8)
    if dtype == "V3":
        x = np.repeat(x[..., None], 3, axis=-1).view("V3")[..., 0]
    else:
        x = x.astype(dtype)
    layout = lk.Layout(tag, dims="NCHW")
    pad = 0 if dtype == "V3" else 9
    got = layout.pack(x, pad_value=pad)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=pad).tobytes()
    assert np.array_equal(layout.unpack(got, shape), x)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 2, 18])
def test_padding_runs_of_small_croutons(offset, threads):
    """Crouton2 of small planes (7x7 of 2048 channels and the like): where
    the output is not padded a slice at a time, only the padding the data
    boxes leave (the eighth H row of each chunk, the channels past C) is
    filled, as runs of a two-byte pattern, each thread its part of them. Checked against the
    numpy model with a pad value whose two bytes differ; every byte outside
    the output keeps its sentinel."""
    layout = lk.htp.layout("R4Crouton2Layout")
    for h, w, c in [
        (7, 7, 2048),
        (7, 5, 1024),
        (5, 7, 640),
        (13, 6, 96),
        (7, 7, 100),
        # Channel padding too: runs of 96, 40, 32, 20 and 12 bytes.
        (7, 7, 1000),
        (7, 7, 1014),
        (7, 7, 1016),
        (7, 6, 1019),
        (6, 7, 1021),
    ]:
        x = _data((1, h, w, c), np.float16, seed=h * w + c)
        want = ref_pack(x, str(layout), dims=layout.dims, pad_value=3)
        raw, start, out = _output_at(want.shape, np.float16, offset)
        raw[:] = 0xA5
        got = layout.pack(x, pad_value=3, out=out, threads=threads)
        assert got.tobytes() == want.tobytes(), (h, w, c)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("preset", ["R4Crouton4x1Layout", "R4Crouton2Layout", "R4CroutonLayout"])
@pytest.mark.parametrize("c", [256, 100, 64, 40, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16])
def test_crouton_boxes_of_short_rows(preset, c, dtype):
    """HTP croutons: boxes of 32 channels x 2-4 columns, run as interleaves of
    short lanes inside the walk; channel padding and ragged H/W included."""
    layout = lk.htp.layout(preset)
    x = np.random.default_rng(c).integers(0, 250, (2, 19, 21, c)).astype(dtype)
    got = layout.pack(x, pad_value=3)
    want = ref_pack(x, str(layout), dims=layout.dims, pad_value=3)
    assert got.tobytes() == want.tobytes()
    assert np.array_equal(layout.unpack(got, x.shape), x)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("preset", ["R4CroutonLayout", "R4Crouton4x1Layout", "R4Crouton2Layout"])
def test_crouton_boxes_at_every_line_offset(store_mode, preset, dtype):
    """Croutons of a few channels, packed box by box (the VBMI kernel:
    line-aligned pieces running a phase into the boxes, the piece that
    crosses into the next box from both boxes' windows, the first line
    unaligned, the last box unaligned) and unpacked: at every element offset
    within a line, grids of 16 boxes to many, pad_value in every slot of an
    output that held other bytes, nothing outside the outputs written."""
    layout = lk.htp.layout(preset)
    es = np.dtype(dtype).itemsize
    for c in (1, 2, 3):
        for n, h, w in [(1, 8, 8), (1, 8, 16), (2, 16, 24), (1, 24, 40)]:
            x = _data((n, h, w, c), dtype, seed=h * w + c)
            want = ref_pack(x, str(layout), dims=layout.dims, pad_value=5)
            for offset in range(0, 64, es):
                raw, start, out = _output_at(want.shape, dtype, offset)
                raw[...] = 0xEE
                got = layout.pack(x, pad_value=5, out=out)
                assert got.tobytes() == want.tobytes(), (c, h, w, offset)
                assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()
                # And back (the VBMI kernel's masked loads and stores), from
                # the packed data at this offset into an output at it too.
                raw_x, start_x, back = _output_at(x.shape, dtype, offset)
                raw_x[...] = 0xEE
                assert layout.unpack(out, x.shape, out=back).tobytes() == x.tobytes()
                assert (raw_x[:start_x] == 0xEE).all()
                assert (raw_x[start_x + back.nbytes :] == 0xEE).all()


@pytest.mark.parametrize("offset", [0, 5, 16, 48])
@pytest.mark.parametrize("preset", ["R4CroutonLayout", "R4Crouton4x1Layout"])
def test_crouton_boxes_of_ragged_images(store_mode, preset, offset):
    """The same boxes in the whole chunks of an image whose H and W end
    inside a chunk (the walk passes each chunk's grid, and fills the ragged
    edge itself), in an output of over 1 MiB."""
    layout = lk.htp.layout(preset)
    x = _data((1, 130, 259, 3), np.uint8, seed=offset)
    want = ref_pack(x, str(layout), dims=layout.dims, pad_value=5)
    assert want.nbytes > 1 << 20
    raw, start, out = _output_at(want.shape, np.uint8, offset)
    raw[...] = 0xEE
    got = layout.pack(x, pad_value=5, out=out)
    assert got.tobytes() == want.tobytes()
    assert (raw[:start] == 0xEE).all() and (raw[start + out.nbytes :] == 0xEE).all()


def _output_at(shape, dtype, offset):
    """A zeroed buffer and an array of ``shape`` in it, ``offset`` (< 64) bytes
    after a 64-byte boundary: (buffer, start byte, array)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw, start, raw[start : start + nbytes].view(dtype).reshape(shape)


def _strided_source(x, how):
    """``x`` as a contiguous array, a view with reversed W, or a channel slice."""
    if how == "reversed_w":
        return np.ascontiguousarray(x[:, :, ::-1])[:, :, ::-1]
    if how == "channel_slice":
        wide = np.zeros((*x.shape[:3], x.shape[3] + 32), x.dtype)
        wide[..., 16 : 16 + x.shape[3]] = x
        return wide[..., 16 : 16 + x.shape[3]]
    return x


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("w", [16, 17, 40, 56])
@pytest.mark.parametrize(
    ("tag", "n"), [("HCWN4c", 8), ("HCWN4c", 9), ("HCWN8c", 5), ("HCWN16c", 3)]
)
def test_many_lanes_of_a_batch(tag, n, w, dtype):
    """HCWNc of a batch: N x c lanes per destination row (24-64), interleaved by
    wide register tiles (2n lanes x n rows) whose last column and row of tiles
    overlap the previous ones when N x c and W are not multiples of the tile."""
    k = int(tag[4:-1])
    shape = (n, 2 * k, 3, w)
    x = _data(shape, dtype, seed=n * w)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()
    assert layout.unpack(got, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("how", ["contiguous", "reversed_w", "channel_slice"])
@pytest.mark.parametrize("offset", [0, 1, 6])
@pytest.mark.parametrize(
    "shape", [(1, 8, 8, 32), (2, 8, 24, 256), (3, 16, 8, 64), (1, 24, 40, 96), (1, 8, 12, 64)]
)
@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        ("NHWC8h2w32c4w", np.uint8),
        ("NHWC8h2w32c4w", np.int8),
        ("NHWC8h2w32c2w", np.float16),
        ("NHWC8h2w32c2w", np.uint16),
        ("NHWC8h2w32c4w", np.float16),
        ("NHWC8h2w32c2w", np.uint8),
    ],
    ids=str,
)
def test_crouton_box_grids(tag, dtype, shape, offset, how):
    """Crouton4x1 bytes and Crouton2 half-words with whole chunks: boxes of 128
    bytes run as grids of fixed shuffles (lk_box_grid), in both directions.
    Sources reversed along W (negative lane stride) or sliced out of wider
    pixels, outputs at odd offsets, ragged W (12) included."""
    layout = lk.Layout(tag, dims="NHWC")
    x = _strided_source(_data(shape, dtype, seed=sum(shape) + offset), how)
    raw, start, out = _output_at(
        layout.physical_shape(shape), dtype, offset * np.dtype(dtype).itemsize
    )
    want = ref_pack(np.ascontiguousarray(x), tag, dims="NHWC", pad_value=7)
    assert layout.pack(x, out=out, pad_value=7).tobytes() == want.tobytes()
    back = raw[start : start + x.nbytes].view(dtype).reshape(shape)
    packed = want.copy()
    assert layout.unpack(packed, shape, out=back).tobytes() == np.ascontiguousarray(x).tobytes()
    assert ref_unpack(packed, tag, dims="NHWC", shape=shape).tobytes() == back.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("tag", ["NHWC8h2w32c2w", "NHWC4h3w8c3w", "NHWC2h4w5c2w", "NHWC8h8c3w"])
@pytest.mark.parametrize("c", [3, 16])
def test_tiny_lane_boxes_far_apart(tag, c, dtype):
    """Boxes of 2-3 elements per lane (crouton -> NHWC), run with the look-ahead
    prefetch; ragged H/W/C and padding lanes on the way in."""
    shape = (2, 13, 23, c)
    x = _data(shape, dtype, seed=c)
    layout = lk.Layout(tag, dims="NHWC")
    packed = layout.pack(x, pad_value=5)
    assert packed.tobytes() == ref_pack(x, tag, dims="NHWC", pad_value=5).tobytes()
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()
    y = lk.convert(x, shape, lk.Layout("NHWC", dims="NHWC"), layout, pad_value=5)
    assert y.tobytes() == packed.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("offset", [0, 8, 16, 24])
@pytest.mark.parametrize(
    "shape", [(1, 64, 40, 37), (2, 32, 33, 70), (1, 96, 17, 65), (1, 32, 64, 67)]
)
def test_channel_planes_from_pixels_any_alignment(shape, offset, dtype):
    """NHWC -> NCHW of 32-96 channels (runs of 256 bytes per plane, staged): the
    destination at every 8-byte offset from a 32-byte boundary, ragged pixels."""
    n, c, h, w = shape
    itemsize = np.dtype(dtype).itemsize
    rng = np.random.default_rng(c + offset)
    x = rng.integers(0, 250, (n, h, w, c)).astype(dtype)
    raw = np.zeros(x.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 32 + offset
    start -= start % itemsize
    out = raw[start : start + x.nbytes].view(dtype).reshape(shape)
    got = lk.convert(x, shape, lk.Layout("NHWC", dims="NCHW"), "NCHW", out=out)
    assert np.array_equal(got, x.transpose(0, 3, 1, 2))
    back = lk.convert(got, shape, "NCHW", lk.Layout("NHWC", dims="NCHW"))
    assert np.array_equal(back, x)


@pytest.mark.parametrize("tag", ["HCWN4c", "HCWN8c", "HCWN16c"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, "V3"], ids=str)
@pytest.mark.parametrize("w", [1, 2, 3, 5, 7, 9, 17])
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("extra", [0, 1])
def test_lanes_continuing_across_rows(tag, dtype, w, n, extra):
    """HCWNc of narrow planes: each lane's W run continues in the next H row, so a
    plane's H rows are interleaved at once in an L1 buffer and copied out row by
    row (runs of 1-64 bytes and longer; more rows than the buffer holds; padding
    channels, whose boxes are split per row instead)."""
    k = int(tag[4:-1])
    shape = (n, 3 * k + extra, 50, w)
    x = _data(shape, dtype, seed=w)
    layout = lk.Layout(tag, dims="NCHW")
    pad = None if np.dtype(dtype).kind == "V" else 7
    got = layout.pack(x, pad_value=pad) if pad is not None else layout.pack(x)
    want = (
        ref_pack(x, tag, dims="NCHW", pad_value=pad)
        if pad is not None
        else ref_pack(x, tag, dims="NCHW")
    )
    assert got.tobytes() == want.tobytes()
    assert layout.unpack(got, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("pixels", [1, 31, 32, 33, 95, 1000, 4099])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_three_channel_pixels_and_planes(dtype, pixels, offset):
    """RGB planes <-> RGB pixels (the shuffled 3-lane kernels): every row count
    around the 32-byte step, and buffers that start off element alignment's
    usual 32-byte boundary (offset in elements)."""
    rng = np.random.default_rng(pixels + offset)
    shape = (1, 3, 1, pixels)
    x = rng.integers(0, 250, shape).astype(dtype)
    raw = np.zeros((x.size + offset) * x.itemsize, np.uint8)
    out = raw[offset * x.itemsize :].view(dtype).reshape(1, 1, pixels, 3)
    pixels_layout = lk.Layout("NHWC", dims="NCHW")
    got = lk.convert(x, shape, "NCHW", pixels_layout, out=out)
    assert np.array_equal(got, x.transpose(0, 2, 3, 1))
    raw2 = np.zeros((x.size + offset) * x.itemsize, np.uint8)
    planes = raw2[offset * x.itemsize :].view(dtype).reshape(shape)
    back = lk.convert(got, shape, pixels_layout, "NCHW", out=planes)
    assert np.array_equal(back, x)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=str)
@pytest.mark.parametrize("hw", [(1, 1), (5, 7), (4, 8), (17, 33), (64, 65)])
def test_eight_channel_pixels_to_planes(dtype, hw):
    """Pixels of 8 channels -> planes (NHWC -> NCHW): the 8-lane shuffle kernel
    and its scalar tail."""
    h, w = hw
    x = np.random.default_rng(h * w).integers(0, 250, (2, h, w, 8)).astype(dtype)
    got = lk.convert(x, (2, 8, h, w), lk.Layout("NHWC", dims="NCHW"), "NCHW")
    assert np.array_equal(got, x.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32], ids=str)
@pytest.mark.parametrize("hw", [(1, 1), (5, 7), (4, 8), (17, 33), (64, 65)])
@pytest.mark.parametrize(
    ("tag", "c"),
    [(t, c) for t in ("HCWN4c", "NCHW4c") for c in (1, 2, 3, 4)]
    + [(t, c) for t in ("HCWN8c", "NHWC8c") for c in (3, 5, 7, 8)],
)
def test_blocked_pixels_to_planes(tag, c, dtype, hw):
    """Blocks of 4 or 8 channel slots of which c hold data -> planes: the first c
    lanes of the 4- and 8-lane shuffle kernels, and their scalar tails."""
    h, w = hw
    planes = np.random.default_rng(h * w + c).integers(0, 250, (2, c, h, w)).astype(dtype)
    layout = lk.Layout(tag, dims="NCHW")
    packed = layout.pack(planes, pad_value=1)
    assert packed.tobytes() == ref_pack(planes, tag, dims="NCHW", pad_value=1).tobytes()
    assert np.array_equal(layout.unpack(packed, planes.shape), planes)
    assert np.array_equal(ref_unpack(packed, tag, dims="NCHW", shape=planes.shape), planes)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("tag", ["NHWC8h2w32c4w", "NHWC4h2w32c8w", "NHWC2h3w32c3w"])
@pytest.mark.parametrize(("w", "c"), [(8, 32), (7, 64), (6, 40), (8, 320), (7, 352), (5, 330)])
def test_pixel_blocks_inside_channel_runs_to_pixels(tag, dtype, w, c):
    """Blocks whose innermost run is channels x k pixels (HTP Crouton4x1 and the
    like) -> NHWC: with more lanes than the interleave walk takes (C >= 288),
    each run is one de-interleave into k pixels; ragged W gives blocks of fewer
    pixels, padded C the per-element path."""
    shape = (1, 3, w, c)
    x = _data(shape, dtype, seed=w * c)
    layout = lk.Layout(tag, dims="NHWC")
    packed = layout.pack(x, pad_value=2)
    assert packed.tobytes() == ref_pack(x, tag, dims="NHWC", pad_value=2).tobytes()
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()
    nhwc = lk.Layout("NHWC", dims="NHWC")
    assert lk.convert(packed, shape, layout, nhwc).tobytes() == x.tobytes()


@pytest.mark.parametrize("pixels", [1, 31, 32, 33, 100, 1027])
@pytest.mark.parametrize("tag", ["NCHW32c", "HCWN32c"])
def test_three_byte_channels_in_blocks_of_32(tag, pixels):
    """3 channels of bytes into 32-slot blocks (one store per padded row), with
    a pad value that is not 0 and rows around the 32-row step."""
    x = np.random.default_rng(pixels).integers(0, 250, (1, 3, 1, pixels)).astype(np.uint8)
    layout = lk.Layout(tag, dims="NCHW")
    got = layout.pack(x, pad_value=0xA5)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=0xA5).tobytes()
    assert np.array_equal(layout.unpack(got, x.shape), x)
    assert lk.tensorrt.to_format(x.view(np.int8), "kCHW32").tobytes() == (
        ref_pack(x, "NCHW32c", dims="NCHW").tobytes()
    )


@pytest.mark.parametrize("channels", [17, 24, 31])
@pytest.mark.parametrize("shape", [(1, 7, 61), (2, 45, 13)], ids=str)
@pytest.mark.parametrize("tag", ["NCHW32c", "HCWN32c"])
def test_byte_lanes_of_a_padded_group_of_32(tag, shape, channels):
    """17-31 byte channels into blocks of 32 (the 32-lane zip with its padding
    lanes read from a buffer of pad values), rows in blocks of 256 and a
    shorter last one; TensorRT kCHW32 alike."""
    n, h, w = shape
    x = _data((n, channels, h, w), np.uint8, seed=channels)
    layout = lk.Layout(tag, dims="NCHW")
    want = ref_pack(x, tag, dims="NCHW", pad_value=0x5C)
    out = np.full(want.shape, 0xA5, np.uint8)
    assert layout.pack(x, pad_value=0x5C, out=out).tobytes() == want.tobytes()
    if tag == "NCHW32c":
        got = lk.tensorrt.to_format(x.view(np.int8), "kCHW32")
        assert got.tobytes() == ref_pack(x, "NCHW32c", dims="NCHW").tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("channels", [9, 12, 16, 24, 31])
@pytest.mark.parametrize("shape", [(1, 16, 24), (2, 8, 16)], ids=str)
def test_crouton_pixels_of_many_data_bytes(shape, channels, dtype):
    """NHWC8h8w32c pixels whose data is more than one 16-byte shuffle takes
    (or 9-16 bytes of 32-byte pixels): a masked load over the pad vector per
    32-64 bytes of pixel, over a grid of four levels and the odometer past
    them. The source ends at an inaccessible page; every output byte is
    written (the output starts as a sentinel)."""
    n, h, w = shape
    x = _data((n, h, w, channels), dtype, seed=channels)
    if sys.platform == "linux":
        x = _guarded_copy(x)
    layout = lk.Layout("NHWC8h8w32c", dims="NHWC")
    want = ref_pack(x, "NHWC8h8w32c", dims="NHWC", pad_value=7)
    out = np.empty_like(want)
    out.view(np.uint8).fill(0xA5)
    assert layout.pack(x, pad_value=7, out=out).tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("tag", "dtype", "shape"),
    [
        ("HCWN8c", np.int8, (8, 16, 3, 14)),
        ("HCWN8c", np.int8, (8, 12, 2, 14)),
        ("HCWN8c", np.float32, (8, 8, 2, 7)),
        ("HCWN4c", np.float16, (8, 10, 3, 28)),
        ("HCWN4c", np.int8, (8, 64, 2, 28)),
    ],
    ids=str,
)
def test_lane_boxes_of_a_batch_up_to_4_kib(tag, dtype, shape):
    """HCWNC4/8 of a batch whose boxes (W x N x k lanes) are 0.5-4 KiB: several
    boxes batched per kernel call (short lanes of 7-28 elements), padding
    lanes included."""
    x = _data(shape, dtype, seed=shape[1])
    layout = lk.Layout(tag, dims="NCHW")
    want = ref_pack(x, tag, dims="NCHW", pad_value=9)
    out = np.empty_like(want)
    out.view(np.uint8).fill(0xA5)
    assert layout.pack(x, pad_value=9, out=out).tobytes() == want.tobytes()


@pytest.mark.parametrize("channels", range(5, 17))
@pytest.mark.parametrize("shape", [(8, 14, 14), (2, 33, 17), (1, 4, 5)], ids=str)
def test_byte_pixels_of_5_to_16_channels_into_planes(shape, channels):
    """NHWC -> NCHW of uint8 pixels of 5-16 channels (the 16-pixel VBMI
    de-interleave, its last step overlapping; 20 pixels: one step and the
    overlap). The source ends at an inaccessible page."""
    n, h, w = shape
    x = _data((n, h, w, channels), np.uint8, seed=channels)
    if sys.platform == "linux":
        x = _guarded_copy(x)
    src, dst = lk.Layout("NHWC", dims="NCHW"), lk.Layout("NCHW", dims="NCHW")
    got = lk.convert(x, (n, channels, h, w), src, dst)
    assert got.tobytes() == np.ascontiguousarray(x.transpose(0, 3, 1, 2)).tobytes()


def _guarded_copy(x):
    """A copy of ``x`` whose last byte is the last readable byte before an
    inaccessible page, so that any read past the array faults."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    nbytes = x.nbytes
    pages = -(-nbytes // page)
    buf = mmap.mmap(-1, (pages + 1) * page)
    base = np.frombuffer(buf, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(base.ctypes.data + pages * page, page, 0) != 0:
        pytest.skip("mprotect unavailable")
    start = pages * page - nbytes
    out = base[start : start + nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        ("NHWC8h2w32c4w", np.uint8),
        ("NHWC8h2w32c2w", np.float16),
        ("NHWC8h8w32c", np.uint8),
        ("NHWC8h8w32c", np.float16),
        ("NHWC8h8w32c", np.float32),
        ("NHWC8h8w32c", np.float64),
    ],
    ids=str,
)
@pytest.mark.parametrize("c", [1, 2, 3, 4, 5, 35])
@pytest.mark.parametrize("how", ["contiguous", "reversed_w", "channel_slice"])
@pytest.mark.parametrize("offset", [0, 8, 16])
def test_small_crouton_boxes(store_mode, tag, dtype, c, how, offset):
    """Croutons of a few channels: each box's data fits one 16-byte shuffle
    (lk_smallbox_grid), padded on the way in, gathered on the way out. Sources
    end at an inaccessible page (the 16-byte loads must not read past them);
    outputs at offsets that rule out 16-byte aligned streaming; W reversed and
    pixels sliced out of wider ones fall back to the walk."""
    shape = (1, 13, 19, c)
    layout = lk.Layout(tag, dims="NHWC")
    x = _strided_source(_data(shape, dtype, seed=c + offset), how)
    if how == "contiguous":
        x = _guarded_copy(x)
    raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset)
    want = ref_pack(np.ascontiguousarray(x), tag, dims="NHWC", pad_value=7)
    assert layout.pack(x, out=out, pad_value=7).tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    packed = _guarded_copy(want)
    back = np.zeros(shape, dtype)
    assert layout.unpack(packed, shape, out=back).tobytes() == np.ascontiguousarray(x).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("left", [1, 2, 29, 30])
@pytest.mark.parametrize("tag", ["NHWC8h2w32c4w", "NHWC8h8w32c"])
def test_small_boxes_with_leading_padding(tag, left, dtype):
    """Channels padded on the left: a box's data rows start inside the block."""
    shape = (1, 9, 10, 3)
    x = _data(shape, dtype, seed=left)
    layout = lk.Layout(tag, dims="NHWC", left_pad=(0, 0, 0, left))
    want = ref_pack(x, tag, dims="NHWC", pad_value=3, left_pad=(0, 0, 0, left))
    got = layout.pack(x, pad_value=3)
    assert got.tobytes() == want.tobytes()
    assert layout.unpack(got, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.dtype("V3")], ids=str)
@pytest.mark.parametrize(
    ("tag", "shape"),
    [
        ("NHWC8h8w32c", (1, 7, 7, 64)),
        ("NHWC8h8w32c", (2, 13, 9, 3)),
        ("NHWC8h2w32c4w", (1, 7, 7, 64)),
        ("NHWC8h2w32c4w", (1, 7, 29, 40)),
        ("NHWC8h2w32c2w", (1, 7, 7, 64)),
        ("NHWC8h2w32c2w", (3, 5, 13, 32)),
    ],
)
@pytest.mark.parametrize("left", [(0, 0), (1, 0), (2, 3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_small_outputs_padded_in_two_dims(store_mode, dtype, tag, shape, left, threads):
    """Croutons of small planes (H and W padded, W split over up to three levels):
    the output is filled with padding, then the data copied as a few boxes
    (fill_then_copy), with left padding, slices per thread and streamed stores."""
    x = _data(shape, dtype, seed=sum(left) + shape[2])
    left_pad = (0, *left, 0)
    layout = lk.Layout(tag, dims="NHWC", left_pad=left_pad)
    pad = 0 if dtype == np.dtype("V3") else 5
    got = layout.pack(x, pad_value=pad, threads=threads)
    want = ref_pack(x, tag, dims="NHWC", pad_value=pad, left_pad=left_pad)
    assert got.tobytes() == want.tobytes()
    assert layout.unpack(got, shape).tobytes() == x.tobytes()


def _check_crouton_round_trip(shape, dtype, threads):
    """NHWC -> NHWC8h8w32c of ``shape`` matches the reference byte for byte,
    and unpacking restores the input."""
    x = _data(shape, dtype, seed=shape[3])
    layout = lk.Layout("NHWC8h8w32c", dims="NHWC")
    got = layout.pack(x, threads=threads)
    assert got.tobytes() == ref_pack(x, "NHWC8h8w32c", dims="NHWC").tobytes()
    assert layout.unpack(got, shape, threads=threads).tobytes() == x.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("c", [64, 128, 160, 256, 512])
@pytest.mark.parametrize("threads", [1, 2])
def test_crouton_pack_pixels_of_several_runs(dtype, c, threads):
    """Packing pixels of 2-16 runs of 32 channels, an operation small enough
    to go a chunk at a time on Intel (elsewhere pixel by pixel): every byte
    matches the reference, unpacking restores the input."""
    _check_crouton_round_trip((2, 16, 24, c), dtype, threads)


@pytest.mark.parametrize(("dtype", "c"), [(np.uint8, 256), (np.uint8, 512), (np.float16, 256)])
@pytest.mark.parametrize("threads", [1, 2])
def test_crouton_pack_pixels_front_to_back(dtype, c, threads):
    """Past 4 MiB moved, packing reads each pixel of 4-8 runs front to back,
    its runs scattered to their chunks, and pixels of more runs 8 runs at a
    time across every pixel: every byte matches the reference, unpacking
    restores the input."""
    _check_crouton_round_trip((1, 136, 136, c), dtype, threads)


@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        ("NHWC8h8w16c", np.uint8),  # runs of 16 bytes
        ("NHWC8h8w32c", np.uint8),  # 32
        ("NHWC8h8w32c", np.float16),  # 64
        ("NHWC8h8w32c", np.float32),  # 128
        ("NHWC8h8w32c", np.float64),  # 256: not a run size of the grid loop
    ],
    ids=str,
)
@pytest.mark.parametrize("shape", [(1, 16, 24, 64), (2, 13, 19, 96), (1, 8, 8, 32)])
def test_crouton_run_grids(tag, dtype, shape):
    """Croutons of whole channel blocks: every pixel is a few whole runs of
    16-128 bytes, copied two levels at a time (runs of a pixel, pixels of a
    block row) with the run's size a constant; H and W padded to the block in
    the second shape; one block, one run a pixel in the third. Both ways,
    against the numpy reference, padding included."""
    layout = lk.Layout(tag, dims="NHWC")
    x = _data(shape, dtype, seed=shape[1])
    want = ref_pack(x, tag, dims="NHWC", pad_value=3)
    assert layout.pack(x, pad_value=3).tobytes() == want.tobytes()
    assert layout.unpack(want, shape).tobytes() == x.tobytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([1, 2, 4, 8]),
    c=st.sampled_from([8, 16, 24, 32, 40, 48, 64, 96]),
    hw=st.tuples(st.integers(4, 40), st.integers(4, 70)),
    tag=st.sampled_from(["NHWC", "NCHW8c", "NCHW16c", "NCHW32c", "HWCN4c", "HWCN8c"]),
    offset=st.integers(0, 63),
    seed=st.integers(0, 2**16),
)
def test_byte_kernels_random_shapes(n, c, hw, tag, offset, seed):
    """Bytes through the 8/16/32-lane pipelines and tiles (VBMI where the CPU has
    them) at random extents and output offsets, against the numpy reference,
    with nothing written outside the output."""
    shape = (n, c, *hw)
    x = _data(shape, np.uint8, seed=seed)
    layout = lk.Layout(tag, dims="NCHW")
    want = ref_pack(x, tag, dims="NCHW")
    raw = np.full(want.nbytes + 128, 0xA5, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start : start + want.nbytes].reshape(want.shape)
    layout.pack(x, out=out)
    assert out.tobytes() == want.tobytes()
    assert (raw[:start] == 0xA5).all() and (raw[start + want.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("offset", [0, 16])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((1, 2048, 7, 7), np.uint8),
        ((1, 2100, 7, 7), np.uint8),
        ((2, 2048, 9, 9), np.uint8),
        ((1, 2056, 10, 13), np.uint8),
        ((1, 4096, 3, 5), np.uint8),
        ((1, 2048, 1, 17), np.uint8),
        ((1, 1024, 7, 7), np.float16),
        ((1, 1030, 14, 14), np.float16),
        ((1, 1024, 3, 3), np.float16),
        ((1, 16384, 15, 17), np.uint8),
    ],
    ids=str,
)
def test_row_runs_of_ragged_short_planes(shape, dtype, offset):
    """NCHW -> NHWC of 2 KiB+ pixels and a few hundred rows or fewer (7x7,
    14x14 planes) takes the row-run kernel for any row count of a tile or
    more: a last tile, or a last block of 64 rows, that would pass the last row
    ends at it instead, overlapping rows already done. Lane counts past whole
    runs, rows under one tile (15 bytes, 9 half-words), 4 MiB+ of output
    (streamed) and outputs off a line boundary are included; nothing outside
    the output is written."""
    x = _data(shape, dtype, seed=sum(shape) + offset)
    want = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    raw, start, out = _output_at(want.shape, dtype, offset)
    got = lk.Layout("NHWC", dims="NCHW").pack(x, out=out)
    assert got.tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize(("lanes", "rows"), [(37, 53), (19, 100), (300, 9), (45, 17)])
def test_transpose_edges_by_overlapping_tiles(lanes, rows, dtype):
    """Lanes and rows past the last whole register tile are transposed by a
    tile that ends at the last lane or row, overlapping the tiles before it:
    NHWC <-> NCHW of planes of ``rows`` pixels with ``lanes`` channels."""
    shape = (1, lanes, 1, rows)
    x = _data(shape, dtype, seed=lanes * rows)
    nhwc = lk.Layout("NHWC", dims="NCHW")
    packed = nhwc.pack(x)
    assert packed.tobytes() == np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes()
    assert lk.convert(packed, shape, nhwc, "NCHW").tobytes() == x.tobytes()


@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize(
    ("tag", "dtype", "c", "hw"),
    [
        ("NCHW4c", np.uint8, 2048, (7, 7)),
        ("NCHW4c", np.uint8, 12, (5, 7)),
        ("NCHW4c", np.int8, 8, (8, 8)),
        ("NCHW4c", np.uint8, 7, (1, 33)),
        ("NCHW2c", np.float16, 64, (3, 7)),
        ("NCHW2c", np.uint16, 6, (1, 17)),
        ("NCHW2c", np.float16, 5, (4, 8)),
    ],
    ids=str,
)
def test_box_grids_of_ragged_lanes(tag, dtype, c, hw, offset):
    """NCHW <-> NCHW4c bytes and NCHW2c half-words of small planes run as grids
    of fixed shuffles for any plane of one step (32 bytes, 16 half-words) or
    more: a last step past the plane ends at it, overlapping the step before.
    Padded channel blocks and outputs off alignment included."""
    shape = (2, c, *hw)
    x = _data(shape, dtype, seed=c + offset)
    layout = lk.Layout(tag, dims="NCHW")
    raw, start, out = _output_at(
        layout.physical_shape(shape), dtype, offset * np.dtype(dtype).itemsize
    )
    want = ref_pack(x, tag, dims="NCHW", pad_value=5)
    assert layout.pack(x, out=out, pad_value=5).tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    assert layout.unpack(want, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("c", [56, 48, 60])
@pytest.mark.parametrize("tag", ["NHWC8h2w32c2w", "NHWC8h2w32c4w"])
def test_crouton_box_grids_of_partial_chunks(tag, c):
    """Croutons whose last chunk of channels is partial but one grid step or
    more (24, 16, 28 of 32 half-words): the grid's last step overlaps the one
    before, both directions."""
    dtype = np.float16 if tag.endswith("2w") else np.uint8
    shape = (1, 16, 12, c)
    layout = lk.Layout(tag, dims="NHWC")
    x = _data(shape, dtype, seed=c)
    want = ref_pack(x, tag, dims="NHWC", pad_value=7)
    assert layout.pack(x, pad_value=7).tobytes() == want.tobytes()
    assert layout.unpack(want, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("pad_value", [0, 7])
@pytest.mark.parametrize(
    "tag, dtype, c, hw",
    [
        ("NHWC8h2w32c4w", np.uint8, 2048, (7, 7)),
        ("NHWC8h2w32c4w", np.uint8, 4096, (3, 5)),
        ("NHWC8h2w32c4w", np.uint8, 64, (7, 6)),
        ("NHWC8h2w32c4w", np.uint8, 40, (2, 5)),
        ("NHWC8h2w32c2w", np.float16, 2048, (7, 7)),
        ("NHWC8h2w32c2w", np.float16, 96, (5, 3)),
        ("NHWC8h2w32c2w", np.float16, 48, (8, 5)),
    ],
    ids=str,
)
def test_crouton_grids_with_padding_columns(tag, dtype, c, hw, pad_value):
    """Crouton4x1 / Crouton2 packs of planes whose W is not a multiple of the
    column group (4 / 2): the last group's missing columns are padding lanes of
    the interleave grids, not data; unpacked, the de-interleave grids skip
    them. Lane strides of 4 KiB (2048 half-words or 4096 bytes of channels)
    included; nothing written outside the output."""
    h, w = hw
    shape = (1, h, w, c)
    x = _data(shape, dtype, seed=c + w)
    layout = lk.Layout(tag, dims="NHWC")
    want = ref_pack(x, tag, dims="NHWC", pad_value=pad_value)
    for offset in (0, 16):
        raw, start, out = _output_at(
            layout.physical_shape(shape), dtype, offset * np.dtype(dtype).itemsize
        )
        got = layout.pack(x, out=out, pad_value=pad_value)
        assert got.tobytes() == want.tobytes()
        assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    assert layout.pack(x, pad_value=pad_value, threads=2).tobytes() == want.tobytes()
    for offset in (0, 16):
        raw, start, back = _output_at(shape, dtype, offset * np.dtype(dtype).itemsize)
        assert layout.unpack(want, shape, out=back).tobytes() == x.tobytes()
        assert not raw[:start].any() and not raw[start + back.nbytes :].any()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize(("dtype", "slots", "kept"), [(np.uint8, 4, 3), (np.float16, 2, 1)])
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("tag", ["NCHW", "NCHW4c"])
def test_skipped_pixel_slots_of_strided_sources_are_not_read(tag, n, dtype, slots, kept):
    """A strided NHWC view that keeps some of each pixel's slots (RGB of RGBA)
    ends at its last kept element: the de-interleave kernels that load whole
    pixels may do so only from whole layout buffers, never past such a view
    (the buffer ends at an inaccessible page)."""
    h, w = 5, 70
    full = _data((n, h, w, slots), dtype, seed=slots)
    flat = np.ascontiguousarray(full).reshape(-1)[: -(slots - kept)]
    guarded = _guarded_copy(flat)
    es = np.dtype(dtype).itemsize
    x = np.lib.stride_tricks.as_strided(
        guarded, (n, h, w, kept), (h * w * slots * es, w * slots * es, slots * es, es)
    )
    layout = lk.Layout(tag, dims="NHWC")
    want = ref_pack(np.ascontiguousarray(x), tag, dims="NHWC")
    assert layout.pack(x).tobytes() == want.tobytes()


@pytest.mark.parametrize("block", [4, 8])
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("nchw", [(1, 2048, 7, 7), (2, 1000, 7, 7), (1, 36, 5, 9), (3, 64, 7, 3)])
def test_hcwnc_of_small_planes(nchw, dtype, block):
    """NCHW -> HCWNC4 / HCWNC8 of small planes, where blocks of channels are
    staged several at a time and copied out along each H row, against a
    pad / reshape / transpose model."""
    n, c, h, w = nchw
    x = _data(nchw, dtype, seed=c + block)
    cb = -(-c // block)
    padded = np.zeros((n, cb * block, h, w), dtype)
    padded[:, :c] = x
    want = padded.reshape(n, cb, block, h, w).transpose(3, 1, 4, 0, 2)
    fmt = f"HCWNC{block}"
    raw, start, out = _output_at(want.shape, dtype, 16)
    got = lk.vitis.to_hw(x, "NCHW", fmt, out=out)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


def _array_at(x, offset):
    """A copy of ``x`` whose data starts ``offset`` bytes after a 64-byte boundary."""
    _, _, out = _output_at(x.shape, x.dtype, offset)
    out[...] = x
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=str)
@pytest.mark.parametrize("w", [1, 5, 8, 9, 16, 23, 100])
@pytest.mark.parametrize("offset", [0, 4, 12, 16, 28])
def test_three_channel_words_at_every_alignment(dtype, w, offset):
    """NHWC <-> NCHW of 3 channels of 4-byte elements (the interleave: one
    permute per lane and two blends per output vector): every source and
    destination offset mod 32, rows fewer than one step included, bit
    patterns (NaN payloads) kept."""
    rng = np.random.default_rng(w + offset)
    x = rng.integers(0, 2**32, (2, 3, 3, w), dtype=np.uint64).astype(np.uint32).view(dtype)
    nhwc = _array_at(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), offset)
    layout = lk.Layout("NHWC", dims="NCHW")
    raw, start, out = _output_at(x.shape, dtype, offset)
    assert layout.unpack(nhwc, x.shape, out=out).tobytes() == x.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    src = _array_at(x, offset)
    raw, start, out = _output_at(layout.physical_shape(x.shape), dtype, (offset + 8) % 32)
    assert layout.pack(src, out=out).tobytes() == nhwc.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("offset", [0, 16, 40])
@pytest.mark.parametrize("hw", [(1, 1), (3, 5), (16, 16), (17, 31)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize(
    ("tag", "dims", "c"),
    [
        ("NCHW8c", None, 3),
        ("NCHW16c", None, 1),
        ("NCHW16c", None, 3),
        ("NCHW32c", None, 3),
        ("NCHW32c", None, 8),
        ("NCHW32c", None, 16),
        ("NCHW32c", None, 35),
        ("NHWC8c", "NCHW", 3),
        ("NHWC16c", "NCHW", 5),
    ],
)
def test_few_channels_in_padded_rows(store_mode, tag, dims, c, dtype, hw, offset):
    """A few channel planes into rows of 16-256 bytes that are mostly padding
    (3 channels into NCHW8c-32c, kCHW32, kHWC8): the data interleaved
    compactly and blended over pad vectors. Rows fewer than one pair, odd, and
    past a staging block of 256; pad_value in every slot it belongs to; nothing
    outside the output written."""
    shape = (2, c, *hw)
    x = _data(shape, dtype, seed=c + hw[1])
    layout = lk.Layout(tag, dims=dims)
    want = ref_pack(x, tag, dims=dims, pad_value=7)
    raw, start, out = _output_at(want.shape, dtype, offset)
    assert layout.pack(x, pad_value=7, out=out).tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    assert layout.unpack(out, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("offset", [0, 8, 16, 48])
@pytest.mark.parametrize(
    ("tag", "dtype", "h"),
    [
        ("NHWC8c", np.float16, 512),  # rows of 16 bytes, two a register
        ("NCHW8c", np.float32, 256),  # 32
        ("NCHW32c", np.float16, 128),  # 64
        ("NCHW16c", np.float64, 64),  # 128
        ("NCHW32c", np.float64, 32),  # 256
    ],
)
def test_few_channels_in_padded_rows_of_a_large_output(tag, dtype, h, offset):
    """The same with 8 MiB+ of output, which is streamed (16 bytes at a time,
    so outputs 16 bytes into a line are too; one 8 bytes in is stored through
    the cache)."""
    shape = (1, 3, h, 1030)
    x = _data(shape, dtype, seed=h)
    dims = "NCHW" if tag.startswith("NHWC") else None
    layout = lk.Layout(tag, dims=dims)
    want = ref_pack(x, tag, dims=dims, pad_value=5)
    raw, start, out = _output_at(want.shape, dtype, offset)
    assert layout.pack(x, pad_value=5, out=out).tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize(("c", "left"), [(3, 2), (5, 20), (1, 31)])
def test_few_channels_after_left_padding(c, left, dtype):
    """Channel planes (an NCHW-stored source) into crouton pixels whose data
    starts `left` channels in (HTP's Padding)."""
    layout = lk.htp.layout("R4CroutonLayout", left_pad=(0, 0, 0, left))
    planes = _data((2, c, 11, 19), dtype, seed=left)
    logical = planes.transpose(0, 2, 3, 1)
    want = ref_pack(logical, "NHWC8h8w32c", pad_value=3, left_pad=(0, 0, 0, left))
    got = lk.convert(planes, logical.shape, lk.Layout("NCHW", dims="NHWC"), layout, pad_value=3)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float64, np.complex128], ids=str)
@pytest.mark.parametrize(
    ("tag", "shape"),
    [
        ("NHWC4h4w32c2h2w", (1, 24, 40, 3)),  # R4Crouton2x2Layout: 2x2 pixels inside 32c
        ("NHWC4h4w32c2h2w", (2, 16, 24, 40)),  # a full channel block, then 8 of 32
        ("NHWC4h4w32c2h2w", (1, 21, 18, 5)),  # H and W padded too (two padded dims)
        ("NHWC8h2w32c2h2w", (1, 32, 16, 1)),
    ],
)
def test_padded_channels_outside_the_innermost_levels(store_mode, tag, shape, dtype, threads):
    """Channels padded at a level outside the two innermost ones: padding
    everywhere first, then the data as a few boxes (cells of up to 1 KiB;
    complex128 cells of 2 KiB keep the walk). Checked against the numpy model
    with pad_value in every padding slot, into a guarded output."""
    x = _data(shape, dtype, seed=shape[3])
    layout = lk.Layout(tag)
    pad = 7 if np.dtype(dtype).kind != "c" else 0
    want = ref_pack(x, tag, pad_value=pad)
    raw, start, out = _output_at(want.shape, dtype, 16)
    got = layout.pack(x, pad_value=pad, out=out, threads=threads)
    assert got.tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    assert layout.unpack(out, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("offset", [0, 4, 8, 16, 32, 48])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(
    ("tag", "shape", "how"),
    [
        ("NCHW4c", (2, 8, 37, 53), "pack"),  # 1961-pixel planes: one box each, a ragged end
        ("NCHW8c", (1, 16, 45, 45), "pack"),  # 2025 pixels
        ("NCHW16c", (1, 32, 17, 29), "pack"),  # 493 pixels of 16 lanes
        ("NCHW4c", (1, 8, 7, 7), "pack"),  # 49 pixels: boxes under one streamed step each
        ("HCWNC4", (1, 8, 9, 35), "vitis"),  # W-rows of 35 pixels, box after box
        ("HCWNC8", (1, 16, 5, 301), "vitis"),  # W-rows of 301 pixels
        ("HCWNC4", (8, 8, 3, 40), "vitis"),  # a batch: W-rows of 8 x 4 lanes, one L1 piece
        ("HCWNC8", (8, 12, 2, 75), "vitis"),  # 8 x 8 lanes, padding ones, two L1 pieces
    ],
)
def test_streamed_interleaves_of_whole_pixels(tag, shape, how, dtype, offset):
    """4 or 8 channel planes of 2- or 4-byte elements into dense pixels with
    streaming stores (every output streamed as if beyond the cache, not the
    tests' stream-every-box mode): outputs at any offset in a line, aligned to
    16 bytes or not, boxes longer and shorter than a step."""
    dtype = np.dtype(dtype)
    x = _data(shape, dtype, seed=offset)
    if how == "pack":
        want = ref_pack(x, tag).tobytes()
    else:  # [H][C/b][W][N][b], channels padded with zeros
        n, c, h, w = shape
        b = int(tag[-1])
        padded = np.zeros((n, -(-c // b) * b, h, w), dtype)
        padded[:, :c] = x
        want = padded.reshape(n, -1, b, h, w).transpose(3, 1, 4, 0, 2).tobytes()
    raw = np.zeros(len(want) + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset - offset % dtype.itemsize
    out = raw[start : start + len(want)].view(dtype)
    old = _repack.set_stream_threshold(1)
    try:
        if how == "pack":
            got = lk.Layout(tag).pack(x, out=out.reshape(lk.Layout(tag).physical_shape(shape)))
        else:
            got = lk.vitis.to_hw(
                x, "NCHW", tag, out=out.reshape(lk.vitis.hw_shape(shape, "NCHW", tag))
            )
    finally:
        _repack.set_stream_threshold(old)
    assert got.tobytes() == want
    assert not raw[:start].any() and not raw[start + len(want) :].any()


@pytest.mark.parametrize(
    ("tag", "channels"), [("NCHW4c", 8), ("NCHW8c", 16), ("NCHW8c", 13), ("NCHW16c", 16)]
)
def test_whole_planes_of_a_large_operation_stream(tag, channels):
    """Planes of 64 KiB+ in an operation of 8 MiB+ are interleaved with streaming
    stores even when the run as a whole is not streamed (a ragged last block
    of channels keeps the cached path)."""
    x = _data((1, channels, 512, 520), np.float16, seed=channels)
    old = _repack.set_stream_threshold(-1)  # the run itself never streams
    try:
        got = lk.Layout(tag).pack(x)
    finally:
        _repack.set_stream_threshold(old)
    assert got.tobytes() == ref_pack(x, tag).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16])
@pytest.mark.parametrize("pad", [0, 9])
def test_three_channels_into_pixels_of_four_at_every_offset(dtype, pad):
    """3 channels and a pad slot into NCHW4c pixels (the VBMI kernel on Intel,
    shuffles elsewhere): planes one, two and many steps long, the output at
    every element offset in a line."""
    dtype = np.dtype(dtype)
    layout = lk.Layout("NCHW4c")
    for w in (64 // dtype.itemsize * 2, 100, 224):
        x = _data((1, 3, 3, w), dtype, seed=w)
        want = ref_pack(x, "NCHW4c", pad_value=pad).tobytes()
        for offset in range(0, 64, dtype.itemsize):
            raw = np.zeros(len(want) + 128, np.uint8)
            start = (-raw.ctypes.data) % 64 + offset
            out = raw[start : start + len(want)].view(dtype).reshape(layout.physical_shape(x.shape))
            assert layout.pack(x, pad_value=pad, out=out).tobytes() == want, (w, offset)
            assert not raw[:start].any() and not raw[start + len(want) :].any()


@pytest.mark.parametrize("offset", [0, 4, 16, 20])
@pytest.mark.parametrize(
    ("c", "hw", "dtype"),
    [
        (16, (23, 25), np.float32),  # 16 float32 lanes of 575 rows: chunk transposes
        (24, (17, 31), np.float32),
        (32, (16, 16), np.float32),
        (32, (100, 101), np.float32),  # 2.6 MB moved: staged and streamed (Intel)
        (40, (90, 93), np.float32),
        (64, (90, 93), np.float16),
        (16, (120, 123), np.float16),
    ],
    ids=str,
)
@pytest.mark.parametrize("tag", ["NHWC", "NCHW16c", "NCHW32c"])
def test_few_wide_lanes_of_long_planes(tag, c, hw, dtype, offset):
    """16-64 planes into pixels or channel blocks: float32 chunk transposes of
    16-32 lanes, and operations past L2 that stage and stream their blocks;
    destinations off their usual alignment, padding channels for NCHW32c."""
    shape = (1, c, *hw)
    x = _data(shape, dtype, seed=c + offset)
    layout = lk.Layout(tag, dims="NCHW")
    itemsize = np.dtype(dtype).itemsize
    raw, start, out = _output_at(layout.physical_shape(shape), dtype, offset - offset % itemsize)
    got = layout.pack(x, out=out, pad_value=7)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW", pad_value=7).tobytes()
    assert not raw[:start].any() and not raw[start + got.nbytes :].any()
    assert layout.unpack(got, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize(
    "shape", [(2, 45, 61, 17), (1, 13, 23, 16), (1, 9, 7, 24), (3, 5, 33, 31), (1, 16, 16, 40)]
)
@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        ("NHWC8h2w32c4w", np.uint8),
        ("NHWC8h2w32c2w", np.float16),
        ("NHWC8h8w32c", np.uint8),
        ("NHWC8h8w32c", np.float32),
        ("NHWC4h3w8c3w", np.uint16),
    ],
    ids=str,
)
def test_unpacking_ragged_croutons(tag, dtype, shape, offset, threads):
    """Croutons of H and W off their blocks and channels off 32 unpacked into
    NHWC: the data as a few boxes without constraints (no per-row split of
    the ragged W), and 16-31 channels of Crouton4x1 by 16-pixel de-interleaves;
    nothing written outside the output."""
    layout = lk.Layout(tag, dims="NHWC")
    x = _data(shape, dtype, seed=sum(shape) + offset)
    packed = ref_pack(x, tag, dims="NHWC", pad_value=9)
    itemsize = np.dtype(dtype).itemsize
    raw, start, out = _output_at(shape, dtype, offset * itemsize)
    raw[:] = 0xA5
    got = layout.unpack(packed, shape, out=out, threads=threads)
    assert got.tobytes() == x.tobytes()
    assert (raw[:start] == 0xA5).all() and (raw[start + x.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("tag", "dtype"), [("NHWC8h2w32c4w", np.uint8), ("NHWC8h2w32c2w", np.float16)], ids=str
)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 16, 24, 16),
        (1, 8, 16, 24),
        (2, 16, 8, 40),
        (1, 8, 8, 1),
        (3, 8, 24, 31),
        (1, 24, 16, 70),
        (1, 30, 30, 40),
        (2, 45, 61, 17),
        (1, 57, 61, 40),
        (1, 203, 99, 3),
    ],
    ids=str,
)
def test_packing_channel_rows_of_four_bytes(tag, dtype, shape, threads):
    """Croutons whose channels are rows of 4 bytes (4 pixels of uint8, 2 of
    float16) and partly padding (16-31 channels, or a last block of 8 or 6):
    each box's data rows from one masked load per pixel, the padding rows from
    the pattern, over the grid of outer levels (the odometer past four). Ragged
    H and W too, where the block of partial channel rows is one of the data
    boxes written over a fill or between pad runs. The source ends at an
    inaccessible page."""
    layout = lk.Layout(tag, dims="NHWC")
    x = _data(shape, dtype, seed=sum(shape))
    if sys.platform == "linux":
        x = _guarded_copy(x)  # the last pixel's load must stop at its channels
    want = ref_pack(x, tag, dims="NHWC", pad_value=3)
    out = np.empty_like(want)
    out.view(np.uint8).fill(0xA5)
    got = layout.pack(x, pad_value=3, out=out, threads=threads)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("tag", "dtype", "shape"),
    [
        ("NHWC8h8w32c", np.uint8, (1, 203, 211, 3)),
        ("NHWC8h2w32c4w", np.uint8, (1, 203, 211, 3)),
        ("NHWC8h2w32c2w", np.float16, (1, 150, 157, 5)),
        ("NHWC8h8w32c", np.float32, (2, 61, 59, 40)),
        ("NHWC8h8w32c", np.float16, (2, 299, 301, 3)),
        ("NHWC8h8w32c", np.uint8, (3, 77, 1001, 5)),
    ],
    ids=str,
)
def test_packing_ragged_croutons_past_the_cache(tag, dtype, shape, threads):
    """Croutons of ragged H and W over 1 MiB: the data as a few boxes, with the
    padding filled first, or (pixels of a few channels, written whole with
    their padding channels) only the padding pixels and rows left around them;
    slice by slice of the outermost level."""
    layout = lk.Layout(tag, dims="NHWC")
    x = _data(shape, dtype, seed=shape[1])
    want = ref_pack(x, tag, dims="NHWC", pad_value=5)
    assert want.nbytes > 1 << 20
    got = layout.pack(x, pad_value=5, threads=threads)
    assert got.tobytes() == want.tobytes()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize(
    ("tag", "dtypes"),
    [
        ("NCHW4c", (np.float16, np.float32)),
        ("NCHW8c", (np.float16, np.float32)),
        ("NCHW16c", (np.uint8, np.int8, np.float16, np.float32)),
        ("NCHW32c", (np.uint8, np.int8, np.float16, np.float32)),
    ],
)
@pytest.mark.parametrize("hw", [(2, 2), (3, 3), (4, 4), (4, 5), (7, 7), (2, 17), (11, 11), (1, 97)])
@pytest.mark.parametrize("batch", [1, 3])
def test_planes_into_dense_pixels_of_4_to_32_lanes(tag, dtypes, hw, batch):
    """Planes into pixels of 4, 8, 16 or 32 channels (the VBMI lane tiles or
    zip kernels on Intel: 16 bytes of every lane a step, the last step
    overlapping the one before, from one plane or from boxes of planes side
    by side, 4 and 8 wider lanes from a lane table built once): planes of
    one step on up, whole blocks and a last partial one, the source ending
    on an inaccessible page and the output at 16-byte offsets in a line,
    nothing outside it written."""
    k = int(tag[4:-1])
    for i, channels in enumerate((k, 2 * k, 4 * k + 5)):
        dtype = dtypes[(i + batch) % len(dtypes)]
        shape = (batch, channels, *hw)
        x = _guarded_copy(_data(shape, dtype, seed=channels))
        layout = lk.Layout(tag, dims="NCHW")
        want = ref_pack(x, tag, dims="NCHW")
        for offset in (0, 16, 48):
            raw, start, out = _output_at(want.shape, x.dtype, offset)
            raw[...] = 0x5A
            got = layout.pack(x, out=out)
            assert got.tobytes() == want.tobytes(), (channels, dtype, offset)
            assert (raw[:start] == 0x5A).all() and (raw[start + out.nbytes :] == 0x5A).all()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize("tag", ["NCHW4c", "NCHW8c", "NCHW16c", "NCHW32c"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize(
    "shape", [(1, 64, 7, 7), (2, 40, 14, 14), (1, 32, 3, 5), (1, 44, 4, 5), (3, 12, 5, 7)], ids=str
)
def test_unpacking_dense_pixels_into_planes(tag, dtype, shape):
    """NCHWKc -> NCHW (boxes of one source run each, back to back, read
    without the far-box prefetches; bytes of 5-16 channels by the VBMI
    de-interleave, float32 pixels of 8 by the AVX-512 transpose, the last
    step overlapping): whole blocks and a last one partly padding, the packed
    source ending at an inaccessible page."""
    x = _data(shape, dtype, seed=shape[1])
    layout = lk.Layout(tag, dims="NCHW")
    packed = _guarded_copy(ref_pack(x, tag, dims="NCHW"))
    out = np.empty_like(x)
    out.view(np.uint8).fill(0xA5)
    assert layout.unpack(packed, shape, out=out).tobytes() == x.tobytes()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("w", [1, 2, 3, 7, 8, 9, 14, 16, 17, 28, 33, 64, 65])
@pytest.mark.parametrize(
    ("tag", "c"),
    [
        ("HCWN4c", 4),
        ("HCWN4c", 12),
        ("HCWN4c", 40),
        ("HCWN8c", 8),
        ("HCWN8c", 24),
        ("HCWN16c", 32),
        ("HCWN16c", 48),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_rows_of_channel_blocks_of_one_image(tag, c, w, dtype, threads):
    """NCHW -> HCWNCx of one image (lk_lane_rows): eight channels' pieces of a
    row a step, pieces of up to 16 bytes read 16 at a time (the source ends at
    an inaccessible page, so the last ones must not), longer ones in 16-byte
    steps with an overlapping last step, a lone last block of 4, rows split
    between threads. Nothing outside the output is written."""
    shape = (1, c, 7, w)
    layout = lk.Layout(tag, dims="NCHW")
    x = _data(shape, dtype, seed=c + w)
    want = ref_pack(x, tag, dims="NCHW")
    # Guarded, the last groups go through the scalar loop; in the middle of
    # a larger buffer they do not.
    for src in (_guarded_copy(x), _data((2, c, 7, w), dtype, seed=c + w)[:1]):
        src[...] = x
        for offset in (0, 24):
            raw, start, out = _output_at(want.shape, dtype, offset)
            assert layout.pack(src, out=out, threads=threads).tobytes() == want.tobytes()
            assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    # And back (lk_lane_rows_unpack): whole 64-byte loads of the packed rows
    # where they fit, masked ones at the end, the output checked likewise.
    packed = _guarded_copy(want)
    for offset in (0, 40):
        raw, start, back = _output_at(shape, dtype, offset)
        assert layout.unpack(packed, shape, out=back, threads=threads).tobytes() == x.tobytes()
        assert not raw[:start].any() and not raw[start + back.nbytes :].any()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("how", ["every_other_channel", "reversed_channels", "row_slice"])
def test_rows_of_channel_blocks_of_strided_planes(dtype, how):
    """HCWN4c / 8c / 16c of a strided view: channels further apart than a
    plane, in reverse (the kernels take positive strides only), or rows wider
    than W; and back from a slice of a wider packed tensor."""
    full = _data((1, 48, 9, 13), dtype, seed=3)
    x = {
        "every_other_channel": full[:, ::2],
        "reversed_channels": full[:, ::-1],
        "row_slice": full[:, :, :, 2:9],
    }[how]
    for tag in ("HCWN4c", "HCWN8c", "HCWN16c"):
        layout = lk.Layout(tag, dims="NCHW")
        want = ref_pack(np.ascontiguousarray(x), tag, dims="NCHW")
        assert layout.pack(x).tobytes() == want.tobytes()
        # Back from the first blocks of a wider packed tensor (rows of the
        # packed source further apart than its blocks).
        wide = ref_pack(_data((1, 96, *x.shape[2:]), dtype, seed=4), tag, dims="NCHW")
        nblk = want.shape[1]
        wide[:, :nblk] = want
        assert layout.unpack(wide[:, :nblk], x.shape).tobytes() == np.ascontiguousarray(x).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.dtype("V3")], ids=str)
@pytest.mark.parametrize("tag", ["HCWN2c", "HCWN4c", "HCWN8c"])
@pytest.mark.parametrize("shape", [(1, 14, 14, 64), (3, 5, 7, 16), (2, 1, 1, 8)], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_pixel_runs_as_wider_elements(tag, shape, dtype, threads):
    """NHWC <-> HCWNCx with whole blocks of channels: each pixel's runs of x
    channels (2-8 bytes) move as one element of a transpose; longer runs, and
    any padding, keep the array's element. Nothing outside the output is
    written, and a pad value (never used) is accepted."""
    x = _data(shape, dtype, seed=shape[3])
    layout = lk.Layout(tag, dims="NHWC")
    want = ref_pack(x, tag, dims="NHWC")
    raw, start, out = _output_at(want.shape, dtype, 8)
    pad = 0 if dtype == np.dtype("V3") else 3
    assert layout.pack(x, out=out, pad_value=pad, threads=threads).tobytes() == want.tobytes()
    assert not raw[:start].any() and not raw[start + out.nbytes :].any()
    back = layout.unpack(want, shape, threads=threads)
    assert back.tobytes() == x.tobytes()
    padded = (shape[0], shape[1], shape[2], shape[3] - 1)
    got = layout.pack(x[..., :-1], pad_value=pad)
    assert got.tobytes() == ref_pack(x[..., :-1], tag, dims="NHWC", pad_value=pad).tobytes()
    assert layout.unpack(got, padded).tobytes() == x[..., :-1].tobytes()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize(("tag", "n"), [("HCWN4c", 2), ("HCWN4c", 4), ("HCWN8c", 2)])
@pytest.mark.parametrize(("c", "w"), [(8, 7), (24, 14), (40, 17), (16, 64), (8, 65)])
@pytest.mark.parametrize("threads", [1, 2])
def test_rows_of_channel_blocks_of_small_batches(tag, n, c, w, dtype, threads):
    """NCHW -> HCWNCx of 2-4 images, x N = 8 or 16 lanes a pixel
    (lk_lane_rows_batch: the images' lanes as one block of the one-image
    kernels). The source ends at an inaccessible page; nothing outside the
    output is written."""
    shape = (n, c, 7, w)
    x = _data(shape, dtype, seed=n + c + w)
    want = ref_pack(x, tag, dims="NCHW")
    layout = lk.Layout(tag, dims="NCHW")
    for src in (_guarded_copy(x), _data((n + 1, c, 7, w), dtype, seed=1)[:n]):
        src[...] = x
        raw, start, out = _output_at(want.shape, dtype, 40)
        assert layout.pack(src, out=out, threads=threads).tobytes() == want.tobytes()
        assert not raw[:start].any() and not raw[start + out.nbytes :].any()


@pytest.mark.skipif(sys.platform != "linux", reason="guard pages via mprotect")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize(
    ("tag", "c"), [("HCWN4c", 8), ("HCWN4c", 12), ("HCWN8c", 16), ("HCWN16c", 16)]
)
@pytest.mark.parametrize(("n", "h", "w"), [(2, 3, 7), (3, 5, 16), (5, 2, 33), (8, 1, 3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_batches_of_channel_blocks_back_to_planes(tag, c, n, h, w, dtype, threads):
    """HCWNCx of a batch back into NCHW (lk_lane_rows_unpack_batch): each
    packed row's chunks split into a scratch row per image, then the one-image
    kernel; images split between threads. The source ends at an inaccessible
    page; nothing outside the output is written."""
    shape = (n, c, h, w)
    x = _data(shape, dtype, seed=n * c + w)
    layout = lk.Layout(tag, dims="NCHW")
    packed = _guarded_copy(ref_pack(x, tag, dims="NCHW"))
    raw, start, back = _output_at(shape, dtype, 24)
    assert layout.unpack(packed, shape, out=back, threads=threads).tobytes() == x.tobytes()
    assert not raw[:start].any() and not raw[start + back.nbytes :].any()


@pytest.mark.parametrize(
    ("tag", "shape", "dtype"),
    [("HCWN4c", (2, 512, 3, 512), np.uint8), ("HCWN16c", (3, 32, 5, 1000), np.float32)],
    ids=str,
)
def test_batches_of_long_rows_back_to_planes(tag, shape, dtype):
    """Batch unpacks whose scratch (about 1 MiB) holds fewer rows than the
    tensor: several passes of rows."""
    x = _data(shape, dtype, seed=shape[3])
    layout = lk.Layout(tag, dims="NCHW")
    assert layout.unpack(ref_pack(x, tag, dims="NCHW"), shape).tobytes() == x.tobytes()


@pytest.mark.parametrize(
    ("tag", "dims", "shape", "dtype"),
    [
        ("HCWN4c", "NCHW", (1, 2048, 32, 32), np.uint8),  # lk_lane_rows, rows split
        ("HCWN16c", "NCHW", (1, 1024, 32, 32), np.float16),
        ("HCWN8c", "NCHW", (1, 600, 30, 30), np.float32),  # longer pieces
        ("HCWN4c", "NCHW", (2, 1024, 32, 32), np.uint8),  # a batch: 8 lanes a pixel
        ("HCWN8c", "NCHW", (8, 256, 32, 32), np.uint8),  # 64 lanes: back by image
        ("HCWN4c", "NHWC", (1, 64, 64, 512), np.uint8),  # runs of 4 bytes as elements
    ],
    ids=str,
)
def test_channel_block_kernels_on_two_threads(tag, dims, shape, dtype):
    """Outputs of 2 MiB+, so that two threads each take a slice (H rows, or
    images / blocks when unpacking): bytes equal to the reference both ways."""
    x = _data(shape, dtype, seed=len(tag))
    layout = lk.Layout(tag, dims=dims)
    want = ref_pack(x, tag, dims=dims)
    assert want.nbytes >= 2 << 20
    assert layout.pack(x, threads=2).tobytes() == want.tobytes()
    assert layout.unpack(want, shape, threads=2).tobytes() == x.tobytes()


def _extern_functions(pyx, header):
    """Names of the functions a .pyx declares from ``header``."""
    import re

    text = pyx.read_text()
    start = text.index(f'cdef extern from "{header}"')
    block = []
    for line in text[start:].splitlines()[1:]:
        if line and not line.startswith(" "):
            break
        block.append(line)
    names = re.findall(r"^\s+[\w*\s]*?\b(lk_\w+)\(", "\n".join(block), re.M)
    return sorted(set(names))


@pytest.mark.skipif(sys.platform != "linux" or not os.path.exists("/usr/bin/gcc"), reason="gcc")
def test_kernel_entry_points_exist_without_x86_simd(tmp_path):
    """Every function the repack kernel declares from the C headers is defined
    on CPUs without SSE2 / AVX (the aarch64 and arm64 wheels): the headers,
    with x86 hidden after the system headers, compile into a file that takes
    each one's address, with implicit declarations as errors."""
    root = os.path.join(os.path.dirname(__file__), "..", "src", "layoutkit")
    pyx = __import__("pathlib").Path(root, "_repack.pyx")
    lines = [
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "#include <stdlib.h>",
        "#undef __SSE2__",
        "#undef __x86_64__",
        "#undef __i386__",
    ]
    names = []
    for header in ("layoutkit_interleave.h", "layoutkit_cast.h", "layoutkit_pool.h"):
        lines.append(f'#include "{header}"')
        names += _extern_functions(pyx, header)
    assert "lk_lane_rows" in names and "lk_zipn_applies" in names
    lines.append("void *lk_all_entry_points[] = {")
    lines += [f"    (void *)&{name}," for name in names]
    lines.append("};")
    src = tmp_path / "entry.c"
    src.write_text("\n".join(lines) + "\n")
    run = subprocess.run(
        [
            "gcc",
            "-std=gnu11",
            "-c",
            "-Werror=implicit-function-declaration",
            "-I",
            os.path.join(root, "include"),
            str(src),
            "-o",
            str(tmp_path / "entry.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]


FLOAT_CONVERSIONS = """
import sys
import ml_dtypes
import numpy as np
import layoutkit as lk

rng = np.random.default_rng(11)
halves = np.arange(65536, dtype=np.uint16)
specials = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF,
                     0x00000001, 0x807FFFFF, 0x33000000, 0x33000001, 0x387FE000, 0x387FF000,
                     0x38800000, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x7F7FFFFF, 0x3F808000,
                     0x3F818000, 0x3F807FFF], dtype=np.uint32)
words = np.concatenate([specials, rng.integers(0, 2**32, 1 << 18, dtype=np.uint64).astype(np.uint32)])
cases = [
    (halves.view(np.float16), np.float32),
    (halves.view(ml_dtypes.bfloat16), np.float32),
    (words.view(np.float32), np.float16),
    (words.view(np.float32), ml_dtypes.bfloat16),
]
out = {}
for i, (flat, dst) in enumerate(cases):
    n = flat.size // 16 * 16
    x = flat[:n].reshape(1, 16, 1, n // 16)
    # contiguous runs (NCHW -> NCHW) and strided ones (NHWC -> NCHW: a gather)
    out[f"{i}c"] = lk.convert(x, x.shape, "NCHW", "NCHW", dtype=dst).view(np.uint8)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out[f"{i}s"] = lk.convert(nhwc, x.shape, lk.Layout("NHWC", dims="NCHW"), "NCHW", dtype=dst).view(np.uint8)
    # a left-padded destination: strided rows converted one gathered run at a time
    padded = lk.Layout("NCHW", left_pad=(0, 0, 1, 2))
    xs = flat[: 40 * 9 * 70].reshape(1, 40, 9, 70)
    src = lk.Layout("NHWC", dims="NCHW")
    out[f"{i}p"] = lk.convert(np.ascontiguousarray(xs.transpose(0, 2, 3, 1)), xs.shape, src, padded,
                              dtype=dst).view(np.uint8)
# through float32 in pieces (float16 / bfloat16 <-> integers and each other),
# and float32 -> 16-bit integers, near ties included
r = (rng.standard_normal(1 << 16) * 3000).astype(np.float32)
k = rng.integers(-70000, 70000, 4096)
r[:4096] = ((k + 0.5) * np.float32(0.37)).astype(np.float32)
r[4096:4196] = np.nan
r = r.reshape(1, 16, 1, -1)
for j, (din, dout, zp) in enumerate([(np.float32, np.int16, -300), (np.float32, np.uint16, 32768),
                                     (np.float16, np.uint8, 3), (np.float16, np.int16, 0),
                                     (ml_dtypes.bfloat16, np.int8, -2), (np.uint8, np.float16, 7),
                                     (np.int8, ml_dtypes.bfloat16, 1), (np.float16, ml_dtypes.bfloat16, 0),
                                     (ml_dtypes.bfloat16, np.float16, 0)]):
    x = r.astype(din) if np.dtype(din).kind == "f" or din is ml_dtypes.bfloat16 else (r % 200).astype(din)
    kw = {"scale": 0.37, "zero_point": zp} if "int" in np.dtype(din).name + np.dtype(dout).name else {}
    out[f"t{j}"] = lk.convert(x, x.shape, "NCHW", "NCHW", dtype=dout, **kw).view(np.uint8)
q = (rng.standard_normal((1, 3, 100, 130)) * 90).astype(np.float32)
q.reshape(-1)[::41] = np.nan
nhwc = np.ascontiguousarray(q.transpose(0, 2, 3, 1))
out["q"] = lk.convert(nhwc, q.shape, lk.Layout("NHWC", dims="NCHW"), "NCHW", dtype=np.int8,
                      scale=0.37, zero_point=-3).view(np.uint8)
np.savez(sys.argv[1], **out)
"""


def test_float_conversions_match_the_portable_build(tmp_path):
    """The vector float32 <-> float16 / bfloat16 conversions (F16C, AVX2) and
    the gathered conversions of strided sources give the portable build's
    bytes, NaN payloads included: every float16 and bfloat16, and float32
    rounding cases, signed zeros, subnormals, overflow and NaNs."""
    script = tmp_path / "conversions.py"
    script.write_text(FLOAT_CONVERSIONS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)]))
    results = {}
    for simd in ("portable", ""):
        path = tmp_path / f"out_{simd or 'default'}.npz"
        env["LAYOUTKIT_SIMD"] = simd
        run = subprocess.run([sys.executable, str(script), str(path)], env=env,
                             capture_output=True, text=True)  # fmt: skip
        assert run.returncode == 0, run.stderr
        results[simd] = np.load(path)
    for key in results["portable"].files:
        assert results[""][key].tobytes() == results["portable"][key].tobytes(), key


@pytest.mark.parametrize("din", [np.float32, np.float16, np.uint8], ids=str)
def test_converting_strided_rows_into_padded_layouts(din):
    """Rows read strided from the source into a left-padded layout convert one
    gathered run at a time (the run copied to L1, then converted by the
    contiguous loops): every byte matches converting with numpy first."""
    rng = np.random.default_rng(3)
    shape = (1, 40, 9, 70)
    x = (
        rng.integers(0, 256, shape).astype(din)
        if din == np.uint8
        else rng.standard_normal(shape).astype(din)
    )
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    padded = lk.Layout("NCHW", left_pad=(0, 0, 1, 2))
    cases = [(np.float32, {}, x.astype(np.float32))] if din != np.float32 else [
        (np.float16, {}, x.astype(np.float16)),
        (np.int8, {"scale": 0.02, "zero_point": 1},
         np.clip(np.rint(x / np.float32(0.02)) + 1, -128, 127).astype(np.int8)),
    ]  # fmt: skip
    if din == np.uint8:
        cases = [(np.float32, {"scale": 0.5, "zero_point": 7},
                  (x.astype(np.float32) - np.float32(7)) * np.float32(0.5))]  # fmt: skip
    for dout, kw, want in cases:
        got = lk.convert(nhwc, shape, lk.Layout("NHWC", dims="NCHW"), padded, dtype=dout, **kw)
        assert got.tobytes() == ref_pack(want.astype(dout), "NCHW", left_pad=(0, 0, 1, 2)).tobytes()


@pytest.mark.parametrize(
    ("src", "shape"),
    [("NHWC", (1, 64, 48, 96)), ("NHWC", (1, 3, 150, 170)), ("NCHW16c", (1, 40, 60, 70)),
     ("HCWN4c", (2, 6, 50, 61)), ("NCHW", (1, 300, 7, 7))],
)  # fmt: skip
@pytest.mark.parametrize(
    ("din", "dout"),
    [(np.float32, np.float16), (np.float16, np.float32), (np.uint8, np.float32),
     (np.float32, np.int8)],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("threads", [1, 2])
def test_converting_conversions_repack_first(src, shape, din, dout, threads):
    """Conversions whose innermost level is read strided (NHWC / NCHW16c /
    HCWN4c -> NCHW, and NCHW -> NHWC of 300 channels) repack in the source's
    elements and convert contiguous runs, the whole box at once past 512 KiB:
    every byte matches converting with numpy, then repacking."""
    rng = np.random.default_rng(shape[1])
    if din == np.uint8:
        x = rng.integers(0, 256, shape).astype(np.uint8)
    else:
        x = (rng.standard_normal(shape) * 50).astype(din)
    kw = {"dtype": dout}
    if dout == np.int8:
        kw.update(scale=0.37, zero_point=-3)
        want = np.clip(np.rint(x.astype(np.float32) / np.float32(0.37)) - 3, -128, 127)
    elif din == np.uint8:
        kw.update(scale=0.25, zero_point=128)
        want = (x.astype(np.float32) - np.float32(128)) * np.float32(0.25)
    else:
        want = x
    want = want.astype(dout)
    layout = lk.Layout(src, dims="NCHW")
    dst = "NHWC" if src == "NCHW" else "NCHW"
    got = lk.convert(
        layout.pack(x), shape, layout, lk.Layout(dst, dims="NCHW"), threads=threads, **kw
    )
    assert got.tobytes() == ref_pack(want, dst, dims="NCHW").tobytes()


@pytest.mark.parametrize(
    ("tag", "shape", "dtype"),
    [("HCWN8c", (5, 2, 10, 43), np.float64), ("HCWN4c", (9, 3, 10, 31), np.float64),
     ("HCWN8c", (5, 7, 3, 43), np.float32), ("HCWN4c", (8, 4, 17, 23), np.float32)],
)  # fmt: skip
def test_streamed_lane_boxes_fit_their_stage(store_mode, tag, shape, dtype):
    """Boxes of many rows of wide pixels (430 rows of 40 float64 lanes) staged
    for streaming: each piece of rows fits the L1 stage (rounding the bytes,
    not the rows, let 26 rows of 320 bytes overrun 8 KiB of stack)."""
    x = _data(shape, dtype, seed=shape[3])
    got = lk.Layout(tag, dims="NCHW").pack(x)
    assert got.tobytes() == ref_pack(x, tag, dims="NCHW").tobytes()


@pytest.mark.parametrize(
    ("tag", "dims", "shape"),
    [("HWCN", "NCHW", (2, 2, 2, 17)), ("HWCN", "NCHW", (2, 2, 18, 20)),
     ("HCWN2c", "NCHW", (2, 17, 18, 49)), ("HCWN2c", "NCHW", (2, 12, 23, 60)),
     ("HCWN2c", "NHWC", (2, 8, 65, 10))],
)  # fmt: skip
def test_deinterleave_grids_stay_in_the_source(tag, dims, shape):
    """Pixels of 4 bytes de-interleaved into rows read whole pixels from each
    box's start, so boxes that start on a later slot of the pixel (HWCN's
    second channel) take the per-box kernel: unpacking a source that ends at an
    inaccessible page reads nothing past it."""
    x = _data(shape, np.uint8, seed=shape[3])
    layout = lk.Layout(tag, dims=dims)
    packed = _guarded_copy(ref_pack(x, tag, dims=dims))
    assert layout.unpack(packed, shape).tobytes() == x.tobytes()


@pytest.mark.parametrize(
    ("dtype", "tag", "pad"),
    [(np.complex128, "NCHW4c", -2.0), ("V16", "NCHW4c", bytes(range(1, 17))),
     ("V8", "NCHW8c", bytes(range(1, 9))), (np.float64, "NCHW8c", -2.0),
     (np.float32, "NCHW16c", -3.5), (np.float16, "NCHW8c", 1.5)],
)  # fmt: skip
def test_padding_pattern_in_outputs_off_element_boundaries(dtype, tag, pad):
    """An output whose address is not a multiple of the element size (a view
    at a byte offset) gets whole pad elements: the small-box kernel lays its
    16-byte pad vector over line-aligned stores only for 16-byte aligned
    outputs."""
    dtype = np.dtype(dtype)
    offsets = [o for o in (1, 2, 4, 8, 24, 33) if o % dtype.itemsize]
    for shape, offset in itertools.product(((1, 1, 1, 2), (1, 5, 3, 14), (2, 9, 2, 7)), offsets):
        x = _data(shape, dtype, seed=shape[1])
        want = ref_pack(x, tag, dims="NCHW", pad_value=pad)
        raw, start, out = _output_at(want.shape, dtype, offset)
        got = lk.Layout(tag, dims="NCHW").pack(x, pad_value=pad, out=out)
        assert got.tobytes() == want.tobytes(), (shape, offset)
        assert not raw[:start].any() and not raw[start + want.nbytes :].any()


@pytest.mark.parametrize(
    ("src", "dst", "dims", "shape", "dtype", "kw"),
    [("NHWC", "HCWN4c", "NHWC", (2, 14, 14, 64), np.uint8, {}),
     ("HCWN8c", "NHWC", "NHWC", (3, 9, 11, 32), np.uint8, {}),
     ("NHWC", "HCWN2c", "NHWC", (2, 10, 25, 10), np.float16, {}),
     ("NHWC", "NCHW32c", "NCHW", (2, 15, 25, 51), np.float32, {"dtype": ml_dtypes.bfloat16}),
     ("NHWC", "NCHW", "NCHW", (1, 3, 40, 50), np.float32, {"dtype": np.float16})],
)  # fmt: skip
def test_pad_pattern_read_within_its_element(monkeypatch, src, dst, dims, shape, dtype, kw):
    """The pad pattern (one output element) ends at an inaccessible page: plans
    of wider elements than the array's (runs of a few bytes as one) and
    conversions repacking in the source's wider elements read no byte of it
    past its end."""
    real = _engine._pad_bytes
    monkeypatch.setattr(_engine, "_pad_bytes", lambda value, dt: _guarded_copy(real(value, dt)))
    x = _data(shape, dtype, seed=shape[3])
    if dtype == np.float32:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    a, b = lk.Layout(src, dims=dims), lk.Layout(dst, dims=dims)
    got = lk.convert(a.pack(x), shape, a, b, **kw)
    want = x.astype(kw["dtype"]) if "dtype" in kw else x
    assert got.tobytes() == ref_pack(want, dst, dims=dims).tobytes()


def test_deinterleave_grids_of_a_batch_stay_in_the_source():
    """A de-interleave grid box starts where the outer levels put it: in
    HCWN2c of two images each image's slots start 2 bytes into the 4-byte
    pixel, so the grid (whole pixels from the box's start) is not used there;
    unpacking with a dequantize from a source ending at an inaccessible page
    reads nothing past it."""
    shape = (2, 33, 2, 37)
    x = _data(shape, np.uint8, seed=3)
    a, b = lk.Layout("HCWN2c", dims="NCHW"), lk.Layout("CHWN", dims="NCHW")
    src = _guarded_copy(ref_pack(x, "HCWN2c", dims="NCHW"))
    got = lk.convert(src, shape, a, b, dtype=np.float32, scale=0.5, zero_point=127)
    want = (x.astype(np.float32) - np.float32(127)) * np.float32(0.5)
    assert got.tobytes() == ref_pack(want, "CHWN", dims="NCHW").tobytes()


@pytest.mark.parametrize(
    ("src", "shape", "din", "dout", "kw"),
    [("NHWC", (1, 64, 128, 160), np.float32, np.float16, {}),
     ("NHWC", (1, 32, 128, 160), np.uint8, np.float32, {"scale": 0.25, "zero_point": 128}),
     ("NCHW16c", (1, 48, 256, 192), np.float32, np.int8, {"scale": 0.37, "zero_point": -3}),
     ("NHWC", (1, 3, 1024, 1000), np.float32, ml_dtypes.bfloat16, {})],
)  # fmt: skip
def test_converting_large_strided_sources_on_two_threads(src, shape, din, dout, kw):
    """Outputs of 2 MiB or more converted from strided sources split between
    two threads: each slice repacks its own box in the source's elements and
    converts it; the bytes equal one thread's and numpy's."""
    rng = np.random.default_rng(shape[1])
    x = (
        rng.integers(0, 256, shape).astype(din)
        if din == np.uint8
        else rng.standard_normal(shape).astype(din)
    )
    layout = lk.Layout(src, dims="NCHW")
    packed = layout.pack(x)
    one = lk.convert(packed, shape, layout, "NCHW", dtype=dout, threads=1, **kw)
    two = lk.convert(packed, shape, layout, "NCHW", dtype=dout, threads=2, **kw)
    assert one.nbytes >= 2 << 20 and one.tobytes() == two.tobytes()
    if din == np.uint8:
        want = (x.astype(np.float32) - np.float32(128)) * np.float32(0.25)
    elif dout == np.int8:
        want = np.clip(np.rint(x / np.float32(0.37)) - 3, -128, 127)
    else:
        want = x
    assert one.tobytes() == want.astype(dout).tobytes()


# NHWC shapes for the crouton chunk kernels: chunk pairs (2048 channels, staged
# for pixels 1 KiB+ apart), a last odd chunk (96, 32), ragged H and W blocks,
# batches.
_CHUNK_SHAPES = [
    (1, 7, 7, 2048), (1, 7, 7, 96), (1, 7, 5, 32), (3, 9, 13, 64), (1, 14, 14, 160),
    (2, 1, 1, 32), (1, 17, 6, 128), (1, 9, 7, 1024),
]  # fmt: skip


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("preset", "dtype", "pad"),
    [("R4Crouton4x1Layout", np.uint8, 7), ("R4Crouton4x1Layout", np.int8, 0),
     ("R4Crouton2Layout", np.float16, 3.0), ("R4Crouton2Layout", ml_dtypes.bfloat16, 0)],
)  # fmt: skip
@pytest.mark.parametrize("how", ["contiguous", "reversed_w", "channel_slice", "guarded"])
def test_crouton_chunks_written_in_order(preset, dtype, pad, how, threads):
    """NHWC -> R4Crouton4x1 / R4Crouton2 of padded planes with whole 32-channel
    blocks, a chunk at a time (layoutkit_chunks.h): byte chunks in pairs from
    64 bytes of each pixel (staged in L1 for pixels 1 KiB or more apart), a
    last odd chunk from its 32 (C = 96, 32: with the
    source ending at an inaccessible page, a read past the last pixel faults),
    ragged H and W blocks, batches, strided sources and an output at an odd
    byte offset. Checked against the numpy model, every byte around the output
    untouched."""
    layout = lk.htp.layout(preset)
    for k, shape in enumerate(_CHUNK_SHAPES):
        x = _data(shape, dtype, seed=k)
        src = _guarded_copy(x) if how == "guarded" else _strided_source(x, how)
        want = ref_pack(x, str(layout), dims=layout.dims, pad_value=pad)
        raw, start, out = _output_at(want.shape, dtype, 5 if k % 2 else 0)
        raw[:] = 0xA5
        got = layout.pack(src, pad_value=pad, out=out, threads=threads)
        assert got.tobytes() == want.tobytes(), (shape, how)
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(
    ("preset", "dtype"),
    [("R4Crouton4x1Layout", np.uint8), ("R4Crouton4x1Layout", np.int8),
     ("R4Crouton2Layout", np.float16), ("R4Crouton2Layout", ml_dtypes.bfloat16)],
)  # fmt: skip
@pytest.mark.parametrize("guarded", [False, True])
def test_crouton_chunks_unpacked_in_order(preset, dtype, guarded, threads):
    """R4Crouton4x1 / R4Crouton2 of padded planes back into NHWC by the pack
    plan walked backwards (RepackPlan.use_chunks_back): chunk pairs and a
    last odd chunk, ragged H and W blocks, batches, pixels 4 KiB apart (left
    to the walk), a packed buffer ending at an inaccessible page and an output
    at an odd byte offset. Every byte equals the input; none around the output
    is touched."""
    layout = lk.htp.layout(preset)
    for k, shape in enumerate([*_CHUNK_SHAPES, (1, 5, 7, 4096)]):
        x = _data(shape, dtype, seed=k)
        packed = ref_pack(x, str(layout), dims=layout.dims, pad_value=1)
        if guarded:
            packed = _guarded_copy(packed)
        raw, start, out = _output_at(x.shape, dtype, 5 if k % 2 else 0)
        raw[:] = 0xA5
        got = layout.unpack(packed, shape, out=out, threads=threads)
        assert got.tobytes() == x.tobytes(), shape
        assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()
    if "avx512vbmi" in _repack.simd_name() and not os.environ.get("LAYOUTKIT_SIMD"):
        plan = _engine._cached_plan(layout, None, (1, 7, 7, 512), np.dtype(dtype).itemsize, None)
        assert plan is not None and plan.chunks_back is not None


@pytest.mark.parametrize("preset", ["R4Crouton4x1Layout", "R4Crouton2Layout"])
@pytest.mark.parametrize(
    ("tag", "left_pad"),
    [("NHWC", None), ("NWHC", None), ("NCHW32c", None), ("NCHW8c", None), ("NHWC", [0, 1, 0, 0]),
     ("NHWC8h8w32c", None)],
)  # fmt: skip
def test_crouton_chunks_converted_backwards(preset, tag, left_pad):
    """convert() from a padded crouton into another layout: one without padding
    (NHWC, NWHC, NCHW32c of whole blocks) takes the pack plan walked
    backwards, the others the walk; all equal the numpy model."""
    src = lk.htp.layout(preset)
    dst = lk.Layout(tag, dims="NHWC", left_pad=left_pad)
    dtype = np.uint8 if "4x1" in preset else np.float16
    for shape in [(1, 7, 7, 2048), (2, 9, 13, 64), (1, 5, 3, 96)]:
        x = _data(shape, dtype, seed=shape[3])
        packed = ref_pack(x, str(src), dims="NHWC", pad_value=2)
        got = lk.convert(packed, shape, src, dst)
        want = ref_pack(x, tag, dims="NHWC", left_pad=left_pad)
        assert got.tobytes() == want.tobytes(), (shape, tag)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(["R4Crouton4x1Layout", "R4Crouton2Layout"]),
    n=st.integers(1, 3),
    hw=st.tuples(st.integers(1, 24), st.integers(1, 24)),
    blocks=st.integers(1, 9),
    extra=st.sampled_from([0, 0, 0, 7, 31]),
    offset=st.sampled_from([0, 0, 16, 5]),
    threads=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_crouton_chunks_random_shapes(preset, n, hw, blocks, extra, offset, threads, seed):
    """NHWC <-> R4Crouton4x1 (bytes) / R4Crouton2 (half-words) at random
    extents, mostly whole 32-channel blocks (the chunk kernels), some not (the
    walk), outputs on a line and off it: both directions equal the numpy
    model, nothing written outside the output."""
    layout = lk.htp.layout(preset)
    dtype = np.uint8 if "4x1" in preset else np.float16
    shape = (n, *hw, 32 * blocks + extra)
    x = _data(shape, dtype, seed=seed)
    want = ref_pack(x, str(layout), dims=layout.dims, pad_value=seed % 5)
    raw, start, out = _output_at(want.shape, dtype, offset)
    raw[:] = 0xA5
    layout.pack(x, pad_value=seed % 5, out=out, threads=threads)
    assert out.tobytes() == want.tobytes()
    assert (raw[:start] == 0xA5).all() and (raw[start + out.nbytes :] == 0xA5).all()
    raw, start, back = _output_at(shape, dtype, offset)
    raw[:] = 0xA5
    layout.unpack(want, shape, out=back, threads=threads)
    assert back.tobytes() == x.tobytes()
    assert (raw[:start] == 0xA5).all() and (raw[start + back.nbytes :] == 0xA5).all()
