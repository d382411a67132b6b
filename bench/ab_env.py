"""A/B a kernel choice inside one process, switched by an environment variable.

Usage::

    # while experimenting, guard the new path in C with getenv("LK_TRY"):
    #     if (getenv("LK_TRY") && ...) { new kernel } else { old kernel }
    python setup.py build_ext --inplace
    python bench/ab_env.py LK_TRY --only "Crouton2->NHWC,Crouton4x1->NHWC" --rounds 60

For every workload selected with ``--only`` (parts of suite ids, as in
``run.py``), the script checks both settings against the reference bytes,
then times them in alternating batches in the same process (the order flips
every round) and prints each setting's best batch and the ratio of the best
and of the median batches (``on / off``: below 1 means the switched-on path is
faster).

Why one process: between processes the same build moved by 10-20% on the
shared machine this suite was tuned on (where each process's buffers land,
and the neighbours' load at that moment), more than most kernel changes are
worth; compare_builds.py needs several alternating rounds to see through it.
Inside one process both settings share buffers, page placement and warm
caches, and the C code reads the variable at every call (``getenv``), so
``os.environ`` switches it between batches. Remove the switch once decided.

``--with-copy`` times each setting as the suite does instead, interleaved
with ``np.copyto`` of the same bytes (``paired_median``), and compares the
x-copy ratios: the copy evicts part of the working set between samples, and
a kernel can win there and tie in a hot loop (NCHW4c float32 of 1x2048x7x7 by
the lane tiles: 1.19x the x copy interleaved, the same time hot). Read the
switch where a run starts, not in a kernel called per box: ``getenv`` scans
the environment (~0.1 us), and at 512 calls a run it costs more than most
kernel changes are worth.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variable", help="environment variable that switches the new path on")
    ap.add_argument("--only", required=True, help="comma-separated parts of workload ids")
    ap.add_argument("--rounds", type=int, default=60, help="alternating batches per setting")
    ap.add_argument("--batch-us", type=float, default=50.0, help="target length of a batch")
    ap.add_argument(
        "--with-copy",
        action="store_true",
        help="time as the suite does, interleaved with np.copyto, and compare x copy",
    )
    args = ap.parse_args()

    import numpy as np
    from suite import impl_layoutkit
    from suite.common import copy_pair, make_input, paired_median, reference, workloads

    def switch(on: bool) -> None:
        if on:
            os.environ[args.variable] = "1"
        else:
            os.environ.pop(args.variable, None)

    parts = [p for p in args.only.split(",") if p]
    selected = [w for w in workloads(False, None) if any(p in w.id for p in parts)]
    if not selected:
        print(f"no workload matches --only {args.only!r}", file=sys.stderr)
        return 2
    for w in selected:
        x = make_input(w)
        want = reference(w, x)
        out = np.empty_like(want)
        call = impl_layoutkit.prepare(w, x, out)
        for on in (False, True):
            switch(on)
            out.view(np.uint8)[...] = 0xA5
            call()
            if not np.array_equal(out.view(np.uint8), want.view(np.uint8)):
                print(f"{w.id}: WRONG BYTES with {args.variable} {'on' if on else 'off'}")
                return 1
        if args.with_copy:
            copy_in, copy_out = copy_pair((x.nbytes + out.nbytes) // 2)

            def copy(a: np.ndarray = copy_in, b: np.ndarray = copy_out) -> None:
                np.copyto(b, a)

            xc: dict[bool, list[float]] = {False: [], True: []}
            for r in range(args.rounds):
                for on in (False, True) if r % 2 == 0 else (True, False):
                    switch(on)
                    work_s, copy_s = paired_median(call, copy, 5)
                    xc[on].append(copy_s / work_s)
            switch(False)
            mx = {k: sorted(v)[len(v) // 2] for k, v in xc.items()}
            print(
                f"{w.id:<45} off {mx[False]:.3f}x copy  on {mx[True]:.3f}x copy  "
                f"on/off {mx[True] / mx[False]:.3f} (above 1: on is faster)"
            )
            continue
        t0 = time.perf_counter()
        call()
        once = time.perf_counter() - t0
        n = max(1, min(1000, int(args.batch_us * 1e-6 / max(once, 1e-7))))
        times: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.rounds):
            for on in (False, True) if r % 2 == 0 else (True, False):
                switch(on)
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                times[on].append((time.perf_counter() - t0) / n)
        switch(False)
        best = {k: min(v) for k, v in times.items()}
        med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        print(
            f"{w.id:<45} off {best[False] * 1e6:9.2f} us  on {best[True] * 1e6:9.2f} us  "
            f"on/off best {best[True] / best[False]:.3f}  median {med[True] / med[False]:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
