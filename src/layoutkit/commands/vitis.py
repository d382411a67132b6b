"""AMD Vitis AI subcommand: ``hsi`` shows and applies a ``flexmlrt-hsi.json`` report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import LayoutError
from . import add_command, input_file, load_npy


def _fmt(shape: Any) -> str:
    return "x".join(map(str, shape or [])) or "-"


def _show(report: Any) -> None:
    for entry in report:
        print(f"{entry.label} ({entry.form} form)")
        for side in ("cpu", "hw"):
            shape = getattr(entry, f"{side}_shape")
            dt = getattr(entry, f"{side}_np_dtype")
            fmt = getattr(entry, f"{side}_format")
            ignored = (
                " (ignored: rt_transformations decide)"
                if fmt and side == "hw" and entry.form != "annotation"
                else ""
            )
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            print(
                f"  {side + ':':<5}{_fmt(shape)} {fmt or '-'}{ignored} "
                f"{getattr(entry, f'{side}_dtype')} ({nbytes} bytes)"
            )
        start = "cpu" if entry.role == "input" else "hw"
        print(f"  chain (from the {start} side):")
        for k, step in enumerate(entry.transformations()):
            print(f"    {k}. {step}")
        if not entry.transformations():
            print("    (none: the buffers are identical)")
        print(f"  runs as: {entry.plan.describe()}")


def _read(path: str, dtype: np.dtype, shape: tuple[int, ...], what: str) -> np.ndarray:
    p = input_file(path, what)
    if p.suffix == ".npy":
        arr = load_npy(path, what)
        if arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize and arr.dtype != dtype:
            arr = arr.view(dtype)  # bf16 arrays are saved as raw 2-byte records
        return arr
    raw = np.fromfile(p, dtype=np.uint8)
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if raw.size != need:
        raise LayoutError(
            f"{what} {path!r}: {raw.size} bytes; expected {need} ({_fmt(shape)} {dtype})"
        )
    return raw.view(dtype).reshape(shape)


def _write(arr: np.ndarray, path: str) -> None:
    if path.endswith(".npy"):
        np.save(path, arr)
    else:
        arr.tofile(path)


def _split(spec: str, flag: str) -> tuple[str, str]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise LayoutError(f"{flag} {spec!r}: expected NAME=FILE, e.g. {flag} input=x.npy")
    return name, path


def _hsi(args: argparse.Namespace) -> int:
    from .. import vitis

    if Path(args.report).is_dir():
        raise LayoutError(
            f"report {args.report!r}: is a directory; give the flexmlrt-hsi.json in it"
        )
    report = vitis.load_hsi(Path(args.report), vart_strict=args.vart_strict)
    if args.input and args.output:
        raise LayoutError("pass either --input or --output, not both")
    if not args.input and not args.output:
        if args.out:
            raise LayoutError("-o needs --input NAME=x.npy or --output NAME=hw.bin")
        _show(report)
        return 0
    if args.input:
        name, path = _split(args.input, "--input")
        entry = report.input(name)
        x = _read(path, entry.cpu_np_dtype, tuple(entry.cpu_shape), "--input")
        result = entry.to_hw(x)
        out = args.out or str(Path(path).with_suffix(".hw.bin"))
        what = f"hw {_fmt(result.shape)} {entry.hw_dtype}"
    else:
        name, path = _split(args.output, "--output")
        entry = report.output(name)
        y = _read(path, entry.hw_np_dtype, tuple(entry.hw_shape), "--output")
        result = entry.to_cpu(y)
        out = args.out or str(Path(path).with_suffix(".npy"))
        what = f"cpu {_fmt(result.shape)} {entry.cpu_dtype}"
    _write(result, out)
    print(f"{entry.label}: {path} -> {what} ({result.nbytes} bytes) in {out}")
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "hsi",
        "show a Vitis AI flexmlrt-hsi.json report, or convert a tensor with it",
        "layoutkit hsi flexmlrt-hsi.json --input input=x.npy -o hw.bin",
        _hsi,
        description=(
            "Without --input/--output: print each tensor's CPU and HW side, its "
            "transformation chain and how layoutkit runs it. With --input NAME=x.npy: "
            "convert a CPU tensor (.npy, or raw bytes of cpu_shape/cpu_dtype) to the HW "
            "buffer. With --output NAME=hw.bin: convert a HW buffer (raw bytes or .npy) "
            "back to the CPU tensor. NAME is the tensor_name, the name, or the position. "
            "Files ending in .npy are written with np.save, others as raw bytes."
        ),
    )
    p.add_argument("report", help="path to flexmlrt-hsi.json")
    p.add_argument("--input", metavar="NAME=FILE", help="convert this input CPU -> HW")
    p.add_argument("--output", metavar="NAME=FILE", help="convert this output HW -> CPU")
    p.add_argument("-o", dest="out", metavar="FILE", help="where to write the result")
    p.add_argument(
        "--vart-strict", action="store_true", help="refuse HCWNC tensors with N != 1 (VART)"
    )
