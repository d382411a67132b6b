"""Benchmark layoutkit.ggml quantize/dequantize against the ``gguf`` package (same run).

Usage::

    python bench/bench_ggml.py                  # 4096x4096 float32, the issue's workloads
    python bench/bench_ggml.py --size 1024      # smaller, quicker
    python bench/bench_ggml.py --repeat 9 --json results.json

Workloads: quantize Q4_0 and Q8_0, dequantize Q4_0, Q8_0 and Q4_K of a
``size x size`` float32 array (``default_rng(0).standard_normal``). MB/s counts
float32 elements (``size * size * 4`` bytes) per second, for quantize and for
dequantize alike (the convention of ggml.md §3.1), best and median of
``--repeat`` runs. Everything is single-threaded (set OMP_NUM_THREADS=1 if
numpy's BLAS matters; gguf's numpy code is single-threaded). The outputs are
also compared byte for byte. Machines are shared and noisy: compare the
ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import layoutkit as lk


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # pragma: no cover
        return "?"


def _kernels() -> str:
    from layoutkit import _ggml_quants

    return str(_ggml_quants.kernels())


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """Run ``fn`` ``repeat`` times; return its last result, the best and the median time."""
    times = []
    result = None
    for _ in range(repeat):
        result = None  # free the previous output first, as a fresh call would
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, min(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=4096, help="rows = columns of the float32 input")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    try:
        import gguf
        from gguf import quants as gq
    except ImportError:  # pragma: no cover
        print(
            "the gguf package is needed for the comparison: pip install gguf==0.19.0",
            file=sys.stderr,
        )
        return 1
    T = gguf.GGMLQuantizationType

    n = args.size
    x = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    mb = x.nbytes / 1e6
    print(
        f"layoutkit {lk.__version__}, gguf {_version('gguf')}, numpy {np.__version__}, "
        f"python {platform.python_version()}, {platform.machine()}"
    )
    print(
        f"input {n}x{n} float32 = {mb:.1f} MB; MB/s = float32 MB / time; best (median) of {args.repeat}\n"
    )
    header = f"{'op':<16}{'layoutkit MB/s':>22}{'gguf MB/s':>22}{'speedup':>10}  identical"
    print(header)
    print("-" * len(header))

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("Q4_0", "Q8_0", "Q4_K"):
            if name != "Q4_K":
                q_lk, b_lk, m_lk = timeit(lambda name=name: lk.ggml.quantize(x, name), args.repeat)
                q_gg, b_gg, m_gg = timeit(lambda name=name: gq.quantize(x, T[name]), args.repeat)
                same = bool(np.array_equal(q_lk, q_gg))
                rows.append(("quantize " + name, mb / b_lk, mb / m_lk, mb / b_gg, mb / m_gg, same))
            else:
                # gguf cannot quantize K-quants: dequantize random Q4_K blocks with valid fp16 scales
                rng = np.random.default_rng(1)
                q_lk = rng.integers(0, 256, (n, n // 256 * 144), dtype=np.uint8)
                q_lk.reshape(-1, 144)[:, 0:4].view(np.uint16)[...] &= 0x3BFF
            src = q_lk
            y_lk, b_lk, m_lk = timeit(
                lambda name=name, src=src: lk.ggml.dequantize(src, name), args.repeat
            )
            y_gg, b_gg, m_gg = timeit(
                lambda name=name, src=src: gq.dequantize(src, T[name]), args.repeat
            )
            same = bool(
                np.array_equal(y_lk.view(np.uint32), np.asarray(y_gg, np.float32).view(np.uint32))
            )
            rows.append(("dequantize " + name, mb / b_lk, mb / m_lk, mb / b_gg, mb / m_gg, same))

    for op, bl, ml, bg, mg, same in rows:
        print(f"{op:<16}{bl:>12.0f} ({ml:>6.0f}){bg:>12.0f} ({mg:>6.0f}){bl / bg:>9.1f}x  {same}")

    # the same calls writing into a reused output buffer (out=): no page faults for a
    # fresh result, i.e. the kernels' own speed
    print(f"\nlayoutkit with a reused output buffer (out=), kernels: {_kernels()}")
    for name in ("Q4_0", "Q8_0"):
        q = lk.ggml.quantize(x, name)
        y = lk.ggml.dequantize(q, name)
        _, bq, mq = timeit(lambda name=name, q=q: lk.ggml.quantize(x, name, out=q), args.repeat)
        _, bd, md = timeit(
            lambda name=name, q=q, y=y: lk.ggml.dequantize(q, name, out=y), args.repeat
        )
        print(
            f"  {name}: quantize {mb / bq:.0f} ({mb / mq:.0f}) MB/s, "
            f"dequantize {mb / bd:.0f} ({mb / md:.0f}) MB/s"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                [
                    dict(
                        op=r[0],
                        lk_best=r[1],
                        lk_median=r[2],
                        gguf_best=r[3],
                        gguf_median=r[4],
                        identical=r[5],
                    )
                    for r in rows
                ],
                fh,
                indent=2,
            )
    return 0 if all(r[5] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
