"""Benchmark layoutkit's repack against numpy and against np.copyto of the same bytes.

Usage::

    python bench/bench_repack.py            # the performance.md workloads
    python bench/bench_repack.py --quick    # a subset, well under a minute
    python bench/bench_repack.py --json results.json

Every figure is single-threaded. GB/s counts input bytes plus output bytes
(padding included) over the median time; "x copy" divides that by the GB/s of
``np.copyto`` of a buffer with the same total traffic ((in + out) / 2 bytes),
measured in the same process just before the workload. Machines are shared and
noisy: ratios taken in one run are what count.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Any

import numpy as np

import layoutkit as lk

SHAPES = [
    (1, 3, 1024, 1024),
    (1, 3, 224, 224),
    (1, 64, 256, 256),
    (8, 256, 56, 56),
    (1, 2048, 7, 7),
]
QUICK_SHAPES = [(1, 3, 1024, 1024), (1, 64, 256, 256)]
DTYPES = ["uint8", "float16", "float32"]
WORKLOADS = [
    # name, src tag, dst tag, dims, numpy reference
    ("NCHW->NHWC", "NCHW", "NHWC", "NCHW"),
    ("NHWC->NCHW", "NHWC", "NCHW", "NCHW"),
    ("NCHW->NCHW4c", "NCHW", "NCHW4c", "NCHW"),
    ("NCHW->NCHW16c", "NCHW", "NCHW16c", "NCHW"),
    ("NCHW->NCHW32c", "NCHW", "NCHW32c", "NCHW"),
    ("NHWC->crouton", "NHWC", "NHWC8h8w32c", "NHWC"),
    ("NCHW->HCWNC4", "NCHW", "HCWN4c", "NCHW"),
]
QUICK_WORKLOADS = ["NCHW->NHWC", "NCHW->NCHW4c"]


def median_time(fn: Any, repeat: int, min_time: float = 0.002) -> float:
    fn()  # warm up (plan cache, page faults)
    # Enough inner loops that one sample takes at least min_time.
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(min_time / once))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    samples.sort()
    return samples[len(samples) // 2]


def numpy_reference(x: np.ndarray, shape: tuple[int, ...], src: lk.Layout, dst: lk.Layout) -> Any:
    """The same conversion with numpy: pad, reshape, transpose, copy.

    ``x`` is the source buffer in ``src``'s physical shape (``src`` has no blocks);
    ``shape`` the logical shape.
    """
    padded = dst.padded_shape(shape)
    cs = dst.block_product
    logical_from_src = np.argsort([*src.outer])  # src physical -> logical axes (no blocks in src)
    perm = []
    split_shape = []
    axis_of = {}
    for d in range(dst.rank):
        sizes = [padded[d] // cs[d]] + [s for dd, s in dst.blocks if dd == d]
        axis_of[d] = list(range(len(split_shape), len(split_shape) + len(sizes)))
        split_shape += sizes
    perm = [axis_of[d][0] for d in dst.outer]
    seen = dict.fromkeys(range(dst.rank), 1)
    for d, _ in dst.blocks:
        perm.append(axis_of[d][seen[d]])
        seen[d] += 1
    pad_width = [(0, p - s) for s, p in zip(shape, padded)]

    def run() -> np.ndarray:
        logical = x.transpose(logical_from_src)
        if any(w for _, w in pad_width):
            logical = np.pad(logical, pad_width)
        return np.ascontiguousarray(logical.reshape(split_shape).transpose(perm))

    return run


def bench(
    shapes: list[tuple[int, ...]], workloads: list[tuple[str, str, str, str]], repeat: int
) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for shape in shapes:
        for dtype in DTYPES:
            for name, src_tag, dst_tag, dims in workloads:
                src = lk.Layout(src_tag, dims=dims)
                dst = lk.Layout(dst_tag, dims=dims)
                logical = rng.integers(0, 100, shape).astype(dtype)
                buf = src.pack(logical)
                out = np.empty(dst.physical_shape(shape), dtype)
                traffic = buf.nbytes + out.nbytes
                a = np.ones(traffic // 2, np.uint8)
                b = np.empty_like(a)
                t_copy = median_time(lambda a=a, b=b: np.copyto(b, a), repeat)
                t_lk = median_time(
                    lambda buf=buf, shape=shape, src=src, dst=dst, out=out: lk.convert(
                        buf, shape, src, dst, out=out
                    ),
                    repeat,
                )
                ref = numpy_reference(buf.reshape(src.physical_shape(shape)), shape, src, dst)
                assert np.array_equal(ref(), lk.convert(buf, shape, src, dst)), (name, shape, dtype)
                t_np = median_time(ref, max(3, repeat // 2))
                copy_gbs = traffic / t_copy / 1e9
                row = {
                    "workload": name,
                    "shape": "x".join(map(str, shape)),
                    "dtype": dtype,
                    "bytes": traffic,
                    "copy_gbs": copy_gbs,
                    "layoutkit_gbs": traffic / t_lk / 1e9,
                    "numpy_gbs": traffic / t_np / 1e9,
                }
                row["layoutkit_x_copy"] = row["layoutkit_gbs"] / copy_gbs
                row["numpy_x_copy"] = row["numpy_gbs"] / copy_gbs
                rows.append(row)
                print(
                    f"{name:<15}{row['shape']:<15}{dtype:<8}"
                    f"{row['copy_gbs']:>8.1f}{row['layoutkit_gbs']:>9.1f}{row['layoutkit_x_copy']:>7.2f}x"
                    f"{row['numpy_gbs']:>9.1f}{row['numpy_x_copy']:>7.2f}x"
                    f"{row['layoutkit_gbs'] / row['numpy_gbs']:>9.1f}x",
                    flush=True,
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a small subset (under a minute)")
    parser.add_argument("--repeat", type=int, default=9, help="samples per measurement (median)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    workloads = [w for w in WORKLOADS if not args.quick or w[0] in QUICK_WORKLOADS]
    from layoutkit._repack import simd_name

    print(
        f"layoutkit {lk.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, kernels: {simd_name()}, 1 thread, median of {args.repeat}"
    )
    print(
        f"{'workload':<15}{'shape':<15}{'dtype':<8}{'copy':>8}{'lk GB/s':>9}{'x copy':>8}"
        f"{'np GB/s':>9}{'x copy':>8}{'lk/np':>9}"
    )
    rows = bench(shapes, workloads, args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"machine": platform.platform(), "python": sys.version, "results": rows},
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
