"""threads= splits the work; results are identical to one thread."""

import multiprocessing
import threading

import numpy as np
import pytest
from reference import ref_pack

import layoutkit as lk

CASES = [
    ("NHWC", "NCHW", (2, 3, 300, 700), np.uint8),
    ("NCHW4c", None, (1, 3, 512, 800), np.uint8),
    ("NCHW32c", None, (1, 70, 64, 90), np.float32),
    ("NHWC8h8w32c", "NCHW", (1, 45, 77, 101), np.float16),
    ("HCWN8c", "NCHW", (2, 13, 100, 120), np.float32),
    # H rows a short run of every plane apart (HCWNC of a batch): each thread
    # takes a contiguous range of rows.
    ("HCWN4c", "NCHW", (8, 64, 28, 28), np.int8),
    ("HCWN8c", "NCHW", (4, 40, 56, 56), np.float16),
    # Two outer digits (channel blocks): the split moves to the next level.
    ("NCHW32c", None, (1, 64, 256, 257), np.int8),
    ("NHWC8c", "NCHW", (1, 64, 130, 257), np.float16),
    # Croutons of 3 channels read from 8 MiB+ of padded source: each thread's
    # slice takes the prefetching kernel the whole grid takes.
    ("NHWC8h8w32c", "NHWC", (1, 1024, 1024, 3), np.uint8),
    ("NHWC8h2w32c4w", "NHWC", (1, 512, 1024, 3), np.uint8),
    # One box of few long rows (NHWC -> NCHW): the threads slice its columns.
    ("NCHW", "NHWC", (1, 300, 301, 64), np.uint8),
    ("NCHW", "NHWC", (2, 150, 151, 24), np.float32),
]


@pytest.mark.parametrize(("tag", "dims", "shape", "dtype"), CASES)
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_match_one_thread(tag, dims, shape, dtype, threads):
    x = np.random.default_rng(0).integers(0, 120, shape).astype(dtype)
    layout = lk.Layout(tag, dims=dims)
    one = layout.pack(x, pad_value=5, threads=1)
    many = layout.pack(x, pad_value=5, threads=threads)
    assert many.tobytes() == one.tobytes() == ref_pack(x, tag, dims=dims, pad_value=5).tobytes()
    back = layout.unpack(many, shape, threads=threads)
    assert np.array_equal(back, x)
    other = lk.Layout("NCHW16c", dims=layout.dims)
    assert (
        lk.convert(one, shape, layout, other, threads=threads).tobytes() == other.pack(x).tobytes()
    )


@pytest.mark.parametrize("shape", [(1, 3, 640, 640), (8, 64, 28, 28)])
def test_threads_with_quantize(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    layout = lk.Layout("HCWN4c", dims="NCHW")
    one = layout.pack(x, dtype=np.int8, scale=1 / 128, threads=1)
    for threads in (2, 3):
        many = layout.pack(x, dtype=np.int8, scale=1 / 128, threads=threads)
        assert many.tobytes() == one.tobytes()


def test_threads_from_environment(monkeypatch):
    x = np.zeros((1, 3, 512, 512), np.float32)  # >= 2 MiB: small outputs ignore the variable
    monkeypatch.setenv("LAYOUTKIT_NUM_THREADS", "2")
    assert lk.Layout("NCHW4c").pack(x).shape == (1, 1, 512, 512, 4)
    monkeypatch.setenv("LAYOUTKIT_NUM_THREADS", "two")
    with pytest.raises(lk.LayoutError, match="LAYOUTKIT_NUM_THREADS"):
        lk.Layout("NCHW4c").pack(x)
    small = np.zeros((1, 3, 8, 8), np.float32)
    assert lk.Layout("NCHW4c").pack(small).shape == (1, 1, 8, 8, 4)


@pytest.mark.parametrize(
    ("threads", "exc"), [(0, lk.LayoutError), (-2, lk.LayoutError), (1.5, TypeError)]
)
def test_bad_thread_counts(threads, exc):
    with pytest.raises(exc, match="threads"):
        lk.Layout("NCHW4c").pack(np.zeros((1, 3, 4, 4), np.uint8), threads=threads)


def _pack_in_child(queue):
    x = np.arange(1 * 64 * 200 * 201, dtype=np.uint32).astype(np.uint8).reshape(1, 200, 201, 64)
    queue.put(lk.Layout("NCHW", dims="NHWC").pack(x, threads=2).tobytes())


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform"
)
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # 3.12+: fork with threads
def test_threads_after_fork():
    # The workers of the parent's pool do not exist in a forked child: it must
    # start its own instead of waiting on them.
    x = np.arange(1 * 64 * 200 * 201, dtype=np.uint32).astype(np.uint8).reshape(1, 200, 201, 64)
    expected = lk.Layout("NCHW", dims="NHWC").pack(x, threads=2).tobytes()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_pack_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert got == expected


def test_concurrent_callers_with_threads():
    # Several Python threads asking for threads=2 at once: one gets the pool, the
    # others run on their own thread; every result is exact.
    rng = np.random.default_rng(3)
    xs = [rng.integers(0, 255, (1, 3, 700, 700 + k)).astype(np.uint8) for k in range(4)]
    layout = lk.Layout("NCHW4c")
    expected = [layout.pack(x).tobytes() for x in xs]
    results: list[list[bytes]] = [[] for _ in xs]

    def work(k):
        for _ in range(20):
            results[k].append(layout.pack(xs[k], threads=2).tobytes())

    workers = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k in range(len(xs)):
        assert results[k] == [expected[k]] * 20


@pytest.mark.parametrize("seed", range(4))
def test_threads_on_small_random_conversions(monkeypatch, seed, store_mode):
    """Every split the pool makes (outer level, next level, columns of one box),
    forced on small tensors: the bytes equal one thread's and the reference's."""
    from test_kernel_random import DTYPES, PAIRS

    from layoutkit import _engine

    monkeypatch.setattr(_engine, "_MIN_BYTES_PER_THREAD", 1)
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        a, b, dims = PAIRS[rng.integers(len(PAIRS))]
        src_l, dst_l = lk.Layout(a, dims=dims), lk.Layout(b, dims=dims)
        n, c, h, w = (int(v) for v in rng.integers(1, (4, 70, 40, 90)))
        shape = (n, c, h, w) if dims == "NCHW" else (n, h, w, c)
        dt = np.dtype(DTYPES[rng.integers(len(DTYPES))])
        x = rng.integers(0, 256, (*shape, dt.itemsize), dtype=np.uint8).view(dt).reshape(shape)
        pad = 0 if dt.kind == "V" else 7
        src = src_l.pack(x, pad_value=pad)
        want = ref_pack(x, b, dims=dims, pad_value=pad).tobytes()
        for threads in (2, 3, 4):
            got = lk.convert(src, shape, src_l, dst_l, pad_value=pad, threads=threads)
            assert got.tobytes() == want, (a, b, shape, dt, threads)
