"""threads= splits the work; results are identical to one thread."""

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
    # Two outer digits (channel blocks): the split moves to the next level.
    ("NCHW32c", None, (1, 64, 256, 257), np.int8),
    ("NHWC8c", "NCHW", (1, 64, 130, 257), np.float16),
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


def test_threads_with_quantize():
    x = np.random.default_rng(1).standard_normal((1, 3, 640, 640)).astype(np.float32)
    layout = lk.Layout("HCWN4c", dims="NCHW")
    one = layout.pack(x, dtype=np.int8, scale=1 / 128, threads=1)
    two = layout.pack(x, dtype=np.int8, scale=1 / 128, threads=2)
    assert one.tobytes() == two.tobytes()


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
