"""layoutkit through its public APIs, always with a preallocated ``out=``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import layoutkit as lk

from .common import CopyOf, Workload, hsi_entry, layouts, paired_median

NAME = "layoutkit"


def version() -> str:
    try:
        from layoutkit._repack import simd_name

        kernels = simd_name()
    except ImportError:  # pragma: no cover - older builds
        kernels = "?"
    try:
        gk = lk.ggml._ggml_quants.kernels()  # type: ignore[attr-defined]
    except AttributeError:
        try:
            from layoutkit import _ggml_quants

            gk = _ggml_quants.kernels()
        except (ImportError, AttributeError):
            gk = "?"
    return f"{lk.__version__} (repack kernels {kernels}, ggml kernels {gk})"


def prepare(w: Workload, x: np.ndarray, out: np.ndarray, threads: int = 1) -> Callable[[], Any]:
    """A call of the workload's public API writing into ``out``.

    ``threads`` goes to the APIs that take it; the Vitis and TensorRT adapters
    follow ``$LAYOUTKIT_NUM_THREADS``, which the caller sets.
    """
    if w.kind == "ggml":
        t = w.ggml_type
        if w.ggml_op == "quantize":
            return lambda: lk.ggml.quantize(x, t, out=out, threads=threads)
        return lambda: lk.ggml.dequantize(x, t, out=out, threads=threads)
    src, dst = layouts(w)
    shape = w.shape
    if w.api == "convert":
        return lambda: lk.convert(x, shape, src, dst, out=out, threads=threads)
    if w.api == "pack":
        logical = x.reshape(shape)  # the source is the plain logical tensor
        return lambda: dst.pack(logical, out=out, threads=threads)
    if w.api == "unpack":
        return lambda: src.unpack(x, shape, out=out, threads=threads)
    if w.api == "vitis":
        fmt = w.dst
        return lambda: lk.vitis.to_hw(x, "NCHW", fmt, out=out)
    if w.api == "vitis_q":
        entry = hsi_entry(w)
        return lambda: entry.to_hw(x, out=out)
    if w.api == "trt":
        fmt = w.dst
        store = out.reshape(lk.tensorrt.storage_shape(fmt, shape, x.dtype))
        return lambda: lk.tensorrt.to_format(x, fmt, out=store)
    raise ValueError(f"unknown api {w.api!r}")


def overhead(repeat: int) -> list[dict[str, Any]]:
    """Time per call of tiny conversions (1x3x32x32), i.e. the Python overhead of each API.

    The kernel's own share is bounded by ``np.copyto`` of the same bytes, reported
    beside it; overhead = call - copy.
    """
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 3, 32, 32), dtype=np.uint8)
    xf = rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    nhwc = lk.Layout("NHWC", dims="NCHW")
    c4 = lk.Layout("NCHW4c")
    crouton = lk.htp.layout("R4CroutonLayout")
    xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    q = lk.ggml.quantize(rng.standard_normal((1, 3072), dtype=np.float32), "Q8_0")
    entry = hsi_entry(
        Workload("repack", "", (1, 3, 32, 32), "float32", "", api="vitis_q", dst="HCWNC4")
    )
    cases: list[tuple[str, Callable[[], Any], int]] = []

    def add(name: str, fn: Callable[[], Any], nbytes_in: int, out: np.ndarray) -> None:
        cases.append((name, fn, nbytes_in + out.nbytes))

    o1 = np.empty(nhwc.physical_shape(x.shape), np.uint8)
    add(
        "lk.convert NCHW->NHWC u8 1x3x32x32 out=",
        lambda: lk.convert(x, x.shape, "NCHW", nhwc, out=o1),
        x.nbytes,
        o1,
    )
    o2 = np.empty(c4.physical_shape(x.shape), np.uint8)
    add("Layout('NCHW4c').pack u8 1x3x32x32 out=", lambda: c4.pack(x, out=o2), x.nbytes, o2)
    o3 = np.empty(crouton.physical_shape(xh.shape), np.uint8)
    add(
        "htp R4CroutonLayout.pack u8 1x32x32x3 out=", lambda: crouton.pack(xh, out=o3), x.nbytes, o3
    )
    o4 = np.empty(lk.vitis.hw_shape(x.shape, "NCHW", "HCWNC4"), np.uint8)
    add(
        "vitis.to_hw HCWNC4 u8 1x3x32x32 out=",
        lambda: lk.vitis.to_hw(x, "NCHW", "HCWNC4", out=o4),
        x.nbytes,
        o4,
    )
    o5 = np.empty(entry.hw_shape, np.int8)
    add(
        "HsiTensor.to_hw f32->i8 HCWNC4 1x3x32x32 out=",
        lambda: entry.to_hw(xf, out=o5),
        xf.nbytes,
        o5,
    )
    xi = x.view(np.int8)
    o6 = np.empty(lk.tensorrt.storage_shape("kCHW32", x.shape, np.int8), np.int8)
    add(
        "tensorrt.to_format kCHW32 i8 1x3x32x32 out=",
        lambda: lk.tensorrt.to_format(xi, "kCHW32", out=o6),
        x.nbytes,
        o6,
    )
    o7 = np.empty((1, 3072), np.float32)
    add(
        "ggml.dequantize Q8_0 3072 out=",
        lambda: lk.ggml.dequantize(q, "Q8_0", out=o7),
        q.nbytes,
        o7,
    )
    rows = []
    for name, fn, nbytes in cases:
        try:
            t, tc = paired_median(fn, CopyOf(nbytes), repeat, min_time=0.01)
        except Exception as exc:
            rows.append({"call": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append(
            {"call": name, "us": t * 1e6, "copy_us": tc * 1e6, "overhead_us": (t - tc) * 1e6}
        )
    return rows
