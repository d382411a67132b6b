"""C code generation: a layout conversion as a dependency-free C99 header.

:func:`emit_c` writes a header with a ``static`` function that performs exactly
the conversion ``layoutkit.convert`` performs for one (layouts, shape, dtype),
padding and element conversion included, plus its inverse. The loops come from
the same plan the library's kernel walks (see ``_walk.py``), with every extent
and stride a compile-time constant. :func:`emit_c` with ``offset_only=True``
writes just the offset function and the buffer size of one layout.

Layouts are given as :class:`layoutkit.Layout` objects, tag strings, HTP preset
names or templates, TensorRT format names (``"kCHW32"``), Vitis AI format names
(``"HCWNC4"``), or larod pitched layouts (:class:`Pitched` or the string
``"larod:NHWC:align=1,1,32,4"``).

Examples
--------
>>> import layoutkit as lk
>>> text = lk.emit_c("NCHW", "HCWN4c", (1, 3, 2, 2), "uint8", name="to_hw")
>>> "static LAYOUTKIT_UNUSED void to_hw(const void *LAYOUTKIT_RESTRICT src" in text
True
>>> [line.split("/*")[0] for line in text.splitlines() if line.startswith("#define to_hw_DST")]
['#define to_hw_DST_BYTES 16  ', '#define to_hw_DST_ELEMENTS 16  ']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import LayoutError
from ..layout import Layout, _int_tuple
from . import _cbits
from ._walk import Affine, CWalk, Levels, Writer

__all__ = ["Pitched", "emit_c", "plan_levels", "resolve"]

_C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof
    _Atomic _Generic _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr
    false nullptr static_assert thread_local true typeof typeof_unqual""".split()
)
# Names the header or a C program around it already means something by.
_C_TAKEN = frozenset(
    """main errno stdin stdout stderr FILE EOF NULL offsetof assert abort exit malloc calloc
    realloc free printf fprintf puts memcpy memmove memset memcmp memchr strlen strcmp
    strncmp strcpy strncpy strcat strchr strrchr strstr strerror""".split()
)
# Identifiers C reserves at file scope (a leading underscore, a double underscore)
# and the <stdint.h> limit macros, POSIX's _t types; and this header's LAYOUTKIT_ names.
_C_RESERVED = re.compile(
    r"_.*|.*__.*|U?INT\w*_(MAX|MIN|C)|(SIZE|PTRDIFF)_M(AX|IN)|.*_t|LAYOUTKIT_.*|layoutkit_.*"
)
_C_MAX_BYTES = (1 << 63) - 1  # PTRDIFF_MAX on 64-bit targets
_DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16"}
_VITIS = {"HCWNC4": 4, "HCWNC8": 8, "HCWNC16": 16}


# ---------------------------------------------------------------------------
# Layout specs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pitched:
    """A larod pitched layout: dims stored in ``order`` with byte ``pitches``.

    ``pitches`` are larod's (``pitches[0]`` the total bytes, ``pitches[i]`` the
    bytes of one step of dim ``i - 1`` in ``order``), or None to build them from
    ``align`` (one byte alignment per dim in ``order``, as
    :func:`layoutkit.larod.pitches`) once shape and dtype are known. ``order`` is
    a string of the logical dims' letters (larod's ``"NCHW"``/``"NHWC"``); the
    padding bytes between rows are written as zero, as :func:`layoutkit.larod.pack`.

    >>> Pitched("NHWC", align=(1, 1, 32, 4)).byte_strides((1, 3, 2, 5), "NCHW", 1)
    (64, 1, 32, 4)
    """

    order: str
    pitches: tuple[int, ...] | None = None
    align: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.order, str) or not self.order.isalpha() or not self.order.isupper():
            raise LayoutError(
                f"order={self.order!r}: expected the dims' upper-case letters in storage order, "
                "e.g. 'NHWC'"
            )
        if len(set(self.order)) != len(self.order):
            raise LayoutError(f"order={self.order!r}: a letter appears twice")
        if self.pitches is not None and self.align is not None:
            raise LayoutError("pass either pitches= or align=, not both")
        for name in ("pitches", "align"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _int_tuple(value, name))
                if len(getattr(self, name)) != len(self.order):
                    raise LayoutError(
                        f"{name}={getattr(self, name)} has {len(getattr(self, name))} entries "
                        f"but order {self.order!r} has {len(self.order)} dims"
                    )

    def stored_dims(self, shape: tuple[int, ...], dims: str) -> tuple[int, ...]:
        return tuple(shape[dims.index(ch)] for ch in self.order)

    def resolved_pitches(self, shape: tuple[int, ...], dims: str, itemsize: int) -> tuple[int, ...]:
        from .. import larod

        stored = self.stored_dims(shape, dims)
        dtype = f"uint{8 * itemsize}" if itemsize in (1, 2, 4, 8) else None
        if dtype is None:
            raise LayoutError(
                f"larod pitched layouts hold 1, 2, 4 or 8-byte elements, not {itemsize}"
            )
        if self.pitches is None:
            return larod.pitches(stored, dtype, "UNSPECIFIED", self.align)
        return larod.validate_pitches(stored, dtype, self.pitches, "UNSPECIFIED")

    def byte_strides(self, shape: tuple[int, ...], dims: str, itemsize: int) -> tuple[int, ...]:
        """Byte stride of each logical dim (in ``dims`` order)."""
        p = self.resolved_pitches(shape, dims, itemsize)
        per_order = (*p[1:], itemsize)
        return tuple(per_order[self.order.index(ch)] for ch in dims)

    def __str__(self) -> str:
        extra = f", pitches {self.pitches}" if self.pitches else ""
        extra += f", align {self.align}" if self.align else ""
        return f"larod {self.order}{extra}"


def _parse_pitched(spec: str) -> Pitched:
    parts = spec.split(":")
    if len(parts) < 2 or not parts[1]:
        raise LayoutError(
            f"spec={spec!r}: expected 'larod:ORDER', 'larod:ORDER:align=a,b,c,d' or "
            "'larod:ORDER:pitches=p0,p1,p2,p3'"
        )
    order = parts[1].strip().upper()
    kw: dict[str, tuple[int, ...]] = {}
    for extra in parts[2:]:
        key, _, value = extra.partition("=")
        key = key.strip().lower()
        if key not in ("align", "pitches") or not value:
            raise LayoutError(
                f"spec={spec!r}: {extra!r} is not 'align=...' or 'pitches=...' (comma-separated ints)"
            )
        try:
            kw[key] = tuple(int(v) for v in value.split(","))
        except ValueError:
            raise LayoutError(f"spec={spec!r}: {key}={value!r} is not a list of ints") from None
    return Pitched(order, **kw)


Side = Layout | Pitched


def resolve(
    spec: Any, name: str, dims: str | None, shape: tuple[int, ...], dtype: np.dtype
) -> Side:
    """A Layout or Pitched from any accepted spec; ``dims`` applies to string specs."""
    if isinstance(spec, (Layout, Pitched)):
        return spec
    from .. import tensorrt

    if isinstance(spec, tensorrt.TensorFormat):
        return _tensorrt(spec, dims, shape, dtype)
    if not isinstance(spec, str):
        raise TypeError(
            f"{name}: expected a Layout, a layout string or a layoutkit.codegen.Pitched, "
            f"got {type(spec).__name__}"
        )
    text = spec.strip()
    system, sep, rest = text.partition(":")
    if sep and system.lower() == "larod":
        return _parse_pitched(text)
    if sep and system.lower() == "tensorrt":
        return _tensorrt(rest.strip(), dims, shape, dtype)
    if sep and system.lower() in ("vitis", "htp"):
        text = rest.strip()
    if text.upper() in _VITIS:
        return Layout(f"HCWN{_VITIS[text.upper()]}c", dims=dims or "NCHW")
    from .. import _notation, htp

    if text in htp.PRESETS or text in htp.ALIASES or _notation.looks_like_template(text):
        # Presets and templates number their dims by position (NHWC for rank 4):
        # build them so, then name the same storage over the caller's dims.
        return _rename(htp.layout(text), dims, name)
    try:
        return Layout(text, dims=dims)
    except LayoutError as exc:
        fmt = text if text[:1] in "kK" else "k" + text
        if fmt.upper() in {m.name.upper() for m in tensorrt.TensorFormat}:
            return _tensorrt(fmt, dims, shape, dtype)
        raise LayoutError(
            f"{name}={spec!r} is not a layout tag, HTP preset, TensorRT or Vitis AI format "
            f"or larod:ORDER spec ({exc})"
        ) from None


def _rename(layout: Layout, dims: str | None, name: str) -> Layout:
    """The same storage order over ``dims`` (a permutation of the layout's dims)."""
    if dims is None or dims == layout.dims:
        return layout
    if sorted(dims) != sorted(layout.dims):
        raise LayoutError(
            f"{name}: layout {layout} has dims {layout.dims!r}, which are not a permutation "
            f"of dims={dims!r}"
        )
    lp = tuple(layout.left_pad[layout.dims.index(ch)] for ch in dims)
    return Layout(str(layout), dims=dims, left_pad=lp, element_sizes=layout.element_sizes)


def _relabel(layout: Layout, dims: str) -> Layout:
    """The same layout with its i-th dim letter renamed to ``dims[i]``."""
    to = dict(zip(layout.dims, dims))
    tag = "".join(to[c] if c.isupper() else to[c.upper()].lower() if c.isalpha() else c
                  for c in str(layout))  # fmt: skip
    return Layout(tag, dims=dims, left_pad=layout.left_pad, element_sizes=layout.element_sizes)


def _tensorrt(fmt: Any, dims: str | None, shape: tuple[int, ...], dtype: np.dtype) -> Layout:
    from .. import tensorrt

    lay = tensorrt.layout(fmt, shape, dtype)
    if dims is not None and len(dims) == len(lay.dims) and sorted(dims) != sorted(lay.dims):
        # TensorRT's dims are positions; its letters (NACHW for a 5-D kLINEAR,
        # NCDHW for kDHWC8) only name them. Name them as the caller does.
        return _relabel(lay, dims)
    if dims is None or dims == lay.dims or sorted(dims) != sorted(lay.dims):
        return _rename(lay, dims, "tensorrt") if dims and dims != lay.dims else lay
    # TensorRT takes the shape in its own dims order (N C H W ...).
    ordered = tuple(shape[dims.index(ch)] for ch in lay.dims)
    return _rename(tensorrt.layout(fmt, ordered, dtype), dims, "tensorrt")


def as_layout_if_regular(side: Side, shape: tuple[int, ...], dims: str, itemsize: int) -> Side:
    """A pitched layout whose pitches nest (each a multiple of the next) as a padded Layout.

    larod's row padding then becomes ordinary layout padding, which the generated
    loops write in the same pass as the data; other pitches stay byte-strided.
    """
    if not isinstance(side, Pitched) or 0 in shape:
        return side
    p = (*side.resolved_pitches(shape, dims, itemsize), itemsize)
    if any(v % itemsize for v in p) or any(p[k] % p[k + 1] for k in range(len(p) - 1)):
        return side
    stored = side.stored_dims(shape, dims)
    room = [p[k] // p[k + 1] for k in range(len(stored))]
    first = next((k for k, (n, r) in enumerate(zip(stored, room)) if n != r), len(stored))
    tag = side.order + "".join(
        f"{room[k]}{side.order[k].lower()}" for k in range(first, len(stored))
    )
    return Layout(tag, dims=dims)


def _dims_of(side: Side) -> str | None:
    return side.dims if isinstance(side, Layout) else None


# ---------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------


def _side(side: Side, shape: tuple[int, ...], dims: str, itemsize: int) -> Any:
    from .._engine import _layout_side, _Side

    if isinstance(side, Layout):
        return _layout_side(side, shape, itemsize)
    strides = side.byte_strides(shape, dims, itemsize)
    digits = tuple((dims.index(ch), 1, None, strides[dims.index(ch)]) for ch in side.order)
    return _Side(digits, (0,) * len(shape), shape)


def plan_levels(
    src: Side,
    dst: Side,
    shape: tuple[int, ...],
    dims: str,
    src_dtype: np.dtype,
    dst_dtype: np.dtype,
    conv: Any,
) -> Levels | None:
    """The kernel's plan for this conversion as plain ints; None when no linear plan exists.

    The one place that calls the planner (``_engine._build_plan``) and reads
    its result, so a change of the plan's format is absorbed here.
    """
    from .._engine import _build_plan, _NoLinearPlan

    s = _side(src, shape, dims, src_dtype.itemsize)
    d = _side(dst, shape, dims, dst_dtype.itemsize)
    try:
        plan = _build_plan(s, d, shape, dst_dtype.itemsize, conv, wide_elements=False)
    except _NoLinearPlan:
        return None
    span = np.asarray(plan.span).reshape(len(plan.ext) + 1, -1)
    return Levels(
        ext=tuple(int(v) for v in plan.ext),
        ss=tuple(int(v) for v in plan.ss),
        ds=tuple(int(v) for v in plan.ds),
        dim=tuple(int(v) for v in plan.dim),
        wt=tuple(int(v) for v in plan.wt),
        ranges=tuple(int(v) for v in plan.ranges),
        span=tuple(tuple(int(v) for v in row) for row in span),
        ndim=int(plan.ndim),
        esize=int(plan.esize),
        src_esize=int(plan.src_esize),
        src_base=int(plan.src_base),
        dst_base=int(plan.dst_base),
    )


# ---------------------------------------------------------------------------
# Geometry helpers shared by the header parts
# ---------------------------------------------------------------------------


def _nbytes(side: Side, shape: tuple[int, ...], dims: str, itemsize: int) -> int:
    if isinstance(side, Layout):
        return side.size(shape) * itemsize
    if 0 in shape:
        return 0
    return side.resolved_pitches(shape, dims, itemsize)[0]


def _offset_terms(
    side: Side, shape: tuple[int, ...], dims: str, itemsize: int
) -> list[tuple[str, str, int]]:
    """Per digit: (C expression of the digit, dim letter, byte stride)."""
    terms = []
    if isinstance(side, Layout):
        phys = side.physical_shape(shape)
        strides = [itemsize] * len(phys)
        for k in range(len(phys) - 2, -1, -1):
            strides[k] = strides[k + 1] * phys[k + 1]
        for k, ((d, w, n), st) in enumerate(zip(side.digits, strides)):
            if phys[k] == 1:
                continue  # always digit 0 for a valid index
            v = dims[d].lower()
            lp = side.left_pad[d]
            e = f"({v} + {lp})" if lp else v
            if w != 1:
                e = f"({e} / {w})"
            if n is not None and w * n < side.padded_shape(shape)[d]:
                e = f"({e} % {n})"
            terms.append((e, dims[d], st))
    else:
        for d, st in enumerate(side.byte_strides(shape, dims, itemsize)):
            terms.append((dims[d].lower(), dims[d], st))
    return terms


def _offset_functions(
    fn: str, side: Side, shape: tuple[int, ...], dims: str, itemsize: int, what: str
) -> str:
    params = ", ".join(f"size_t {ch.lower()}" for ch in dims)
    terms = [(e, st) for e, _, st in _offset_terms(side, shape, dims, itemsize) if e and st]
    byte_expr = " + ".join(f"{e} * {st}" if st != 1 else e for e, st in terms) or "0"
    used = {ch.lower() for e, _ in terms for ch in dims if re.search(rf"\b{ch.lower()}\b", e)}
    unused = "".join(f" (void){ch.lower()};" for ch in dims if ch.lower() not in used)
    out = [
        f"/* Byte offset of the element at logical index ({', '.join(dims.lower())}) in {what}. */",
        f"static inline size_t {fn}_byte_offset({params}) {{{unused} return {byte_expr}; }}",
    ]
    if all(st % itemsize == 0 for _, st in terms):
        el = " + ".join(f"{e} * {st // itemsize}" if st != itemsize else e for e, st in terms)
        out += [
            f"/* Element offset of the same index (byte offset / {itemsize}). */",
            f"static inline size_t {fn}_offset({params}) {{{unused} return {el or '0'}; }}",
        ]
    else:
        out.append(
            f"/* No {fn}_offset: the byte strides are not all multiples of the {itemsize}-byte "
            "element, so an element offset does not exist; use the byte offset. */"
        )
    return "\n".join(out) + "\n"


def _same_as(given: Side, used: Side) -> list[str]:
    if given is used:
        return []
    return [f" *                 (stored as the padded layout {used})"]


def _describe(side: Side, shape: tuple[int, ...], dims: str, dt: np.dtype) -> str:
    if isinstance(side, Layout):
        phys = side.physical_shape(shape)
        axes = [dims[d] for d in side.outer] + [f"{s}{dims[d].lower()}" for d, s in side.blocks]
        lp = f", left pad {side.left_pad}" if any(side.left_pad) else ""
        return (
            f"{side} (dims {dims}{lp}), {dt.name}: "
            + "".join(f"[{n}]" for n in phys)
            + f" ({' '.join(axes)}) = {side.size(shape)} elements"
        )
    p = side.resolved_pitches(shape, dims, dt.itemsize) if 0 not in shape else ()
    return f"larod pitched {side.order} (dims {dims}), {dt.name}: pitches {p} bytes"


# ---------------------------------------------------------------------------
# Bodies
# ---------------------------------------------------------------------------


def _gap_fill(w: Writer, side: Pitched, shape: tuple[int, ...], dims: str, itemsize: int) -> None:
    """Zero the bytes of a pitched buffer that hold no element (row padding)."""
    p = (*side.resolved_pitches(shape, dims, itemsize), itemsize)
    stored = side.stored_dims(shape, dims)
    n = len(stored)

    def nest(k: int, base: Affine, target: int) -> None:
        if k == target:
            used = stored[k] * p[k + 1]
            if p[k] > used:
                w.line(f"memset({base.plus(used).render('d')}, 0, {p[k] - used});")
            return
        w.loop(0, stored[k], lambda v, c: nest(k + 1, base.plus(c * p[k + 1], v, p[k + 1]), target))

    for k in range(n):
        if p[k] > stored[k] * p[k + 1]:
            nest(0, Affine(), k)


def _generic_body(
    w: Writer, fn: str, src: Layout, dst: Layout, shape: tuple[int, ...], ses: int, es: int
) -> None:
    """Element by element in destination order (block sizes that do not nest, e.g. 3 and 4)."""
    phys = dst.physical_shape(shape)
    dstr = [es] * len(phys)
    for k in range(len(phys) - 2, -1, -1):
        dstr[k] = dstr[k + 1] * phys[k + 1]
    sphys = src.physical_shape(shape)
    sstr = [ses] * len(sphys)
    for k in range(len(sphys) - 2, -1, -1):
        sstr[k] = sstr[k + 1] * sphys[k + 1]
    vars_ = []
    for n in phys:
        v = w.var()
        vars_.append(v)
        w.open(f"for (size_t {v} = 0; {v} < {n}; {v}++)")
    rank = len(shape)
    coords = []
    for d in range(rank):
        parts = [f"{v} * {wt}" for (dd, wt, _), v in zip(dst.digits, vars_) if dd == d]
        c = w.var("c")
        w.line(f"ptrdiff_t {c} = (ptrdiff_t)({' + '.join(parts) or '0'}) - {dst.left_pad[d]};")
        coords.append(c)
    ok = " && ".join(f"{c} >= 0 && {c} < {shape[d]}" for d, c in enumerate(coords))
    doff = " + ".join(f"{v} * {st}" for v, st in zip(vars_, dstr)) or "0"
    w.line(f"unsigned char *q = d + ({doff});")
    soff = []
    for (d, wt, sn), st in zip(src.digits, sstr):
        e = f"(size_t)({coords[d]} + {src.left_pad[d]})"
        if wt != 1:
            e = f"({e} / {wt})"
        if sn is not None:
            e = f"({e} % {sn})"
        soff.append(f"{e} * {st}")
    w.open(f"if ({ok or '1'})")
    w.line(f"{fn}_mv(q, s + ({' + '.join(soff) or '0'}));")
    w.close()
    w.line(f"else {fn}_pad(q);")
    for _ in phys:
        w.close()


def _body(
    fn: str,
    src: Side,
    dst: Side,
    shape: tuple[int, ...],
    dims: str,
    sdt: np.dtype,
    ddt: np.dtype,
    conv: Any,
) -> list[str]:
    w = Writer()
    if 0 in shape:
        if isinstance(dst, Layout):
            CWalk(
                Levels((), (), (), (), (), (), ((1,),), 0, ddt.itemsize, sdt.itemsize, 0, 0),
                w,
                fn,
                "",
                False,
            ).fill_run(Affine(), dst.size(shape))
        else:
            w.line(f"memset(d, 0, {_nbytes(dst, shape, dims, ddt.itemsize)});")
        return w.lines
    lv = plan_levels(src, dst, shape, dims, sdt, ddt, conv)
    if lv is None:
        assert isinstance(src, Layout) and isinstance(dst, Layout)
        _generic_body(w, fn, src, dst, shape, sdt.itemsize, ddt.itemsize)
    else:
        walker = CWalk(lv, w, fn, "", conv is not None)
        walker.tiles = fn.rsplit("__", 1)[0] + "__"
        walker.run()
    if isinstance(dst, Pitched):
        _gap_fill(w, dst, shape, dims, ddt.itemsize)
    return w.lines


# ---------------------------------------------------------------------------
# The header
# ---------------------------------------------------------------------------

_PRELUDE = """\
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef LAYOUTKIT_RESTRICT
#if defined(__cplusplus) || defined(_MSC_VER)
#define LAYOUTKIT_RESTRICT __restrict
#else
#define LAYOUTKIT_RESTRICT restrict
#endif
#endif
#ifndef LAYOUTKIT_BIG_ENDIAN
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LAYOUTKIT_BIG_ENDIAN 1
#else
#define LAYOUTKIT_BIG_ENDIAN 0
#endif
/* Shift that puts a value of SIZE bytes at byte POS of a uint32_t in memory. */
#define LAYOUTKIT_SH(pos, size) (LAYOUTKIT_BIG_ENDIAN ? 32 - 8 * ((pos) + (size)) : 8 * (pos))
#endif
#ifndef LAYOUTKIT_UNUSED
#if defined(__GNUC__) || defined(__clang__)
#define LAYOUTKIT_UNUSED __attribute__((unused))
#else
#define LAYOUTKIT_UNUSED
#endif
#endif
"""


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name: expected a str (a C identifier), got {type(name).__name__}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in _C_KEYWORDS:
        raise LayoutError(
            f"name={name!r}: expected a C identifier that is not a keyword, e.g. 'nchw_to_hwc4'"
        )
    if name in _C_TAKEN or _C_RESERVED.fullmatch(name):
        raise LayoutError(
            f"name={name!r}: a name C or its standard library reserves (or this header "
            "uses); pick another, e.g. 'nchw_to_hwc4'"
        )
    return name


def _dtype(value: Any, name: str) -> np.dtype:
    import ml_dtypes  # noqa: F401  (registers bfloat16)

    if isinstance(value, str):
        value = _DTYPE_ALIASES.get(value.strip().lower(), value.strip())
    try:
        dt = np.dtype(value)
    except TypeError:
        raise TypeError(f"{name}={value!r}: expected a numpy dtype such as 'int8'") from None
    if dt.hasobject or dt.itemsize == 0:
        raise LayoutError(f"{name}={dt}: expected a fixed-size element type (not object/void)")
    return dt


def _defines(name: str, items: list[tuple[str, int, str]]) -> list[str]:
    out = []
    spellings = [name] if name.upper() == name else [name, name.upper()]
    for key, value, comment in items:
        for sp in spellings:
            out.append(f"#define {sp}_{key} {value}  /* {comment} */")
    return out


def emit_c(
    src: Any,
    dst: Any,
    shape: Any,
    dtype: Any,
    name: str = "convert",
    *,
    dst_dtype: Any = None,
    scale: Any = None,
    zero_point: Any = None,
    pad_value: Any = 0,
    dims: str | None = None,
    offset_only: bool = False,
) -> str:
    """A self-contained C99 header that converts one tensor from ``src`` to ``dst``.

    Parameters
    ----------
    src, dst : Layout, str or Pitched
        Layouts over the same dims: ``Layout`` objects, tags, HTP preset names or
        ``ChunkedMemoryLayout<...>`` templates, TensorRT formats (``"kCHW32"``,
        ``"tensorrt:kHWC8"``), Vitis AI formats (``"HCWNC4"``), or larod pitched
        layouts (:class:`Pitched`, ``"larod:NHWC:align=1,1,32,4"``). Strings take
        ``dims``, else the other argument's dims when it is a ``Layout``.
    shape : sequence of int
        The logical shape, in the order of the dims.
    dtype : dtype
        The source element type (``"int8"``, ``"float32"``, ``"bfloat16"``...).
    name : str
        The C function's name; the inverse is ``name_inverse``.
    dst_dtype : dtype, optional
        The destination element type, to convert in the same pass: float ->
        int8/uint8/int16/uint16 quantizes (ONNX QuantizeLinear: divide, round half
        to even, add ``zero_point``, saturate; NaN gives ``zero_point``), integer
        -> float dequantizes, float -> float rounds to nearest even. The inverse
        converts back (dequantize, widen).
    scale, zero_point : float, int, optional
        Quantization parameters, baked in as constants.
    pad_value : scalar, optional
        Written into the destination's padding (in ``dst_dtype``); the inverse
        writes 0 into the source's padding. Bytes between larod rows are 0.
    dims : str, optional
        The logical dims for string layouts (e.g. ``"NCHW"`` for ``"HCWN4c"``).
    offset_only : bool, optional
        Emit only ``name_offset(...)``, ``name_byte_offset(...)`` and the buffer
        size of ``dst`` (``src`` is then ignored and may be None).

    Returns
    -------
    str
        The header. It defines ``name_SRC_BYTES``/``name_DST_BYTES`` (also
        upper-cased), ``static void name(const void *src, void *dst)`` and
        ``static void name_inverse(const void *src, void *dst)``, and per side an
        offset function ``name_src_offset(n, c, h, w)`` / ``name_dst_offset``.

    Raises
    ------
    LayoutError
        For a bad name, layouts over different dims, a shape of the wrong rank,
        or an unsupported conversion (each naming the argument).

    Examples
    --------
    >>> import layoutkit as lk
    >>> h = lk.emit_c("NCHW", "NCHW4c", (1, 3, 8, 8), "float32", name="quant",
    ...               dst_dtype="int8", scale=0.05, zero_point=-3)
    >>> "#define quant_DST_BYTES 256" in h and "quant_inverse" in h
    True
    """
    from .. import __version__
    from .._engine import _pad_bytes, conversion

    fn = _check_name(name)
    sdt = _dtype(dtype, "dtype")
    ddt = sdt if dst_dtype is None else _dtype(dst_dtype, "dst_dtype")
    if dims is not None and not isinstance(dims, str):
        raise TypeError(f"dims: expected a str such as 'NCHW', got {type(dims).__name__}")
    if not isinstance(offset_only, bool):
        raise TypeError(f"offset_only: expected a bool, got {type(offset_only).__name__}")
    raw = _int_tuple(shape, "shape")
    if offset_only and src is None:
        src = dst
    if dims is not None:
        hint: str | None = dims
    elif isinstance(src, Layout):
        hint = src.dims
    elif isinstance(dst, Layout):
        hint = dst.dims
    else:
        hint = None
    s_side = resolve(src, "src", hint, raw, sdt)
    if hint is None:
        hint = _dims_of(s_side)
    d_side = resolve(dst, "dst", hint, raw, ddt)
    if hint is None and _dims_of(d_side) is not None:
        hint = _dims_of(d_side)
        s_side = resolve(src, "src", hint, raw, sdt)
    if hint is None:
        assert isinstance(s_side, Pitched)
        hint = s_side.order
    ldims = hint
    for side, label in ((s_side, "src"), (d_side, "dst")):
        if isinstance(side, Layout) and side.dims != ldims:
            raise LayoutError(
                f"{label} {side} has dims {side.dims!r} but the conversion's dims are {ldims!r}; "
                f"pass dims= or Layout objects over the same dims, e.g. "
                f"lk.Layout({str(side)!r}, dims={ldims!r})"
            )
        if isinstance(side, Pitched) and sorted(side.order) != sorted(ldims):
            raise LayoutError(
                f"{label}: larod order {side.order!r} is not a permutation of the dims {ldims!r}"
            )
    if len(raw) != len(ldims):
        raise LayoutError(
            f"shape={raw} has {len(raw)} dims but the layouts' dims {ldims!r} have {len(ldims)}"
        )
    for d, v in enumerate(raw):
        if v < 0:
            raise LayoutError(f"shape={raw}: extent of dim {ldims[d]!r} is {v}; expected >= 0")
    shape_t = raw
    described = {"src": s_side, "dst": d_side}
    s_side = as_layout_if_regular(s_side, shape_t, ldims, sdt.itemsize)
    d_side = as_layout_if_regular(d_side, shape_t, ldims, ddt.itemsize)
    for side, label, dt in ((s_side, "src", sdt), (d_side, "dst", ddt)):
        if isinstance(side, Layout):
            side.check_dtype(dt, f"{label} dtype" if label == "dst" else "dtype")
        elif 0 not in shape_t:
            side.resolved_pitches(shape_t, ldims, dt.itemsize)
        nbytes = _nbytes(side, shape_t, ldims, dt.itemsize)
        if nbytes > _C_MAX_BYTES:
            raise LayoutError(
                f"shape={shape_t}: the {label} buffer would take {nbytes} bytes, more than the "
                f"emitted C's size_t and ptrdiff_t arithmetic holds ({_C_MAX_BYTES})"
            )

    version = f"layoutkit {__version__}"
    shape_txt = " ".join(f"{ch}={n}" for ch, n in zip(ldims, shape_t))
    guard = f"LAYOUTKIT_{fn.upper()}_H"

    if offset_only:
        nbytes = _nbytes(d_side, shape_t, ldims, ddt.itemsize)
        lines = [
            f"/* {fn}.h: offsets into one tensor layout. Generated by {version}",
            " * (layoutkit emit-c --offset-only / layoutkit.emit_c(..., offset_only=True)); do not edit.",
            " *",
            f" *   layout: {_describe(d_side, shape_t, ldims, ddt)}",
            f" *   shape:  {shape_txt}",
            " *",
            f" * {fn}_offset(...) gives the element offset and {fn}_byte_offset(...) the",
            " * byte offset of a logical index (no range checks; indices in the dims' order).",
            " * Needs only <stddef.h>, <stdint.h> and <string.h>; C99 or later.",
            " */",
            f"#ifndef {guard}",
            f"#define {guard}",
            _PRELUDE.rstrip("\n"),
            "",
        ]
        items = [("BYTES", nbytes, "bytes of the buffer, padding included")]
        if isinstance(d_side, Layout):
            items.insert(0, ("ELEMENTS", d_side.size(shape_t), "elements, padding included"))
        items += [(f"DIM_{ch}", n, f"logical extent of {ch}") for ch, n in zip(ldims, shape_t)]
        lines += _defines(fn, items)
        lines += ["", _offset_functions(fn, d_side, shape_t, ldims, ddt.itemsize, "the buffer")]
        lines += [f"#endif /* {guard} */", ""]
        return "\n".join(lines)

    conv = conversion(sdt, ddt, scale, zero_point) if dst_dtype is not None else None
    if dst_dtype is None and (scale is not None or zero_point is not None):
        raise LayoutError("scale/zero_point given without dst_dtype=; pass the destination dtype")
    if dst_dtype is not None and conv is None and ddt != sdt:  # pragma: no cover - defensive
        raise LayoutError(f"dst_dtype={ddt}: no conversion from {sdt}")
    inv = None
    if conv is not None:
        inv = conversion(
            ddt,
            sdt,
            None if conv.kind == "cast" else conv.scale,
            None if conv.kind == "cast" else conv.zero_point,
        )
    pad = bytes(_pad_bytes(pad_value, ddt).tobytes())
    zero = bytes(sdt.itemsize)
    src_bytes = _nbytes(s_side, shape_t, ldims, sdt.itemsize)
    dst_bytes = _nbytes(d_side, shape_t, ldims, ddt.itemsize)

    if conv is None:
        conv_txt = "none (elements are moved unchanged)"
    elif conv.kind == "quantize":
        conv_txt = (
            f"quantize {sdt.name} -> {ddt.name}, scale {conv.scale!r} (float32), zero point "
            f"{conv.zero_point} (ONNX QuantizeLinear: x / scale, round half to even, "
            "+ zero point, saturate; NaN -> zero point)"
        )
    elif conv.kind == "dequantize":
        conv_txt = (
            f"dequantize {sdt.name} -> {ddt.name}, scale {conv.scale!r}, zero point "
            f"{conv.zero_point} ((q - zero point) * scale in float32)"
        )
    else:
        conv_txt = f"cast {sdt.name} -> {ddt.name} (round to nearest even)"
    pad_txt = f"bytes {pad.hex(' ')}" if pad else "-"
    header = [
        f"/* {fn}.h: one tensor layout conversion. Generated by {version}",
        " * (layoutkit emit-c / layoutkit.emit_c); do not edit.",
        " *",
        f" *   source:       {_describe(described['src'], shape_t, ldims, sdt)}",
        *_same_as(described["src"], s_side),
        f" *   destination:  {_describe(described['dst'], shape_t, ldims, ddt)}",
        *_same_as(described["dst"], d_side),
        f" *   shape:        {shape_txt}",
        f" *   conversion:   {conv_txt}",
        f" *   padding:      destination padding = {pad_value!r} ({pad_txt}); the inverse writes 0",
        " *",
        f" * {fn}(src, dst)          reads {fn}_SRC_BYTES bytes, writes all {fn}_DST_BYTES bytes",
        f" * {fn}_inverse(src, dst)  the way back: reads {fn}_DST_BYTES, writes {fn}_SRC_BYTES",
        " * Buffers must not overlap. Output equals layoutkit.convert byte for byte.",
        " * Needs only <stddef.h>, <stdint.h> and <string.h>; C99 or later. Build with",
        " * optimisation (-O2 or -O3); never with -ffast-math.",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        _PRELUDE.rstrip("\n"),
        "",
    ]
    if conv is not None:
        header += [_cbits.FLOAT_GUARD.rstrip("\n"), ""]
    items = [
        ("SRC_BYTES", src_bytes, "bytes the source buffer holds"),
        ("DST_BYTES", dst_bytes, "bytes the destination buffer holds"),
    ]
    if isinstance(s_side, Layout):
        items.append(
            ("SRC_ELEMENTS", s_side.size(shape_t), f"elements of {sdt.name}, padding included")
        )
    if isinstance(d_side, Layout):
        items.append(
            ("DST_ELEMENTS", d_side.size(shape_t), f"elements of {ddt.name}, padding included")
        )
    items += [(f"DIM_{ch}", n, f"logical extent of {ch}") for ch, n in zip(ldims, shape_t)]
    header += _defines(fn, items)
    header.append("")
    header.append(
        _offset_functions(f"{fn}_src", s_side, shape_t, ldims, sdt.itemsize, "the source")
    )
    header.append(
        _offset_functions(f"{fn}_dst", d_side, shape_t, ldims, ddt.itemsize, "the destination")
    )
    if conv is not None:
        header.append(_cbits.float_support(f"{fn}__"))
    fwd, bwd = f"{fn}__fwd", f"{fn}__inv"
    header.append(
        _cbits.mover(
            f"{fn}__",
            fwd,
            sdt,
            ddt,
            conv.kind if conv else None,
            conv.scale if conv else 1.0,
            conv.zero_point if conv else 0,
            pad,
        )
    )
    header.append(
        _cbits.mover(
            f"{fn}__",
            bwd,
            ddt,
            sdt,
            inv.kind if inv else None,
            inv.scale if inv else 1.0,
            inv.zero_point if inv else 0,
            zero,
        )
    )
    for es in sorted({sdt.itemsize, ddt.itemsize} & {1, 2}):
        header.append(_cbits.tile_transpose(f"{fn}__", es))
    if conv is not None:  # plain moves of converted elements (scratch tiles -> dst)
        header.append(_cbits.mover(f"{fn}__", f"{fwd}r", ddt, ddt, None, 1.0, 0, pad))
        header.append(_cbits.mover(f"{fn}__", f"{bwd}r", sdt, sdt, None, 1.0, 0, zero))
    for fname, direction, a, b, adt, bdt, cv, helper in (
        (fn, "source layout -> destination layout", s_side, d_side, sdt, ddt, conv, fwd),
        (
            f"{fn}_inverse",
            "destination layout -> source layout",
            d_side,
            s_side,
            ddt,
            sdt,
            inv,
            bwd,
        ),
    ):
        header.append(f"/* {direction}: loops in the order of the bytes written. */")
        header.append(
            f"static LAYOUTKIT_UNUSED void {fname}(const void *LAYOUTKIT_RESTRICT src, "
            "void *LAYOUTKIT_RESTRICT dst) {"
        )
        header.append("    const unsigned char *LAYOUTKIT_RESTRICT s = (const unsigned char *)src;")
        header.append("    unsigned char *LAYOUTKIT_RESTRICT d = (unsigned char *)dst;")
        header.append("    (void)s; (void)d;")
        body = _body(helper, a, b, shape_t, ldims, adt, bdt, cv)
        header += body
        header.append("}")
        header.append("")
    header += [f"#endif /* {guard} */", ""]
    return "\n".join(header)
