"""Random realistic conversions through every kernel path, against the numpy reference.

Layout pairs from the five systems, shapes from tiny planes (7x7) to images,
every element size, 1-3 threads, ordinary and streamed stores, and the fused
quantize/dequantize; each case is compared byte for byte with ``reference.py``.
"""

import numpy as np
import pytest
from reference import ref_pack

import layoutkit as lk
from layoutkit import _repack

PAIRS = [
    ("NCHW", "NCHW4c", "NCHW"),
    ("NCHW", "NCHW8c", "NCHW"),
    ("NCHW", "NCHW16c", "NCHW"),
    ("NCHW", "NCHW32c", "NCHW"),
    ("NCHW", "NHWC", "NCHW"),
    ("NHWC", "NCHW", "NCHW"),
    ("NCHW", "HCWN4c", "NCHW"),
    ("NCHW", "HCWN8c", "NCHW"),
    ("NCHW", "HCWN16c", "NCHW"),
    ("NCHW", "NHWC8c", "NCHW"),
    ("NHWC", "NHWC8h8w32c", "NHWC"),
    ("NHWC", "NHWC8h2w32c4w", "NHWC"),
    ("NHWC", "NHWC8h2w32c2w", "NHWC"),
    ("NHWC4h4w32c2h2w", "NHWC8h2w32c2w", "NHWC"),
]
DTYPES = [np.uint8, np.int8, np.uint16, np.float16, np.float32, np.float64, np.dtype("V3")]
FIXED_SHAPES = [(1, 256, 7, 7), (8, 64, 14, 14), (1, 3, 224, 224), (2, 130, 9, 33), (1, 2048, 7, 7)]


@pytest.mark.parametrize("seed", range(6))
def test_random_conversions(seed):
    rng = np.random.default_rng(seed)
    old = _repack.set_stream_threshold(-1)
    try:
        for _ in range(12):
            a, b, dims = PAIRS[rng.integers(len(PAIRS))]
            src_l, dst_l = lk.Layout(a, dims=dims), lk.Layout(b, dims=dims)
            if rng.integers(4) == 0:
                n, c, h, w = FIXED_SHAPES[rng.integers(len(FIXED_SHAPES))]
            else:
                n, c, h, w = (int(v) for v in rng.integers(1, (4, 70, 40, 90)))
            shape = (n, c, h, w) if dims == "NCHW" else (n, h, w, c)
            dt = np.dtype(DTYPES[rng.integers(len(DTYPES))])
            x = rng.integers(0, 256, (*shape, dt.itemsize), dtype=np.uint8).view(dt).reshape(shape)
            _repack.set_stream_threshold(int(rng.choice([-1, 0])))
            threads = int(rng.integers(1, 4))
            pad = 0 if dt.kind == "V" else 7
            src = src_l.pack(x, pad_value=pad)
            assert src.tobytes() == ref_pack(x, a, dims=dims, pad_value=pad).tobytes()
            got = lk.convert(src, shape, src_l, dst_l, pad_value=pad, threads=threads)
            assert got.tobytes() == ref_pack(x, b, dims=dims, pad_value=pad).tobytes(), (
                a,
                b,
                shape,
            )
            assert dst_l.unpack(got, shape, threads=threads).tobytes() == x.tobytes()
            f = (rng.standard_normal(shape) * 3).astype(np.float32)
            q = dst_l.pack(f, dtype=np.int8, scale=0.05, zero_point=3, threads=threads)
            qr = np.clip(np.rint(f / np.float32(0.05)) + 3, -128, 127).astype(np.int8)
            assert q.tobytes() == ref_pack(qr, b, dims=dims).tobytes(), (b, shape)
            d = dst_l.unpack(q, shape, dtype=np.float32, scale=0.05, zero_point=3, threads=threads)
            assert d.tobytes() == ((qr.astype(np.float32) - 3) * np.float32(0.05)).tobytes()
    finally:
        _repack.set_stream_threshold(old)
