"""``layoutkit emit-c``: write a dependency-free C99 header for one conversion."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._errors import LayoutError
from . import add_command, parse_shape


def _number(text: str | None, what: str, kind: type) -> Any:
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise LayoutError(f"{what} {text!r}: expected a {kind.__name__}") from None


def _pad_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text, 0) if kind is int else kind(text)
        except ValueError:
            continue
    raise LayoutError(f"--pad-value {text!r}: expected a number, e.g. 0, 0x7f or -1.5")


def _emit(args: argparse.Namespace) -> int:
    from ..codegen import emit_c

    if args.src is None and not args.offset_only:
        raise LayoutError("--from is required (only --offset-only works with --to alone)")
    shape = parse_shape(args.shape)
    text = emit_c(
        args.src,
        args.dst,
        shape,
        args.dtype,
        name=args.name,
        dst_dtype=args.dst_dtype,
        scale=_number(args.scale, "--scale", float),
        zero_point=_number(args.zero_point, "--zero-point", int),
        pad_value=_pad_value(args.pad_value),
        dims=args.dims,
        offset_only=args.offset_only,
    )
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.output} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "emit-c",
        "write a C99 header that performs one conversion (and its inverse)",
        "layoutkit emit-c --from NCHW --to HCWN4c --dims NCHW --shape 1x3x224x224 "
        "--dtype int8 -o convert.h",
        _emit,
        description=(
            "Write a self-contained C99 header (only <stddef.h>, <stdint.h>, <string.h>)\n"
            "with static void NAME(const void *src, void *dst) converting a tensor of the\n"
            "given shape from --from to --to exactly as layoutkit.convert does, padding and\n"
            "element conversion included, and NAME_inverse for the way back. Sizes are\n"
            "#defines (NAME_SRC_BYTES, NAME_DST_BYTES); NAME_src_offset/NAME_dst_offset give\n"
            "element offsets.\n\n"
            "Layouts: tags (NCHW4c, HCWN4c), HTP presets (R4CroutonLayout) or\n"
            "ChunkedMemoryLayout<...> strings, TensorRT formats (kCHW32, kHWC8), Vitis AI\n"
            "formats (HCWNC4/8/16), larod pitched layouts (larod:NHWC:align=1,1,32,4 or\n"
            "larod:NCHW:pitches=P0,P1,P2,P3).\n\n"
            "Quantize: --dtype float32 --dst-dtype int8 --scale 0.0078125 --zero-point 0.\n"
            "--offset-only writes just NAME_offset(...) and NAME_BYTES for --to."
        ),
    )
    p.add_argument("--from", dest="src", metavar="LAYOUT", help="source layout")
    p.add_argument("--to", dest="dst", metavar="LAYOUT", required=True, help="destination layout")
    p.add_argument("--shape", required=True, help="logical shape in dims order, e.g. 1x3x224x224")
    p.add_argument("--dtype", required=True, help="source element type (int8, uint8, float32, ...)")
    p.add_argument(
        "--dims", help="logical dims, e.g. NCHW (default: the first tag's upper-case letters)"
    )
    p.add_argument("--name", default="convert", help="C function name (default convert)")
    p.add_argument("--dst-dtype", help="destination element type, to quantize or cast")
    p.add_argument("--scale", help="quantization scale (float)")
    p.add_argument("--zero-point", help="quantization zero point (int)")
    p.add_argument("--pad-value", default="0", help="value of the destination's padding")
    p.add_argument(
        "--offset-only",
        action="store_true",
        help="emit only the offset function and buffer size of --to",
    )
    p.add_argument("-o", "--output", help="output file (default: standard output)")
