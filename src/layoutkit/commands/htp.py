"""HTP subcommands: ``htp-presets`` lists the SDK layouts layoutkit knows."""

from __future__ import annotations

import argparse
from typing import Any

from . import add_command


def _presets(args: argparse.Namespace) -> int:
    from .. import htp

    print(f"{'preset':<24}{'tag':<22}{'dims':<7}{'chunk':>7}  template")
    for name, p in htp.PRESETS.items():
        layout = htp.layout(name)
        sizes = "/".join(f"{s}B" for s in p.element_sizes) if p.element_sizes else "any"
        print(f"{name:<24}{layout!s:<22}{p.dims:<7}{layout.chunk_elements:>7}  {p.template}")
        if args.verbose:
            print(f"{'':<24}SDK element sizes: {sizes}" + (f"; {p.note}" if p.note else ""))
    print("\naliases: " + ", ".join(f"{a} = {b}" for a, b in htp.ALIASES.items()))
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "htp-presets",
        "list the Qualcomm HTP layout presets with their tags and templates",
        "layoutkit htp-presets --verbose",
        _presets,
    )
    p.add_argument(
        "--verbose", "-v", action="store_true", help="also show SDK dtype pairings and notes"
    )
