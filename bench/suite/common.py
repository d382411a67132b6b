"""Workloads, inputs, reference outputs, layout geometry and timing shared by every implementation.

Every implementation process imports this module (and layoutkit, which computes
the reference output each implementation is checked against byte for byte).
"""

from __future__ import annotations

import statistics
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

import layoutkit as lk

# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------

SHAPES = [
    (1, 3, 1024, 1024),
    (1, 3, 224, 224),
    (1, 64, 256, 256),
    (8, 256, 56, 56),
    (1, 2048, 7, 7),
]
QUICK_SHAPES = [(1, 3, 1024, 1024), (1, 64, 256, 256)]
# Shapes whose tensors are large enough for a second thread (the "large shapes").
LARGE_SHAPES = {(1, 3, 1024, 1024), (1, 64, 256, 256), (8, 256, 56, 56)}
GGML_SHAPES = [(4096, 4096), (256, 4096)]
QUICK_GGML_SHAPES = [(256, 4096)]
GGML_TYPES = ["Q4_0", "Q8_0", "Q4_K"]
QUANT_SCALE = 1.0 / 128

U8, I8, F16, F32 = "uint8", "int8", "float16", "float32"
ALL = (U8, F16, F32)
VALL = (I8, F16, F32)  # Vitis AI and TensorRT carry signed 8-bit data


@dataclass(frozen=True)
class Family:
    """One kind of repack: how layoutkit is called and which layouts the peers reproduce."""

    name: str
    api: str  # convert | pack | unpack | vitis | vitis_q | trt
    src: str  # layout tag (or HTP preset for pack/unpack) of the input
    dst: str  # layout tag (or HTP preset, Vitis format, TensorRT format) of the output
    dims: str  # logical dims of both layouts
    dtypes: tuple[str, ...]
    quick: bool = False  # part of --quick
    channel_blocked: bool = False  # the output blocks channels (the "2x best peer" target)


FAMILIES = [
    Family("NCHW->NHWC", "convert", "NCHW", "NHWC", "NCHW", ALL, quick=True),
    Family("NHWC->NCHW", "convert", "NHWC", "NCHW", "NCHW", ALL, quick=True),
    Family("NCHW->NCHW4c", "pack", "NCHW", "NCHW4c", "NCHW", ALL, True, True),
    Family("NCHW->NCHW8c", "pack", "NCHW", "NCHW8c", "NCHW", ALL, False, True),
    Family("NCHW->NCHW16c", "pack", "NCHW", "NCHW16c", "NCHW", ALL, True, True),
    Family("NCHW->NCHW32c", "pack", "NCHW", "NCHW32c", "NCHW", ALL, False, True),
    Family("NHWC->Crouton", "pack", "NHWC", "R4CroutonLayout", "NHWC", ALL, True, True),
    Family("Crouton->NHWC", "unpack", "R4CroutonLayout", "NHWC", "NHWC", ALL, quick=True),
    Family("NHWC->Crouton2", "pack", "NHWC", "R4Crouton2Layout", "NHWC", (F16,), False, True),
    Family("Crouton2->NHWC", "unpack", "R4Crouton2Layout", "NHWC", "NHWC", (F16,)),
    Family("NHWC->Crouton4x1", "pack", "NHWC", "R4Crouton4x1Layout", "NHWC", (U8,), False, True),
    Family("Crouton4x1->NHWC", "unpack", "R4Crouton4x1Layout", "NHWC", "NHWC", (U8,)),
    Family("NCHW->HCWNC4", "vitis", "NCHW", "HCWNC4", "NCHW", VALL, True, True),
    Family("NCHW->HCWNC8", "vitis", "NCHW", "HCWNC8", "NCHW", VALL, False, True),
    Family("NCHW f32->HCWNC4 i8", "vitis_q", "NCHW", "HCWNC4", "NCHW", (F32,), True, True),
    Family("NCHW f32->HCWNC8 i8", "vitis_q", "NCHW", "HCWNC8", "NCHW", (F32,), False, True),
    Family("NCHW->kCHW32", "trt", "NCHW", "kCHW32", "NCHW", VALL, True, True),
    Family("NCHW->kHWC8", "trt", "NCHW", "kHWC8", "NCHW", (F16,), True, True),
]


@dataclass
class Workload:
    kind: str  # repack | ggml
    name: str
    shape: tuple[int, ...]  # logical shape in the layouts' dims (NHWC for the HTP rows)
    dtype: str  # input dtype
    label_shape: str  # the shape as the issue names it (NCHW)
    api: str = ""
    src: str = ""
    dst: str = ""
    dims: str = ""
    channel_blocked: bool = False
    large: bool = False
    ggml_op: str = ""  # quantize | dequantize
    ggml_type: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.name}|{self.label_shape}|{self.dtype}"

    @property
    def out_dtype(self) -> str:
        if self.kind == "ggml":
            return "uint8" if self.ggml_op == "quantize" else "float32"
        return "int8" if self.api == "vitis_q" else self.dtype

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["id"] = self.id
        return d


def workloads(quick: bool, only: str | None = None) -> list[Workload]:
    """The suite's workloads in run order; ``only`` keeps those whose id contains any of its
    comma-separated, case-insensitive parts."""
    out: list[Workload] = []
    for shape in QUICK_SHAPES if quick else SHAPES:
        n, c, h, w = shape
        label = "x".join(map(str, shape))
        for fam in FAMILIES:
            if quick and not fam.quick:
                continue
            for dt in fam.dtypes:
                if quick and dt == F16 and len(fam.dtypes) > 1:
                    continue
                logical = (n, h, w, c) if fam.dims == "NHWC" else shape
                out.append(
                    Workload(
                        "repack",
                        fam.name,
                        logical,
                        dt,
                        label,
                        api=fam.api,
                        src=fam.src,
                        dst=fam.dst,
                        dims=fam.dims,
                        channel_blocked=fam.channel_blocked,
                        large=shape in LARGE_SHAPES,
                    )
                )
    for rows, cols in QUICK_GGML_SHAPES if quick else GGML_SHAPES:
        for t in GGML_TYPES:
            for op in ("quantize", "dequantize"):
                out.append(
                    Workload(
                        "ggml",
                        f"ggml {op} {t}",
                        (rows, cols),
                        F32 if op == "quantize" else U8,
                        f"{rows}x{cols}",
                        ggml_op=op,
                        ggml_type=t,
                        large=rows * cols >= 1 << 22,
                    )
                )
    if only:
        parts = [p.strip().lower() for p in only.split(",") if p.strip()]
        out = [wl for wl in out if any(p in wl.id.lower() for p in parts)]
    return out


# ---------------------------------------------------------------------------
# Layouts of a workload and their geometry
# ---------------------------------------------------------------------------


def _layout(spec: str, dims: str) -> lk.Layout:
    if spec.startswith("R4"):
        return lk.htp.layout(spec)
    if spec.startswith("HCWNC"):
        return lk.Layout(f"HCWN{spec[5:]}c", dims=dims)
    if spec.startswith("k"):
        raise ValueError("TensorRT layouts depend on the shape: use layouts()")
    return lk.Layout(spec, dims=dims)


def layouts(w: Workload) -> tuple[lk.Layout, lk.Layout]:
    """The (source, destination) core layouts of a repack workload, over ``w.dims``."""
    src = _layout(w.src, w.dims)
    if w.api == "trt":
        dst = lk.tensorrt.layout(w.dst, w.shape, w.dtype)
    else:
        dst = _layout(w.dst, w.dims)
    return src, dst


@dataclass(frozen=True)
class Geometry:
    """A layout of a shape as views: ``physical = padded.reshape(split).transpose(perm)``.

    ``split`` lists, dim by dim in logical order, the sizes of that dim's digits
    from the outermost to the innermost; ``perm[k]`` is the split axis of physical
    axis ``k``.
    """

    shape: tuple[int, ...]
    padded: tuple[int, ...]
    split: tuple[int, ...]
    split_of_dim: tuple[tuple[int, ...], ...]  # split axes of each logical dim
    perm: tuple[int, ...]
    physical: tuple[int, ...]

    @property
    def plain(self) -> bool:
        return len(self.split) == len(self.shape)

    @property
    def has_padding(self) -> bool:
        return self.padded != self.shape

    @property
    def inverse(self) -> tuple[int, ...]:
        return tuple(int(i) for i in np.argsort(self.perm))


def geometry(layout: lk.Layout, shape: tuple[int, ...]) -> Geometry:
    padded = layout.padded_shape(shape)
    phys = layout.physical_shape(shape)
    digits = layout.digits
    split: list[int] = []
    of_dim: list[tuple[int, ...]] = []
    axis_of_digit: dict[int, int] = {}
    for d in range(layout.rank):
        ks = sorted(
            (k for k, g in enumerate(digits) if g.dim == d), key=lambda k: -digits[k].weight
        )
        axes = []
        for k in ks:
            axis_of_digit[k] = len(split)
            axes.append(len(split))
            split.append(phys[k])
        of_dim.append(tuple(axes))
    perm = tuple(axis_of_digit[k] for k in range(len(digits)))
    return Geometry(tuple(shape), tuple(padded), tuple(split), tuple(of_dim), perm, tuple(phys))


def split_strides(logical_strides: tuple[int, ...], g: Geometry) -> tuple[int, ...]:
    """Strides of the split view of a logical view with ``logical_strides`` (any units)."""
    out = [0] * len(g.split)
    for d, axes in enumerate(g.split_of_dim):
        step = logical_strides[d]
        for a in reversed(axes):
            out[a] = step
            step *= g.split[a]
    return tuple(out)


# ---------------------------------------------------------------------------
# Inputs and the reference output (layoutkit's, allocating)
# ---------------------------------------------------------------------------


def _rng(w: Workload) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(w.id.encode()))


def random_tensor(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == U8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    if dtype == I8:
        return rng.integers(-128, 128, shape, dtype=np.int8)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def make_input(w: Workload) -> np.ndarray:
    """The input buffer of a workload: the source layout's physical array (or GGML data)."""
    rng = _rng(w)
    if w.kind == "ggml":
        x = rng.standard_normal(w.shape, dtype=np.float32)
        return x if w.ggml_op == "quantize" else lk.ggml.quantize(x, w.ggml_type)
    if w.api == "vitis_q":
        return rng.uniform(-1, 1, w.shape).astype(np.float32)
    logical = random_tensor(rng, w.shape, w.dtype)
    src, _ = layouts(w)
    return src.pack(logical)


def hsi_entry(w: Workload) -> Any:
    """The flexmlrt-hsi.json input entry of a quantize-fused Vitis workload."""
    n, c, h, wd = w.shape
    block = int(w.dst[5:])
    cb = -(-c // block)
    entry = {
        "tensor_name": "x",
        "cpu_shape": list(w.shape),
        "cpu_format": "NCHW",
        "cpu_dtype": "fp32",
        "hw_shape": [h, cb, wd, n, block],
        "hw_dtype": "int8",
        "rt_transformations": [
            {"transformation": "quantize", "scale": QUANT_SCALE, "to_dtype": "int8"},
            {
                "transformation": "pad",
                "pad_at_start": [0, 0, 0, 0],
                "pad_at_end": [0, cb * block - c, 0, 0],
                "output_shape": [n, cb * block, h, wd],
            },
            {"transformation": "reshape", "output_shape": [n, cb, block, h, wd]},
            {"transformation": "transpose", "perm": [3, 1, 4, 0, 2]},
        ],
    }
    return lk.vitis.load_hsi({"inputs": [entry]}).inputs[0]


def reference(w: Workload, x: np.ndarray) -> np.ndarray:
    """layoutkit's output for ``x`` (allocating call of the workload's API)."""
    if w.kind == "ggml":
        if w.ggml_op == "quantize":
            return lk.ggml.quantize(x, w.ggml_type)
        return lk.ggml.dequantize(x, w.ggml_type)
    if w.api == "vitis_q":
        return hsi_entry(w).to_hw(x)
    src, dst = layouts(w)
    return lk.convert(x, w.shape, src, dst)


SIGNED_ZERO = "signed zero only"


def same_bytes(got: Any, want: np.ndarray) -> str | None:
    """None if ``got`` holds exactly ``want``'s bytes, else a short description."""
    got = np.ascontiguousarray(np.asarray(got))
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    a = got.reshape(-1).view(np.uint8)
    b = np.ascontiguousarray(want).reshape(-1).view(np.uint8)
    if a.size != b.size:
        return f"{a.size} bytes, expected {b.size}"
    bad = np.flatnonzero(a != b)
    if not bad.size:
        return None
    if want.dtype.kind == "f":
        g, e = got.reshape(-1), np.ascontiguousarray(want).reshape(-1)
        diff = np.flatnonzero(g.view(f"u{g.itemsize}") != e.view(f"u{e.itemsize}"))
        if np.all((g[diff] == 0) & (e[diff] == 0)):
            return f"{SIGNED_ZERO}: {diff.size} of {e.size} elements are -0.0/+0.0 swapped"
    return f"{bad.size} of {b.size} bytes differ (first at byte {bad[0]})"


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def spin_up(seconds: float = 0.3) -> None:
    """Keep the core busy for a moment before timing anything, so that a core
    that was idle is at its working clock. (On the shared VM, compute-bound
    kernels also alternate between full and about half speed in phases of
    ~0.1 s while a process runs; medians of interleaved samples absorb part of
    that, nothing removes it.)"""
    a = np.ones(1 << 14, np.float32)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        np.multiply(a, np.float32(1.0001), out=a)


def _once(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return max(time.perf_counter() - t0, 1e-7)


def paired_median(
    work: Callable[[], Any],
    ref: Callable[[], Any],
    repeat: int,
    min_time: float = 0.003,
    budget: float = 1.5,
) -> tuple[float, float]:
    """Median seconds per call of ``work`` and of ``ref``, sampled alternately.

    Each sample loops enough calls to last ``min_time``; the two are interleaved
    so that noise from the shared machine hits both alike. Slow workloads take
    fewer samples (at least 3) to keep within ``budget`` seconds.
    """
    work()
    ref()
    tw, tr = _once(work), _once(ref)
    nw = max(1, int(min_time / tw))
    nr = max(1, int(min_time / tr))
    reps = max(3, min(repeat, int(budget / max(tw * nw + tr * nr, 1e-9))))
    sw, sr = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(nw):
            work()
        t1 = time.perf_counter()
        for _ in range(nr):
            ref()
        t2 = time.perf_counter()
        sw.append((t1 - t0) / nw)
        sr.append((t2 - t1) / nr)
    return statistics.median(sw), statistics.median(sr)


def copy_pair(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two ``n``-byte buffers at the same offset within a 4 KiB page.

    glibc copies mid-sized buffers with ``rep movsb``, which on this class of
    machine (AMD EPYC) runs 10-20x slower when the destination sits a few bytes
    after the source modulo 4 KiB (measured: 64 KiB in 38 us instead of 3.7 us).
    Two heap neighbours often do; the yardstick should be the memory limit, not
    that slow path."""
    a = np.ones(max(1, n), np.uint8)
    raw = np.zeros(a.size + 8192, np.uint8)
    start = (a.ctypes.data - raw.ctypes.data) % 4096
    return a, raw[start : start + a.size]


class CopyOf:
    """``np.copyto`` between two buffers of ``nbytes // 2`` bytes: moves ``nbytes`` in all."""

    def __init__(self, nbytes: int) -> None:
        self.a, self.b = copy_pair(nbytes // 2)

    def __call__(self) -> None:
        np.copyto(self.b, self.a)
