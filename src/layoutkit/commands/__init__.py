"""Subcommands of the ``layoutkit`` CLI, one module per system.

Every module exposes ``register(subparsers)`` and adds its commands with
:func:`add_command`, which puts a one-line example into both the command list
of ``layoutkit --help`` and the command's own ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

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


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``1x3x224x224`` (or ``1,3,224,224``) into a tuple of ints."""
    from .._errors import LayoutError

    parts = text.replace(",", "x").replace("X", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise LayoutError(
            f"--shape {text!r}: expected integers separated by 'x', e.g. 1x3x224x224"
        ) from None
    if any(s < 0 for s in shape):
        raise LayoutError(f"--shape {text!r}: extents must be >= 0")
    return shape
