"""GGML subcommands: ``quantize``, ``dequantize``, ``ggml-types``, ``gguf-info``, ``gguf-dequantize``.

Work over many tensors (several ``quantize`` inputs, ``gguf-dequantize`` of
several tensors) shows a progress bar on stderr when stderr is a terminal and
the optional ``tqdm`` package is installed; otherwise it stays quiet.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._errors import LayoutError
from . import add_command, at_least, input_file, load_npy, parse_shape


def _load_input(path: str, what: str = "input") -> np.ndarray:
    if input_file(path, what).suffix != ".npy":
        raise LayoutError(f"{what} {path!r}: expected a .npy file of float values")
    return load_npy(path, what)


T = TypeVar("T")


def _stderr_is_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # closed stream
        return False


def progress(items: Iterable[T], total: int, desc: str, enabled: bool = True) -> Iterator[T]:
    """``items`` with a progress bar on stderr when stderr is a terminal.

    Quiet (the plain iterator) when stderr is not a terminal, when ``enabled``
    is false, for a single item, or when the optional ``tqdm`` package is
    missing.
    """
    if not enabled or total < 2 or not _stderr_is_terminal():
        yield from items
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield from items
        return
    bar = tqdm(items, total=total, desc=desc, unit="tensor", file=sys.stderr, dynamic_ncols=True)
    try:
        yield from bar
    finally:
        bar.close()


def _quantize(args: argparse.Namespace) -> int:
    from .. import ggml

    info = ggml.type_info(args.type)
    inputs = list(args.input)
    if args.output and len(inputs) > 1:
        raise LayoutError(
            f"-o/--output {args.output!r}: only with one input ({len(inputs)} given); "
            "with several, each goes to INPUT.<type>.bin"
        )
    imatrix = None
    if args.imatrix:
        imatrix = _load_input(args.imatrix, "--imatrix")
    for path in progress(inputs, len(inputs), f"quantize {info.name}", not args.no_progress):
        x = _load_input(path)
        q = ggml.quantize(x, info.id, imatrix=imatrix, threads=args.threads)
        out = args.output or str(Path(path).with_suffix(f".{info.name.lower()}.bin"))
        q.tofile(out)
        shape = "x".join(map(str, x.shape))
        bits = 8 * q.nbytes / max(x.size, 1)
        print(
            f"{path}: {x.dtype} {shape} -> {info.name}, {q.nbytes} bytes ({bits:.4g} bits per "
            f"element) in {out}; read it back with: "
            f"layoutkit dequantize {out} --type {info.name} --shape {shape}"
        )
    return 0


def _dequantize(args: argparse.Namespace) -> int:
    from .. import ggml

    info = ggml.type_info(args.type)
    p = input_file(args.input, "input")
    raw = np.fromfile(p, dtype=np.uint8)
    shape = None if args.shape is None else parse_shape(args.shape)
    if shape is None:
        if info.type_size == 0 or raw.size % info.type_size:
            raise LayoutError(
                f"input {args.input!r}: {raw.size} bytes is not a whole number of {info.name} "
                f"blocks ({info.type_size} bytes each)"
            )
        shape = (raw.size // info.type_size * info.block_size,)
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


def _fmt4(v: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, v)) + ")"


def _short(value: Any, limit: int = 60) -> str:
    if isinstance(value, list) and len(value) > 8:
        text = json.dumps(value[:8], default=str)[:-1] + f", ... ({len(value)} items)]"
    else:
        text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _gguf_info(args: argparse.Namespace) -> int:
    from .. import ggml

    with ggml.load_gguf(input_file(args.file, "file")) as f:
        if args.json:
            doc = {
                "path": f.path,
                "version": f.version,
                "alignment": f.alignment,
                "data_offset": f.data_offset,
                "tensors": [
                    {
                        "name": t.name,
                        "type": t.type_name,
                        "ne": list(t.ne),
                        "nb": list(t.nb),
                        "shape": list(t.shape),
                        "offset": t.offset,
                        "nbytes": t.nbytes,
                    }
                    for t in f
                ],
            }
            if args.metadata:
                doc["metadata"] = f.metadata
            json.dump(doc, sys.stdout, indent=1, default=str)
            sys.stdout.write("\n")
            return 0
        total = sum(t.nbytes for t in f)
        kinds: dict[str, int] = {}
        for t in f:
            kinds[t.type_name] = kinds.get(t.type_name, 0) + 1
        mix = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        print(
            f"{f.path}: GGUF v{f.version}, {len(f)} tensors ({mix}), {total} bytes of data "
            f"at offset {f.data_offset}, alignment {f.alignment}"
        )
        if args.metadata:
            for key, value in f.metadata.items():
                print(f"  {key} = {_short(value)}")
        head = ("name", "type", "ne", "nb", "offset", "bytes")
        rows = [
            (t.name, t.type_name, _fmt4(t.ne), _fmt4(t.nb), str(t.offset), str(t.nbytes)) for t in f
        ]
        widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
        for r in [head, *rows]:
            cells = [
                c.rjust(w) if k >= 4 else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))
            ]
            print("  ".join(cells).rstrip())
    return 0


def _gguf_dequantize(args: argparse.Namespace) -> int:
    from .. import ggml

    with ggml.load_gguf(input_file(args.file, "file")) as f:
        names = list(args.names)
        if args.all:
            if names:
                raise LayoutError("--all: give either tensor names or --all, not both")
            names = f.names()
        if not names:
            raise LayoutError(
                f"{args.file!r}: name the tensor(s) to dequantize or pass --all; "
                f"'layoutkit gguf-info {args.file}' lists them"
            )
        infos = [f.info(n) for n in names]  # fail early on a wrong name
        single = len(names) == 1 and not args.all
        stem = Path(args.file).with_suffix("")
        if single:
            out = args.output or f"{stem}.{names[0]}.npy"
            if not out.endswith(".npy"):
                raise LayoutError(f"-o/--output {out!r}: one tensor is written as a .npy file")
            y = f.dequantize(names[0], threads=args.threads)
            np.save(out, y)
            t = infos[0]
            print(f"{t.name}: {t.type_name} {_fmt4(t.ne)} -> float32 {y.shape} in {out}")
            return 0
        out = args.output or f"{stem}.npz"
        if not out.endswith(".npz"):
            raise LayoutError(
                f"-o/--output {out!r}: several tensors are written as one .npz archive"
            )
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for t in progress(infos, len(infos), "dequantize", not args.no_progress):
                y = f.dequantize(t.name, threads=args.threads)
                with zf.open(t.name + ".npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, y, allow_pickle=False)
        print(
            f"{len(infos)} tensors of {args.file} -> float32 in {out} (np.load gives them by name)"
        )
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
    p.add_argument(
        "input",
        nargs="+",
        help="one or more .npy files of float values; the last axis holds whole blocks",
    )
    p.add_argument("--type", "-t", required=True, help="GGML type name, e.g. Q4_0, Q4_K, IQ4_XS")
    p.add_argument("-o", "--output", help="output file (default: INPUT.<type>.bin; one input only)")
    p.add_argument(
        "--imatrix",
        help="a .npy file of importance weights, one per column (as llama.cpp's imatrix)",
    )
    p.add_argument("--threads", type=at_least(1), default=1, help="worker threads (default 1)")
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (it only shows on a terminal)"
    )

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
    p.add_argument("--threads", type=at_least(1), default=1, help="worker threads (default 1)")

    p = add_command(
        sub,
        "ggml-types",
        "list the GGML types: ids, block sizes, bytes per block, what can be (de)quantized",
        "layoutkit ggml-types --all",
        _types,
    )
    p.add_argument("--all", "-a", action="store_true", help="also list removed type ids")
    p.add_argument("--verbose", "-v", action="store_true", help="show notes for every type")

    p = add_command(
        sub,
        "gguf-info",
        "list a GGUF file's tensors: name, GGML type, ne, nb, file offset, bytes",
        "layoutkit gguf-info model.gguf --metadata",
        _gguf_info,
    )
    p.add_argument("file", help="a .gguf file (needs the optional 'gguf' package)")
    p.add_argument("--metadata", "-m", action="store_true", help="also print the key/value pairs")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add_command(
        sub,
        "gguf-dequantize",
        "dequantize tensors of a GGUF file to float32 .npy (one tensor) or .npz (several)",
        "layoutkit gguf-dequantize model.gguf blk.0.attn_q.weight -o q.npy",
        _gguf_dequantize,
    )
    p.add_argument("file", help="a .gguf file (needs the optional 'gguf' package)")
    p.add_argument("names", nargs="*", help="tensor names (see layoutkit gguf-info FILE)")
    p.add_argument("--all", "-a", action="store_true", help="every tensor, into one .npz")
    p.add_argument(
        "-o", "--output", help="output .npy (one tensor) or .npz (several); default next to FILE"
    )
    p.add_argument("--threads", type=at_least(1), default=1, help="worker threads (default 1)")
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (it only shows on a terminal)"
    )
