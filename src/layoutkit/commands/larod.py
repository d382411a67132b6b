"""Axis larod subcommands: ``pitches`` builds (or checks) larod tensor pitches."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import LayoutError
from . import add_command


def _ints(text: str, option: str) -> tuple[int, ...]:
    parts = text.replace("x", ",").split(",")
    try:
        values = tuple(int(p) for p in parts if p.strip() != "")
    except ValueError:
        values = ()
    if not values:
        raise LayoutError(
            f"{option} {text!r}: expected integers separated by ',', e.g. 1,3,224,224"
        )
    return values


def _pitches(args: argparse.Namespace) -> int:
    from .. import larod

    dims = _ints(args.dims, "--dims")
    align = None if args.align is None else _ints(args.align, "--align")
    lay = larod.tensor_layout(args.layout, "--layout")
    dt = larod.data_type(args.dtype, "--dtype")
    e = larod.element_size(dt)
    if args.pitches is not None:
        given = _ints(args.pitches, "--pitches")
        p = larod.validate_pitches(dims, dt, given, lay, align)
        print(f"pitches {','.join(map(str, p))} are valid for dims {','.join(map(str, dims))}")
    else:
        p = larod.pitches(dims, dt, lay, align)
    name = "420SP" if lay is larod.TensorLayout.LAYOUT_420SP else lay.name
    print(f"layout:  {lay.larod_name} ({name})")
    print(f"dtype:   {dt.larod_name} ({e} byte{'s' if e > 1 else ''})")
    print(f"dims:    {','.join(map(str, dims))}")
    if align:
        print(f"align:   {','.join(map(str, align))}")
    print(f"pitches: {','.join(map(str, p))}")
    if not p:
        return 0
    print(f"total:   {p[0]} bytes")
    if lay is larod.TensorLayout.LAYOUT_420SP:
        print(f"row pitch: {p[2]} bytes; CbCr plane at byte {p[1]}")
    elif lay is larod.TensorLayout.NCHW:
        print(f"row pitch: {p[3]} bytes (pitches[3])")
    elif lay is larod.TensorLayout.NHWC:
        print(f"row pitch: {p[2]} bytes (pitches[2])")
    if lay is not larod.TensorLayout.LAYOUT_420SP:
        print(f"strides: {','.join(map(str, (*p[1:], e)))} bytes per step of each dim")
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "pitches",
        "compute or check Axis larod tensor pitches (bytes) for dims, dtype, layout and alignment",
        "layoutkit pitches --dims 1,3,250,250 --dtype float32 --layout NCHW --align 1,1,1,32",
        _pitches,
    )
    p.add_argument(
        "--dims", required=True, help="dims in the layout's order, e.g. 1,3,224,224 (420SP: 3,H,W)"
    )
    p.add_argument(
        "--dtype",
        required=True,
        help="element type: a larod name (FLOAT32, UINT8, ...) or numpy name (float32)",
    )
    p.add_argument("--layout", default="NCHW", help="NCHW (default), NHWC, 420SP or UNSPECIFIED")
    p.add_argument(
        "--align",
        default=None,
        help="byte alignment per dim, e.g. 1,1,1,32 (420SP: total,plane,row)",
    )
    p.add_argument(
        "--pitches",
        default=None,
        help="check these pitches instead of computing them, e.g. 768000,768000,256000,1024",
    )
