"""GGML subcommands: ``quantize``, ``dequantize`` and ``ggml-types``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import LayoutError
from . import add_command, parse_shape


def _load_input(path: str) -> np.ndarray:
    p = Path(path)
    if not p.exists():
        raise LayoutError(f"input {path!r}: no such file")
    if p.suffix == ".npy":
        try:
            return np.load(p, allow_pickle=False)
        except ValueError as exc:
            raise LayoutError(f"input {path!r}: not a readable .npy file ({exc})") from None
    raise LayoutError(f"input {path!r}: expected a .npy file of float values")


def _quantize(args: argparse.Namespace) -> int:
    from .. import ggml

    x = _load_input(args.input)
    info = ggml.type_info(args.type)
    q = ggml.quantize(x, info.id, threads=args.threads)
    out = args.output or str(Path(args.input).with_suffix(f".{info.name.lower()}.bin"))
    q.tofile(out)
    shape = "x".join(map(str, x.shape))
    bits = 8 * q.nbytes / max(x.size, 1)
    print(
        f"{args.input}: {x.dtype} {shape} -> {info.name}, {q.nbytes} bytes ({bits:.4g} bits per "
        f"element) in {out}; read it back with: "
        f"layoutkit dequantize {out} --type {info.name} --shape {shape}"
    )
    return 0


def _dequantize(args: argparse.Namespace) -> int:
    from .. import ggml

    info = ggml.type_info(args.type)
    p = Path(args.input)
    if not p.exists():
        raise LayoutError(f"input {args.input!r}: no such file")
    raw = np.fromfile(p, dtype=np.uint8)
    shape = parse_shape(args.shape) if args.shape else None
    if shape is None:
        if info.type_size == 0 or raw.size % info.type_size:
            raise LayoutError(
                f"input {args.input!r}: {raw.size} bytes is not a whole number of {info.name} "
                f"blocks ({info.type_size} bytes each)"
            )
        shape = (raw.size // info.type_size * info.block_size,)
    if not shape:
        raise LayoutError("--shape: expected at least one extent")
    if shape[-1] % max(info.block_size, 1):
        raise LayoutError(
            f"--shape {args.shape}: the last extent {shape[-1]} must be a multiple of "
            f"{info.name}'s block size {info.block_size}"
        )
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    row_bytes = ggml.row_size(info.id, shape[-1])
    need = rows * row_bytes
    if raw.size != need:
        raise LayoutError(
            f"input {args.input!r}: {raw.size} bytes, but {info.name} of shape "
            f"{'x'.join(map(str, shape))} needs {need} bytes"
        )
    y = ggml.dequantize(raw.reshape(*shape[:-1], row_bytes), info.id, threads=args.threads)
    out = args.output or str(p.with_suffix(".npy"))
    np.save(out, y)
    print(f"{args.input}: {info.name} {raw.size} bytes -> float32 {y.shape} in {out}")
    return 0


def _types(args: argparse.Namespace) -> int:
    from .. import ggml

    rows = []
    for i in ggml.types():
        if i.removed and not args.all:
            continue
        ops = "".join(("Q" if i.can_quantize else "-", "D" if i.can_dequantize else "-"))
        bpw = f"{8 * i.type_size / i.block_size:.4g}" if i.block_size else "-"
        rows.append(
            (
                str(i.id),
                i.name,
                i.ggml_name,
                str(i.block_size),
                str(i.type_size),
                bpw,
                ops,
                i.note if (i.removed or args.verbose) else "",
            )
        )
    head = ("id", "name", "ggml name", "block", "bytes", "bits/elem", "ops", "")
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    out = sys.stdout
    for r in [head, *rows]:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    out.write("ops: Q = layoutkit quantize, D = layoutkit dequantize (byte-exact with ggml)\n")
    return 0


def register(sub: Any) -> None:
    """Add the GGML subcommands to the ``layoutkit`` parser."""
    p = add_command(
        sub,
        "quantize",
        "quantize a .npy float array to GGML blocks (byte-exact with ggml), raw bytes out",
        "layoutkit quantize weights.npy --type Q4_0 -o weights.bin",
        _quantize,
    )
    p.add_argument("input", help="a .npy file of float values; the last axis holds whole blocks")
    p.add_argument("--type", "-t", required=True, help="GGML type name, e.g. Q4_0, Q8_0, MXFP4")
    p.add_argument("-o", "--output", help="output file (default: INPUT.<type>.bin)")
    p.add_argument("--threads", type=int, default=1, help="worker threads (default 1)")

    p = add_command(
        sub,
        "dequantize",
        "dequantize raw GGML blocks to a float32 .npy array",
        "layoutkit dequantize weights.bin --type Q4_0 --shape 4096x4096 -o weights.npy",
        _dequantize,
    )
    p.add_argument("input", help="a file of raw GGML blocks (rows back to back)")
    p.add_argument("--type", "-t", required=True, help="GGML type name, e.g. Q4_0, Q4_K, IQ2_XS")
    p.add_argument(
        "--shape", "-s", help="logical shape in numpy order, e.g. 4096x4096 (default: one row)"
    )
    p.add_argument("-o", "--output", help="output .npy file (default: INPUT.npy)")
    p.add_argument("--threads", type=int, default=1, help="worker threads (default 1)")

    p = add_command(
        sub,
        "ggml-types",
        "list the GGML types: ids, block sizes, bytes per block, what can be (de)quantized",
        "layoutkit ggml-types --all",
        _types,
    )
    p.add_argument("--all", "-a", action="store_true", help="also list removed type ids")
    p.add_argument("--verbose", "-v", action="store_true", help="show notes for every type")
