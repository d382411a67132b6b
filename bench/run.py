"""layoutkit's benchmark suite: every workload of issue 7 against every installed peer.

Usage::

    python bench/run.py --quick                  # a representative subset, under 2 minutes
    python bench/run.py --full --json full.json  # every workload (default mode)
    python bench/run.py --only crouton,HCWNC     # workloads whose id contains a part
    python bench/run.py --impls layoutkit,numpy --threads 1

Each implementation (layoutkit, numpy, torch, onnxruntime, onednn, gguf,
ggml-c) runs in a process of its own, one after the other, with
``OMP_NUM_THREADS=1`` (an OpenMP pool of one peer would slow the next), and
times ``np.copyto`` of the same bytes in that process, interleaved with the
workload. GB/s = (input bytes + output bytes, padding included) / median time;
"x copy" = median time of ``np.copyto`` moving the same bytes ((in + out) / 2
each way) / median time of the workload. "lk/best" divides layoutkit's x copy
by the best correct peer's. Each implementation's output is checked byte for
byte (padding included) against layoutkit's; a mismatch or a crash is listed
and the cell shows WRONG or ERR instead of a figure. Implementations that are
not installed are skipped. Machines are shared and noisy: compare ratios
taken in one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMPLS = {
    "layoutkit": "impl_layoutkit",
    "numpy": "impl_numpy",
    "torch": "impl_torch",
    "onnxruntime": "impl_onnxruntime",
    "onednn": "impl_onednn",
    "gguf": "impl_gguf",
    "ggml-c": "impl_ggml_c",
}
REPACK_IMPLS = ["layoutkit", "numpy", "torch", "onnxruntime", "onednn"]
GGML_IMPLS = ["layoutkit", "gguf", "ggml-c"]


def _ensure_layoutkit() -> str | None:
    """Make ``import layoutkit`` work here and in the workers (the in-place build in src/)."""
    try:
        import layoutkit  # noqa: F401
    except ImportError:
        src = ROOT / "src"
        sys.path.insert(0, str(src))
        return str(src)
    return None


# ---------------------------------------------------------------------------
# Worker: one implementation in this process
# ---------------------------------------------------------------------------


def _with_threads(fn: Any, n: int) -> Any:
    def run() -> Any:
        os.environ["LAYOUTKIT_NUM_THREADS"] = str(n)
        return fn()

    return run


def worker(args: argparse.Namespace) -> int:
    import numpy as np
    from suite.common import (
        CopyOf,
        make_input,
        paired_median,
        reference,
        same_bytes,
        spin_up,
        workloads,
    )

    impl = args.worker
    result: dict[str, Any] = {"impl": impl, "pid": os.getpid()}
    try:
        mod = importlib.import_module(f"suite.{IMPLS[impl]}")
        result["version"] = mod.version()
    except Exception as exc:  # not installed, or its library failed to load
        result["available"] = False
        result["reason"] = f"{type(exc).__name__}: {exc}"
        Path(args.out).write_text(json.dumps(result))
        return 0
    result["available"] = True
    spin_up()
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    for w in workloads(args.quick, args.only):
        row: dict[str, Any] = {"id": w.id, "impl": impl}
        try:
            x = make_input(w)
            ref = reference(w, x)
            out = np.empty(ref.shape, ref.dtype)
            out.reshape(-1).view(np.uint8).fill(0x5A)  # unwritten padding shows as a mismatch
            fn = mod.prepare(w, x, out)
            if fn is None:
                continue
            got = fn()
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            print(f"  {impl}: {w.id}: {row['error']}", file=sys.stderr, flush=True)
            continue
        bad = same_bytes(got, ref)
        if bad:
            row["mismatch"] = bad
            print(f"  {impl}: {w.id}: WRONG: {bad}", file=sys.stderr, flush=True)
        traffic = x.nbytes + ref.nbytes
        os.environ["LAYOUTKIT_NUM_THREADS"] = "1"
        t, tc = paired_median(fn, CopyOf(traffic), args.repeat)
        row.update(bytes=traffic, seconds=t, copy_seconds=tc, gbs=traffic / t / 1e9, x_copy=tc / t)
        if impl == "layoutkit" and w.large:
            one = _with_threads(fn, 1)
            for n in threads:
                if n == 1:
                    continue
                fn_n = _with_threads(mod.prepare(w, x, out, threads=n), n)
                out.reshape(-1).view(np.uint8).fill(0x5A)
                bad_n = same_bytes(fn_n(), ref)
                t_n, t_1 = paired_median(fn_n, one, args.repeat)
                row.setdefault("threads", {})[str(n)] = {
                    "seconds": t_n,
                    "seconds_1": t_1,
                    "speedup": t_1 / t_n,
                    "mismatch": bad_n,
                }
            os.environ["LAYOUTKIT_NUM_THREADS"] = "1"
        rows.append(row)
    result["rows"] = rows
    result["seconds"] = time.perf_counter() - t_start
    if impl == "layoutkit":
        result["overhead"] = mod.overhead(args.repeat)
    Path(args.out).write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------
# Driver: one process per implementation, then the merged table
# ---------------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu in ("", platform.machine()):
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                fl = line.split(":", 1)[1].split()
                flags = " ".join(f for f in ("avx2", "avx512f", "fma", "f16c") if f in fl)
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "simd": flags,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "ERR"
    if "mismatch" in r and not _signed_zero(r):
        return "WRONG"
    return f"{r['gbs']:.1f} {r['x_copy']:.2f}x" + ("z" if "mismatch" in r else "")


def _signed_zero(r: dict[str, Any]) -> bool:
    """The output differs from layoutkit's only in the sign of zeros (-0.0 written as +0.0)."""
    return str(r.get("mismatch", "")).startswith("signed zero only")


def _best_peer(by_impl: dict[str, dict[str, Any]], impls: list[str]) -> tuple[str, float] | None:
    best = None
    for impl in impls[1:]:
        r = by_impl.get(impl)
        if r is None or "x_copy" not in r or ("mismatch" in r and not _signed_zero(r)):
            continue
        if best is None or r["x_copy"] > best[1]:
            best = (impl, r["x_copy"])
    return best


def table(results: dict[str, Any], rows_order: list[dict[str, Any]], impls: list[str]) -> str:
    present = [i for i in impls if results.get(i, {}).get("available")]
    head = ["workload", "shape", "dtype", "copy GB/s", *present, "lk/best peer"]
    lines = [head]
    for w in rows_order:
        by_impl = {i: results[i]["by_id"].get(w["id"]) for i in present}
        lk_r = by_impl.get("layoutkit")
        if all(v is None for v in by_impl.values()):
            continue
        copy = (
            f"{lk_r['bytes'] / lk_r['copy_seconds'] / 1e9:.1f}" if lk_r and "bytes" in lk_r else "-"
        )
        best = _best_peer(by_impl, ["layoutkit", *present[1:]])
        ratio = "-"
        if best and lk_r and "x_copy" in lk_r:
            ratio = f"{lk_r['x_copy'] / best[1]:.1f}x {best[0]}"
        # A copy reference far below the others' of the same bytes was disturbed (shared
        # machine): its x copy is inflated. Such cells are marked with "~".
        copies = [r["bytes"] / r["copy_seconds"] for r in by_impl.values() if r and "bytes" in r]
        typical = statistics.median(copies) if copies else 0.0
        cells = []
        for i in present:
            r = by_impl[i]
            cell = _cell(r)
            if r and "bytes" in r and r["bytes"] / r["copy_seconds"] < 0.67 * typical:
                cell += "~"
            cells.append(cell)
        lines.append([w["name"], w["label_shape"], w["dtype"], copy, *cells, ratio])
    widths = [max(len(str(line[k])) for line in lines) for k in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        cols = [
            str(c).ljust(widths[k]) if k < 3 else str(c).rjust(widths[k])
            for k, c in enumerate(line)
        ]
        out.append("  ".join(cols).rstrip())
        if n == 0:
            out.append("  ".join("-" * wd for wd in widths))
    return "\n".join(out)


def summary(results: dict[str, Any], wl: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, checked on this run."""
    lk_rows = results.get("layoutkit", {}).get("by_id", {})
    lines = []
    rep = [w for w in wl if w["kind"] == "repack" and "x_copy" in lk_rows.get(w["id"], {})]
    if rep:
        xs = [lk_rows[w["id"]]["x_copy"] for w in rep]
        ok = sum(x >= 0.8 for x in xs)
        lines.append(
            f"repack >= 0.8x copy (1 thread): {ok} of {len(xs)} workloads "
            f"(median {statistics.median(xs):.2f}x, min {min(xs):.2f}x)"
        )
        blocked = [w for w in rep if w["channel_blocked"] and w["dtype"] in ("uint8", "int8")]
        ratios = []
        for w in blocked:
            by_impl = {i: results[i]["by_id"].get(w["id"]) for i in REPACK_IMPLS if i in results}
            best = _best_peer(by_impl, REPACK_IMPLS)
            if best:
                ratios.append(lk_rows[w["id"]]["x_copy"] / best[1])
        if ratios:
            lines.append(
                f"8-bit channel-blocked >= 2x best peer: {sum(r >= 2 for r in ratios)} of "
                f"{len(ratios)} (median {statistics.median(ratios):.1f}x, min {min(ratios):.1f}x)"
            )
    sp = [
        (w["id"], t["speedup"])
        for w in wl
        for n, t in lk_rows.get(w["id"], {}).get("threads", {}).items()
        if n == "2"
    ]
    if sp:
        vals = [s for _, s in sp]
        lines.append(
            f"2 threads >= 1.6x 1 thread (large shapes): {sum(s >= 1.6 for s in vals)} of "
            f"{len(vals)} (median {statistics.median(vals):.2f}x, max {max(vals):.2f}x)"
        )
    gc = results.get("ggml-c", {}).get("by_id", {})
    for w in wl:
        if w["kind"] != "ggml" or w["ggml_type"] not in ("Q4_0", "Q8_0"):
            continue
        a, b = lk_rows.get(w["id"], {}), gc.get(w["id"], {})
        if "seconds" in a and "seconds" in b and "mismatch" not in b:
            need = 1.5 if w["ggml_op"] == "quantize" else 1.0
            r = a["x_copy"] / b["x_copy"]
            lines.append(
                f"{w['name']} {w['label_shape']} vs ggml C: {r:.1f}x (target >= {need}x) "
                f"{'met' if r >= need else 'NOT met'}"
            )
    return lines


def threads_table(results: dict[str, Any], wl: list[dict[str, Any]]) -> str:
    lk_rows = results.get("layoutkit", {}).get("by_id", {})
    lines = [f"{'workload':<22}{'shape':<15}{'dtype':<9}{'1T GB/s':>9}{'nT GB/s':>9}  n  speedup"]
    for w in wl:
        r = lk_rows.get(w["id"], {})
        for n, t in r.get("threads", {}).items():
            flag = "  WRONG" if t.get("mismatch") else ""
            lines.append(
                f"{w['name']:<22}{w['label_shape']:<15}{w['dtype']:<9}"
                f"{r['bytes'] / t['seconds_1'] / 1e9:>9.1f}{r['bytes'] / t['seconds'] / 1e9:>9.1f}"
                f"  {n}  {t['speedup']:>6.2f}x{flag}"
            )
    return "\n".join(lines) if len(lines) > 1 else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a representative subset (< 2 min)")
    mode.add_argument("--full", action="store_true", help="every workload (the default)")
    ap.add_argument("--threads", default="1,2", help="layoutkit thread counts for large shapes")
    ap.add_argument("--only", help="comma-separated substrings of workload ids to keep")
    ap.add_argument("--impls", default=",".join(IMPLS), help="implementations to run")
    ap.add_argument("--repeat", type=int, default=None, help="samples per median (7; quick 5)")
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--render", metavar="JSON", help="print the tables of a saved --json run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeat is None:
        args.repeat = 5 if args.quick else 7
    if args.render:
        render(json.loads(Path(args.render).read_text()))
        return 0
    extra_path = _ensure_layoutkit()
    if args.worker:
        return worker(args)

    import numpy as np
    from suite.common import workloads

    import layoutkit as lk

    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    env["LAYOUTKIT_NUM_THREADS"] = "1"
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH")) if p)
    if args.json:
        # Before the run, not after it: a fresh checkout has no bench/results/.
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    wl = [w.as_dict() for w in workloads(args.quick, args.only)]
    t0 = time.perf_counter()
    mode_name = "quick" if args.quick else "full"
    print(
        f"layoutkit {lk.__version__} ({Path(lk.__file__).parent}), numpy {np.__version__}, "
        f"{mode_name} mode, {len(wl)} workloads, median of {args.repeat}",
        flush=True,
    )
    results: dict[str, Any] = {}
    problems: list[str] = []
    for impl in [i.strip() for i in args.impls.split(",") if i.strip()]:
        if impl not in IMPLS:
            ap.error(f"unknown implementation {impl!r} (known: {', '.join(IMPLS)})")
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            path = fh.name
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", impl, "--out", path]
        cmd += ["--threads", args.threads, "--repeat", str(args.repeat)]
        if args.quick:
            cmd.append("--quick")
        if args.only:
            cmd += ["--only", args.only]
        t1 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
        sys.stderr.write(proc.stderr)
        try:
            res = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError):
            res = {"impl": impl, "available": False}
            tail = proc.stderr.strip().splitlines()[-3:]
            res["reason"] = f"worker exited with {proc.returncode}: {' / '.join(tail)}"
            problems.append(f"{impl}: CRASH: {res['reason']}")
        finally:
            Path(path).unlink(missing_ok=True)
        res["by_id"] = {r["id"]: r for r in res.get("rows", [])}
        results[impl] = res
        if res.get("available"):
            print(f"  {impl} {res['version']}: {time.perf_counter() - t1:.0f} s", flush=True)
        else:
            print(f"  {impl}: skipped ({res.get('reason')})", flush=True)
        for r in res.get("rows", []):
            if "error" in r:
                problems.append(f"{impl}: {r['id']}: ERROR {r['error']}")
            if "mismatch" in r:
                problems.append(f"{impl}: {r['id']}: WRONG {r['mismatch']}")
            for n, t in r.get("threads", {}).items():
                if t.get("mismatch"):
                    problems.append(f"{impl}: {r['id']}: WRONG with {n} threads {t['mismatch']}")

    doc = {
        "mode": mode_name,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": _machine(),
        "layoutkit": lk.__version__,
        "repeat": args.repeat,
        "seconds": time.perf_counter() - t0,
        "workloads": wl,
        "results": results,
        "problems": problems,
    }
    render(doc)
    if args.json:
        for res in results.values():
            res.pop("by_id", None)
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0


def render(doc: dict[str, Any]) -> None:
    """Print the tables, the targets and the problems of a run (live or loaded from --json)."""
    results, wl, machine = doc["results"], doc["workloads"], doc["machine"]
    for res in results.values():
        res.setdefault("by_id", {r["id"]: r for r in res.get("rows", [])})
    problems = list(doc["problems"])
    print(
        f"\n{machine['cpu']}, {machine['cpus']} CPUs ({machine['simd']}), "
        f"Python {machine['python']}, {doc['date']}; cells: GB/s and x copy, 1 thread "
        "(~: that process's copy reference was disturbed; z: equal but for the sign of zeros)"
    )
    for res in results.values():
        if res.get("available"):
            print(f"  {res['impl']} {res['version']}")
    repack = [w for w in wl if w["kind"] == "repack"]
    ggml = [w for w in wl if w["kind"] == "ggml"]
    if repack:
        print("\n" + table(results, repack, REPACK_IMPLS))
    if ggml:
        print("\n" + table(results, ggml, GGML_IMPLS))
    tt = threads_table(results, wl)
    if tt:
        print("\nlayoutkit threads (large shapes)\n" + tt)
    ov = results.get("layoutkit", {}).get("overhead", [])
    if ov:
        print(
            "\nPython overhead per call (1x3x32x32; overhead = call - np.copyto of the same bytes)"
        )
        for o in ov:
            if "error" in o:
                problems.append(f"layoutkit: overhead {o['call']}: ERROR {o['error']}")
                continue
            print(f"  {o['call']:<48}{o['us']:>7.1f} us  (copy {o['copy_us']:.1f} us)")
    lines = summary(results, wl)
    if lines:
        print("\nissue 7 targets in this run:")
        for line in lines:
            print("  " + line)
    print("\nmismatches and crashes: " + ("none" if not problems else ""))
    for p in problems:
        print("  " + p)
    print(f"\n{doc['mode']} run took {doc['seconds']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
