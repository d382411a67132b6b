"""Qualcomm QNN HTP memory layouts: presets, template strings, block tables.

HTP describes layouts with ``ChunkedMemoryLayout<R, d,s, ...>``: size-0 pairs
give the order of the chunks (most major first), the other pairs the inside of
one chunk. :func:`layout` turns an SDK preset name or a literal template (with
whitespace and ``/* comments */``, as in the SDK headers) into a
:class:`layoutkit.Layout`; rank-4 tensors use HTP's ``NHWC`` dims unless told.

Presets follow the SDK parameters literally. Note that ``R4NCHWMemoryLayout``
(``<4, 0,0, 3,0, 2,0, 1,0>``) therefore stores N, C, **W, H** with H fastest;
true NCHW storage is the tag ``NCHW`` (or ``NCHWStorage`` here).

Layout padding (rounding each dim up to its chunk size) is filled with the
caller's ``pad_value`` (default 0) so results are deterministic; real HTP leaves
it undefined ("garbage"), so consumers must not rely on it. Padding that means
something to an op (a convolution halo) must be the quantized zero, i.e. the
tensor's zero point: pass it as ``pad_value``.

Examples
--------
>>> import numpy as np, layoutkit as lk
>>> L = lk.htp.layout("R4CroutonLayout")
>>> str(L), L.to_chunked()
('NHWC8h8w32c', 'ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>')
>>> L.offset((1, 3, 5, 30), (0, 2, 4, 29))
669
>>> lk.htp.chunk_index(L, (2, 9, 20, 50), (1, 5, 13, 40))
(15, 1448)
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from . import _notation
from ._errors import LayoutError
from .layout import Layout, as_dtype

__all__ = [
    "PRESETS",
    "Preset",
    "QnnTensorDataFormat",
    "chunk_bytes",
    "chunk_index",
    "chunk_start",
    "layout",
    "pack_blocks",
    "preset",
    "unpack_blocks",
]


@dataclass(frozen=True)
class Preset:
    """An SDK layout: its template parameters and what the SDK pairs it with."""

    name: str
    template: str
    dims: str = "NHWC"
    element_sizes: tuple[int, ...] = ()  # SDK dtype pairings by element size; () = any
    indirect_ranks: int | None = None  # IChunkedMemoryLayout: dims that index the block table
    note: str = ""


def _p(
    name: str,
    params: str,
    sizes: tuple[int, ...] = (),
    dims: str = "NHWC",
    note: str = "",
    indirect: int | None = None,
    rank: int = 4,
) -> Preset:
    return Preset(name, f"ChunkedMemoryLayout<{rank}, {params}>", dims, sizes, indirect, note)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "R4FlatMemoryLayout",
            "FlatMemoryLayout<4>",
            "NHWC",
            (1, 2, 4, 8),
            None,
            "plain row-major NHWC",
        ),
        _p(
            "R4NCHWMemoryLayout",
            "0,0, 3,0, 2,0, 1,0",
            note="SDK parameters taken literally: memory order N, C, W, H (H fastest)",
        ),
        _p(
            "NCHWStorage",
            "0,0, 3,0, 1,0, 2,0",
            note="true N, C, H, W storage of an NHWC tensor (the seed's prose example)",
        ),
        _p(
            "R4Depth32MemoryLayout",
            "0,0, 1,0, 3,0, 2,0, 2,4, 3,32",
            note="Hexagon NN d32: [n][h][d/32][w/4][w%4][d%32]; marked unused in current SDKs",
        ),
        _p(
            "R4CroutonLayout",
            "0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32",
            (1,),
            note="8x8x32 chunks: 2048 B for 8-bit data",
        ),
        _p("R4Crouton4x1Layout", "0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32, 2,4", (1,)),
        _p("R4Crouton2x2Layout", "0,0, 1,0, 2,0, 3,0, 1,4, 2,4, 3,32, 1,2, 2,2", (1,)),
        _p(
            "R4Crouton2Layout",
            "0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32, 2,2",
            (2,),
            note="8x4x32 chunks: 2048 B for 16-bit data",
        ),
        _p(
            "R4Crouton4Layout",
            "0,0, 1,0, 2,0, 3,0, 1,8, 2,2, 3,32",
            (4,),
            note="8x2x32 chunks: 2048 B for 32-bit data",
        ),
        _p("R4WideCroutonLayout", "0,0, 1,0, 2,0, 3,0, 1,2, 2,32, 3,32", (1,)),
        _p("R4WideCrouton2x2Layout", "0,0, 1,0, 2,0, 3,0, 2,16, 3,32, 1,2, 2,2", (1,)),
        _p("R4WideCrouton4Layout", "0,0, 1,0, 2,0, 3,0, 1,2, 2,8, 3,32", (4,)),
        _p(
            "R4DeepAR4_16bLayout",
            "0,0, 1,0, 2,0, 3,0, 2,2, 3,32, 2,2",
            (2,),
            indirect=3,
            note="IChunkedMemoryLayout<4,3,...>: one block holds every depth chunk of a 1x4 strip",
        ),
        _p(
            "R4DeepAR8_16bLayout",
            "0,0, 1,0, 2,0, 3,0, 2,4, 3,32, 2,2",
            (2,),
            indirect=3,
            note="IChunkedMemoryLayout<4,3,...>: one block holds every depth chunk of a 1x8 strip",
        ),
        _p(
            "ConvWeightLayout",
            "3,0, 2,0, 0,0, 1,0, 2,8, 3,32, 2,4",
            dims="HWIO",
            note="the seed's convolution weight layout over (filter H, filter W, Cin, Cout)",
        ),
        _p("R4Weights8x4Layout", "0,0, 1,0, 3,0, 2,0, 0,8, 1,4, 2,16, 3,32, 2,2", dims="HWIO"),
        _p(
            "R5CroutonLayout", "0,0, 1,0, 2,0, 3,0, 4,0, 2,8, 3,8, 4,32", (1,), dims="NDHWC", rank=5
        ),
    ]
}

# The struct names used in seed 000's listing. SpatialXMajor is printed there with
# ``1,4`` against its own "8 high" comment; the SDK's R4Crouton4x1Layout uses 1,8.
ALIASES = {
    "FlatMemoryLayout": "R4FlatMemoryLayout",
    "ChannelMajorCrouton": "R4CroutonLayout",
    "SpatialXYMajor": "R4Crouton2x2Layout",
    "SpatialXMajor": "R4Crouton4x1Layout",
    "R4ConvWeightLayout": "ConvWeightLayout",
}


class QnnTensorDataFormat(IntEnum):
    """``Qnn_TensorDataFormat_t`` values from ``QnnTypes.h`` (what QNN clients see)."""

    DENSE = 0  # alias FLAT_BUFFER
    SPARSE = 1
    CODEBOOK = 2
    MX = 3
    UBWC_RGBA8888 = 4
    UBWC_NV12 = 5
    UBWC_NV12_Y = 6
    UBWC_NV12_UV = 7
    HMX_WEIGHT_LAYOUT = 8
    UBWC_NV124R = 9
    UBWC_NV124R_Y = 10
    UBWC_NV124R_UV = 11


def preset(name: str) -> Preset:
    """The :class:`Preset` called ``name`` (SDK name or a seed struct alias)."""
    key = ALIASES.get(name, name)
    if key not in PRESETS:
        close = difflib.get_close_matches(name, [*PRESETS, *ALIASES], n=1)
        hint = (
            f"; did you mean {close[0]!r}?" if close else f"; known presets: {', '.join(PRESETS)}"
        )
        raise LayoutError(f"spec={name!r} is not an HTP preset{hint}")
    return PRESETS[key]


def layout(
    spec: str,
    dims: str | None = None,
    strict: bool = False,
    left_pad: Sequence[int] | None = None,
    dtype: Any = None,
) -> Layout:
    """An HTP layout from a preset name or a literal template string.

    Parameters
    ----------
    spec : str
        A preset name (``"R4CroutonLayout"``, see :data:`PRESETS`), a literal
        ``ChunkedMemoryLayout<...>`` / ``IChunkedMemoryLayout<...>`` /
        ``FlatMemoryLayout<R>`` (comments and whitespace allowed), or a tag.
    dims : str, optional
        Logical dims; ``"NHWC"`` for rank 4 (``"HWIO"`` for the weight presets).
    strict : bool
        Apply the SDK's rules: power-of-two chunk sizes, every size-0 pair
        before the chunk pairs, and for presets the SDK's element-size pairing
        (the returned layout then refuses other dtypes in pack/unpack/convert).
    left_pad : sequence of int, optional
        HTP ``Padding`` before the first element of each dim (croutons).
    dtype : numpy dtype, optional
        With ``strict=True``, checked at once against the element sizes the SDK
        pairs with the preset (e.g. 2 bytes for ``R4Crouton2Layout``).

    Returns
    -------
    Layout
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec: expected a preset name or layout string, got {type(spec).__name__}")
    name = spec.strip()
    chosen: Preset | None = None
    if name in PRESETS or name in ALIASES:
        chosen = preset(name)
        text = chosen.template
        parsed = _notation.parse_template(text, strict=strict)
        default_dims = chosen.dims
    elif _notation.looks_like_template(spec):
        parsed = _notation.parse_template(spec, strict=strict)
        text = spec
        default_dims = _notation.default_dims(parsed.rank)
    else:
        # A tag such as NHWC8h8w32c, or a misspelled preset name.
        try:
            result = Layout(name, dims=dims, left_pad=left_pad)
        except LayoutError as exc:
            close = difflib.get_close_matches(name, [*PRESETS, *ALIASES], n=1)
            if close:
                raise LayoutError(
                    f"spec={spec!r} is not an HTP preset; did you mean {close[0]!r}?"
                ) from None
            raise LayoutError(
                f"spec={spec!r} is neither an HTP preset ({', '.join(PRESETS)}), "
                f"a ChunkedMemoryLayout<...> string nor a valid tag: {exc}"
            ) from None
        if strict:
            for _, s in result.blocks:
                if s & (s - 1):
                    raise LayoutError(
                        f"spec={spec!r}: block size {s} is not a power of two (strict=True)"
                    )
        return result
    pairing = (
        chosen.element_sizes if (strict and chosen is not None and chosen.element_sizes) else None
    )
    if (
        chosen is not None
        and pairing is not None
        and dtype is not None
        and as_dtype(dtype).itemsize not in pairing
    ):
        raise LayoutError(
            f"dtype {np.dtype(dtype)} ({np.dtype(dtype).itemsize} B) is not paired with {chosen.name} "
            f"by the SDK; it expects elements of {' or '.join(map(str, pairing))} B (strict=True)"
        )
    result = Layout(
        _tag_from_parsed(parsed, dims or default_dims),
        dims=dims or default_dims,
        left_pad=left_pad,
        element_sizes=pairing,
    )
    indirect = chosen.indirect_ranks if chosen is not None else parsed.indirect_ranks
    if indirect is not None and indirect < parsed.rank:
        # Remembered for the block-table helpers (IChunkedMemoryLayout<R, IndirRanks, ...>).
        result.htp_indirect_ranks = indirect  # type: ignore[attr-defined]
    return result


def _tag_from_parsed(parsed: _notation.ParsedLayout, dims: str) -> str:
    if len(dims) != parsed.rank:
        raise LayoutError(
            f"dims={dims!r} names {len(dims)} dims but the layout has rank {parsed.rank}"
        )
    tag = "".join(dims[d] for d in parsed.outer)
    return tag + "".join(f"{s}{dims[d].lower()}" for d, s in parsed.blocks)


def chunk_index(layout: Layout, shape: Sequence[int], index: Sequence[int]) -> tuple[int, int]:
    """``(block, offset_in_block)`` of a logical index: its block-table entry and position."""
    off = layout.offset(shape, index)
    n = layout.chunk_elements
    return off // n, off % n


def chunk_start(layout: Layout, shape: Sequence[int], index: Sequence[int]) -> int:
    """Element offset of the first element of the chunk holding ``index``.

    This is what the SDK's ``get_raw(first element's idx in chunk)`` returns
    (relative to contiguous storage in block-table order).
    """
    block, _ = chunk_index(layout, shape, index)
    return block * layout.chunk_elements


def chunk_bytes(layout: Layout, dtype: Any) -> int:
    """Bytes per chunk for ``dtype`` (2048 for the SDK's crouton pairings)."""
    return layout.chunk_elements * as_dtype(dtype).itemsize


def _alignment(nbytes: int) -> int:
    """The largest power of two dividing ``nbytes`` (capped at 1 MiB)."""
    return min(nbytes & -nbytes, 1 << 20) if nbytes else 1


def _aligned_empty(nbytes: int, alignment: int) -> np.ndarray:
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + nbytes]


def _block_elements(layout: Layout, shape: tuple[int, ...], indirect_ranks: int | None) -> int:
    if indirect_ranks is None:
        indirect_ranks = getattr(layout, "htp_indirect_ranks", None)
    if indirect_ranks is None or indirect_ranks >= layout.rank:
        return layout.chunk_elements
    folded = [d for d in layout.outer if d >= indirect_ranks]
    if tuple(layout.outer[len(layout.outer) - len(folded) :]) != tuple(folded):
        raise LayoutError(
            f"indirect_ranks={indirect_ranks}: the folded dims {folded} must be the last outer dims of {layout}"
        )
    padded = layout.padded_shape(shape)
    cs = layout.block_product
    return layout.chunk_elements * math.prod(padded[d] // cs[d] for d in folded)


def pack_blocks(
    x: Any,
    layout: Layout,
    pad_value: Any = 0,
    indirect_ranks: int | None = None,
) -> list[np.ndarray]:
    """Pack ``x`` and hand the chunks out as a block table.

    Returns one 1-D array per block-table entry, in block-table order. Each is a
    view of a single allocation in which block ``k`` starts at
    ``k * block_bytes``; the allocation is aligned so every block starts at a
    multiple of its byte size (the largest power of two dividing it), e.g. 2048 B
    for the SDK croutons. ``indirect_ranks`` groups chunks as an
    ``IChunkedMemoryLayout<R, indirect_ranks, ...>`` does (dims ``>= indirect_ranks``
    fold into one block); it defaults to the IndirRanks of the preset or template
    the layout came from (3 for ``R4DeepAR4_16bLayout``).
    """
    arr = np.asarray(x)
    if arr.ndim != layout.rank:
        raise LayoutError(f"x has {arr.ndim} dims but layout {layout} has rank {layout.rank}")
    shape = tuple(arr.shape)
    per_block = _block_elements(layout, shape, indirect_ranks)
    total = layout.size(shape)
    itemsize = arr.dtype.itemsize
    nbytes = per_block * itemsize
    buf = _aligned_empty(total * itemsize, _alignment(nbytes)).view(arr.dtype)
    layout.pack(arr, pad_value=pad_value, out=buf)
    return [
        buf[k * per_block : (k + 1) * per_block]
        for k in range(total // per_block if per_block else 0)
    ]


def unpack_blocks(
    blocks: Sequence[Any],
    layout: Layout,
    shape: Sequence[int],
    indirect_ranks: int | None = None,
    check_alignment: bool = False,
) -> np.ndarray:
    """The logical tensor of ``shape`` from a block table (separate buffers allowed).

    With ``check_alignment=True`` every block must start at a multiple of its
    byte size (the largest power of two dividing it), as HTP allocates them.
    """
    sh = layout.check_shape(shape)
    per_block = _block_elements(layout, sh, indirect_ranks)
    total = layout.size(sh)
    expected = total // per_block if per_block else 0
    if len(blocks) != expected:
        raise LayoutError(
            f"blocks: got {len(blocks)} blocks, layout {layout} of shape {sh} has {expected}"
        )
    arrays = [np.asarray(b) for b in blocks]
    dtype = arrays[0].dtype if arrays else np.dtype(np.uint8)
    for k, b in enumerate(arrays):
        if b.dtype != dtype:
            raise LayoutError(f"blocks[{k}]: dtype {b.dtype}, expected {dtype} like blocks[0]")
        if b.size != per_block:
            raise LayoutError(f"blocks[{k}]: holds {b.size} elements, expected {per_block}")
        if check_alignment:
            align = _alignment(per_block * dtype.itemsize)
            if b.ctypes.data % align:
                raise LayoutError(
                    f"blocks[{k}]: starts at {b.ctypes.data:#x}, not aligned to {align} bytes"
                )
    flat = np.concatenate([b.reshape(-1) for b in arrays]) if arrays else np.empty(0, dtype)
    return layout.unpack(flat, sh)
