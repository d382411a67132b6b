"""Generated C headers, compiled with the system C compiler, equal layoutkit.convert byte for byte.

Each test builds one C program that includes many generated headers (one per
case, each with its own function name), compiles it once with
``-std=c99 -Wall -Wextra -Werror -pedantic``, then runs every case on random
data and compares both directions with ``layoutkit.convert``. Skipped when no
C compiler is found (set ``CC`` to choose one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.cli import main as cli_main
from layoutkit.codegen import Pitched

CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
needs_cc = pytest.mark.skipif(
    CC is None, reason="no C compiler found (cc, gcc or clang; set CC=...) to compile headers"
)
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#define RUN(NAME)                                                                      \
    do {                                                                               \
        size_t n = NAME##_SRC_BYTES, m = NAME##_DST_BYTES;                             \
        unsigned char *a = malloc(n + 1), *b = malloc(m + 1), *c = malloc(n + 1);      \
        if (!a || !b || !c || fread(a, 1, n, stdin) != n) return 3;                    \
        memset(b, 0xA5, m + 1); memset(c, 0x5A, n + 1);                                \
        NAME(a, b);                                                                    \
        NAME##_inverse(b, c);                                                          \
        if (b[m] != 0xA5 || c[n] != 0x5A) return 4; /* wrote past the end */            \
        fwrite(b, 1, m, stdout); fwrite(c, 1, n, stdout);                              \
        free(a); free(b); free(c);                                                     \
        return 0;                                                                      \
    } while (0)
"""


@dataclass
class Case:
    src: Any
    dst: Any
    shape: tuple[int, ...]
    dtype: str
    kw: dict[str, Any] = field(default_factory=dict)
    dims: str | None = None


def _side(spec: Any, dims: str, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    from layoutkit.codegen import resolve

    return resolve(spec, "spec", dims, shape, dtype)


def _values(dt: np.dtype, n: int, rng: np.random.Generator, scale: float) -> np.ndarray:
    if dt.kind == "f" or dt == np.dtype(ml_dtypes.bfloat16):
        x = (rng.standard_normal(n) * 100 * scale).astype(np.float32)
        # Ties, saturation, specials: the cases where roundings differ.
        special = np.array(
            [0.5, 1.5, 2.5, -0.5, -2.5, 127.5, -128.5, 1e9, -1e9, np.inf, -np.inf, np.nan, -0.0],
            np.float32,
        )
        k = min(n, len(special))
        x[:k] = special[:k] * np.float32(scale)
        x[k : 2 * k] = np.float32(6.1e-5) * rng.random(min(k, max(n - k, 0)))  # fp16 subnormals
        with np.errstate(over="ignore"):
            return x.astype(dt)
    return rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt)


def _expected(case: Case, x: np.ndarray) -> tuple[bytes, bytes]:
    sdt = np.dtype(case.dtype)
    ddt = np.dtype(case.kw.get("dst_dtype", sdt))
    dims = case.dims or (case.src.dims if isinstance(case.src, lk.Layout) else None)
    src = _side(case.src, dims or lk.Layout(case.src).dims, case.shape, sdt)
    dims = src.dims if isinstance(src, lk.Layout) else dims
    dst = _side(case.dst, dims, case.shape, ddt)
    fwd: dict[str, Any] = {"pad_value": case.kw.get("pad_value", 0)}
    back: dict[str, Any] = {}
    if "dst_dtype" in case.kw:
        q = {"scale": case.kw.get("scale"), "zero_point": case.kw.get("zero_point")}
        fwd.update(dtype=ddt, **q)
        back = {"dtype": sdt, **(q if ddt.kind in "iu" or sdt.kind in "iu" else {})}
    y = _convert(x, case.shape, src, dst, fwd)
    z = _convert(y, case.shape, dst, src, back)
    return y.tobytes(), z.tobytes()


def _convert(x: np.ndarray, shape: tuple[int, ...], src: Any, dst: Any, kw: dict) -> np.ndarray:
    """layoutkit.convert, with larod pitched sides through larod.pack / larod.view."""
    if isinstance(src, Pitched):
        dims = dst.dims
        p = src.resolved_pitches(shape, dims, x.dtype.itemsize)
        view = lk.larod.view(x, src.stored_dims(shape, dims), x.dtype, p, "UNSPECIFIED")
        logical = np.transpose(view, [src.order.index(ch) for ch in dims])
        return dst.pack(logical, **kw)
    if isinstance(dst, Pitched):
        dims = src.dims
        logical = src.unpack(x, shape, **{k: v for k, v in kw.items() if k != "pad_value"})
        stored = np.transpose(logical, [dims.index(ch) for ch in dst.order])
        p = dst.resolved_pitches(shape, dims, logical.dtype.itemsize)
        packed = lk.larod.pack(np.ascontiguousarray(stored), p, "UNSPECIFIED")
        # Typed when whole elements, so the inverse reads it with the right dtype.
        return packed.view(logical.dtype) if p[0] % logical.dtype.itemsize == 0 else packed
    return lk.convert(x, shape, src, dst, **kw)


def run_cases(cases: list[Case], tmp: Path, flags: tuple[str, ...] = ("-O1",)) -> None:
    """Compile every case into one program, run each on random data, compare with layoutkit."""
    includes, dispatch = [], []
    for k, c in enumerate(cases):
        name = f"case{k}"
        text = lk.emit_c(c.src, c.dst, c.shape, c.dtype, name=name, dims=c.dims, **c.kw)
        (tmp / f"{name}.h").write_text(text)
        includes.append(f'#include "{name}.h"')
        dispatch.append(f"    if (k == {k}) RUN({name});")
    program = "\n".join(includes) + MAIN
    program += "int main(int argc, char **argv) {\n    int k = argc > 1 ? atoi(argv[1]) : -1;\n"
    program += "\n".join(dispatch) + "\n    return 2;\n}\n"
    (tmp / "main.c").write_text(program)
    exe = tmp / ("main.exe" if sys.platform == "win32" else "main")
    res = subprocess.run(
        [CC, *CFLAGS, *flags, "-o", str(exe), str(tmp / "main.c")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, f"compile failed:\n{res.stderr[:4000]}"
    for k, c in enumerate(cases):
        sdt = np.dtype(c.dtype)
        dims = c.dims or (c.src.dims if isinstance(c.src, lk.Layout) else lk.Layout(c.src).dims)
        src = _side(c.src, dims, c.shape, sdt)
        nbytes = (
            src.size(c.shape) * sdt.itemsize
            if isinstance(src, lk.Layout)
            else src.resolved_pitches(c.shape, dims, sdt.itemsize)[0]
        )
        rng = np.random.default_rng(k)
        x = _values(sdt, nbytes // sdt.itemsize, rng, float(c.kw.get("scale") or 1.0))
        want_fwd, want_back = _expected(c, x)
        res2 = subprocess.run([str(exe), str(k)], input=x.tobytes(), capture_output=True)
        assert res2.returncode == 0, f"case {k} ({c}) exited {res2.returncode}"
        got_fwd, got_back = res2.stdout[: len(want_fwd)], res2.stdout[len(want_fwd) :]
        assert got_fwd == want_fwd, f"case {k} forward differs: {c}"
        assert got_back == want_back, f"case {k} inverse differs: {c}"


PRESETS = [
    "R4FlatMemoryLayout",
    "R4NCHWMemoryLayout",
    "R4Depth32MemoryLayout",
    "R4CroutonLayout",
    "R4Crouton4x1Layout",
    "R4Crouton2x2Layout",
    "R4Crouton2Layout",
    "R4Crouton4Layout",
    "R4WideCroutonLayout",
    "R4WideCrouton2x2Layout",
    "R4WideCrouton4Layout",
]


@needs_cc
def test_vendor_layouts(tmp_path):
    cases = [Case("NHWC", p, (1, 13, 19, 35), "uint8") for p in PRESETS]
    cases += [Case("NCHW", p, (2, 35, 9, 17), "uint8", dims="NCHW") for p in PRESETS[3:6]]
    cases += [Case("HWIO", "ConvWeightLayout", (3, 5, 17, 33), "uint8", dims="HWIO")]
    for x in (4, 8, 16):
        cases += [
            Case("NCHW", f"HCWNC{x}", (1, 3, 24, 20), "int8"),
            Case("NCHW", f"HCWNC{x}", (2, 19, 5, 7), "uint8"),
            Case("NHWC", f"HCWNC{x}", (2, 19, 5, 7), "float32", dims="NCHW"),
            # Whole blocks of channels: each pixel's runs of x bytes move as
            # one element (the planner's wider elements).
            Case("NHWC", f"HCWNC{x}", (3, 2 * x, 5, 7), "uint8", dims="NCHW"),
            Case(f"HCWNC{x}", "NHWC", (3, 2 * x, 5, 7), "uint8", dims="NCHW"),
        ]
    cases += [
        Case("NCHW", "kCHW32", (1, 35, 7, 9), "int8"),
        Case("NCHW", "kCHW32", (2, 3, 4, 5), "float16"),
        Case("NCHW", "kHWC8", (1, 35, 7, 9), "float16"),
        Case("NCHW", "kHWC8", (2, 3, 5, 4), "bfloat16"),
        Case("NCHW", "kCHW4", (1, 5, 3, 6), "int8"),
        Case("NCHW", "kCHW16", (1, 5, 3, 6), "float16"),
        Case("kCHW32", "kHWC8", (1, 35, 7, 9), "float16", dims="NCHW"),
        Case("R4CroutonLayout", "HCWNC4", (1, 35, 9, 17), "uint8", dims="NCHW"),
    ]
    run_cases(cases, tmp_path, ("-O2",))


@needs_cc
def test_rows_that_continue_each_other(tmp_path):
    """Boxes whose rows merge into one long row (32 channels of a crouton whose H or
    W is not a multiple of 8): every lane of the merged row is data. And every
    padding slot of a destination whose left pad exceeds the source's is written."""
    cases = [
        Case("NHWC", "R4CroutonLayout", (1, 3, 3, 32), "uint8"),
        Case("NHWC", "R4CroutonLayout", (1, 9, 9, 32), "uint8"),
        Case("NHWC", "R4CroutonLayout", (1, 16, 13, 32), "uint8"),
        Case("NHWC", "NHWC8h8w32c", (1, 3, 8, 32), "uint8", dims="NCHW"),
        Case(
            "NHWC", "R4CroutonLayout", (1, 3, 3, 32), "float32", {"dst_dtype": "int8", "scale": 0.1}
        ),
        Case("NHC2h", "CNH4n2c", (2, 2, 2), "float64", dims="NHC"),
        # A destination left pad beyond the source's frame (an NHWC halo).
        Case(
            "R4CroutonLayout",
            lk.Layout("NHWC", left_pad=(0, 1, 1, 0)),
            (1, 5, 6, 3),
            "uint8",
            dims="NHWC",
        ),
        Case("N2n", lk.Layout("N", left_pad=(1,)), (2,), "uint8", {"pad_value": 7}, dims="N"),
    ]
    run_cases(cases, tmp_path)


@needs_cc
def test_conversions_and_padding(tmp_path):
    q8 = {"dst_dtype": "int8", "scale": 0.05, "zero_point": -3}
    cases = [
        Case("NCHW", "HCWNC4", (1, 3, 16, 20), "float32", q8),
        Case("NCHW", "NCHW32c", (1, 5, 4, 9), "float32", {**q8, "pad_value": 7}),
        Case("NCHW", "NHWC", (1, 40, 9, 9), "float32", {"dst_dtype": "uint8", "scale": 0.5}),
        Case(
            "NCHW",
            "NCHW32c",
            (1, 5, 4, 9),
            "float32",
            {"dst_dtype": "int16", "scale": 0.001, "zero_point": 100},
        ),
        Case("NCHW", "kCHW32", (1, 5, 4, 9), "float32", {"dst_dtype": "int8", "scale": 0.1}),
        Case("NCHW", "NHWC", (1, 5, 4, 9), "float16", {"dst_dtype": "uint16", "scale": 0.25}),
        Case("NCHW", "NHWC8c", (1, 5, 4, 9), "float32", {"dst_dtype": "float16"}, dims="NCHW"),
        Case("NCHW", "NCHW4c", (1, 5, 4, 9), "float32", {"dst_dtype": "bfloat16"}),
        Case("NCHW", "NCHW4c", (1, 5, 4, 9), "bfloat16", {"dst_dtype": "float32"}),
        Case("NCHW", "NCHW8c", (1, 5, 4, 9), "float16", {"dst_dtype": "bfloat16"}),
        Case("NCHW", "NHWC", (1, 5, 4, 9), "int8", {"dst_dtype": "float32", "scale": 0.1}),
        Case("NCHW", "NCHW4c", (1, 5, 3, 4), "uint16", {"pad_value": 0xABCD}),
        Case("NCHW", "NCHW4c", (1, 5, 3, 4), "float64", {"pad_value": -1.5}),
        Case("NCHW3c", "NCHW4c", (2, 7, 3, 5), "uint8"),  # block sizes that do not nest
        Case(lk.Layout("NHWC8h8w32c", left_pad=(0, 1, 3, 0)), "NHWC", (1, 5, 9, 33), "uint8"),
        Case("NCHW", "NHWC", (1, 0, 4, 4), "uint8"),
        Case("NCHW", "NCHW4c", (1, 3, 0, 4), "uint8", {"pad_value": 9}),
    ]
    run_cases(cases, tmp_path)


@needs_cc
def test_larod_pitched(tmp_path):
    cases = [
        Case("NCHW", "larod:NHWC:align=1,1,32,4", (1, 3, 5, 7), "uint8"),  # nests: padded layout
        Case(
            "NCHW", "larod:NHWC:align=1,1,32,1", (1, 3, 5, 7), "uint8"
        ),  # 3-byte pixels, 32-B rows
        Case("NCHW", "larod:NCHW:align=1,1,1,64", (2, 3, 5, 7), "float32"),
        Case("larod:NCHW:align=1,1,1,64", "NHWC", (2, 3, 5, 7), "float32", dims="NCHW"),
        Case(
            "NCHW",
            Pitched("NHWC", pitches=(2 * 5 * 40, 5 * 40, 40, 9)),
            (1, 3, 5, 4),
            "uint8",
            dims="NCHW",
        ),
    ]
    run_cases(cases, tmp_path)


@needs_cc
def test_headers_compile_together_and_as_cxx_free_c99(tmp_path):
    """Two headers in one file, each used once, and one unused: no warnings."""
    a = lk.emit_c("NCHW", "NHWC8h8w32c", (1, 3, 5, 30), "uint8", name="to_crouton")
    b = lk.emit_c("NCHW", "HCWN4c", (1, 3, 2, 2), "float32", name="q", dst_dtype="int8", scale=0.1)
    c = lk.emit_c(None, "NCHW4c", (1, 3, 2, 2), "uint8", name="off", offset_only=True)
    for n, t in (("a", a), ("b", b), ("c", c)):
        (tmp_path / f"{n}.h").write_text(t)
        assert all(
            inc in ("<stddef.h>", "<stdint.h>", "<string.h>")
            for inc in (ln.split()[1] for ln in t.splitlines() if ln.startswith("#include"))
        )
    (tmp_path / "m.c").write_text(
        '#include "a.h"\n#include "b.h"\n#include "c.h"\n#include "a.h"\n'
        "int main(void) { static unsigned char x[to_crouton_SRC_BYTES], y[TO_CROUTON_DST_BYTES];\n"
        "  to_crouton(x, y); return (int)off_offset(0, 2, 1, 1) + (int)q_src_offset(0, 0, 0, 0); }\n"
    )
    res = subprocess.run(
        [CC, *CFLAGS, "-O2", "-c", str(tmp_path / "m.c"), "-o", str(tmp_path / "m.o")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr


@needs_cc
def test_offset_only(tmp_path):
    shape = (2, 5, 3, 7)
    layouts = {
        "o_crouton": lk.Layout("NHWC8h8w32c", dims="NCHW"),
        "o_hcwn": lk.Layout("HCWN4c", dims="NCHW"),
        "o_pad": lk.Layout("NCHW4c2w", left_pad=(0, 1, 2, 0)),
    }
    text = []
    for name, layout in layouts.items():
        h = lk.emit_c(None, layout, shape, "uint16", name=name, offset_only=True)
        assert f"#define {name}_ELEMENTS {layout.size(shape)}" in h
        (tmp_path / f"{name}.h").write_text(h)
        text.append(f'#include "{name}.h"')
    text.append("#include <stdio.h>\nint main(void) {")
    idx = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), -1).reshape(-1, 4)
    for name in layouts:
        text.append(
            "  for (size_t a = 0; a < 2; a++) for (size_t b = 0; b < 5; b++)"
            " for (size_t c = 0; c < 3; c++) for (size_t e = 0; e < 7; e++)"
            f' printf("%zu %zu\\n", {name}_offset(a, b, c, e), {name}_byte_offset(a, b, c, e));'
        )
    text.append("  return 0;\n}\n")
    (tmp_path / "o.c").write_text("\n".join(text))
    exe = tmp_path / "o"
    subprocess.run([CC, *CFLAGS, "-o", str(exe), str(tmp_path / "o.c")], check=True)
    got = np.array(subprocess.run([str(exe)], capture_output=True, text=True).stdout.split(), int)
    got = got.reshape(len(layouts), -1, 2)
    for k, layout in enumerate(layouts.values()):
        want = layout.offsets(shape, idx)
        assert np.array_equal(got[k, :, 0], want)
        assert np.array_equal(got[k, :, 1], want * 2)


# -- hypothesis: random tags, shapes and dtypes ------------------------------------


@st.composite
def cases(draw: Any) -> Case:
    letters = "NCHW"
    shape = tuple(draw(st.integers(1, 9)) for _ in letters)

    def tag() -> str:
        order = "".join(draw(st.permutations(letters)))
        nblocks = draw(st.integers(0, 3))
        blocks = "".join(
            f"{draw(st.sampled_from([2, 3, 4, 8, 16]))}{draw(st.sampled_from(letters)).lower()}"
            for _ in range(nblocks)
        )
        return order + blocks

    dtype = draw(st.sampled_from(["uint8", "int16", "float32", "float64"]))
    kw: dict[str, Any] = {}
    if dtype == "float32" and draw(st.booleans()):
        kw = draw(
            st.sampled_from(
                [
                    {"dst_dtype": "int8", "scale": 0.03, "zero_point": 5},
                    {"dst_dtype": "uint8", "scale": 0.5, "zero_point": 128},
                    {"dst_dtype": "float16"},
                    {"dst_dtype": "bfloat16"},
                ]
            )
        )
    if draw(st.booleans()):
        kw["pad_value"] = 3
    return Case(tag(), tag(), shape, dtype, kw, dims=letters)


@needs_cc
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(cases(), min_size=8, max_size=8))
def test_random_tags(tmp_path, batch):
    sub = tmp_path / f"h{abs(hash(str(batch))) % 10**8}"
    sub.mkdir()
    run_cases(batch, sub)


# -- API and CLI -----------------------------------------------------------------------


def test_long_padded_extents_plan_in_constant_time():
    """Runs of padding or data are found by formula, not digit by digit (an extent
    of 2**31 + 1 padded to 32 took minutes)."""
    start = time.perf_counter()
    for shape in ((4, 2**31 + 1), (4, 10**7 + 1)):
        assert "convert_inverse" in lk.emit_c("NC", "NC32c", shape, "uint8")
    assert "convert_inverse" in lk.emit_c("N", "N32n", (2**26 + 1,), "uint8")
    assert time.perf_counter() - start < 5


@needs_cc
def test_five_dim_tensorrt_formats_pair_with_klinear(tmp_path):
    """TensorRT's dims are positions: a 5-D kLINEAR (named NACHW) pairs with kDHWC8
    (named NCDHW), and the header moves what tensorrt.to_format moves."""
    header = lk.emit_c("kLINEAR", "kDHWC8", (1, 3, 3, 5, 7), "float16", name="cv")
    (tmp_path / "cv.h").write_text(header)
    (tmp_path / "cv.c").write_text(
        '#include <stdio.h>\n#include "cv.h"\n'
        "int main(void) { static unsigned char a[cv_SRC_BYTES], b[cv_DST_BYTES];\n"
        "  if (fread(a, 1, sizeof a, stdin) != sizeof a) return 3;\n"
        "  cv(a, b); fwrite(b, 1, sizeof b, stdout); return 0; }\n"
    )
    exe = tmp_path / "cv"
    subprocess.run([CC, *CFLAGS, "-o", str(exe), str(tmp_path / "cv.c")], check=True)
    x = (np.arange(315).reshape(1, 3, 3, 5, 7) % 251).astype(np.float16)
    got = subprocess.run([str(exe)], input=x.tobytes(), capture_output=True, check=True).stdout
    assert got == lk.tensorrt.to_format(x, "kDHWC8").tobytes()


def test_header_contents():
    h = lk.emit_c("NCHW", "HCWN4c", (1, 3, 224, 224), "int8")
    assert "#define convert_SRC_BYTES 150528" in h and "#define CONVERT_DST_BYTES 200704" in h
    assert "static LAYOUTKIT_UNUSED void convert(" in h and "void convert_inverse(" in h
    assert f"layoutkit {lk.__version__}" in h and "HCWN4c (dims NCHW)" in h
    assert "#ifndef LAYOUTKIT_CONVERT_H" in h
    assert "<math.h>" not in h


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "2bad"}, "name='2bad'"),
        ({"name": "int"}, "name='int'"),
        ({"scale": 0.5}, "scale/zero_point given without dst_dtype"),
        ({"dst_dtype": "int8"}, "needs scale="),
        ({"shape": (1, 3, 4)}, "shape=(1, 3, 4) has 3 dims"),
        ({"shape": (1, -3, 4, 4)}, "expected >= 0"),
        ({"dst": "larod:NHWC:stride=4"}, "is not 'align=...'"),
        ({"dst": "NCHWxyz"}, "dst='NCHWxyz' is not a layout tag"),
        ({"dst": lk.Layout("NHWC")}, "has dims 'NHWC' but the conversion's dims are 'NCHW'"),
        ({"dst": "larod:NHW"}, "not a permutation"),
        ({"name": "_Atomic"}, "name='_Atomic'"),
        ({"name": "memcpy"}, "reserves"),
        ({"name": "size_t"}, "reserves"),
        ({"name": "LAYOUTKIT_SH"}, "reserves"),
        ({"name": "_x"}, "reserves"),
        ({"name": "main"}, "reserves"),
        ({"shape": (2**40, 3, 2**40, 4)}, "more than the emitted C's size_t"),
        ({"shape": (10**20, 3, 2, 2)}, "more than the emitted C's size_t"),
    ],
)
def test_errors(kwargs, message):
    args = {"src": lk.Layout("NCHW"), "dst": "NCHW4c", "shape": (1, 3, 4, 4), "dtype": "float32"}
    args.update(kwargs)
    with pytest.raises(lk.LayoutError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lk.emit_c(args.pop("src"), args.pop("dst"), args.pop("shape"), args.pop("dtype"), **args)


def test_type_errors():
    with pytest.raises(TypeError, match="name: expected a str"):
        lk.emit_c("NCHW", "NHWC", (1, 1, 1, 1), "uint8", name=3)
    with pytest.raises(TypeError, match="src: expected a Layout"):
        lk.emit_c(3.5, "NHWC", (1, 1, 1, 1), "uint8")


def test_cli_writes_header(tmp_path, capsys):
    out = tmp_path / "convert.h"
    argv = ["emit-c", "--from", "NCHW", "--to", "HCWN4c", "--dims", "NCHW"]
    argv += ["--shape", "1x3x224x224", "--dtype", "int8", "-o", str(out)]
    assert cli_main(argv) == 0
    assert out.read_text() == lk.emit_c("NCHW", "HCWN4c", (1, 3, 224, 224), "int8", dims="NCHW")
    assert (
        cli_main(
            [
                "emit-c",
                "--to",
                "R4CroutonLayout",
                "--shape",
                "1x3x5x30",
                "--dtype",
                "uint8",
                "--offset-only",
                "--name",
                "crouton",
            ]
        )
        == 0
    )
    assert "static inline size_t crouton_offset(size_t n, size_t h, size_t w, size_t c)" in (
        capsys.readouterr().out
    )
    assert cli_main(["emit-c", "--to", "NHWC", "--shape", "1x3x5x30", "--dtype", "uint8"]) == 2
    assert "--from is required" in capsys.readouterr().err
    argv = ["emit-c", "--from", "NCHW", "--to", "NCHW4c", "--shape", "1x3x2x2", "--dtype"]
    argv += ["float32", "--dst-dtype", "int8", "--scale", "x"]
    assert cli_main(argv) == 2
    assert "--scale 'x': expected a float" in capsys.readouterr().err


def test_docstring_examples():
    import doctest

    import layoutkit.codegen

    result = doctest.testmod(layoutkit.codegen, optionflags=doctest.ELLIPSIS)
    assert result.attempted and result.failed == 0


README = Path(__file__).resolve().parent.parent / "README.md"


@needs_cc
@pytest.mark.skipif(not README.exists(), reason="README.md not present (installed test run)")
def test_readme_c_example(tmp_path):
    """The README's emit-c command and C program build and print what the README says."""
    import re
    import shlex

    text = README.read_text(encoding="utf-8")
    part = text.split("<!-- emit-c example -->", 1)[1]
    command = re.search(r"```bash\n(.*?)```", part, flags=re.S).group(1).replace("\\\n", " ")
    program = re.search(r"```c\n(.*?)```", part, flags=re.S).group(1)
    build = re.findall(r"```bash\n(.*?)```", part, flags=re.S)[1]
    expected = build.split("# ", 1)[1].strip()
    argv = shlex.split(command)
    assert argv[:2] == ["layoutkit", "emit-c"]
    argv[argv.index("-o") + 1] = str(tmp_path / argv[argv.index("-o") + 1])
    assert cli_main(argv[1:]) == 0
    (tmp_path / "demo.c").write_text(program)
    exe = tmp_path / "demo"
    subprocess.run(
        [CC, *CFLAGS, "-O2", "-o", str(exe), str(tmp_path / "demo.c")], check=True, cwd=tmp_path
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == expected


def test_byte_only_offsets_say_why():
    """Pitches that are not multiples of the element size have no element offset."""
    h = lk.emit_c("NC", Pitched("NC", pitches=(21, 7)), (3, 3), "int16")
    assert "convert_dst_byte_offset(" in h and "size_t convert_dst_offset(" not in h
    assert "No convert_dst_offset: the byte strides are not all multiples" in h
    assert "size_t convert_src_offset(" in h
