"""ONNX Runtime (CPU, one intra-op and one inter-op thread).

A graph per workload, built with ``onnx.helper``: [QuantizeLinear] -> Transpose
-> Reshape/Slice (blocked source) -> Pad/Reshape (blocked destination) ->
Transpose, no-op steps left out. Run through IOBinding on the input and the
preallocated output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from .common import QUANT_SCALE, Workload, geometry, layouts

NAME = "onnxruntime"
_TYPES = {
    "uint8": TensorProto.UINT8,
    "int8": TensorProto.INT8,
    "float16": TensorProto.FLOAT16,
    "float32": TensorProto.FLOAT,
}


def version() -> str:
    return f"{ort.__version__} (1 thread)"


def _graph(w: Workload) -> Any:
    src_l, dst_l = layouts(w)
    gs, gd = geometry(src_l, w.shape), geometry(dst_l, w.shape)
    if not (gs.plain or gd.plain):
        return None
    nodes: list[Any] = []
    inits: list[Any] = []
    cur = "x"

    def step(op: str, *inputs: str, **attrs: Any) -> None:
        nonlocal cur
        name = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, [cur, *inputs], [name], **attrs))
        cur = name

    def const(vals: Any, kind: int = TensorProto.INT64) -> str:
        name = f"c{len(inits)}"
        vals = list(vals)
        inits.append(helper.make_tensor(name, kind, [len(vals)], vals))
        return name

    if w.api == "vitis_q":
        s = f"c{len(inits)}"
        inits.append(helper.make_tensor(s, TensorProto.FLOAT, [], [QUANT_SCALE]))
        z = f"c{len(inits)}"
        inits.append(helper.make_tensor(z, TensorProto.INT8, [], [0]))
        step("QuantizeLinear", s, z)
    if list(gs.inverse) != sorted(gs.inverse):
        step("Transpose", perm=list(gs.inverse))
    if not gs.plain:
        step("Reshape", const(gs.padded))
        if gs.has_padding:
            r = len(gs.shape)
            step("Slice", const([0] * r), const(gs.shape), const(range(r)))
    if not gd.plain:
        if gd.has_padding:
            step("Pad", const([0] * len(gd.shape) + [p - n for p, n in zip(gd.padded, gd.shape)]))
        step("Reshape", const(gd.split))
    if list(gd.perm) != sorted(gd.perm):
        step("Transpose", perm=list(gd.perm))
    nodes[-1].output[0] = "y"
    in_type = _TYPES[w.dtype]
    out_type = _TYPES[w.out_dtype]
    graph = helper.make_graph(
        nodes,
        "repack",
        [helper.make_tensor_value_info("x", in_type, list(gs.physical))],
        [helper.make_tensor_value_info("y", out_type, list(gd.physical))],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model, gs, gd


def prepare(w: Workload, x: np.ndarray, out: np.ndarray) -> Callable[[], Any] | None:
    if w.kind != "repack":
        return None
    built = _graph(w)
    if built is None:
        return None
    model, gs, gd = built
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    xin = np.ascontiguousarray(x).reshape(gs.physical)
    y = out.reshape(gd.physical)
    io = sess.io_binding()
    io.bind_input("x", "cpu", 0, xin.dtype.type, list(xin.shape), xin.ctypes.data)
    io.bind_output("y", "cpu", 0, y.dtype.type, list(y.shape), y.ctypes.data)

    def run() -> np.ndarray:
        sess.run_with_iobinding(io)
        return out

    return run
