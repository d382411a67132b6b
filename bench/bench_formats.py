"""Benchmark TensorRT format packing and larod pitched packing against np.copyto.

Usage::

    python bench/bench_formats.py              # the issue's two workloads plus a few more
    python bench/bench_formats.py --quick      # only the issue's two workloads
    python bench/bench_formats.py --repeat 50

Single thread (layoutkit's default; ``LAYOUTKIT_NUM_THREADS`` unset). GB/s
counts input bytes plus output bytes (padding included) over the median time.
"x copy" divides the median time of ``np.copyto`` between two arrays of the same
traffic ((in + out) / 2 bytes each side) by the median time of the workload,
measured interleaved in the same loop so that machine noise hits both alike.
A 4 MiB copy runs from cache (L3 is 32 MiB), so the figure against a 64 MiB
``np.copyto`` (performance.md's yardstick) is printed too.
The issue's target is >= 0.5x for ``to_format`` int8 NCHW -> kCHW32 and
fp16 NCHW -> kHWC8 on 1x64x256x256.

Two variants are timed: ``out=`` (a preallocated destination, compared with
``np.copyto`` into a preallocated array) and allocating (compared with
``np.copy``, which also allocates).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from suite.common import spin_up

import layoutkit as lk
from layoutkit import larod
from layoutkit import tensorrt as trt


def _median_pair(
    work: Callable[[], Any], ref: Callable[[], Any], repeat: int
) -> tuple[float, float]:
    work()
    ref()  # warm up (page faults, plan cache)
    tw, tr = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        t1 = time.perf_counter()
        ref()
        t2 = time.perf_counter()
        tw.append(t1 - t0)
        tr.append(t2 - t1)
    return float(np.median(tw)), float(np.median(tr))


COPY64_GBPS = 0.0  # GB/s of a 64 MiB np.copyto (performance.md's yardstick), set in main()


def _copy64_gbps(repeat: int) -> float:
    a = np.ones(64 << 20, np.uint8)
    b = np.empty_like(a)
    t, _ = _median_pair(lambda: np.copyto(b, a), lambda: None, max(5, repeat // 3))
    return 2 * a.nbytes / t / 1e9


def _row(name: str, nbytes_in: int, nbytes_out: int, t: float, t_ref: float) -> dict[str, Any]:
    traffic = nbytes_in + nbytes_out
    row = {
        "workload": name,
        "ms": t * 1e3,
        "gbps": traffic / t / 1e9,
        "copy_gbps": traffic / t_ref / 1e9,
        "ratio": t_ref / t,
        "ratio64": traffic / t / 1e9 / COPY64_GBPS,
    }
    print(
        f"{name:<48} {row['ms']:8.3f} ms {row['gbps']:7.2f} GB/s   "
        f"same-size copy {row['copy_gbps']:6.2f} GB/s {row['ratio']:5.2f}x   "
        f"64MiB copy {row['ratio64']:5.2f}x"
    )
    return row


def bench_trt(fmt: str, shape: tuple[int, ...], dtype: Any, repeat: int, dla: str = "orin") -> list:
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, size=shape).astype(dtype)
    st = trt.storage_shape(fmt, shape, dtype, dla)
    out = np.empty(st, dtype)
    n_in, n_out = x.nbytes, out.nbytes
    half = (n_in + n_out) // 2 // np.dtype(dtype).itemsize
    a = np.ones(half, dtype)
    b = np.empty_like(a)
    tag = f"{np.dtype(dtype).name} {'x'.join(map(str, shape))}"
    rows = []
    t, tr = _median_pair(
        lambda: trt.to_format(x, fmt, dla, out=out), lambda: np.copyto(b, a), repeat
    )
    rows.append(_row(f"to_format {fmt} out= ({tag})", n_in, n_out, t, tr))
    t, tr = _median_pair(lambda: trt.to_format(x, fmt, dla), lambda: np.copy(a), repeat)
    rows.append(_row(f"to_format {fmt} alloc ({tag})", n_in, n_out, t, tr))
    back = np.empty(shape, dtype)
    t, tr = _median_pair(
        lambda: trt.from_format(out, fmt, shape, dla, out=back), lambda: np.copyto(b, a), repeat
    )
    rows.append(_row(f"from_format {fmt} out= ({tag})", n_out, n_in, t, tr))
    assert np.array_equal(back, x)
    return rows


def bench_larod(repeat: int) -> list:
    dims = (1, 3, 1080, 1920)
    p = larod.pitches(dims, "uint8", "NCHW", align=(1, 1, 1, 64))
    x = np.random.default_rng(1).integers(0, 255, size=dims, dtype=np.uint8)
    half = (x.nbytes + p[0]) // 2
    a = np.ones(half, np.uint8)
    t, tr = _median_pair(lambda: larod.pack(x, p), lambda: np.copy(a), repeat)
    rows = [_row("larod.pack NCHW uint8 1x3x1080x1920 row%64", x.nbytes, p[0], t, tr)]
    buf = larod.pack(x, p)
    t, tr = _median_pair(
        lambda: larod.view(buf, dims, "uint8", p), lambda: np.copyto(a[:8], a[8:16]), repeat
    )
    print(f"{'larod.view (zero-copy)':<46} {t * 1e6:8.1f} us")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="only the issue's two workloads")
    ap.add_argument("--repeat", type=int, default=30, help="timed repetitions (median taken)")
    args = ap.parse_args(argv)
    spin_up()  # an idle core runs slow for its first tens of milliseconds
    print(
        f"layoutkit {lk.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}, "
        f"{platform.machine()}, threads={os.environ.get('LAYOUTKIT_NUM_THREADS', '1')}"
    )
    global COPY64_GBPS
    COPY64_GBPS = _copy64_gbps(args.repeat)
    print(f"np.copyto 64 MiB: {COPY64_GBPS:.2f} GB/s (in + out)")
    shape = (1, 64, 256, 256)
    rows = []
    rows += bench_trt("kCHW32", shape, np.int8, args.repeat)
    rows += bench_trt("kHWC8", shape, np.float16, args.repeat)
    if not args.quick:
        rows += bench_trt("kCHW4", (1, 3, 1024, 1024), np.int8, args.repeat)
        rows += bench_trt("kHWC8", (1, 3, 1024, 1024), np.float16, args.repeat)
        rows += bench_trt("kHWC16", shape, np.float16, args.repeat)
        rows += bench_trt("kCDHW32", (1, 40, 16, 64, 64), np.int8, args.repeat)
        rows += bench_trt("kDLA_HWC4", (1, 3, 1080, 1920), np.int8, args.repeat)
        rows += bench_trt("kDLA_LINEAR", (1, 16, 256, 250), np.float16, args.repeat)
        rows += bench_larod(args.repeat)
    target = [r for r in rows[:6] if "to_format" in r["workload"] and "out=" in r["workload"]]
    ok = all(r["ratio"] >= 0.5 for r in target)
    ok64 = all(r["ratio64"] >= 0.5 for r in target)
    same = ", ".join(f"{r['ratio']:.2f}x" for r in target)
    big = ", ".join(f"{r['ratio64']:.2f}x" for r in target)
    print(
        f"\nissue target (to_format out=, >= 0.5x): vs same-size copy "
        f"{'met' if ok else 'NOT met'} ({same}); vs 64 MiB copy {'met' if ok64 else 'NOT met'} ({big})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
