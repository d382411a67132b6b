"""The C text of the element helpers a generated header needs (one set per direction).

The formulas are the library's (``include/layoutkit_cast.h``), rewritten without
``<math.h>``: round half to even is ``(|v| + 2^23) - 2^23`` for ``|v| < 2^23``
(exact in IEEE single precision under the default rounding mode), which is
also why the header refuses ``-ffast-math`` and x87 excess precision.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT_GUARD", "float_support", "mover", "tile_transpose"]

_CODES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "uint16": "U16",
}
_INT_RANGE = {
    "I8": ("int8_t", -128, 127),
    "U8": ("uint8_t", 0, 255),
    "I16": ("int16_t", -32768, 32767),
    "U16": ("uint16_t", 0, 65535),
}
_UINT = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}

FLOAT_GUARD = """\
#if defined(__FAST_MATH__)
#error "this layoutkit header converts floats exactly; compile it without -ffast-math"
#endif
#if defined(__FLT_EVAL_METHOD__) && (__FLT_EVAL_METHOD__ == 1 || __FLT_EVAL_METHOD__ == 2)
#error "this layoutkit header needs float arithmetic in float (on 32-bit x86 add -msse2 -mfpmath=sse)"
#endif
"""


def float_literal(x: float) -> str:
    """An exact C float literal (hex float with the f suffix)."""
    v = float(np.float32(x))
    if v == int(v) and abs(v) < 2**24:
        return f"{int(v)}.0f"
    return f"{v.hex()}f"


def float_support(p: str) -> str:
    """Bit casts, fp16/bf16 <-> fp32 and round-half-even, prefixed ``p``."""
    return f"""\
static inline float {p}_f32(uint32_t u) {{ float f; memcpy(&f, &u, 4); return f; }}
static inline uint32_t {p}_u32(float f) {{ uint32_t u; memcpy(&u, &f, 4); return u; }}
/* Round half to even without <math.h>: exact for |v| < 2^23, larger floats are integers. */
static inline float {p}_rne(float v) {{
    const uint32_t u = {p}_u32(v);
    const uint32_t a = u & 0x7fffffffu;
    const float m = {p}_f32(a < 0x4b000000u ? a : 0u);
    const float t = (m + 8388608.0f) - 8388608.0f; /* |v| rounded, computed always */
    return {p}_f32(a < 0x4b000000u ? ({p}_u32(t) | (u & 0x80000000u)) : u);
}}
/* IEEE binary16 -> binary32, exact (subnormals, infinities and NaN payloads kept). */
static inline float {p}_f16_to_f32(uint16_t h) {{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (uint32_t)(h >> 10) & 0x1fu;
    uint32_t man = (uint32_t)h & 0x3ffu;
    if (exp == 0x1fu) return {p}_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {{
        float v = (float)man * 5.9604644775390625e-08f; /* man * 2^-24, exact */
        return sign ? -v : v;
    }}
    return {p}_f32(sign | ((exp + 112u) << 23) | (man << 13));
}}
/* binary32 -> binary16, round to nearest even; NaN stays NaN (quiet). Every case is
 * computed and one is selected with integer compares, so compilers vectorise it. */
static inline uint16_t {p}_f32_to_f16(float f) {{
    const uint32_t u = {p}_u32(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t special = 0x7c00u | (a > 0x7f800000u ? (0x200u | ((a >> 13) & 0x3ffu)) : 0u);
    const uint32_t tiny = a < 0x38800000u ? a : 0u; /* subnormal result: a * 2^24, rounded */
    const uint32_t sub = (uint32_t)(int32_t){p}_rne({p}_f32(tiny) * 16777216.0f);
    const uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13;
    uint32_t r = a < 0x38800000u ? sub : normal;
    r = a >= 0x477ff000u ? 0x7c00u : r;
    r = a >= 0x7f800000u ? special : r;
    return (uint16_t)(sign | r);
}}
/* ONNX QuantizeLinear of v = x / scale: round half to even, + zero point, saturate to
 * [lo, hi], NaN -> zero point. Branch-free, with every select before the float
 * arithmetic (|v| >= 2^23 is replaced by 2^22, which saturates the same way, and NaN
 * by 0), so compilers vectorise it without -fno-trapping-math. */
static inline int32_t {p}_quant(float v, int32_t zp, int32_t lo, int32_t hi) {{
    const uint32_t u = {p}_u32(v);
    const uint32_t a = u & 0x7fffffffu;
    const uint32_t nan = a > 0x7f800000u;
    const uint32_t neg = (u >> 31) & (nan ^ 1u);
    const uint32_t big = 0x4a800000u & (0u - (nan ^ 1u));         /* 2^22, or 0 for NaN */
    const uint32_t m = a < 0x4b000000u ? a : big;
    const uint32_t k = (uint32_t)(int32_t)(({p}_f32(m) + 8388608.0f) - 8388608.0f);
    const int32_t q = (int32_t)(((k ^ (0u - neg)) + neg) + (uint32_t)zp);
    const int32_t r = q < lo ? lo : q;
    return r > hi ? hi : r;
}}
static inline float {p}_bf16_to_f32(uint16_t b) {{ return {p}_f32((uint32_t)b << 16); }}
/* binary32 -> bfloat16, round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t {p}_f32_to_bf16(float f) {{
    uint32_t u = {p}_u32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}}
"""


def _code(dt: np.dtype) -> str:
    return _CODES[dt.name]


def mover(
    p: str,
    fn: str,
    src: np.dtype,
    dst: np.dtype,
    kind: str | None,
    scale: float,
    zero_point: int,
    pad: bytes,
) -> str:
    """``{fn}_mv(d, s)`` moves (and converts) one element; ``{fn}_pad(d)`` writes padding.

    ``p`` prefixes the shared float helpers; ``kind`` is None (a plain move),
    "quantize", "dequantize" or "cast".
    """
    es = dst.itemsize
    out = []
    if es in _UINT:
        ut = _UINT[es]
        value = int.from_bytes(pad, "little" if np.little_endian else "big")
        suffix = "u" if es < 8 else "ull"
        out.append(f"static inline {ut} {fn}_padv(void) {{ return ({ut}){value:#x}{suffix}; }}")
        out.append(
            f"static inline void {fn}_pad(unsigned char *d) {{ "
            f"const {ut} v = {fn}_padv(); memcpy(d, &v, {es}); }}"
        )
    else:
        body = ", ".join(str(b) for b in pad)
        out.append(f"static const unsigned char {fn}_padv[{es}] = {{{body}}};")
        out.append(
            f"static inline void {fn}_pad(unsigned char *d) {{ memcpy(d, {fn}_padv, {es}); }}"
        )
    if kind is None:
        if es in _UINT:
            ut = _UINT[es]
            out.append(
                f"static inline {ut} {fn}_ld(const unsigned char *s) "
                f"{{ {ut} v; memcpy(&v, s, {es}); return v; }}"
            )
        out.append(
            f"static inline void {fn}_mv(unsigned char *d, const unsigned char *s) "
            f"{{ memcpy(d, s, {es}); }}"
        )
        return "\n".join(out) + "\n"
    sc, st = _code(src), _code(dst)
    sl, zl = float_literal(scale), float_literal(float(zero_point))
    # Load: the source element as float32.
    if sc == "F32":
        load = "float x; memcpy(&x, s, 4);"
    elif sc in ("F16", "BF16"):
        conv = "f16" if sc == "F16" else "bf16"
        load = f"uint16_t h; memcpy(&h, s, 2); float x = {p}_{conv}_to_f32(h);"
    else:
        ctype = _INT_RANGE[sc][0]
        load = f"{ctype} q; memcpy(&q, s, {src.itemsize}); float x = ((float)q - {zl}) * {sl};"
    # Convert: float32 -> the destination element ``y``, returned as its bits.
    if st == "F32":
        store = "float y = x;"
    elif st in ("F16", "BF16"):
        conv = "f16" if st == "F16" else "bf16"
        store = f"uint16_t y = {p}_f32_to_{conv}(x);"
    else:
        ctype, lo, hi = _INT_RANGE[st]
        store = f"{ctype} y = ({ctype}){p}_quant(x / {sl}, {zero_point}, {lo}, {hi});"
    ut = _UINT[es]
    out.append(
        f"static inline {ut} {fn}_ld(const unsigned char *s) {{\n"
        f"    {load}\n    {store}\n    {ut} u; memcpy(&u, &y, {es}); return u;\n}}"
    )
    out.append(
        f"static inline void {fn}_mv(unsigned char *d, const unsigned char *s) "
        f"{{ const {ut} u = {fn}_ld(s); memcpy(d, &u, {es}); }}"
    )
    return "\n".join(out) + "\n"


_MASKS = {4: 0x00000000FFFFFFFF, 2: 0x0000FFFF0000FFFF, 1: 0x00FF00FF00FF00FF}


def tile_transpose(p: str, es: int) -> str:
    """``{p}_tile{es}(s, slane, d, drow)``: a (8/es) x (8/es) tile transpose through uint64
    words: lane j (8 bytes at s + j*slane) becomes column j of the rows at d + i*drow.

    A swap network of shifts and masks (log2(8/es) rounds), which plain C compilers
    keep in registers; big-endian targets take the element loop.
    """
    n = 8 // es
    lines = [
        f"static inline void {p}_tile{es}(const unsigned char *s, size_t slane, "
        "unsigned char *d, size_t drow) {",
        "#if LAYOUTKIT_BIG_ENDIAN",
        f"    for (size_t i = 0; i < {n}; i++)",
        f"        for (size_t j = 0; j < {n}; j++) memcpy(d + i * drow + j * {es}, "
        f"s + j * slane + i * {es}, {es});",
        "#else",
        f"    uint64_t x[{n}];",
        f"    for (size_t j = 0; j < {n}; j++) memcpy(&x[j], s + j * slane, 8);",
    ]
    b = 4
    while b >= es:
        m = b // es
        lo = _MASKS[b]
        hi = (~lo) & 0xFFFFFFFFFFFFFFFF
        for k in range(n):
            if k & m:
                continue
            lines.append(
                f"    {{ const uint64_t a = x[{k}], c = x[{k + m}]; "
                f"x[{k}] = (a & {lo:#x}ull) | ((c << {8 * b}) & {hi:#x}ull); "
                f"x[{k + m}] = ((a >> {8 * b}) & {lo:#x}ull) | (c & {hi:#x}ull); }}"
            )
        b //= 2
    lines += [
        f"    for (size_t i = 0; i < {n}; i++) memcpy(d + i * drow, &x[i], 8);",
        "#endif",
        "}",
    ]
    return "\n".join(lines) + "\n"
