"""The ``layoutkit`` command line.

Each system contributes its subcommands from a module in
``layoutkit.commands``; this file only assembles the parser and turns
``LayoutError`` into a one-line message and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ._errors import LayoutError

# One module per system; each exposes ``register(subparsers)``.
COMMAND_MODULES = (
    "layoutkit.commands.core",
    "layoutkit.commands.htp",
    "layoutkit.commands.ggml",
    "layoutkit.commands.tensorrt",
    "layoutkit.commands.larod",
    "layoutkit.commands.vitis",
    "layoutkit.commands.emitc",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layoutkit",
        description="Describe, inspect and convert tensor memory layouts.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'layoutkit COMMAND --help' for the options and an example of each command.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"layoutkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _silence_stdout() -> None:
    """Point stdout at devnull, so that Python's flush at exit cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file, e.g. captured by a test
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:  # e.g. `layoutkit explain ... | head`: stop quietly
        _silence_stdout()
        return 0
    except (LayoutError, OSError, TypeError) as exc:
        print(f"layoutkit {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
