"""Turn a repack plan into C statements with every extent and stride a constant.

The plan is the one ``layoutkit.convert`` runs (``_engine._build_plan``): levels
in destination order, each with an extent and a byte stride per side, plus the
ranges of the padded dims. :class:`CWalk` performs the kernel's walk
(``_repack.pyx``: ``walk``/``copy_levels``/``fill_levels``) at generation time,
so the data/padding/absent splitting is resolved here and the C code is plain
nested loops in destination order around the same 2-D boxes the kernel uses:
contiguous rows (one ``memcpy`` each, or one conversion loop), channel
interleaves with a fixed lane count, tiled transposes, and strided copies.
Padding is written by the same loops, never by a separate ``memset`` pass.

Elements move through fixed-size ``memcpy`` (compilers turn it into one load or
store), which keeps the code free of alignment and strict-aliasing assumptions.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Affine", "CWalk", "Levels", "Writer"]

ALL_LANES = sys.maxsize
_UINT = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}
INTERLEAVE_MAX = 16  # widest channel interleave written lane by lane; wider ones are transposed
TBLOCK = {1: 16, 2: 16, 4: 8, 8: 8}  # transpose tile edge per element size


@dataclass(frozen=True)
class Levels:
    """A plan as plain ints: what the walk needs, independent of the kernel's classes."""

    ext: tuple[int, ...]
    ss: tuple[int, ...]
    ds: tuple[int, ...]
    dim: tuple[int, ...]  # compact index of a constrained dim, or -1
    wt: tuple[int, ...]
    ranges: tuple[int, ...]  # per constrained dim: e_lo, e_hi, v_lo, v_hi
    span: tuple[tuple[int, ...], ...]  # (nlev + 1) x max(ndim, 1)
    ndim: int
    esize: int  # destination element bytes
    src_esize: int
    src_base: int
    dst_base: int

    @property
    def nlev(self) -> int:
        return len(self.ext)


@dataclass
class Affine:
    """``const + sum(coef * var)``: a byte offset from a base pointer."""

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    def plus(self, const: int = 0, var: str | None = None, coef: int = 0) -> Affine:
        terms = self.terms
        if var is not None and coef:
            terms = (*terms, (var, coef))
        return Affine(self.const + const, terms)

    def render(self, base: str) -> str:
        parts = [v if c == 1 else f"{v} * {c}" for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        if parts == ["0"]:
            return base
        return f"{base} + " + (
            " + ".join(parts) if len(parts) == 1 else "(" + " + ".join(parts) + ")"
        )


@dataclass
class Writer:
    """Indented C lines with fresh loop variables."""

    lines: list[str] = field(default_factory=list)
    depth: int = 1
    counter: int = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def var(self, prefix: str = "i") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def open(self, text: str) -> None:
        self.line(text + " {" if text else "{")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self.line("}")

    def loop(self, lo: int, hi: int, body: Callable[[str | None, int], None]) -> None:
        """Run ``body(var, const)`` for lo <= t < hi: a C loop, or inline when one step."""
        if hi - lo <= 0:
            return
        if hi - lo == 1:
            body(None, lo)
            return
        v = self.var()
        self.open(f"for (size_t {v} = {lo}; {v} < {hi}; {v}++)")
        body(v, 0)
        self.close()


def _at(p: Affine, var: str | None, const: int, stride: int) -> Affine:
    """``p`` advanced by ``t * stride`` with t = var (a loop) or const."""
    if var is None:
        return p.plus(const * stride)
    return p.plus(var=var, coef=stride)


def _run_end(t: int, n: int, wgt: int, limit: int) -> int:
    """The end of a run of digits from ``t`` (at least one, at most ``n``) whose
    slots [digit * wgt, digit * wgt + wgt) all lie below ``limit``: a formula, as
    a padded extent of 2**31 would take minutes digit by digit."""
    return max(t + 1, min(n, limit // wgt))


class CWalk:
    """Emit the loops of one plan into a :class:`Writer`.

    ``ld``/``st`` name the C helpers that load a source element (converted to the
    destination type when ``cvt`` is set) and store a destination element;
    ``pad`` is the C expression of the padding element (or, for sizes other than
    1/2/4/8 bytes, of a byte array).
    """

    def __init__(self, lv: Levels, w: Writer, prefix: str, pad: str, cast: bool) -> None:
        self.raw = prefix + "r"  # helpers that move destination elements unchanged
        self.tiles: str | None = None  # prefix of the header's tile-transpose helpers
        self.lv = lv
        self.w = w
        self.p = prefix
        self.pad = pad
        self.cast = cast
        self.es = lv.esize
        self.ses = lv.src_esize
        self.sname = "s"
        n = lv.nlev
        last = [-1] * max(lv.ndim, 1)
        for k in range(n - 1):
            if lv.dim[k] >= 0:
                last[lv.dim[k]] = k
        self.last_noninner = last
        below = [1] * (n + 1)
        dcontig = [False] * (n + 1)
        dcontig[n] = True
        for k in range(n - 1, -1, -1):
            below[k] = below[k + 1] * lv.ext[k]
            dcontig[k] = dcontig[k + 1] and lv.ds[k] == below[k + 1] * self.es
        self.below = below
        self.dcontig = dcontig

    # -- element statements ------------------------------------------------------

    def typed(self) -> bool:
        return self.es in _UINT

    def copy_one(self, s: Affine, d: Affine) -> None:
        """One element (converted when the plan converts)."""
        self.w.line(f"{self.p}_mv({d.render('d')}, {s.render(self.sname)});")

    def fill_one(self, d: Affine) -> None:
        self.w.line(f"{self.p}_pad({d.render('d')});")

    def fill_run(self, d: Affine, n: int) -> None:
        """``n`` contiguous padding elements."""
        if n <= 0:
            return
        if n == 1:
            self.fill_one(d)
            return
        v = self.w.var("j")
        self.w.line(
            f"for (size_t {v} = 0; {v} < {n}; {v}++) "
            f"{self.p}_pad({d.plus(var=v, coef=self.es).render('d')});"
        )

    # -- the walk ------------------------------------------------------------------

    def run(self) -> None:
        lv = self.lv
        n0 = lv.ext[0] if lv.nlev else 1
        self.walk(0, 0, n0, Affine(lv.src_base), Affine(lv.dst_base), list(lv.ranges), False)

    def _constrained(self, lev: int, k: int, rng: list[int], padmode: bool) -> tuple[bool, bool]:
        sp = self.lv.span[lev][k]
        e = rng[4 * k] > 0 or rng[4 * k + 1] < sp
        v = not padmode and (rng[4 * k + 2] > 0 or rng[4 * k + 3] < sp)
        return e, e or v

    def walk(
        self, lev: int, t_lo: int, t_hi: int, s: Affine, d: Affine, rng: list[int], padmode: bool
    ) -> None:
        lv = self.lv
        nlev = lv.nlev
        ncon = necon = 0
        con = -1
        for k in range(lv.ndim):
            e, c = self._constrained(lev, k, rng, padmode)
            if c:
                ncon += 1
                necon += e
                con = k
        if ncon == 0:
            if lev < nlev:
                sl, dl = s.plus(t_lo * lv.ss[lev]), d.plus(t_lo * lv.ds[lev])
                if padmode:
                    self.fill_levels(lev, dl, t_hi - t_lo)
                else:
                    self.copy_levels(lev, sl, dl, t_hi - t_lo, 0, ALL_LANES)
            elif padmode:
                self.fill_one(d)
            else:
                self.copy_one(s, d)
            return
        if lev >= nlev:
            if necon == 0:
                self.fill_one(d)
            return
        if (
            ncon == 1
            and necon == 0
            and not padmode
            and lv.dim[nlev - 1] == con
            and self.last_noninner[con] < lev
        ):
            self.copy_levels(
                lev,
                s.plus(t_lo * lv.ss[lev]),
                d.plus(t_lo * lv.ds[lev]),
                t_hi - t_lo,
                rng[4 * con + 2],
                rng[4 * con + 3],
            )
            return
        dd = lv.dim[lev]
        nxt = lv.ext[lev + 1] if lev + 1 < nlev else 1
        ss, ds = lv.ss[lev], lv.ds[lev]
        if dd < 0 or not self._constrained(lev, dd, rng, padmode)[1]:
            child = list(rng)
            self.w.loop(
                t_lo,
                t_hi,
                lambda v, c: self.walk(
                    lev + 1, 0, nxt, _at(s, v, c, ss), _at(d, v, c, ds), child, padmode
                ),
            )
            return
        d_econ = self._constrained(lev, dd, rng, padmode)[0]
        wgt = lv.wt[lev]
        e_lo, e_hi, v_lo, v_hi = rng[4 * dd : 4 * dd + 4]
        n = t_hi
        t = t_lo
        while t < n:
            a, b = t * wgt, t * wgt + wgt
            if a >= e_hi:
                break  # this digit and the rest are absent in the destination
            if b <= e_lo:
                t = max(t + 1, e_lo // wgt)  # to the first digit the destination holds
                continue
            if not padmode and a >= v_lo and b <= v_hi:
                # A run of digits full of data.
                t2 = _run_end(t, n, wgt, min(v_hi, e_hi))
                if ncon == 1:
                    self.copy_levels(lev, s.plus(t * ss), d.plus(t * ds), t2 - t, 0, ALL_LANES)
                else:
                    child = list(rng)
                    child[4 * dd : 4 * dd + 4] = [0, wgt, 0, wgt]
                    self._run(lev, t, t2, s, d, child, False)
                t = t2
            elif padmode or b <= v_lo or a >= v_hi:
                if a >= e_lo and b <= e_hi:
                    # A run of digits that are all padding: up to the end of the
                    # destination, or to the first digit that touches data.
                    t2 = _run_end(t, n, wgt, e_hi)
                    if not padmode:
                        touch_lo, touch_hi = v_lo // wgt, -(-v_hi // wgt) - 1
                        first = max(t + 1, touch_lo)
                        if first <= touch_hi:
                            t2 = min(t2, first)
                    if necon - d_econ == 0:
                        self.fill_levels(lev, d.plus(t * ds), t2 - t)
                    else:
                        child = list(rng)
                        child[4 * dd : 4 * dd + 2] = [0, wgt]
                        self._run(lev, t, t2, s, d, child, True)
                    t = t2
                else:
                    child = list(rng)
                    child[4 * dd : 4 * dd + 2] = [e_lo - a, e_hi - a]
                    self.walk(lev + 1, 0, nxt, s, d.plus(t * ds), child, True)
                    t += 1
            else:
                child = list(rng)
                child[4 * dd : 4 * dd + 4] = [e_lo - a, e_hi - a, v_lo - a, v_hi - a]
                self.walk(lev + 1, 0, nxt, s.plus(t * ss), d.plus(t * ds), child, False)
                t += 1

    def _run(
        self, lev: int, t: int, t2: int, s: Affine, d: Affine, child: list[int], padmode: bool
    ) -> None:
        """Digits [t, t2) of level ``lev``, all with the same child ranges: one C loop."""
        lv = self.lv
        nxt = lv.ext[lev + 1] if lev + 1 < lv.nlev else 1
        ss = 0 if padmode else lv.ss[lev]

        def body(v: str | None, c: int) -> None:
            self.walk(lev + 1, 0, nxt, _at(s, v, c, ss), _at(d, v, c, lv.ds[lev]), child, padmode)

        self.w.loop(t, t2, body)

    # -- boxes ------------------------------------------------------------------------

    def fill_levels(self, lev: int, d: Affine, nfirst: int) -> None:
        """Padding into every slot of levels [lev, nlev), level ``lev`` cut to ``nfirst``."""
        lv = self.lv
        if lev >= lv.nlev:
            self.fill_one(d)
            return
        if self.dcontig[lev]:
            self.fill_run(d, nfirst * self.below[lev + 1])
            return
        k = lev + 1
        while not self.dcontig[k]:
            k += 1
        # Loops over [lev, k), then one contiguous run per innermost slot.
        exts = list(lv.ext)
        exts[lev] = nfirst

        def nest(j: int, dp: Affine) -> None:
            if j == k:
                self.fill_run(dp, self.below[k])
                return
            self.w.loop(0, exts[j], lambda v, c: nest(j + 1, _at(dp, v, c, lv.ds[j])))

        nest(lev, d)

    def copy_levels(self, lev: int, s: Affine, d: Affine, nfirst: int, lo: int, hi: int) -> None:
        """The box of levels [lev, nlev); innermost lanes outside [lo, hi) are padding."""
        lv = self.lv
        nlev = lv.nlev
        if lev >= nlev:
            if lo <= 0 < hi:
                self.copy_one(s, d)
            else:
                self.fill_one(d)
            return
        ext = list(lv.ext)
        ext[lev] = nfirst
        last = ext[nlev - 1]
        lo = min(max(lo, 0), last)
        hi = max(min(hi, last), lo)
        if nlev - lev == 1:
            self.box2d(s, d, 1, 0, 0, ext[lev], lv.ss[lev], lv.ds[lev], lo, hi)
            return
        a = nlev - 2
        n0, s0, d0 = ext[a], lv.ss[a], lv.ds[a]
        n1, s1, d1 = ext[a + 1], lv.ss[a + 1], lv.ds[a + 1]
        while a > lev and lv.ss[a - 1] == n0 * s0 and lv.ds[a - 1] == n0 * d0:
            a -= 1
            n0 *= ext[a]

        def nest(j: int, sp: Affine, dp: Affine) -> None:
            if j == a:
                self.box2d(sp, dp, n0, s0, d0, n1, s1, d1, lo, hi)
                return
            self.w.loop(
                0,
                ext[j],
                lambda v, c: nest(j + 1, _at(sp, v, c, lv.ss[j]), _at(dp, v, c, lv.ds[j])),
            )

        nest(lev, s, d)

    def box2d(
        self,
        s: Affine,
        d: Affine,
        n0: int,
        s0: int,
        d0: int,
        n1: int,
        s1: int,
        d1: int,
        lo: int,
        hi: int,
    ) -> None:
        """``n0`` rows of ``n1`` lanes; lanes outside [lo, hi) are padding."""
        if n0 <= 0 or n1 <= 0:
            return
        es, ses, w = self.es, self.ses, self.w
        if n0 > 1 and s0 == n1 * s1 and d0 == n1 * d1 and lo == 0 and hi == n1:
            # The rows continue each other on both sides: one row of every lane.
            n1, n0 = n0 * n1, 1
            hi = n1
        if n0 == 1:
            s0 = d0 = 0
        if s1 == ses and d1 == es:
            # Rows contiguous on both sides: a memcpy (or a conversion loop) per row.
            def row(v: str | None, c: int) -> None:
                sr, dr = _at(s, v, c, s0), _at(d, v, c, d0)
                self.fill_run(dr, lo)
                self.contiguous(sr.plus(lo * ses), dr.plus(lo * es), hi - lo)
                self.fill_run(dr.plus(hi * es), n1 - hi)

            w.loop(0, n0, row)
            return
        if d1 == es and d0 == n1 * es and s0 == ses and n0 > 1:
            if self.cast and hi > lo and n1 * self.es <= 4096:
                self.cast_tiles(s, d, n0, n1, s1, lo, hi)
            elif 2 * (hi - lo) < n1 and n1 > 8:
                self.mostly_padding(s, d, n0, n1, s1, lo, hi)
            elif n1 <= INTERLEAVE_MAX:
                self.interleave(s, d, n0, n1, s1, lo, hi)
            else:
                self.transpose(s, d, n0, n1, s1, lo, hi)
            return

        # Generic strided box, destination order.
        def grow(v: str | None, c: int) -> None:
            sr, dr = _at(s, v, c, s0), _at(d, v, c, d0)
            self.strided(sr, dr, 0, lo, s1, d1, pad=True)
            self.strided(sr, dr, lo, hi, s1, d1, pad=False)
            self.strided(sr, dr, hi, n1, s1, d1, pad=True)

        w.loop(0, n0, grow)

    def cast_tiles(self, s: Affine, d: Affine, n0: int, n1: int, s1: int, lo: int, hi: int) -> None:
        """Convert a tile of every data lane into a scratch buffer (contiguous loops the
        compiler vectorises), then interleave the scratch like a plain repack."""
        es, ses, w = self.es, self.ses, self.w
        tile = max(8, min(256, 32768 // (n1 * es)))
        tile = min(tile, n0)
        tmp = w.var("tmp")
        w.open("")
        w.line(f"unsigned char {tmp}[{(hi - lo) * tile * es}];")

        def one(i0: str | int, m: int) -> None:
            j, i = w.var("j"), w.var("i")
            src = s.plus(var=j, coef=s1).plus(var=i, coef=ses)
            if isinstance(i0, str):
                src = src.plus(var=i0, coef=ses)
            else:
                src = src.plus(i0 * ses)
            w.open(f"for (size_t {j} = {lo}; {j} < {hi}; {j}++)")
            w.line(
                f"for (size_t {i} = 0; {i} < {m}; {i}++) "
                f"{self.p}_mv({tmp} + (({j} - {lo}) * {tile} + {i}) * {es}, {src.render('s')});"
            )
            w.close()
            dd = d.plus(var=i0, coef=n1 * es) if isinstance(i0, str) else d.plus(i0 * n1 * es)
            saved = (self.p, self.ses, self.sname, self.cast)
            self.p, self.ses, self.sname, self.cast = self.raw, es, tmp, False
            try:
                base = Affine(-lo * tile * es)
                self.box2d(base, dd, m, es, n1 * es, n1, tile * es, es, lo, hi)
            finally:
                self.p, self.ses, self.sname, self.cast = saved

        full = n0 - n0 % tile
        if full:
            ib = w.var("ib")
            w.open(f"for (size_t {ib} = 0; {ib} < {full}; {ib} += {tile})")
            one(ib, tile)
            w.close()
        if full < n0:
            one(full, n0 - full)
        w.close()

    def mostly_padding(
        self, s: Affine, d: Affine, n0: int, n1: int, s1: int, lo: int, hi: int
    ) -> None:
        """Few data lanes in wide rows (3 channels in blocks of 32): per block of rows,
        fill the rows with padding, then drop the data lanes in."""
        es, ses, w = self.es, self.ses, self.w
        block = max(1, min(n0, 4096 // (n1 * es)))
        full = n0 - n0 % block

        def one(i0: str | int, m: int) -> None:
            dd = d.plus(var=i0, coef=n1 * es) if isinstance(i0, str) else d.plus(i0 * n1 * es)
            ss = s.plus(var=i0, coef=ses) if isinstance(i0, str) else s.plus(i0 * ses)
            self.fill_run(dd, m * n1)
            for j in range(lo, hi):
                i = w.var("i")
                w.line(
                    f"for (size_t {i} = 0; {i} < {m}; {i}++) "
                    f"{self.p}_mv({dd.plus(j * es).plus(var=i, coef=n1 * es).render('d')}, "
                    f"{ss.plus(j * s1).plus(var=i, coef=ses).render(self.sname)});"
                )

        if full:
            ib = w.var("ib")
            w.open(f"for (size_t {ib} = 0; {ib} < {full}; {ib} += {block})")
            one(ib, block)
            w.close()
        if full < n0:
            one(full, n0 - full)

    def contiguous(self, s: Affine, d: Affine, n: int) -> None:
        if n <= 0:
            return
        if not self.cast:
            self.w.line(f"memcpy({d.render('d')}, {s.render(self.sname)}, {n * self.es});")
            return
        self.strided(s, d, 0, n, self.ses, self.es, pad=False)

    def strided(self, s: Affine, d: Affine, lo: int, hi: int, s1: int, d1: int, pad: bool) -> None:
        if hi <= lo:
            return
        if pad and d1 == self.es:
            self.fill_run(d.plus(lo * d1), hi - lo)
            return
        v = self.w.var("j")
        dp = d.plus(var=v, coef=d1).render("d")
        stmt = (
            f"{self.p}_pad({dp});"
            if pad
            else f"{self.p}_mv({dp}, {s.plus(var=v, coef=s1).render(self.sname)});"
        )
        self.w.line(f"for (size_t {v} = {lo}; {v} < {hi}; {v}++) {stmt}")

    def interleave(self, s: Affine, d: Affine, n0: int, n1: int, s1: int, lo: int, hi: int) -> None:
        """Channel interleave: ``n1`` lanes, lane j a contiguous source stream at s + j*s1."""
        es, w = self.es, self.w
        row = n1 * es
        group = 4 // math.gcd(row, 4)  # rows per run of whole 32-bit words
        if es in (1, 2) and n0 >= 2 * group:
            # Build each 32-bit word of the output from its lanes with shifts (compilers
            # vectorise this with plain SSE2/NEON), then store it with one memcpy.
            whole = n0 - n0 % group
            v = w.var("i")
            w.open(f"for (size_t {v} = 0; {v} < {whole}; {v} += {group})")
            for k in range(group * row // 4):
                parts = []
                for pos in range(0, 4, es):
                    b = 4 * k + pos
                    r, j = divmod(b, row)
                    j //= es
                    if lo <= j < hi:
                        src = s.plus(j * s1 + r * self.ses).plus(var=v, coef=self.ses)
                        val = f"{self.p}_ld({src.render(self.sname)})"
                    else:
                        val = f"{self.p}_padv()"
                    parts.append(f"(uint32_t){val} << LAYOUTKIT_SH({pos}, {es})")
                wv = f"w{k}_{v}"
                w.line(f"const uint32_t {wv} = {' | '.join(parts)};")
                w.line(f"memcpy({d.plus(4 * k).plus(var=v, coef=row).render('d')}, &{wv}, 4);")
            w.close()
            if whole < n0:
                self._interleave_rows(s, d, whole, n0, n1, s1, lo, hi)
            return
        self._interleave_rows(s, d, 0, n0, n1, s1, lo, hi)

    def _interleave_rows(
        self, s: Affine, d: Affine, r0: int, r1: int, n1: int, s1: int, lo: int, hi: int
    ) -> None:
        es, ses, w = self.es, self.ses, self.w
        if r1 <= r0:
            return
        v = w.var("i")
        w.open(f"for (size_t {v} = {r0}; {v} < {r1}; {v}++)")
        for j in range(n1):
            dp = d.plus(j * es).plus(var=v, coef=n1 * es).render("d")
            if lo <= j < hi:
                sp = s.plus(j * s1).plus(var=v, coef=ses).render(self.sname)
                w.line(f"{self.p}_mv({dp}, {sp});")
            else:
                w.line(f"{self.p}_pad({dp});")
        w.close()

    def deinterleave(
        self, s: Affine, d: Affine, n0: int, n1: int, s1: int, lo: int, hi: int
    ) -> None:
        """Few long rows (``n0`` small): one pass over the lanes writing ``n0`` row streams."""
        es, ses, w = self.es, self.ses, self.w
        for i in range(n0):
            row = d.plus(i * n1 * es)
            self.fill_run(row, lo)
            self.fill_run(row.plus(hi * es), n1 - hi)
        if hi <= lo:
            return
        v = w.var("j")
        w.open(f"for (size_t {v} = {lo}; {v} < {hi}; {v}++)")
        for i in range(n0):
            dp = d.plus(i * n1 * es).plus(var=v, coef=es).render("d")
            sp = s.plus(i * ses).plus(var=v, coef=s1).render(self.sname)
            w.line(f"{self.p}_mv({dp}, {sp});")
        w.close()

    def transpose(self, s: Affine, d: Affine, n0: int, n1: int, s1: int, lo: int, hi: int) -> None:
        """A wide interleave as a tiled transpose: TB x TB tiles, padding lanes per row."""
        if n0 <= INTERLEAVE_MAX:
            self.deinterleave(s, d, n0, n1, s1, lo, hi)
            return
        es, w = self.es, self.w
        word = es in (1, 2) and not self.cast and self.tiles is not None
        tb = 8 // es if word else TBLOCK.get(es, 8)
        full0 = n0 - n0 % tb
        full1 = lo + (hi - lo) - (hi - lo) % tb

        def rows(i_lo: str | int, count: int) -> None:
            if lo > 0 or hi < n1:
                i = w.var("i")
                w.open(f"for (size_t {i} = {i_lo}; {i} < {i_lo} + {count}; {i}++)")
                row = d.plus(var=i, coef=n1 * es)
                self.fill_run(row, lo)
                self.fill_run(row.plus(hi * es), n1 - hi)
                w.close()
            if full1 > lo:
                jb = w.var("jb")
                w.open(f"for (size_t {jb} = {lo}; {jb} < {full1}; {jb} += {tb})")
                if word and count == tb:
                    sp = s.plus(var=jb, coef=s1)
                    sp = sp.plus(var=i_lo, coef=es) if isinstance(i_lo, str) else sp.plus(i_lo * es)
                    dp = d.plus(var=jb, coef=es)
                    dp = (
                        dp.plus(var=i_lo, coef=n1 * es)
                        if isinstance(i_lo, str)
                        else dp.plus(i_lo * n1 * es)
                    )
                    w.line(
                        f"{self.tiles}_tile{es}({sp.render(self.sname)}, {s1}, "
                        f"{dp.render('d')}, {n1 * es});"
                    )
                else:
                    self._tile(s, d, i_lo, count, jb, tb, n1, s1)
                w.close()
            if full1 < hi:
                self._tile(s, d, i_lo, count, full1, hi - full1, n1, s1)

        if full0:
            ib = w.var("ib")
            w.open(f"for (size_t {ib} = 0; {ib} < {full0}; {ib} += {tb})")
            rows(ib, tb)
            w.close()
        if full0 < n0:
            rows(full0, n0 - full0)

    def _tile(
        self, s: Affine, d: Affine, i0: str | int, ni: int, j0: str | int, nj: int, n1: int, s1: int
    ) -> None:
        """Rows [i0, i0+ni) x lanes [j0, j0+nj): constant trip counts the compiler unrolls."""
        es, ses, w = self.es, self.ses, self.w
        i, j = w.var("i"), w.var("j")
        w.open(f"for (size_t {i} = {i0}; {i} < {i0} + {ni}; {i}++)")
        w.line(
            f"for (size_t {j} = {j0}; {j} < {j0} + {nj}; {j}++) "
            f"{self.p}_mv({d.plus(var=i, coef=n1 * es).plus(var=j, coef=es).render('d')}, "
            f"{s.plus(var=j, coef=s1).plus(var=i, coef=ses).render(self.sname)});"
        )
        w.close()
