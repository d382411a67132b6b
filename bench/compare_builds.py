"""Compare two builds of layoutkit on the suite's workloads, in alternating processes.

Usage::

    git worktree add /tmp/base HEAD~3 && (cd /tmp/base && python setup.py build_ext --inplace)
    python bench/compare_builds.py /tmp/base/src src --only "HCWNC4|1x2048x7x7" --rounds 3

Each argument is a directory that holds the ``layoutkit`` package (an in-place
build). For every workload selected with ``--only`` (as in ``run.py``), each
round runs the workload once per build, in a fresh process per build and in
alternating order, timed with the suite's own call and ``np.copyto``
yardstick. It prints every round and the median time and x copy per build.

On a shared machine a single figure can move by 1.5-2x between processes (and
whichever build runs right after a large copy pays for the evicted caches), so
only the medians of several alternating rounds support a claim of a 10-30%
change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(workload_id: str, repeat: int) -> dict[str, float]:
    """Time one workload in this process (the build on ``sys.path`` first)."""
    import numpy as np
    from suite import impl_layoutkit
    from suite.common import CopyOf, make_input, paired_median, reference, spin_up, workloads

    spin_up()
    w = next(w for w in workloads(False, None) if w.id == workload_id)
    x = make_input(w)
    ref = reference(w, x)
    out = np.empty(ref.shape, ref.dtype)
    fn = impl_layoutkit.prepare(w, x, out)
    got = fn()
    if got.tobytes() != ref.tobytes():
        raise SystemExit(f"{workload_id}: output differs from the reference")
    t, tc = paired_median(fn, CopyOf(x.nbytes + ref.nbytes), repeat)
    return {"us": t * 1e6, "copy_us": tc * 1e6, "x_copy": tc / t}


def run_one(build: str, workload_id: str, repeat: int, path_len: int = 0) -> dict[str, float]:
    """Time the workload in a fresh process importing ``build``.

    ``path_len`` (the longest build path compared) pads the environment so that
    every worker's is the same size: the stack starts below the environment,
    and small kernels whose stack buffers (lane tables, padding patterns) land
    4 KiB-aliased with the data measured 20-40% apart from one build directory
    to another of the same build (NCHW -> HCWNC4 int8 1x3x224x224).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([build, str(HERE)]))
    env["LAYOUTKIT_BENCH_ENV_PAD"] = "x" * max(0, path_len - len(build))
    env.setdefault("OMP_NUM_THREADS", "1")
    env["LAYOUTKIT_NUM_THREADS"] = "1"
    cmd = [sys.executable, __file__, "--worker", workload_id, "--repeat", str(repeat)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{build}: {workload_id}: {res.stderr.strip() or res.stdout.strip()}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="*", help="directories holding an in-place layoutkit build")
    ap.add_argument("--only", help="workloads whose id contains any comma-separated part")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per workload")
    ap.add_argument("--repeat", type=int, default=7, help="samples per median within a process")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.worker, args.repeat)))
        return 0
    if len(args.builds) != 2 or not args.only:
        ap.error("give two build directories and --only")
    builds = [str(Path(b).resolve()) for b in args.builds]
    # The workload list (the suite imports layoutkit: the first build's).
    sys.path[:0] = [builds[0], str(HERE)]
    from suite.common import workloads

    ids = [w.id for w in workloads(False, args.only)]
    if not ids:
        ap.error(f"no workload matches {args.only!r}")
    for wid in ids:
        per: dict[str, list[dict[str, float]]] = {b: [] for b in builds}
        for r in range(args.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for b in order:
                per[b].append(run_one(b, wid, args.repeat, max(map(len, builds))))
            cells = "  ".join(
                f"{k}: {per[b][-1]['us']:9.1f} us {per[b][-1]['x_copy']:.2f}x"
                for k, b in zip("AB", builds)
            )
            print(f"{wid}  round {r + 1}  {cells}", flush=True)
        a, b = (per[x] for x in builds)
        ta = statistics.median(m["us"] for m in a)
        tb = statistics.median(m["us"] for m in b)
        xa = statistics.median(m["x_copy"] for m in a)
        xb = statistics.median(m["x_copy"] for m in b)
        print(
            f"{wid}  median  A {ta:.1f} us {xa:.2f}x  B {tb:.1f} us {xb:.2f}x  B/A time {tb / ta:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
