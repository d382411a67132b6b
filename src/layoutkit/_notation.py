"""Parsing of the two layout spellings layoutkit reads.

* Tag notation, e.g. ``NCHW4c`` or ``NHWC8h8w32c``: upper-case letters are the
  outer parts of logical dims (most major first), ``<int><lower>`` tokens are
  inner blocks (most major first, after every upper-case letter).
* HTP template spelling, e.g. ``ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>``
  or ``FlatMemoryLayout<4>``, with whitespace and C/C++ comments allowed, as
  written in the Qualcomm SDK headers and docs.

Both parse to the same neutral description: ``outer`` (dim indices, most
major first) and ``blocks`` (``(dim, size)`` pairs, most major first). Errors
carry a caret under the offending character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._errors import LayoutError

CHUNKED_NAMES = ("ChunkedMemoryLayout", "IChunkedMemoryLayout", "FlatMemoryLayout")

# Logical dim names used when a template spelling does not say them.
_DEFAULT_DIMS = {1: "C", 2: "WC", 3: "HWC", 4: "NHWC", 5: "NDHWC"}


def default_dims(rank: int) -> str:
    """Dim letters for a rank-``rank`` template layout (HTP's NHWC convention)."""
    if rank in _DEFAULT_DIMS:
        return _DEFAULT_DIMS[rank]
    if rank > 26:
        raise LayoutError(f"rank {rank} is too large: at most 26 dims can be named")
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:rank]


def _caret(text: str, pos: int, width: int = 1) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : (None if line_end < 0 else line_end)]
    return f"\n    {line}\n    {' ' * (pos - line_start)}{'^' * max(1, width)}"


def parse_error(text: str, pos: int, message: str, width: int = 1) -> LayoutError:
    """A LayoutError that quotes ``text`` with a caret under position ``pos``."""
    return LayoutError(f"{message} (at position {pos}){_caret(text, pos, width)}")


@dataclass(frozen=True)
class ParsedLayout:
    """A layout before it is bound to dim names."""

    letters: str  # upper-case letters (tag) or '' (template: dims by index)
    rank: int
    outer: tuple[int, ...]
    blocks: tuple[tuple[int, int], ...]
    indirect_ranks: int | None = None
    name: str | None = None  # trailing declarator of a template, e.g. ``ChannelMajorCrouton``


# ---------------------------------------------------------------------------
# Tag notation
# ---------------------------------------------------------------------------


def parse_tag(text: str) -> ParsedLayout:
    """Parse tag notation into outer letters (in order) and blocks by letter."""
    if not isinstance(text, str):
        raise TypeError(f"layout: expected a str, got {type(text).__name__}")
    if not text.strip():
        raise LayoutError("layout: empty string; expected a tag such as 'NCHW4c'")
    s = text
    pos = 0
    letters: list[str] = []
    first_block_pos: int | None = None
    raw_blocks: list[tuple[str, int, int]] = []  # (lower letter, size, position)
    while pos < len(s):
        ch = s[pos]
        if ch.isascii() and ch.isupper():
            if first_block_pos is not None:
                raise parse_error(
                    s,
                    pos,
                    f"upper-case dim {ch!r} after the block at position {first_block_pos}; "
                    "list every upper-case dim before the blocks, e.g. 'NCHW4c'",
                )
            if ch in letters:
                raise parse_error(
                    s,
                    pos,
                    f"dim {ch!r} appears twice in upper case; each dim must appear exactly once",
                )
            letters.append(ch)
            pos += 1
        elif ch.isdigit():
            start = pos
            while pos < len(s) and s[pos].isdigit():
                pos += 1
            if pos >= len(s) or not (s[pos].isascii() and s[pos].islower()):
                raise parse_error(
                    s,
                    pos if pos < len(s) else start,
                    f"block size {s[start:pos]} must be followed by a lower-case dim letter, e.g. '4c'",
                )
            size = int(s[start:pos])
            if size <= 0:
                raise parse_error(
                    s,
                    start,
                    f"block size {size} for dim {s[pos].upper()!r} must be >= 1",
                    pos - start,
                )
            if first_block_pos is None:
                first_block_pos = start
            raw_blocks.append((s[pos], size, start))
            pos += 1
        elif ch.isascii() and ch.islower():
            raise parse_error(
                s,
                pos,
                f"lower-case {ch!r} without a block size; write e.g. '4{ch}' for a block of 4",
            )
        else:
            raise parse_error(
                s, pos, f"unexpected character {ch!r} in tag; expected A-Z or <int><a-z>"
            )
    if not letters:
        raise parse_error(s, 0, "tag names no dim in upper case")
    blocks = []
    for lower, size, where in raw_blocks:
        if lower.upper() not in letters:
            raise parse_error(
                s,
                where,
                f"block '{size}{lower}' splits dim {lower.upper()!r}, which has no upper-case {lower.upper()!r} in the tag",
                len(str(size)) + 1,
            )
        blocks.append((letters.index(lower.upper()), size))
    return ParsedLayout("".join(letters), len(letters), tuple(range(len(letters))), tuple(blocks))


# ---------------------------------------------------------------------------
# HTP template spelling
# ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<ws>\s+)|(?P<comment>/\*.*?\*/|//[^\n]*)|(?P<int>-?\d+)|(?P<ident>[A-Za-z_]\w*)|(?P<punct>[<>,;])|(?P<bad>.)",
    re.S,
)


def looks_like_template(text: str) -> bool:
    stripped = _strip_comments(text).lstrip()
    return any(stripped.startswith(n) for n in CHUNKED_NAMES)


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def parse_template(text: str, *, strict: bool = False) -> ParsedLayout:
    """Parse ``ChunkedMemoryLayout<R, d,s, ...>``, ``IChunkedMemoryLayout<R, I, ...>``
    or ``FlatMemoryLayout<R>``.

    ``strict`` applies the SDK's static asserts: chunk sizes are powers of two and
    no size-0 pair follows a chunk pair. Without it those are accepted (sizes
    are rounded up to with ``roundup``; size-0 pairs are the outer order wherever
    they stand).
    """
    tokens: list[tuple[str, str, int]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or ""
        if kind in ("ws", "comment"):
            continue
        if kind == "bad":
            raise parse_error(text, m.start(), f"unexpected character {m.group()!r}")
        if kind == "comment" and m.group().startswith("/*") and not m.group().endswith("*/"):
            raise parse_error(text, m.start(), "unterminated comment")
        tokens.append((kind, m.group(), m.start()))
    unterminated = text.find("/*")
    while unterminated >= 0:
        end = text.find("*/", unterminated + 2)
        if end < 0:
            raise parse_error(text, unterminated, "unterminated /* comment")
        unterminated = text.find("/*", end + 2)

    if not tokens or tokens[0][0] != "ident" or tokens[0][1] not in CHUNKED_NAMES:
        pos = tokens[0][2] if tokens else 0
        raise parse_error(text, pos, f"expected one of {', '.join(CHUNKED_NAMES)}")
    kind_name = tokens[0][1]
    i = 1

    def expect(value: str) -> int:
        nonlocal i
        if i >= len(tokens):
            raise parse_error(
                text, len(text.rstrip()) or 0, f"expected {value!r} but the text ended"
            )
        if tokens[i][1] != value:
            raise parse_error(
                text, tokens[i][2], f"expected {value!r}, found {tokens[i][1]!r}", len(tokens[i][1])
            )
        i += 1
        return tokens[i - 1][2]

    expect("<")
    numbers: list[tuple[int, int]] = []  # (value, position)
    while True:
        if i >= len(tokens):
            raise parse_error(
                text, max(len(text) - 1, 0), "expected '>' to close the parameter list"
            )
        kind, value, pos = tokens[i]
        if kind != "int":
            raise parse_error(
                text, pos, f"expected an integer parameter, found {value!r}", len(value)
            )
        numbers.append((int(value), pos))
        i += 1
        if i < len(tokens) and tokens[i][1] == ",":
            i += 1
            continue
        expect(">")
        break
    name = None
    if i < len(tokens) and tokens[i][0] == "ident":
        name = tokens[i][1]
        i += 1
    if i < len(tokens) and tokens[i][1] == ";":
        i += 1
    if i < len(tokens):
        raise parse_error(
            text, tokens[i][2], f"unexpected {tokens[i][1]!r} after the layout", len(tokens[i][1])
        )

    rank, rank_pos = numbers[0]
    if rank < 1:
        raise parse_error(text, rank_pos, f"rank {rank} must be >= 1")
    if rank > 26:
        raise parse_error(text, rank_pos, f"rank {rank} is too large (at most 26)")
    params = numbers[1:]
    indirect = None
    if kind_name == "FlatMemoryLayout":
        if params:
            raise parse_error(
                text, params[0][1], "FlatMemoryLayout takes only the rank, e.g. FlatMemoryLayout<4>"
            )
        return ParsedLayout("", rank, tuple(range(rank)), (), None, name)
    if kind_name == "IChunkedMemoryLayout":
        if not params:
            raise parse_error(
                text, rank_pos, "IChunkedMemoryLayout<R, IndirRanks, d,s, ...> needs IndirRanks"
            )
        indirect, ind_pos = params[0]
        if not 0 <= indirect <= rank:
            raise parse_error(text, ind_pos, f"IndirRanks {indirect} must lie in [0, {rank}]")
        params = params[1:]
    if len(params) % 2:
        raise parse_error(
            text, params[-1][1], "parameters after the rank must come in (dimension, size) pairs"
        )

    outer: list[int] = []
    blocks: list[tuple[int, int]] = []
    seen_chunk_at: int | None = None
    for k in range(0, len(params), 2):
        (d, dpos), (size, spos) = params[k], params[k + 1]
        if not 0 <= d < rank:
            raise parse_error(
                text, dpos, f"dimension {d} is out of range for rank {rank}; expected 0..{rank - 1}"
            )
        if size < 0:
            raise parse_error(text, spos, f"size {size} for dimension {d} must be >= 0")
        if size == 0:
            if seen_chunk_at is not None and strict:
                raise parse_error(
                    text,
                    dpos,
                    f"outer pair ({d},0) after the chunk pair at position {seen_chunk_at}; "
                    "the SDK requires every size-0 pair before the chunk pairs",
                )
            if d in outer:
                raise parse_error(
                    text,
                    dpos,
                    f"dimension {d} appears twice with size 0; the outer order lists each dim once",
                )
            outer.append(d)
        else:
            if strict and size & (size - 1):
                raise parse_error(
                    text, spos, f"chunk size {size} is not a power of two (the SDK requires one)"
                )
            if seen_chunk_at is None:
                seen_chunk_at = dpos
            blocks.append((d, size))
    if sorted(outer) != list(range(rank)):
        missing = sorted(set(range(rank)) - set(outer))
        pos = params[0][1] if params else rank_pos
        raise parse_error(
            text,
            pos,
            f"the size-0 (outer) pairs must list every dimension 0..{rank - 1} exactly once; "
            f"missing {missing}",
        )
    return ParsedLayout("", rank, tuple(outer), tuple(blocks), indirect, name)
