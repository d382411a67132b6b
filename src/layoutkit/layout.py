"""The layout model: a logical tensor split into outer parts and inner blocks.

A :class:`Layout` says where every element of a logical tensor lives in a
packed buffer. Each logical dim ``d`` is padded to a multiple of the product of
its blocks ``CS[d]`` (after an optional left pad), then cut into an outer part
(``p // CS[d]``) and one digit per block. The packed buffer is the C-ordered
array whose axes are the outer parts in tag order followed by the blocks in tag
order, so a physical position is a mixed-radix number and an element offset is
a dot product of digits with the physical strides. This is exactly the Qualcomm
``ChunkedMemoryLayout`` math (outer order = size-0 pairs, chunk = the rest), and
it covers NCHW/NHWC, NCHWxc, croutons, HCWNCx, TensorRT vector formats and more.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

import numpy as np

from . import _notation
from ._errors import LayoutError
from ._repack import exact_shape
from ._repack import repeated_calls as _REPEATS

__all__ = ["Digit", "Layout", "as_layout"]


class Digit(NamedTuple):
    """One physical axis of a layout, in memory order.

    ``weight`` is the value of one step of this axis in the padded coordinate
    of logical dim ``dim``; ``extent`` is None for an outer part (its extent
    depends on the shape) and the block size otherwise.
    """

    dim: int
    weight: int
    extent: int | None


def _check_dims(dims: Any, letters: str | None, rank: int, spec: str) -> str:
    if not isinstance(dims, str):
        raise TypeError(f"dims: expected a str such as 'NCHW', got {type(dims).__name__}")
    if len(dims) != rank:
        raise LayoutError(
            f"dims={dims!r} names {len(dims)} dims but layout {spec!r} has rank {rank}"
        )
    for k, ch in enumerate(dims):
        if not (ch.isascii() and ch.isupper()):
            raise LayoutError(
                f"dims={dims!r}: {ch!r} at position {k} is not an upper-case letter A-Z"
            )
        if dims.index(ch) != k:
            raise LayoutError(f"dims={dims!r}: {ch!r} appears twice")
    if letters is not None and sorted(dims) != sorted(letters):
        raise LayoutError(
            f"dims={dims!r} must be a permutation of the tag's upper-case dims {letters!r} "
            f"(layout {spec!r})"
        )
    return dims


class Layout:
    """A memory layout of a logical tensor, independent of its shape.

    Parameters
    ----------
    spec : str or Layout
        Tag notation (``"NCHW"``, ``"NCHW4c"``, ``"NHWC8h8w32c"``, ``"HCWN4c"``) or
        an HTP template string (``"ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>"``,
        ``"FlatMemoryLayout<4>"``).
    dims : str, optional
        The logical dims in logical order. Defaults to the tag's upper-case
        letters in order of appearance, or ``"NHWC"`` for a rank-4 template.
    left_pad : sequence of int, optional
        Padding before the first element of each dim (HTP's crouton
        ``Padding``); shifts every coordinate and enlarges the padded shape.
    element_sizes : sequence of int, optional
        If given, pack/unpack/convert accept only dtypes of these sizes in
        bytes (a vendor's pairing rule, e.g. 1 for HTP's 8-bit croutons).
        Not part of equality: it constrains use, not geometry.

    Examples
    --------
    >>> import layoutkit as lk
    >>> L = lk.Layout("NCHW4c")
    >>> L.physical_shape((1, 3, 2, 2))
    (1, 1, 2, 2, 4)
    >>> L.offset((1, 3, 2, 2), (0, 2, 1, 0))
    10
    >>> lk.Layout("HCWN4c", dims="NCHW").padded_shape((1, 3, 2, 2))
    (1, 4, 2, 2)
    """

    __slots__ = ("__dict__", "_blocks", "_dims", "_element_sizes", "_left_pad", "_outer", "_rank")
    _dims: str
    _rank: int
    _outer: tuple[int, ...]
    _blocks: tuple[tuple[int, int], ...]
    _left_pad: tuple[int, ...]
    _element_sizes: tuple[int, ...] | None

    def __init__(
        self,
        spec: str | Layout,
        dims: str | None = None,
        left_pad: Sequence[int] | None = None,
        element_sizes: Sequence[int] | None = None,
    ) -> None:
        if isinstance(spec, Layout):
            parsed = _notation.ParsedLayout(spec._dims, spec._rank, spec._outer, spec._blocks)
            letters: str | None = spec._dims
            if left_pad is None:
                left_pad = spec._left_pad
            spec_text = str(spec)
        elif isinstance(spec, str):
            spec_text = spec
            if _notation.looks_like_template(spec):
                parsed = _notation.parse_template(spec)
                letters = None
            else:
                parsed = _notation.parse_tag(spec.strip())
                letters = parsed.letters
        else:
            raise TypeError(f"spec: expected a layout string or Layout, got {type(spec).__name__}")

        rank = parsed.rank
        if dims is None:
            dims = letters if letters is not None else _notation.default_dims(rank)
        dims = _check_dims(dims, letters, rank, spec_text)
        if letters is not None:
            # Tag letters index dims by name; templates index them by position.
            to_logical = [dims.index(ch) for ch in letters]
            outer = tuple(to_logical[k] for k in parsed.outer)
            blocks = tuple((to_logical[d], s) for d, s in parsed.blocks)
        else:
            outer, blocks = parsed.outer, parsed.blocks

        if left_pad is None:
            lp: tuple[int, ...] = (0,) * rank
        else:
            lp = _int_tuple(left_pad, "left_pad")
            if len(lp) != rank:
                raise LayoutError(
                    f"left_pad={lp} has {len(lp)} entries but the layout has rank {rank}"
                )
            for d, v in enumerate(lp):
                if v < 0:
                    raise LayoutError(
                        f"left_pad={lp}: entry {d} (dim {dims[d]!r}) is {v}; expected >= 0"
                    )

        self._dims = dims
        self._rank = rank
        self._outer = outer
        self._blocks = blocks
        self._left_pad = lp
        self._element_sizes = (
            None if element_sizes is None else _int_tuple(element_sizes, "element_sizes")
        )

    # -- identity ----------------------------------------------------------

    @property
    def dims(self) -> str:
        """The logical dims in logical order, e.g. ``"NCHW"``."""
        return self._dims

    @property
    def rank(self) -> int:
        """The number of logical dims."""
        return self._rank

    @property
    def outer(self) -> tuple[int, ...]:
        """Logical dim indices of the outer parts, most major first."""
        return self._outer

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """``(dim index, size)`` of every inner block, most major first."""
        return self._blocks

    @property
    def left_pad(self) -> tuple[int, ...]:
        """Padding before the first element of each logical dim."""
        return self._left_pad

    @property
    def element_sizes(self) -> tuple[int, ...] | None:
        """Element sizes (bytes) this layout accepts, or None for any."""
        return self._element_sizes

    def check_dtype(self, dtype: Any, name: str = "dtype") -> None:
        """Raise LayoutError if ``dtype``'s size is not one of :attr:`element_sizes`."""
        if self._element_sizes is None:
            return
        dt = as_dtype(dtype, name)
        if dt.itemsize not in self._element_sizes:
            sizes = " or ".join(f"{s} B" for s in self._element_sizes)
            raise LayoutError(
                f"{name} {dt} has {dt.itemsize}-byte elements but layout {self} accepts {sizes} elements"
            )

    @cached_property
    def block_product(self) -> tuple[int, ...]:
        """``CS[d]``: the product of the block sizes of each dim (1 if none)."""
        cs = [1] * self._rank
        for d, s in self._blocks:
            cs[d] *= s
        return tuple(cs)

    @cached_property
    def chunk_elements(self) -> int:
        """Elements per chunk: the product of all block sizes."""
        return math.prod(s for _, s in self._blocks)

    @cached_property
    def digits(self) -> tuple[Digit, ...]:
        """The physical axes in memory order (outer parts, then blocks)."""
        out = [Digit(d, self.block_product[d], None) for d in self._outer]
        remaining = list(self.block_product)
        for d, s in self._blocks:
            remaining[d] //= s
            out.append(Digit(d, remaining[d], s))
        return tuple(out)

    def __str__(self) -> str:
        tag = "".join(self._dims[d] for d in self._outer)
        return tag + "".join(f"{s}{self._dims[d].lower()}" for d, s in self._blocks)

    def __repr__(self) -> str:
        extra = ""
        if self._dims != "".join(self._dims[d] for d in self._outer):
            extra += f", dims={self._dims!r}"
        if any(self._left_pad):
            extra += f", left_pad={self._left_pad}"
        return f"Layout({str(self)!r}{extra})"

    @cached_property
    def _key(self) -> tuple[Any, ...]:
        return (self._dims, self._outer, self._blocks, self._left_pad)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        # Hashed on every conversion (the plan cache key): computed once.
        return hash(self._key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Layout, (str(self), self._dims, self._left_pad))

    def to_chunked(self) -> str:
        """The HTP spelling, e.g. ``ChunkedMemoryLayout<4, 0,0, 1,0, 2,0, 3,0, 1,8, 2,8, 3,32>``.

        Dimensions are numbered by position in :attr:`dims`.
        """
        pairs = [f"{d},0" for d in self._outer] + [f"{d},{s}" for d, s in self._blocks]
        return f"ChunkedMemoryLayout<{self._rank}, {', '.join(pairs)}>"

    def is_identity(self) -> bool:
        """True when the packed buffer is the plain C-ordered logical tensor."""
        return (
            self._outer == tuple(range(self._rank))
            and all(s == 1 for _, s in self._blocks)
            and not any(self._left_pad)
        )

    # -- shape-bound geometry -------------------------------------------------

    def check_shape(self, shape: Any, name: str = "shape") -> tuple[int, ...]:
        """Validate a logical shape for this layout and return it as a tuple of ints."""
        geometry = self._geometry_cache.get(shape) if exact_shape(shape) else None
        if geometry is not None:
            return shape  # type: ignore[no-any-return,unused-ignore]
        sh = _int_tuple(shape, name)
        if len(sh) != self._rank:
            raise LayoutError(
                f"{name}={sh} has {len(sh)} dims but layout {self} (dims {self._dims!r}) has rank {self._rank}"
            )
        for d, v in enumerate(sh):
            if v < 0:
                raise LayoutError(
                    f"{name}={sh}: extent of dim {self._dims[d]!r} is {v}; expected >= 0"
                )
        return sh

    @cached_property
    def _geometry_cache(self) -> dict[tuple[int, ...], tuple[tuple[int, ...], tuple[int, ...]]]:
        return {}

    def _geometry(self, shape: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(padded shape, physical shape) of a shape, validated once and cached."""
        cache = self._geometry_cache
        hit = cache.get(shape) if exact_shape(shape) else None
        if hit is not None:
            return hit
        sh = self.check_shape(shape)
        padded = tuple(
            _roundup(v + lp, cs) for v, lp, cs in zip(sh, self._left_pad, self.block_product)
        )
        cs = self.block_product
        phys = tuple(padded[d] // cs[d] for d in self._outer) + tuple(s for _, s in self._blocks)
        if len(cache) > 256:
            cache.clear()
        cache[sh] = (padded, phys)
        return padded, phys

    def padded_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The logical shape after padding (left pad plus round-up to the blocks)."""
        return self._geometry(shape)[0]

    def physical_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The packed buffer's shape in memory order: outer parts in tag order, then blocks."""
        return self._geometry(shape)[1]

    def size(self, shape: Sequence[int]) -> int:
        """Elements in the packed buffer, padding included."""
        return math.prod(self.physical_shape(shape))

    def num_chunks(self, shape: Sequence[int]) -> int:
        """Number of chunks (blocks of ``chunk_elements``) the padded tensor holds."""
        return self.size(shape) // self.chunk_elements if self.chunk_elements else 0

    def _physical_strides(self, shape: Sequence[int]) -> tuple[int, ...]:
        phys = self.physical_shape(shape)
        strides = [1] * len(phys)
        for k in range(len(phys) - 2, -1, -1):
            strides[k] = strides[k + 1] * phys[k + 1]
        return tuple(strides)

    def offset(self, shape: Sequence[int], index: Sequence[int]) -> int:
        """Element offset of a logical ``index`` in the packed buffer.

        Raises
        ------
        LayoutError
            If ``index`` has the wrong length or an entry outside ``[0, shape[d])``.
        """
        sh = self.check_shape(shape)
        idx = self._check_index(sh, index)
        strides = self._physical_strides(sh)
        p = [i + lp for i, lp in zip(idx, self._left_pad)]
        off = 0
        for (d, w, n), st in zip(self.digits, strides):
            digit = p[d] // w if n is None else (p[d] // w) % n
            off += digit * st
        return off

    def offsets(self, shape: Sequence[int], indices: Any) -> np.ndarray:
        """Element offsets of a ``(k, rank)`` array of logical indices (vectorized)."""
        from ._offsets import offsets_kernel

        sh = self.check_shape(shape)
        arr = np.asarray(indices)
        if arr.dtype.kind not in "iub" and arr.size:
            raise TypeError(f"indices: expected an integer array, got dtype {arr.dtype}")
        if arr.ndim == 1 and arr.shape[0] == self._rank and self._rank != 1:
            raise LayoutError(
                f"indices: expected a (k, {self._rank}) array, got shape {arr.shape}; "
                "use offset() for a single index or pass [index]"
            )
        if arr.ndim == 1 and self._rank == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2 or arr.shape[1] != self._rank:
            raise LayoutError(f"indices: expected a (k, {self._rank}) array, got shape {arr.shape}")
        total = self.size(sh)
        if total > _INT64_MAX:
            raise LayoutError(
                f"offsets: layout {self} of shape {sh} holds {total} elements, more than int64 "
                "offsets can address; use offset() (Python ints) for such shapes"
            )
        if arr.shape[0]:
            # Unsigned entries past int64 would wrap in the cast below: test them first.
            big = arr > _INT64_MAX if arr.dtype.kind == "u" else np.zeros(arr.shape, bool)
            low = np.ascontiguousarray(arr, dtype=np.int64)
            bad = big | (low < 0) | (low >= np.asarray(sh, dtype=np.int64))
            if bad.any():
                row, col = map(int, np.argwhere(bad)[0])
                raise LayoutError(
                    f"indices[{row}] = {tuple(int(v) for v in arr[row])} is out of range for shape {sh}: "
                    f"entry {col} (dim {self._dims[col]!r}) must lie in [0, {sh[col]})"
                )
        arr = np.ascontiguousarray(arr, dtype=np.int64)
        strides = self._physical_strides(sh)
        ddim, dweight, dmod, dstride = [], [], [], []
        for (d, w, n), st in zip(self.digits, strides):
            ddim.append(d)
            dweight.append(w)
            dmod.append(0 if n is None else n)
            dstride.append(st)
        out = np.empty(arr.shape[0], dtype=np.int64)
        offsets_kernel(
            arr,
            np.asarray(self._left_pad, dtype=np.int64),
            np.asarray(ddim, dtype=np.int64),
            np.asarray(dweight, dtype=np.int64),
            np.asarray(dmod, dtype=np.int64),
            np.asarray(dstride, dtype=np.int64),
            out,
        )
        return out

    def index(self, shape: Sequence[int], offset: int) -> tuple[int, ...] | None:
        """The logical index stored at element ``offset``, or None for a padding slot."""
        sh = self.check_shape(shape)
        total = self.size(sh)
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
            raise TypeError(f"offset: expected an int, got {type(offset).__name__}")
        off = int(offset)
        if not 0 <= off < total:
            raise LayoutError(
                f"offset={off} is out of range: layout {self} of shape {sh} holds {total} elements"
            )
        p = [0] * self._rank
        for (d, w, _), st, n in zip(
            self.digits, self._physical_strides(sh), self.physical_shape(sh)
        ):
            p[d] += ((off // st) % n) * w
        idx = tuple(v - lp for v, lp in zip(p, self._left_pad))
        if any(not 0 <= i < s for i, s in zip(idx, sh)):
            return None
        return idx

    def _check_index(self, shape: tuple[int, ...], index: Any) -> tuple[int, ...]:
        idx = _int_tuple(index, "index")
        if len(idx) != self._rank:
            raise LayoutError(
                f"index={idx} has {len(idx)} entries but layout {self} has rank {self._rank}"
            )
        for d, (i, s) in enumerate(zip(idx, shape)):
            if not 0 <= i < s:
                raise LayoutError(
                    f"index={idx}: entry {d} (dim {self._dims[d]!r}) is {i}; expected 0 <= {i} < {s} "
                    "(negative indices do not wrap around)"
                )
        return idx

    # -- data movement ----------------------------------------------------------

    def pack(
        self,
        x: Any,
        pad_value: Any = 0,
        out: np.ndarray | None = None,
        *,
        dtype: Any = None,
        scale: float | None = None,
        zero_point: int | None = None,
        threads: int | None = None,
    ) -> np.ndarray:
        """Pack a logical tensor into this layout.

        Parameters
        ----------
        x : array_like
            The logical tensor (any dtype, any strides).
        pad_value : scalar, optional
            Value written to every padding slot (default 0), in the output dtype.
        out : ndarray, optional
            A writeable C-contiguous array of the output dtype with ``size(x.shape)`` elements.
        dtype, scale, zero_point : optional
            Convert elements in the same pass: quantize (float -> int8/uint8/int16/uint16,
            ONNX QuantizeLinear), dequantize (integer -> float) or a float cast
            (float32/float16/bfloat16, round to nearest even). See :func:`layoutkit.convert`.
        threads : int, optional
            Threads to split the work over (default ``$LAYOUTKIT_NUM_THREADS`` or 1).

        Returns
        -------
        ndarray
            C-contiguous, of ``physical_shape(x.shape)``; x's dtype unless ``dtype`` is given.

        Examples
        --------
        >>> import numpy as np, layoutkit as lk
        >>> x = np.array([[[[0.5]], [[-1.0]], [[300.0]]]], dtype=np.float32)   # 1x3x1x1
        >>> lk.Layout("NCHW4c").pack(x, dtype=np.int8, scale=0.5).ravel().tolist()
        [1, -2, 127, 0]
        """

        # A repeat of a call already validated is recognised and run in C (_engine's _REPEATS).
        done = _REPEATS.run(x, (0, self, pad_value, dtype, scale, zero_point), out, threads)
        if done is not None:
            return done
        return _engine.pack(
            self,
            x,
            pad_value,
            out,
            dtype=dtype,
            scale=scale,
            zero_point=zero_point,
            threads=threads,
        )

    def unpack(
        self,
        buf: Any,
        shape: Sequence[int],
        out: np.ndarray | None = None,
        *,
        dtype: Any = None,
        scale: float | None = None,
        zero_point: int | None = None,
        threads: int | None = None,
    ) -> np.ndarray:
        """Unpack a buffer in this layout to the logical tensor of ``shape``.

        ``buf`` must hold exactly ``size(shape)`` elements (any shape; its dtype is
        the element type). ``dtype``/``scale``/``zero_point`` convert the elements
        in the same pass, as in :meth:`pack` (e.g. dequantize int8 to float32);
        ``threads`` splits the work as in :meth:`pack`.
        """

        if exact_shape(shape):
            done = _REPEATS.run(buf, (1, self, shape, dtype, scale, zero_point), out, threads)
            if done is not None:
                return done
        return _engine.unpack(
            self, buf, shape, out, dtype=dtype, scale=scale, zero_point=zero_point, threads=threads
        )


def as_layout(value: Any, name: str, dims: str | None = None) -> Layout:
    """Accept a Layout or a layout string (for arguments such as ``src``/``dst``)."""
    if isinstance(value, Layout):
        if dims is not None and value.dims != dims:
            raise LayoutError(
                f"{name}: layout {value!r} has dims {value.dims!r}, expected {dims!r}"
            )
        return value
    if isinstance(value, str):
        try:
            return _parse_cached(value, dims)
        except TypeError:  # unhashable never happens for str; keep the real error path
            return Layout(value, dims=dims)
    raise TypeError(f"{name}: expected a Layout or a layout string, got {type(value).__name__}")


@lru_cache(maxsize=256)
def _parse_cached(value: str, dims: str | None) -> Layout:
    return Layout(value, dims=dims)


_INT64_MAX = (1 << 63) - 1


def as_dtype(value: Any, name: str = "dtype") -> np.dtype:
    """``np.dtype(value)``, with an error that names the argument (and never
    float64 for None, which is what numpy makes of it)."""
    if value is None:
        raise TypeError(f"{name}: expected a numpy dtype, got None")
    try:
        return np.dtype(value)
    except TypeError as exc:
        if isinstance(value, str):
            raise LayoutError(f"{name}={value!r}: not a numpy dtype ({exc})") from None
        raise TypeError(f"{name}={value!r}: not a numpy dtype ({exc})") from None


def _roundup(x: int, a: int) -> int:
    return -(-x // a) * a


def _int_tuple(value: Any, name: str) -> tuple[int, ...]:
    if exact_shape(value):
        return value  # the common case (an array's .shape)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name}: expected a sequence of ints, got {type(value).__name__}")
    out = []
    for k, v in enumerate(value):
        if isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name}[{k}] = {v!r}: expected an int, not a bool")
        if not isinstance(v, (int, np.integer)):
            try:
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"{name}[{k}] = {v!r}: expected an int") from None
        out.append(int(v))
    return tuple(out)


# The engine imports Layout; bound here, after the class exists, so pack/unpack
# do not pay for an import statement on every call.
from . import _engine  # noqa: E402
