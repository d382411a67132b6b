"""Core subcommands: ``explain`` (a layout in words and listings) and ``demo``."""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from .._engine import convert
from .._errors import LayoutError
from ..layout import Layout
from . import add_command, at_least, parse_shape


def resolve_layout(spec: str, dims: str | None = None) -> Layout:
    """A Layout from a tag, an HTP preset name or an HTP template string."""
    from .. import _notation, htp

    if spec in htp.PRESETS or spec in htp.ALIASES or _notation.looks_like_template(spec):
        return htp.layout(spec, dims=dims)
    try:
        return Layout(spec, dims=dims)
    except LayoutError:
        import difflib

        close = difflib.get_close_matches(spec, [*htp.PRESETS, *htp.ALIASES], n=1)
        if close:
            raise LayoutError(
                f"{spec!r} is not a layout tag or preset; did you mean {close[0]!r}?"
            ) from None
        raise


def _fmt(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


_WINDOW = 1 << 16  # offsets examined at a time, to bound memory


def _coords(
    layout: Layout, shape: tuple[int, ...], offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Logical coordinates (rank x len) and validity of the elements at ``offsets``:
    ``Layout.index`` for many offsets at once (``_engine._logical_coords`` indexed
    at the offsets gives the same, 3x slower on a 4M-element explain)."""
    c = np.zeros((layout.rank, offsets.size), np.int64)
    phys = np.unravel_index(offsets, layout.physical_shape(shape))
    for (d, w, _), i in zip(layout.digits, phys):
        c[d] += i * w
    c -= np.array(layout.left_pad, np.int64)[:, None]
    inside = (c >= 0) & (c < np.array(shape, np.int64)[:, None])
    return c, np.logical_and.reduce(inside, axis=0)


def _run_ends(layout: Layout, shape: tuple[int, ...], lo: int, hi: int) -> np.ndarray:
    """Offsets ``i`` in [lo, hi) where a run ends (``i + 1`` must exist)."""
    first = max(lo - 1, 0)
    c, v = _coords(layout, shape, np.arange(first, hi + 1))
    diff = c[:, 1:] - c[:, :-1]
    unit = ((diff == 1).sum(axis=0) == 1) & ((diff == 0).sum(axis=0) == len(c) - 1)
    step_dim = np.argmax(diff == 1, axis=0)
    joins = (v[1:] & v[:-1] & unit) | (~v[1:] & ~v[:-1])
    ends = ~joins
    # A data run keeps one stepping dim throughout.
    ends[1:] |= joins[1:] & joins[:-1] & v[1:-1] & (step_dim[1:] != step_dim[:-1])
    i = np.flatnonzero(ends) + first
    return i[i >= lo]


def _memory_runs(
    layout: Layout, shape: tuple[int, ...], limit: int
) -> tuple[int, list[tuple[int, int, Any, Any]]]:
    """The number of runs of consecutive offsets, and the runs to list for ``limit``.

    A run is (first, last, first_index|None, last_index|None). All runs if
    there are at most ``limit``, else the first ``limit - 1`` and the last.
    Memory stays bounded: the buffer is scanned in windows.
    """
    n = layout.size(shape)
    if n == 0:
        return 0, []
    head: list[int] = []
    count, last = 1, -1
    for lo in range(0, n - 1, _WINDOW):
        ends = _run_ends(layout, shape, lo, min(lo + _WINDOW, n - 1))
        head += ends[: limit - len(head)].tolist()
        count += ends.size
        last = int(ends[-1]) if ends.size else last
    bounds = list(zip([0, *(e + 1 for e in head)], [*head, n - 1]))
    if count > limit:
        bounds = [*bounds[: limit - 1], (last + 1, n - 1)]
    return count, [_run(layout, shape, a, b) for a, b in bounds]


def _run(layout: Layout, shape: tuple[int, ...], a: int, b: int) -> tuple[int, int, Any, Any]:
    c, v = _coords(layout, shape, np.array([a, b]))
    if not v[0]:
        return (a, b, None, None)
    return (a, b, tuple(int(x) for x in c[:, 0]), tuple(int(x) for x in c[:, 1]))


def _explain(args: argparse.Namespace) -> int:
    layout = resolve_layout(args.spec, args.dims)
    shape = layout.check_shape(parse_shape(args.shape), "--shape")
    dtype = np.dtype(args.dtype) if args.dtype else None
    dims = layout.dims
    padded = layout.padded_shape(shape)
    phys = layout.physical_shape(shape)
    size = layout.size(shape)
    data = math.prod(shape)
    print(f"layout     {layout}   (logical dims {dims})")
    print(f"chunked    {layout.to_chunked()}")
    if any(layout.left_pad):
        print(f"left pad   {layout.left_pad}")
    print(f"shape      {_fmt(shape)}   ({' '.join(f'{d}={n}' for d, n in zip(dims, shape))})")
    pads = " ".join(f"{d}+{p - n}" for d, n, p in zip(dims, shape, padded) if p != n)
    print(f"padded     {_fmt(padded)}" + (f"   (padding {pads})" if pads else "   (no padding)"))
    axes = [dims[d] for d in layout.outer] + [f"{s}{dims[d].lower()}" for d, s in layout.blocks]
    print(f"physical   {_fmt(phys)}   ({' '.join(axes)})")
    if layout.blocks:
        chunk = " x ".join(f"{s}{dims[d].lower()}" for d, s in layout.blocks)
        nbytes = f", {layout.chunk_elements * dtype.itemsize} B each as {dtype}" if dtype else ""
        print(
            f"chunk      {chunk} = {layout.chunk_elements} elements; "
            f"{layout.num_chunks(shape)} chunk{'' if layout.num_chunks(shape) == 1 else 's'}{nbytes}"
        )
    share = f"{100.0 * data / size:.1f}%" if size else "-"
    print(f"elements   {size} in the buffer: {data} data ({share}), {size - data} padding")
    if dtype is not None:
        print(f"bytes      {size * dtype.itemsize} as {dtype}")
    if args.offset is not None:
        idx = layout.index(shape, args.offset)
        print(f"offset {args.offset} -> " + ("padding" if idx is None else f"index {idx}"))
    if args.index is not None:
        index = parse_shape(args.index, "--index")
        off = layout.offset(shape, index)
        extra = f", byte {off * dtype.itemsize}" if dtype else ""
        chunk_info = ""
        if layout.blocks:
            chunk_info = f", chunk [{off // layout.chunk_elements}, {off % layout.chunk_elements}]"
        print(f"index {index} -> offset {off}{extra}{chunk_info}")
    if args.limit:
        if size > 50_000_000:
            print("memory order: too large to list (more than 50M elements)")
            return 0
        count, runs = _memory_runs(layout, shape, args.limit)
        print(f"memory order ({count} runs of consecutive offsets):")
        width = len(str(size - 1))
        for k, run in enumerate(runs):
            if count > args.limit and k == len(runs) - 1:
                print(f"  ... {count - args.limit} more runs ...")
            _print_run(*run, width)
    return 0


def _print_run(a: int, b: int, first: Any, last: Any, width: int) -> None:
    span = f"[{a:>{width}}..{b:>{width}}]"
    if first is None:
        print(f"  {span}  padding x{b - a + 1}")
    elif a == b:
        print(f"  {span}  {_tup(first)}")
    else:
        print(f"  {span}  {_tup(first)} ... {_tup(last)}")


def _tup(t: tuple[int, ...]) -> str:
    return "(" + ",".join(map(str, t)) + ")"


# ---------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------


def _median_time(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _demo(args: argparse.Namespace) -> int:
    shape = parse_shape(args.shape, minimum=1)
    if len(shape) != 4:
        raise LayoutError(f"--shape {args.shape!r}: the demo uses an NCHW image, give 4 extents")
    n, c, h, w = shape
    # A synthetic but realistic image batch: smooth gradients per channel plus noise.
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    rng = np.random.default_rng(0)
    base = np.stack(
        [
            (xx * 255 / max(w - 1, 1)),
            (yy * 255 / max(h - 1, 1)),
            ((xx + yy) * 127 / max(h + w - 2, 1)),
        ]
    )
    image = np.stack([np.stack([base[k % 3] for k in range(c)])] * n)
    image = np.clip(image + rng.normal(0, 8, image.shape), 0, 255).astype(args.dtype)
    targets = [
        ("NHWC", Layout("NHWC", dims="NCHW"), "channels-last (TFLite, TensorRT kHWC, larod NHWC)"),
        ("NCHW4c", Layout("NCHW4c"), "TensorRT kCHW4 / oneDNN nChw4c"),
        ("NCHW32c", Layout("NCHW32c"), "TensorRT kCHW32"),
        ("NHWC8c", Layout("NHWC8c", dims="NCHW"), "TensorRT kHWC8"),
        ("HCWN4c", Layout("HCWN4c", dims="NCHW"), "AMD Vitis AI HCWNC4"),
        ("HCWN8c", Layout("HCWN8c", dims="NCHW"), "AMD Vitis AI HCWNC8"),
        ("NHWC8h8w32c", Layout("NHWC8h8w32c", dims="NCHW"), "Qualcomm HTP R4CroutonLayout"),
        (
            "NHWC4h4w32c2h2w",
            Layout("NHWC4h4w32c2h2w", dims="NCHW"),
            "Qualcomm HTP R4Crouton2x2Layout",
        ),
        ("NHCW4w32c", Layout("NHCW4w32c", dims="NCHW"), "Qualcomm HTP d32 (R4Depth32MemoryLayout)"),
    ]
    print(
        f"layoutkit demo: a {_fmt(shape)} {np.dtype(args.dtype)} NCHW image "
        f"({image.nbytes / 1e6:.1f} MB), median of {args.repeat} runs, 1 thread"
    )
    scratch_a = np.empty(image.nbytes, np.uint8)
    scratch_b = np.empty(image.nbytes, np.uint8)
    scratch_a.fill(1)
    t_copy = _median_time(lambda: np.copyto(scratch_b, scratch_a), args.repeat)
    copy_gbs = 2 * image.nbytes / t_copy / 1e9
    print(f"np.copyto of the same {image.nbytes / 1e6:.1f} MB: {copy_gbs:.1f} GB/s\n")
    print(f"  {'layout':<18}{'what it is':<44}{'pack GB/s':>10}{'x copy':>8}  round trip")
    failures = 0
    previous = None
    for tag, layout, what in targets:
        packed = layout.pack(image)
        out = np.empty_like(packed)
        t = _median_time(lambda layout=layout, out=out: layout.pack(image, out=out), args.repeat)
        gbs = (image.nbytes + packed.nbytes) / t / 1e9
        ok = np.array_equal(layout.unpack(packed, shape), image)
        if previous is not None:
            # Direct conversion between two vendor layouts, never materialising NCHW.
            prev_layout, prev_buf = previous
            ok = ok and np.array_equal(convert(prev_buf, shape, prev_layout, layout), packed)
        failures += not ok
        ratio = gbs / copy_gbs
        print(f"  {tag:<18}{what:<44}{gbs:>10.1f}{ratio:>7.2f}x  {'ok' if ok else 'MISMATCH'}")
        previous = (layout, packed)
    print()
    if failures:
        print(f"{failures} round trips FAILED")
        return 1
    print(
        f"all {len(targets)} layouts round-trip exactly; each was also converted directly from the previous one"
    )
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "explain",
        "explain a layout: notations, padded/physical shape, chunks, memory order",
        "layoutkit explain NHWC8h8w32c --shape 1x3x5x30",
        _explain,
        description=(
            "Explain a layout given as a tag (NCHW4c, NHWC8h8w32c), an HTP preset name\n"
            "(R4CroutonLayout) or a ChunkedMemoryLayout<...> string, bound to a shape.\n"
            "Lists the memory order as runs of consecutive offsets with padding marked."
        ),
    )
    p.add_argument("spec", help="tag, HTP preset name or ChunkedMemoryLayout<...> string")
    p.add_argument("--shape", required=True, help="logical shape in dims order, e.g. 1x3x5x30")
    p.add_argument(
        "--dims", help="logical dims (default: the tag's upper-case letters; NHWC for HTP)"
    )
    p.add_argument("--dtype", help="element type, to report bytes (e.g. uint8, float16)")
    p.add_argument(
        "--offset", type=int, help="look up the logical index stored at this element offset"
    )
    p.add_argument("--index", help="look up the offset of this logical index, e.g. 0,2,4,29")
    p.add_argument(
        "--limit",
        type=at_least(0),
        default=24,
        help="runs of the memory order to list (0: none; default 24)",
    )

    p = add_command(
        sub,
        "demo",
        "convert a real image through every layout, check round trips, time it",
        "layoutkit demo --shape 1x3x1024x1024",
        _demo,
    )
    p.add_argument(
        "--shape", default="1x3x1024x1024", help="NCHW shape of the image (default 1x3x1024x1024)"
    )
    p.add_argument("--dtype", default="uint8", help="element type (default uint8)")
    p.add_argument(
        "--repeat", type=at_least(1), default=9, help="timed runs per layout (median reported)"
    )
