"""Benchmark layoutkit.ggml quantize/dequantize against ggml's C code and the ``gguf`` package.

Usage::

    python bench/bench_ggml.py                  # 4096x4096 float32, all workloads
    python bench/bench_ggml.py --size 1024      # smaller, quicker
    python bench/bench_ggml.py --repeat 9 --json results.json
    python bench/bench_ggml.py --types Q4_0,Q8_0,Q4_K

Peers, all in the same run, all single-threaded:

* ggml's C reference (``ggml_quantize_chunk`` and ``dequantize_row_*`` from
  ``libggml-base``), through the optional ``ggml-python`` package
  (``pip install ggml-python==0.0.45`` builds ggml from source in about two
  minutes); skipped with a note when it is not installed;
* the ``gguf`` package (numpy; quantizes only the legacy types, dequantizes all).

Workloads: quantize and dequantize of Q4_0, Q8_0 (``size x size``) and of the
K-quants and IQ4 types (their searches are ~100x slower, so a ``--slow-rows x
size`` slice of the same array; MB/s is normalised). Input:
``default_rng(0).standard_normal``. MB/s counts float32 bytes (input of
quantize, output of dequantize) per second (ggml.md §3.1); each cell is the
median of ``--repeat`` runs, measured in turn with the peers so that machine
noise hits all of them alike. Every output is also compared byte for byte with
ggml's (``same``). A last table shows layoutkit with ``threads=2``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import pathlib
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from suite.common import spin_up

import layoutkit as lk

FAST = ["Q4_0", "Q8_0"]
SLOW = ["Q4_K", "Q2_K", "Q3_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "-"


class GGMLC:
    """ggml's C library via ggml-python (optional)."""

    def __init__(self) -> None:
        import ggml

        self.cg = ggml
        self.base = ctypes.CDLL(str(pathlib.Path(ggml.__file__).parent / "lib" / "libggml-base.so"))
        self.fp = ctypes.POINTER(ctypes.c_float)

    def quantize(self, x: np.ndarray, name: str) -> np.ndarray:
        info = lk.ggml.type_info(name)
        out = np.empty((x.shape[0], lk.ggml.row_size(name, x.shape[1])), np.uint8)
        self.cg.ggml_quantize_chunk(
            info.id,
            x.ctypes.data_as(self.fp),
            out.ctypes.data_as(ctypes.c_void_p),
            0,
            x.shape[0],
            x.shape[1],
            None,
        )
        return out

    def dequantize(self, q: np.ndarray, name: str) -> np.ndarray:
        info = lk.ggml.type_info(name)
        n = q.size // info.type_size * info.block_size
        y = np.empty((q.shape[0], n // q.shape[0]), np.float32)
        f = getattr(self.base, "dequantize_row_" + info.ggml_name)
        f.argtypes = (ctypes.c_void_p, self.fp, ctypes.c_int64)
        f.restype = None
        f(q.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(self.fp), n)
        return y


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[Any, float]]:
    """Time each function ``repeat`` times, taking turns; return (last result, median seconds)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    results: dict[str, Any] = {}
    for _ in range(repeat):
        for k, fn in fns.items():
            results[k] = None  # free the previous output first, as a fresh call would
            t0 = time.perf_counter()
            results[k] = fn()
            times[k].append(time.perf_counter() - t0)
    return {k: (results[k], statistics.median(v)) for k, v in times.items()}


def _fmt(mbps: float | None) -> str:
    return f"{mbps:9.0f}" if mbps is not None else "        -"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=4096, help="rows = columns of the float32 input")
    ap.add_argument("--slow-rows", type=int, default=256, help="rows for the K/IQ types")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    ap.add_argument("--types", default=",".join(FAST + SLOW), help="comma-separated GGML types")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    spin_up()  # an idle core runs slow for its first tens of milliseconds

    try:
        from gguf import GGMLQuantizationType as T
        from gguf import quants as gq
    except ImportError:
        gq = None
        T = None
    try:
        c: GGMLC | None = GGMLC()
    except (ImportError, OSError):
        c = None

    n = args.size
    x_all = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    print(
        f"layoutkit {lk.__version__} (kernels: {lk.ggml._k.kernels()}), "
        f"ggml-python {_version('ggml-python')}, gguf {_version('gguf')}, numpy {np.__version__}, "
        f"python {platform.python_version()}, {platform.machine()}"
    )
    if c is None:
        print("ggml's C library is not installed (pip install ggml-python==0.0.45): no C column")
    if gq is None:
        print("the gguf package is not installed (pip install gguf): no gguf column")
    print(
        f"input {n}x{n} float32 (K/IQ types: {args.slow_rows}x{n}); MB/s of float32, median "
        f"of {args.repeat}, single thread; x C = layoutkit speed / ggml C speed\n"
    )
    head = f"{'op':<18}{'layoutkit':>9} {'ggml C':>9} {'gguf':>9} {'x C':>7} {'x gguf':>7}  same"
    print(head)
    print("-" * len(head))

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in args.types.split(","):
            name = name.strip().upper()
            x = x_all if name in FAST else x_all[: args.slow_rows]
            mb = x.nbytes / 1e6
            gguf_q = gq is not None and name in ("Q4_0", "Q8_0")
            fns: dict[str, Callable[[], Any]] = {
                "lk": lambda x=x, name=name: lk.ggml.quantize(x, name)
            }
            if c is not None:
                fns["c"] = lambda x=x, name=name: c.quantize(x, name)
            if gguf_q:
                fns["gguf"] = lambda x=x, name=name: gq.quantize(x, T[name])
            r = interleaved(fns, args.repeat)
            q = r["lk"][0]
            same = bool(np.array_equal(q, r["c"][0])) if "c" in r else None
            if "gguf" in r:
                same = bool(same is not False and np.array_equal(q, r["gguf"][0]))
            rows.append(_row("quantize " + name, mb, r, same))
            fns = {"lk": lambda q=q, name=name: lk.ggml.dequantize(q, name)}
            if c is not None:
                fns["c"] = lambda q=q, name=name: c.dequantize(q, name)
            if gq is not None:
                fns["gguf"] = lambda q=q, name=name: gq.dequantize(q, T[name])
            r = interleaved(fns, args.repeat)
            y = r["lk"][0].view(np.uint32)
            same = None
            for k in ("c", "gguf"):
                if k in r:
                    ok = np.array_equal(y, np.asarray(r[k][0], np.float32).view(np.uint32))
                    same = bool(ok and same is not False)
            rows.append(_row("dequantize " + name, mb, r, same))
            _print(rows[-2])
            _print(rows[-1])

        print("\nlayoutkit threads=2 (same bytes), MB/s median:")
        for name in ("Q4_0", "Q8_0", "Q4_K", "Q6_K"):
            x = x_all if name in FAST else x_all[: args.slow_rows]
            mb = x.nbytes / 1e6
            q1 = lk.ggml.quantize(x, name)
            r = interleaved(
                {
                    "q": lambda x=x, name=name: lk.ggml.quantize(x, name, threads=2),
                    "d": lambda q1=q1, name=name: lk.ggml.dequantize(q1, name, threads=2),
                },
                args.repeat,
            )
            assert np.array_equal(r["q"][0], q1)
            print(f"  {name}: quantize {mb / r['q'][1]:.0f}, dequantize {mb / r['d'][1]:.0f}")

    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0 if all(r["same"] is not False for r in rows) else 1


def _row(op: str, mb: float, r: dict[str, tuple[Any, float]], same: bool | None) -> dict[str, Any]:
    def mbps(k: str) -> float | None:
        return mb / r[k][1] if k in r else None

    return {"op": op, "lk": mbps("lk"), "ggml_c": mbps("c"), "gguf": mbps("gguf"), "same": same}


def _print(row: dict[str, Any]) -> None:
    lk_, c, g = row["lk"], row["ggml_c"], row["gguf"]
    xc = f"{lk_ / c:6.2f}x" if c else "      -"
    xg = f"{lk_ / g:6.1f}x" if g else "      -"
    same = {True: "yes", False: "NO", None: "-"}[row["same"]]
    print(f"{row['op']:<18}{_fmt(lk_)} {_fmt(c)} {_fmt(g)} {xc} {xg}  {same}")


if __name__ == "__main__":
    sys.exit(main())
