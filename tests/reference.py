"""A plain numpy reference model of layoutkit's layouts, written from the spec.

This module is deliberately independent of ``layoutkit``: it is written from
``specs/api.md`` (tag notation) and ``specs/seed-systems.md`` §1.2-§1.3 (the
HTP ``ChunkedMemoryLayout`` template math), not from the library's code. It
favours obviousness over speed:

* :func:`ref_pack` is pad -> reshape (split every dim into its outer part and
  its blocks) -> transpose -> ``ascontiguousarray``;
* :func:`ref_offset` is the SDK algorithm of §1.3
  (``chunk_index * chunk_total + chunk_offset``), left padding included;
* :func:`ref_unpack` is the inverse of :func:`ref_pack`.

A layout is a :class:`RefLayout`: rank, logical dim letters, the outer order
(logical dim indices, most major first) and the chunk pairs ``(dim, size)``
(most major first), plus an optional left pad.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

__all__ = [
    "RefLayout",
    "as_layout",
    "parse_chunked",
    "parse_tag",
    "ref_chunk_index",
    "ref_chunk_start",
    "ref_index",
    "ref_offset",
    "ref_pack",
    "ref_padded_shape",
    "ref_physical_shape",
    "ref_size",
    "ref_unpack",
]


@dataclass(frozen=True)
class RefLayout:
    rank: int
    dims: str
    outer: tuple[int, ...]  # logical dim indices, most major first
    blocks: tuple[tuple[int, int], ...]  # (logical dim, size), most major first
    left_pad: tuple[int, ...] | None = None

    # ---- derived quantities (§1.2) -------------------------------------------------
    def cs(self, d: int) -> int:
        """Product of the block sizes of logical dim ``d`` (1 if none)."""
        return math.prod(s for dd, s in self.blocks if dd == d)

    @property
    def chunk_total(self) -> int:
        return math.prod(s for _, s in self.blocks)

    def lpad(self) -> tuple[int, ...]:
        return self.left_pad if self.left_pad is not None else (0,) * self.rank

    @property
    def tag(self) -> str:
        outer = "".join(self.dims[d] for d in self.outer)
        inner = "".join(f"{s}{self.dims[d].lower()}" for d, s in self.blocks)
        return outer + inner

    def to_chunked(self) -> str:
        pairs = [f"{d},0" for d in self.outer] + [f"{d},{s}" for d, s in self.blocks]
        return f"ChunkedMemoryLayout<{self.rank}, " + ", ".join(pairs) + ">"

    def with_left_pad(self, left_pad) -> RefLayout:
        return replace(self, left_pad=None if left_pad is None else tuple(left_pad))


# ---- parsers ----------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Z]|[0-9]+[a-z]")


def parse_tag(tag: str, dims: str | None = None) -> RefLayout:
    """Parse the api.md tag notation (``NCHW4c``, ``NHWC4h4w32c2h2w``, ...)."""
    pos = 0
    outer_letters: list[str] = []
    block_tokens: list[tuple[str, int]] = []
    while pos < len(tag):
        m = _TOKEN.match(tag, pos)
        if m is None:
            raise ValueError(f"bad character {tag[pos]!r} at position {pos} in {tag!r}")
        tok = m.group()
        if tok.isupper():
            if block_tokens:
                raise ValueError(f"upper-case {tok!r} after a block in {tag!r}")
            if tok in outer_letters:
                raise ValueError(f"duplicate {tok!r} in {tag!r}")
            outer_letters.append(tok)
        else:
            size = int(tok[:-1])
            if size <= 0:
                raise ValueError(f"block size {size} in {tag!r}")
            block_tokens.append((tok[-1].upper(), size))
        pos = m.end()
    if dims is None:
        dims = "".join(outer_letters)
    if sorted(dims) != sorted(outer_letters) or len(set(dims)) != len(dims):
        raise ValueError(f"tag {tag!r} does not name every dim of {dims!r} exactly once")
    for letter, _ in block_tokens:
        if letter not in dims:
            raise ValueError(f"block of unknown dim {letter!r} in {tag!r}")
    return RefLayout(
        rank=len(dims),
        dims=dims,
        outer=tuple(dims.index(c) for c in outer_letters),
        blocks=tuple((dims.index(c), s) for c, s in block_tokens),
    )


def _strip_comments(s: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", s, flags=re.S)


def parse_chunked(text: str, dims: str | None = None) -> RefLayout:
    """Parse ``ChunkedMemoryLayout<R, d,s, ...>`` / ``FlatMemoryLayout<R>`` (§1.2)."""
    s = "".join(_strip_comments(text).split())
    m = re.fullmatch(r"(ChunkedMemoryLayout|FlatMemoryLayout)<([0-9,]*)>", s)
    if m is None:
        raise ValueError(f"not a layout string: {text!r}")
    nums = [int(t) for t in m.group(2).split(",")]
    rank, rest = nums[0], nums[1:]
    if m.group(1) == "FlatMemoryLayout":
        if rest:
            raise ValueError("FlatMemoryLayout takes only a rank")
        pairs = [(d, 0) for d in range(rank)]
    else:
        if len(rest) % 2:
            raise ValueError("odd number of pair parameters")
        pairs = list(zip(rest[0::2], rest[1::2], strict=True))
    if dims is None:
        dims = {4: "NHWC"}.get(rank)
        if dims is None:
            raise ValueError(f"no default dims for rank {rank}")
    assert len(dims) == rank
    for d, _ in pairs:
        assert 0 <= d < rank
    outer = tuple(d for d, s in pairs if s == 0)
    blocks = tuple((d, s) for d, s in pairs if s > 0)
    assert sorted(outer) == list(range(rank)), "outer order must be a permutation"
    return RefLayout(rank=rank, dims=dims, outer=outer, blocks=blocks)


def as_layout(spec, dims: str | None = None, left_pad=None) -> RefLayout:
    if isinstance(spec, RefLayout):
        lay = spec
        if dims is not None:
            assert dims == lay.dims
    elif "<" in spec:
        lay = parse_chunked(spec, dims)
    else:
        lay = parse_tag(spec, dims)
    if left_pad is not None:
        lay = lay.with_left_pad(left_pad)
    return lay


# ---- shapes -----------------------------------------------------------------------


def ref_padded_shape(spec, dims=None, shape=(), left_pad=None) -> tuple[int, ...]:
    lay = as_layout(spec, dims, left_pad)
    assert len(shape) == lay.rank
    lp = lay.lpad()
    return tuple(-(-(shape[d] + lp[d]) // lay.cs(d)) * lay.cs(d) for d in range(lay.rank))


def ref_physical_shape(spec, dims=None, shape=(), left_pad=None) -> tuple[int, ...]:
    lay = as_layout(spec, dims, left_pad)
    M = ref_padded_shape(lay, None, shape)
    return tuple(M[d] // lay.cs(d) for d in lay.outer) + tuple(s for _, s in lay.blocks)


def ref_size(spec, dims=None, shape=(), left_pad=None) -> int:
    return math.prod(ref_padded_shape(spec, dims, shape, left_pad))


# ---- index -> offset (§1.3, the SDK algorithm) -------------------------------------


def ref_chunk_index(spec, dims=None, shape=(), index=(), left_pad=None) -> tuple[int, int]:
    """``(chunk_index, chunk_offset)`` of a logical index, by §1.3 literally."""
    lay = as_layout(spec, dims, left_pad)
    R = lay.rank
    assert len(shape) == R and len(index) == R
    for d in range(R):
        if not 0 <= index[d] < shape[d]:
            raise IndexError(f"index {index} out of range for shape {shape}")
    lp = lay.lpad()
    p = [index[d] + lp[d] for d in range(R)]
    M = ref_padded_shape(lay, None, shape)
    K = lay.blocks

    off = 0
    for j, (d, s) in enumerate(K):
        inner = math.prod(s2 for d2, s2 in K[j + 1 :] if d2 == d)
        smaller = math.prod(s2 for _, s2 in K[j + 1 :])
        off += ((p[d] // inner) % s) * smaller

    idx = 0
    for d in lay.outer:
        idx = idx * (M[d] // lay.cs(d)) + p[d] // lay.cs(d)
    return idx, off


def ref_offset(spec, dims=None, shape=(), index=(), left_pad=None) -> int:
    """Element offset: ``chunk_index * chunk_total + chunk_offset``."""
    lay = as_layout(spec, dims, left_pad)
    block, off = ref_chunk_index(lay, None, shape, index)
    return block * lay.chunk_total + off


def ref_chunk_start(spec, dims=None, shape=(), index=(), left_pad=None) -> int:
    lay = as_layout(spec, dims, left_pad)
    block, _ = ref_chunk_index(lay, None, shape, index)
    return block * lay.chunk_total


def ref_index(spec, dims=None, shape=(), offset=0, left_pad=None):
    """Inverse of :func:`ref_offset` (§1.3 "Inverse"); None on padding slots."""
    lay = as_layout(spec, dims, left_pad)
    R = lay.rank
    M = ref_padded_shape(lay, None, shape)
    total = math.prod(M)
    if not 0 <= offset < total:
        raise IndexError(f"offset {offset} out of range [0, {total})")
    ct = lay.chunk_total
    block, off = divmod(offset, ct)
    K = lay.blocks
    low = [0] * R
    for j, (d, s) in enumerate(K):
        inner = math.prod(s2 for d2, s2 in K[j + 1 :] if d2 == d)
        smaller = math.prod(s2 for _, s2 in K[j + 1 :])
        low[d] += ((off // smaller) % s) * inner
    high = [0] * R
    for d in reversed(lay.outer):
        n = M[d] // lay.cs(d)
        block, high[d] = divmod(block, n)
    assert block == 0
    lp = lay.lpad()
    c = [high[d] * lay.cs(d) + low[d] - lp[d] for d in range(R)]
    if any(not 0 <= c[d] < shape[d] for d in range(R)):
        return None
    return tuple(c)


# ---- pack / unpack: pad -> reshape -> transpose ------------------------------------


def _split_plan(lay: RefLayout, M):
    """Reshape extents (each dim split into outer + its blocks) and the permutation."""
    ext: list[int] = []
    axis_of_outer: dict[int, int] = {}
    axis_of_block: dict[int, int] = {}
    for d in range(lay.rank):
        axis_of_outer[d] = len(ext)
        ext.append(M[d] // lay.cs(d))
        for j, (dd, s) in enumerate(lay.blocks):
            if dd == d:
                axis_of_block[j] = len(ext)
                ext.append(s)
    perm = [axis_of_outer[d] for d in lay.outer] + [
        axis_of_block[j] for j in range(len(lay.blocks))
    ]
    return ext, perm


def _bytes_of(x: np.ndarray) -> np.ndarray:
    """A C-contiguous uint8 array of shape ``x.shape + (itemsize,)`` with x's bytes."""
    x = np.ascontiguousarray(x)
    return x.view(np.uint8).reshape((*x.shape, x.dtype.itemsize))


def _pad_bytes(pad_value, dt: np.dtype) -> np.ndarray:
    """The bytes of ``pad_value`` as one element of ``dt`` (0 is all-zero bytes)."""
    if isinstance(pad_value, int) and not isinstance(pad_value, bool) and pad_value == 0:
        return np.zeros(dt.itemsize, np.uint8)
    return np.frombuffer(np.array(pad_value, dtype=dt).tobytes(), np.uint8).copy()


def ref_pack(x, spec, dims=None, pad_value=0, left_pad=None) -> np.ndarray:
    """pad -> reshape -> transpose -> ascontiguousarray, byte exact for any dtype."""
    lay = as_layout(spec, dims, left_pad)
    x = np.asarray(x)
    assert x.ndim == lay.rank
    dt = x.dtype
    M = ref_padded_shape(lay, None, x.shape)
    lp = lay.lpad()
    pad_bytes = _pad_bytes(pad_value, dt)
    xb = _bytes_of(x)
    if np.all(pad_bytes == pad_bytes[0]):
        widths = [(lp[d], M[d] - x.shape[d] - lp[d]) for d in range(lay.rank)] + [(0, 0)]
        padded = np.pad(xb, widths, mode="constant", constant_values=pad_bytes[0])
    else:
        padded = np.empty((*M, dt.itemsize), np.uint8)
        padded[...] = pad_bytes
        padded[tuple(slice(lp[d], lp[d] + x.shape[d]) for d in range(lay.rank))] = xb
    ext, perm = _split_plan(lay, M)
    split = padded.reshape((*ext, dt.itemsize))
    moved = np.ascontiguousarray(split.transpose((*perm, len(ext))))
    phys = ref_physical_shape(lay, None, x.shape)
    return moved.view(dt).reshape(phys)


def ref_unpack(buf, spec, dims=None, shape=(), left_pad=None) -> np.ndarray:
    """The logical array held by ``buf`` (``ref_size`` elements in layout order)."""
    lay = as_layout(spec, dims, left_pad)
    buf = np.asarray(buf)
    dt = buf.dtype
    M = ref_padded_shape(lay, None, shape)
    assert buf.size == math.prod(M)
    ext, perm = _split_plan(lay, M)
    moved = _bytes_of(buf.reshape(-1)).reshape((*[ext[a] for a in perm], dt.itemsize))
    inv = np.argsort(perm)
    split = moved.transpose((*inv, len(ext)))
    padded = split.reshape((*M, dt.itemsize))
    lp = lay.lpad()
    sl = tuple(slice(lp[d], lp[d] + shape[d]) for d in range(lay.rank))
    return np.ascontiguousarray(padded[sl]).view(dt).reshape(tuple(shape))
