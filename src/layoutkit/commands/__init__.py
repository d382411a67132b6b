"""Subcommands of the ``layoutkit`` CLI, one module per system.

Every module exposes ``register(subparsers)`` and adds its commands with
:func:`add_command`, which puts a one-line example into both the command list
of ``layoutkit --help`` and the command's own ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import LayoutError

Handler = Callable[[argparse.Namespace], Any]


def add_command(
    subparsers: Any,
    name: str,
    summary: str,
    example: str,
    handler: Handler,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add a subcommand whose help shows ``summary`` and a runnable ``example``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=f"{summary}  e.g. {example}",
        description=(description or summary),
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=handler)
    return parser


def parse_shape(text: str, option: str = "--shape", minimum: int = 0) -> tuple[int, ...]:
    """Parse ``1x3x224x224`` (or ``1,3,224,224``) into ints >= ``minimum``."""
    try:
        shape = tuple(int(p) for p in text.replace(",", "x").replace("X", "x").split("x"))
    except ValueError:
        shape = ()
    if not shape or any(s < minimum for s in shape):
        raise LayoutError(
            f"{option} {text!r}: expected integers >= {minimum} separated by 'x' or ','"
        )
    return shape


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum``."""

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return integer


def input_file(path: str, what: str) -> Path:
    """``path`` as a Path; a LayoutError naming ``what`` if it is missing or a directory."""
    p = Path(path)
    if p.is_dir():
        raise LayoutError(f"{what} {path!r}: is a directory, expected a file")
    if not p.exists():
        raise LayoutError(f"{what} {path!r}: no such file")
    return p


def load_npy(path: str, what: str) -> np.ndarray:
    """The array in the .npy file ``path``; a LayoutError naming ``what`` if unreadable."""
    try:
        arr = np.load(input_file(path, what), allow_pickle=False)
    except (ValueError, EOFError) as exc:
        raise LayoutError(f"{what} {path!r}: not a readable .npy file ({exc})") from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise LayoutError(f"{what} {path!r}: an .npz archive, expected a .npy file")
    return arr
