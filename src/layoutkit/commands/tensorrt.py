"""TensorRT subcommands: ``trt-formats`` lists every ``TensorFormat`` with its rules."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import LayoutError
from . import add_command, parse_shape


def _formats(args: argparse.Namespace) -> int:
    from .. import tensorrt as trt

    if args.dtype is not None and args.shape is None:
        raise LayoutError(f"--dtype {args.dtype!r} needs --shape (it sets the storage column)")
    shape = None if args.shape is None else parse_shape(args.shape)
    dtype = None if args.dtype is None else trt.data_type(args.dtype, "--dtype")
    header = (
        f"{'value':>5}  {'format':<12}{'kind':<13}{'V':>3}  {'vec dim':>7}  {'min rank':>8}  dtypes"
    )
    if shape is not None:
        header += f"  | storage for {args.shape} {args.dtype or ''}".rstrip()
    print(header)
    for f in trt.TensorFormat:
        info = trt.format_info(f, version=args.trt_version, strict=not args.union)
        rank = len(shape) if shape is not None else max(4, info.min_rank)
        vd = info.vectorized_dim(rank) if info.min_rank <= rank <= 8 else "-"
        dtypes = ", ".join(t.short for t in info.dtypes) or "(not available)"
        if info.dla_only:
            dtypes += " (DLA only)"
        line = (
            f"{info.value:>5}  {info.name:<12}{info.kind:<13}{info.vector_size:>3}  "
            f"{vd!s:>7}  {info.min_rank:>8}  {dtypes}"
        )
        if shape is not None:
            try:
                st = trt.storage_shape(
                    f, shape, dtype, args.dla, strict=not args.union, version=args.trt_version
                )
                line += f"  | [{']['.join(map(str, st))}]"
            except ValueError as exc:
                line += f"  | n/a: {exc}"
        print(line)
        if args.verbose:
            for versions, dts, note in info.history:
                names = ", ".join(t.short for t in dts) or "-"
                print(f"{'':>7}{versions}: {names}" + (f"  ({note})" if note else ""))
            print(f"{'':>7}{info.description}")
    rules = trt.format_info("kCHW4", version=args.trt_version).rules
    print(
        f"\nrules: {'union over all versions' if args.union else rules}; V = scalars per vector; "
        "vec dim = getTensorVectorizedDim for a rank-"
        f"{len(shape) if shape is not None else 4} tensor (-1: not vectorized)"
    )
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "trt-formats",
        "list NVIDIA TensorRT TensorFormats with vector size, ranks and allowed dtypes",
        "layoutkit trt-formats --shape 1x3x5x10 --dtype fp16",
        _formats,
    )
    p.add_argument(
        "--trt-version",
        default=None,
        metavar="V",
        help="TensorRT version profile for the dtype rules, e.g. 8.x or 10.8 "
        "(default: current, 10.12+)",
    )
    p.add_argument(
        "--union", action="store_true", help="list the union of dtypes over every known version"
    )
    p.add_argument(
        "--shape",
        default=None,
        help="also print each format's storage array for this logical shape, e.g. 1x3x5x10",
    )
    p.add_argument(
        "--dtype",
        default=None,
        help="dtype for --shape (fp16, int8, ...); needed by the DLA formats",
    )
    p.add_argument(
        "--dla",
        default="orin",
        choices=["orin", "xavier"],
        help="DLA generation for kDLA_HWC4 line strides (default orin)",
    )
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also show the per-version history and TensorRT's description",
    )
