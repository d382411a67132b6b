"""Time suite workloads with their buffers at controlled offsets in a page.

Usage::

    python bench/placement.py --only "1x3x224x224"                 # random offsets
    python bench/placement.py --only "NCHW4c|1x3x224x224|float32" --grid 0,16,32,48

numpy places large arrays 16 bytes into a page when it maps them, anywhere
on a 16-byte boundary when they come from the heap (after earlier frees), so
one process of the suite can land a workload's input and output where a
kernel is slow and another where it is fast. This harness allocates both at
chosen byte offsets from a 4 KiB boundary and times the suite's own call in
a hot loop, in one process:

* default: ``--samples`` random pairs of 16-byte offsets per workload; it
  prints the fastest, median and slowest time and flags workloads whose
  slowest is 1.3x their fastest (with the offsets within a line it took);
* ``--grid A,B,...``: every input offset x output offset of the list, as a
  table (rows: input offset; columns: output offset).

Both found kernels that took twice the time with the output 48 bytes into a
line (their row stores alternated between two lines) or whose stores
straddled lines with it 16 bytes in.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import impl_layoutkit
from suite.common import make_input, reference, spin_up, workloads


def hot_time(fn: Callable[[], Any], budget: float = 0.004) -> float:
    """Median microseconds per call over 5 samples of about ``budget`` seconds."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    n = max(3, int(budget / max(once, 1e-7)))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def placed(like: np.ndarray, offset: int) -> np.ndarray:
    """An array of ``like``'s shape and dtype starting ``offset`` bytes after a 4 KiB boundary."""
    raw = np.empty(like.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    return raw[start : start + like.nbytes].view(like.dtype).reshape(like.shape)


def time_at(w: Any, x0: np.ndarray, ref: np.ndarray, x_off: int, out_off: int) -> float:
    x = placed(x0, x_off)
    x[...] = x0
    out = placed(ref, out_off)
    fn = impl_layoutkit.prepare(w, x, out)
    if fn().tobytes() != ref.tobytes():
        raise SystemExit(f"{w.id}: output differs from the reference at offsets {x_off}, {out_off}")
    return hot_time(fn)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", required=True, help="comma-separated parts of workload ids")
    ap.add_argument("--samples", type=int, default=12, help="random offset pairs per workload")
    ap.add_argument("--grid", help="comma-separated offsets (bytes) for a full table")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    spin_up()
    rng = random.Random(args.seed)
    for w in workloads(False, None):
        if w.kind == "ggml" or not any(p.lower() in w.id.lower() for p in parts):
            continue
        x0 = make_input(w)
        ref = reference(w, x0)
        if args.grid:
            offs = [int(v) for v in args.grid.split(",")]
            print(f"{w.id}: us per call; rows: input offset, columns: output offset {offs}")
            for xo in offs:
                row = [time_at(w, x0, ref, xo, oo) for oo in offs]
                print(f"  {xo:5d} " + " ".join(f"{t:9.1f}" for t in row), flush=True)
            continue
        res = []
        for _ in range(args.samples):
            xo, oo = rng.randrange(0, 4096, 16), rng.randrange(0, 4096, 16)
            res.append((time_at(w, x0, ref, xo, oo), xo % 64, oo % 64))
        res.sort()
        flag = ""
        if res[-1][0] > 1.3 * res[0][0]:
            flag = f"  <-- slowest: input {res[-1][1]}, output {res[-1][2]} bytes into a line"
        med = res[len(res) // 2][0]
        print(
            f"{w.id:45s} fastest {res[0][0]:8.1f}  median {med:8.1f}  "
            f"slowest {res[-1][0]:8.1f} us{flag}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
