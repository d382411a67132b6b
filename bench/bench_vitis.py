"""Benchmark ``layoutkit.vitis`` conversions against ONNX Runtime, numpy and np.copyto.

Usage::

    python bench/bench_vitis.py                 # all workloads
    python bench/bench_vitis.py --json out.json

Workloads (seed-systems.md §2, issue 4):

* ``to_hw`` fp32 NCHW 1x3x224x224 -> int8 HCWNC4, quantize fused (scale 1/128);
* the same at 1x3x640x640;
* ``to_cpu`` int8 HCWNC8 1x2048x7x7 -> fp32 NCHW, dequantize fused (scale 0.25).

Each runs as (a) layoutkit, from a ``flexmlrt-hsi.json`` entry in the
``rt_transformations`` form (allocating the result, and with ``out=``); (b) the
same chain as an ONNX graph (QuantizeLinear/Pad/Reshape/Transpose or
Transpose/Reshape/Slice/DequantizeLinear) in ONNX Runtime with one thread, if
installed; (c) numpy step by step. "x copy" is the workload's GB/s (input bytes
plus output bytes over the median time) divided by the GB/s of ``np.copyto`` of
a buffer of (in + out) / 2 bytes, measured in the same run. Single thread;
medians of repeated samples. Machines are shared and noisy: compare ratios
taken in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from suite.common import copy_pair, spin_up

import layoutkit as lk

V = lk.vitis


def median_time(fn: Any, repeat: int = 21, min_time: float = 0.003) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(min_time / once))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return float(np.median(samples))


def input_entry(shape: tuple[int, int, int, int], block: int, scale: float) -> Any:
    n, c, h, w = shape
    cb = -(-c // block)
    return {
        "tensor_name": "images",
        "cpu_shape": list(shape),
        "cpu_format": "NCHW",
        "cpu_dtype": "fp32",
        "hw_shape": [h, cb, w, n, block],
        "hw_dtype": "int8",
        "rt_transformations": [
            {"transformation": "quantize", "scale": scale, "to_dtype": "int8", "zero_point": 0},
            {
                "transformation": "pad",
                "pad_at_start": [0, 0, 0, 0],
                "pad_at_end": [0, cb * block - c, 0, 0],
                "output_shape": [n, cb * block, h, w],
            },
            {"transformation": "reshape", "output_shape": [n, cb, block, h, w]},
            {"transformation": "transpose", "perm": [3, 1, 4, 0, 2]},
        ],
    }


def output_entry(shape: tuple[int, int, int, int], block: int, scale: float) -> Any:
    n, c, h, w = shape
    cb = -(-c // block)
    return {
        "tensor_name": "logits",
        "cpu_shape": list(shape),
        "cpu_format": "NCHW",
        "cpu_dtype": "fp32",
        "hw_shape": [h, cb, w, n, block],
        "hw_dtype": "int8",
        "rt_transformations": [
            {"transformation": "transpose", "perm": [3, 1, 4, 0, 2]},
            {"transformation": "reshape", "output_shape": [n, cb * block, h, w]},
            {"transformation": "slice", "start": [0, 0, 0, 0], "size": list(shape)},
            {"transformation": "dequantize", "scale": scale, "to_dtype": "fp32", "zero_point": 0},
        ],
    }


def ort_session(entry: Any, direction: str) -> Any:
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    steps = entry.transformations()
    start = entry.cpu_shape if direction == "input" else entry.hw_shape
    in_type = TensorProto.FLOAT if direction == "input" else TensorProto.INT8
    out_type = TensorProto.INT8 if direction == "input" else TensorProto.FLOAT
    nodes, inits, cur, shape = [], [], "x", tuple(start)
    for k, s in enumerate(steps):
        out = f"t{k}"
        if s.op in ("quantize", "dequantize"):
            inits.append(helper.make_tensor(f"s{k}", TensorProto.FLOAT, [], [s.scale]))
            inits.append(helper.make_tensor(f"z{k}", TensorProto.INT8, [], [s.zero_point]))
            op = "QuantizeLinear" if s.op == "quantize" else "DequantizeLinear"
            nodes.append(helper.make_node(op, [cur, f"s{k}", f"z{k}"], [out]))
        elif s.op == "pad":
            pads = [*s.pad_at_start, *s.pad_at_end]
            inits.append(helper.make_tensor(f"p{k}", TensorProto.INT64, [len(pads)], pads))
            nodes.append(helper.make_node("Pad", [cur, f"p{k}"], [out]))
        elif s.op == "reshape":
            r = list(s.output_shape)
            inits.append(helper.make_tensor(f"r{k}", TensorProto.INT64, [len(r)], r))
            nodes.append(helper.make_node("Reshape", [cur, f"r{k}"], [out]))
        elif s.op == "transpose":
            nodes.append(helper.make_node("Transpose", [cur], [out], perm=list(s.perm)))
        elif s.op == "slice":
            r = len(shape)
            ends = [a + b for a, b in zip(s.start, s.size)]
            for nm, vals in (("b", s.start), ("e", ends), ("a", list(range(r)))):
                inits.append(helper.make_tensor(f"{nm}{k}", TensorProto.INT64, [r], list(vals)))
            nodes.append(helper.make_node("Slice", [cur, f"b{k}", f"e{k}", f"a{k}"], [out]))
        shape = s.out_shape(shape)
        cur = out
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", in_type, list(start))],
        [helper.make_tensor_value_info("y", out_type, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def numpy_chain(entry: Any) -> Any:
    steps = entry.transformations()

    def run(x: np.ndarray) -> np.ndarray:
        for s in steps:
            if s.op == "quantize":
                q = np.rint(x / np.float32(s.scale)) + np.float32(s.zero_point)
                x = np.clip(q, -128, 127).astype(np.int8)
            elif s.op == "dequantize":
                x = (x.astype(np.float32) - np.float32(s.zero_point)) * np.float32(s.scale)
            elif s.op == "pad":
                x = np.pad(x, list(zip(s.pad_at_start, s.pad_at_end)))
            elif s.op == "reshape":
                x = x.reshape(s.output_shape)
            elif s.op == "transpose":
                x = x.transpose(s.perm)
            elif s.op == "slice":
                x = x[tuple(slice(a, a + b) for a, b in zip(s.start, s.size))]
        return np.ascontiguousarray(x)

    return run


def bench(name: str, entry: Any, direction: str, x: np.ndarray) -> dict[str, Any]:
    if direction == "input":
        convert = entry.to_hw
        out = np.empty(entry.hw_shape, np.int8)
    else:
        convert = entry.to_cpu
        out = np.empty(entry.cpu_shape, np.float32)
    ref = convert(x)
    traffic = x.nbytes + ref.nbytes
    b, a = copy_pair(traffic // 2)
    t_copy = median_time(lambda: np.copyto(a, b))
    copy_gbs = traffic / t_copy / 1e9
    row: dict[str, Any] = {
        "workload": name,
        "bytes_in": x.nbytes,
        "bytes_out": ref.nbytes,
        "copyto_us": t_copy * 1e6,
        "plan": entry.plan.describe(),
    }
    runs = {
        "layoutkit": lambda: convert(x),
        "layoutkit out=": lambda: convert(x, out=out),
        "numpy": lambda: numpy_chain(entry)(x),
    }
    assert np.array_equal(numpy_chain(entry)(x), ref)
    sess = ort_session(entry, direction)
    if sess is not None:
        (y,) = sess.run(None, {"x": x})
        assert np.array_equal(y.reshape(ref.shape), ref), "ONNX Runtime disagrees"
        runs["onnxruntime"] = lambda: sess.run(None, {"x": x})
    for label, fn in runs.items():
        t = median_time(fn)
        row[label] = {
            "us": t * 1e6,
            "GB/s": traffic / t / 1e9,
            "x_copy": traffic / t / 1e9 / copy_gbs,
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    spin_up()  # an idle core runs slow for its first tens of milliseconds
    rng = np.random.default_rng(0)
    rows = []
    for shape in [(1, 3, 224, 224), (1, 3, 640, 640)]:
        rep = V.load_hsi({"inputs": [input_entry(shape, 4, 0.0078125)]})
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        name = f"to_hw fp32 {'x'.join(map(str, shape))} -> int8 HCWNC4"
        rows.append(bench(name, rep.inputs[0], "input", x))
    shape = (1, 2048, 7, 7)
    rep = V.load_hsi({"outputs": [output_entry(shape, 8, 0.25)]})
    y = rng.integers(-128, 128, rep.outputs[0].hw_shape).astype(np.int8)
    rows.append(bench("to_cpu int8 HCWNC8 1x2048x7x7 -> fp32", rep.outputs[0], "output", y))

    print(
        f"layoutkit {lk.__version__}, numpy {np.__version__}, {platform.machine()}, single thread"
    )
    try:
        import onnxruntime

        print(f"onnxruntime {onnxruntime.__version__}")
    except ImportError:
        print("onnxruntime not installed: its column is skipped")
    for row in rows:
        print(f"\n{row['workload']}  ({row['bytes_in']} B in, {row['bytes_out']} B out)")
        print(f"  plan: {row['plan']}")
        print(f"  {'np.copyto (same traffic)':<26}{row['copyto_us']:>10.1f} us    1.00x copy")
        for label in ("layoutkit", "layoutkit out=", "onnxruntime", "numpy"):
            if label in row:
                r = row[label]
                print(
                    f"  {label:<26}{r['us']:>10.1f} us  {r['x_copy']:>5.2f}x copy  {r['GB/s']:>6.2f} GB/s"
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
