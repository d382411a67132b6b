"""oneDNN's reorder primitive through ctypes (``pip install onednn-cpu-gomp==2023.2.0``).

Memory descriptors come from ``dnnl_memory_desc_create_with_string_tag`` with
the tag derived from the layoutkit layout (``NCHW4c`` over NCHW is ``aBcd4b``,
``NHWC8h8w32c`` over NHWC is ``aBCD8b8c32d``); oneDNN pads blocked dims to
the block and writes zeros there, as layoutkit does. fp32 -> int8 reorders
carry a destination scale (``dst = src / scale``). One thread: the driver sets
``OMP_NUM_THREADS=1`` for this process.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .common import QUANT_SCALE, Workload, layouts

NAME = "onednn"
_DT = {"float16": 1, "float32": 3, "int8": 5, "uint8": 6}  # dnnl_data_type_t
_ARG_SRC, _ARG_DST, _ARG_ATTR_SCALES = 1, 17, 4096
_CPU = 1  # dnnl_cpu


def _load() -> ctypes.CDLL:
    names = [os.path.join(sys.prefix, "lib", "libdnnl.so.3"), "libdnnl.so.3"]
    for n in names:
        if n.startswith("/") and not pathlib.Path(n).exists():
            continue
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    raise ImportError("libdnnl.so.3 not found: pip install onednn-cpu-gomp==2023.2.0")


_lib = _load()
_P = ctypes.c_void_p
_DIMS = ctypes.c_int64 * 12


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int)]


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _P)]


_lib.dnnl_version.restype = ctypes.POINTER(_Version)
_lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
_lib.dnnl_memory_desc_get_size.argtypes = [_P]


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"oneDNN {what} failed with status {status}")


def _engine() -> tuple[_P, _P]:
    eng, stream = _P(), _P()
    _check(_lib.dnnl_engine_create(ctypes.byref(eng), _CPU, ctypes.c_size_t(0)), "engine_create")
    _check(_lib.dnnl_stream_create(ctypes.byref(stream), eng, ctypes.c_uint(1)), "stream_create")
    return eng, stream


_ENGINE, _STREAM = _engine()


def version() -> str:
    v = _lib.dnnl_version().contents
    return f"{v.major}.{v.minor}.{v.patch} (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})"


def string_tag(layout: Any) -> str:
    """oneDNN's string tag of a layoutkit layout (dims a, b, c, ... in the layout's dims order)."""
    letters = "abcdefghijkl"
    blocked = {d for d, _ in layout.blocks}
    outer = "".join(letters[d].upper() if d in blocked else letters[d] for d in layout.outer)
    inner = "".join(f"{s}{letters[d]}" for d, s in layout.blocks)
    return outer + inner


def _md(shape: tuple[int, ...], dtype: str, tag: str) -> _P:
    md = _P()
    dims = _DIMS(*shape)
    _check(
        _lib.dnnl_memory_desc_create_with_string_tag(
            ctypes.byref(md), ctypes.c_int(len(shape)), dims, ctypes.c_int(_DT[dtype]), tag.encode()
        ),
        f"memory_desc_create_with_string_tag({tag!r}, {shape}, {dtype})",
    )
    return md


def _memory(md: _P, buf: np.ndarray) -> _P:
    mem = _P()
    _check(
        _lib.dnnl_memory_create(ctypes.byref(mem), md, _ENGINE, _P(buf.ctypes.data)),
        "memory_create",
    )
    return mem


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    if w.kind != "repack" or w.dtype not in _DT:
        return None
    src_l, dst_l = layouts(w)
    smd = _md(w.shape, w.dtype, string_tag(src_l))
    dmd = _md(w.shape, w.out_dtype, string_tag(dst_l))
    if _lib.dnnl_memory_desc_get_size(smd) != x.nbytes:
        raise RuntimeError(f"source size {_lib.dnnl_memory_desc_get_size(smd)} != {x.nbytes}")
    if _lib.dnnl_memory_desc_get_size(dmd) != out.nbytes:
        raise RuntimeError(
            f"destination size {_lib.dnnl_memory_desc_get_size(dmd)} != {out.nbytes}"
        )
    attr = _P()
    keep: list[Any] = [x, out]
    args = [(_ARG_SRC, _memory(smd, x)), (_ARG_DST, _memory(dmd, out))]
    if w.api == "vitis_q":
        _check(_lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "primitive_attr_create")
        _check(_lib.dnnl_primitive_attr_set_scales_mask(attr, _ARG_DST, 0), "set_scales_mask")
        scale = np.array([QUANT_SCALE], np.float32)
        keep.append(scale)
        args.append((_ARG_ATTR_SCALES | _ARG_DST, _memory(_md((1,), "float32", "a"), scale)))
    pd, prim = _P(), _P()
    _check(
        _lib.dnnl_reorder_primitive_desc_create(ctypes.byref(pd), smd, _ENGINE, dmd, _ENGINE, attr),
        "reorder_primitive_desc_create",
    )
    _check(_lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive_create")
    exec_args = (_ExecArg * len(args))(*[_ExecArg(a, m) for a, m in args])
    n = ctypes.c_int(len(args))
    execute, wait = _lib.dnnl_primitive_execute, _lib.dnnl_stream_wait

    def run() -> np.ndarray:
        keep  # noqa: B018 - keeps the buffers alive with the primitive
        execute(prim, _STREAM, n, exec_args)
        wait(_STREAM)
        return out

    return run
