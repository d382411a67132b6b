"""``layoutkit.vitis`` chains against ONNX Runtime.

Every chain (canonical HCWNC chains of the annotation form and random chains of
quantize/cast/pad/reshape/transpose/slice/dequantize) is rebuilt as an ONNX graph
with ``onnx.helper`` and run by ONNX Runtime (one thread); layoutkit's planned
result must be bit-identical. NaN is excluded: library policy maps it to the
zero point, which ONNX leaves to the implementation.
"""

from __future__ import annotations

import json
import math
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import layoutkit as lk  # noqa: E402

V = lk.vitis
BF16 = np.dtype(ml_dtypes.bfloat16)
EXAMPLES = int(os.environ.get("LAYOUTKIT_HYPOTHESIS_EXAMPLES", "40"))

ONNX_TYPE = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    BF16: TensorProto.BFLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.uint16): TensorProto.UINT16,
}


def _lift(s):
    """The same layout step on a tensor with an extra trailing byte axis of 2."""
    if s.op == "pad":
        return V.Pad((*s.pad_at_start, 0), (*s.pad_at_end, 0))
    if s.op == "reshape":
        return V.Reshape((*s.output_shape, 2))
    if s.op == "transpose":
        return V.Transpose((*s.perm, len(s.perm)))
    return V.Slice((*s.start, 0), (*s.size, 2))


def ort_chain(x: np.ndarray, steps) -> np.ndarray:
    """Run ``steps`` (layoutkit Transformation objects) with ONNX Runtime.

    fp16/bf16 tensors enter and leave ORT as float32 (exact), with Cast nodes
    doing the rounding inside the graph. ORT's CPU provider lacks Pad for
    16-bit types, so layout steps on 2-byte data run in ORT on its bytes
    (uint8 with a trailing axis of 2; a pad's raw 0 is 0 / +0.0).
    """
    seg: list = []
    dt = x.dtype
    for s in steps:
        if dt.itemsize == 2 and s.op in ("pad", "reshape", "transpose", "slice"):
            if seg:
                x, seg = _ort_run(x, seg), []
            shape = s.out_shape(x.shape)
            raw = x.view(np.uint8).reshape(*x.shape, 2)
            x = _ort_run(raw, [_lift(s)]).reshape(-1).view(dt).reshape(shape)
        else:
            seg.append(s)
            dt = s.out_dtype(dt)
    return _ort_run(x, seg)


def _ort_run(x: np.ndarray, steps) -> np.ndarray:
    nodes, inits = [], []
    cur = "x"
    dt = x.dtype
    feed = x.astype(np.float32) if dt in (np.dtype(np.float16), BF16) else x
    in_type = ONNX_TYPE[feed.dtype]
    if feed.dtype != dt:
        nodes.append(helper.make_node("Cast", [cur], ["x_cast"], to=ONNX_TYPE[dt]))
        cur = "x_cast"
    shape = tuple(x.shape)
    for k, s in enumerate(steps):
        out = f"t{k}"
        if s.op in ("quantize", "dequantize"):
            if s.op == "quantize" and dt != np.dtype(np.float32):
                nodes.append(helper.make_node("Cast", [cur], [f"w{k}"], to=TensorProto.FLOAT))
                cur = f"w{k}"
            zdt = V.DTYPES[s.to_dtype] if s.op == "quantize" else dt
            inits.append(helper.make_tensor(f"s{k}", TensorProto.FLOAT, [], [s.scale]))
            inits.append(helper.make_tensor(f"z{k}", ONNX_TYPE[zdt], [], [s.zero_point]))
            op = "QuantizeLinear" if s.op == "quantize" else "DequantizeLinear"
            nodes.append(helper.make_node(op, [cur, f"s{k}", f"z{k}"], [out]))
            dt = V.DTYPES[s.to_dtype]
            if s.op == "dequantize" and dt != np.dtype(np.float32):
                nodes.append(helper.make_node("Cast", [out], [f"c{k}"], to=ONNX_TYPE[dt]))
                out = f"c{k}"
        elif s.op == "cast":
            dt = V.DTYPES[s.to_dtype]
            nodes.append(helper.make_node("Cast", [cur], [out], to=ONNX_TYPE[dt]))
        elif s.op == "pad":
            inits.append(
                helper.make_tensor(
                    f"p{k}", TensorProto.INT64, [2 * len(shape)], [*s.pad_at_start, *s.pad_at_end]
                )
            )
            nodes.append(helper.make_node("Pad", [cur, f"p{k}"], [out], mode="constant"))
        elif s.op == "reshape":
            inits.append(
                helper.make_tensor(
                    f"r{k}", TensorProto.INT64, [len(s.output_shape)], s.output_shape
                )
            )
            nodes.append(helper.make_node("Reshape", [cur, f"r{k}"], [out]))
        elif s.op == "transpose":
            nodes.append(helper.make_node("Transpose", [cur], [out], perm=list(s.perm)))
        elif s.op == "slice":
            r = len(shape)
            ends = [a + b for a, b in zip(s.start, s.size)]
            for name, vals in (("b", s.start), ("e", ends), ("a", list(range(r)))):
                inits.append(helper.make_tensor(f"{name}{k}", TensorProto.INT64, [r], vals))
            nodes.append(helper.make_node("Slice", [cur, f"b{k}", f"e{k}", f"a{k}"], [out]))
        else:  # pragma: no cover
            raise AssertionError(s)
        shape = s.out_shape(shape)
        cur = out
    final_dt = dt
    if dt in (np.dtype(np.float16), BF16):
        nodes.append(helper.make_node("Cast", [cur], ["y"], to=TensorProto.FLOAT))
    else:
        nodes.append(helper.make_node("Identity", [cur], ["y"]))
    out_type = TensorProto.FLOAT if dt in (np.dtype(np.float16), BF16) else ONNX_TYPE[dt]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", in_type, list(x.shape))],
        [helper.make_tensor_value_info("y", out_type, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": feed})
    return y.astype(final_dt) if final_dt != y.dtype else y


FLOATS = (np.dtype(np.float32), np.dtype(np.float16), BF16)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def rand_float(rng, shape, scale, dtype=np.float32):
    """Values on a half-step grid (exact ties), random values, and saturating values."""
    n = math.prod(shape)
    k = rng.integers(-700, 700, n).astype(np.float32) * np.float32(scale / 2)
    r = rng.normal(0, 100 * scale, n).astype(np.float32)
    v = np.where(rng.random(n) < 0.5, k, r)
    return v.astype(dtype).reshape(shape)


# ---------------------------------------------------------------------------
# Canonical (annotation-form) chains
# ---------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 3),
    c=st.integers(1, 37),
    h=st.integers(1, 6),
    w=st.integers(1, 6),
    block=st.sampled_from([4, 8, 16]),
    cpu_format=st.sampled_from(["NCHW", "NHWC"]),
    pair=st.sampled_from(
        [
            ("fp32", "int8"),
            ("fp32", "uint8"),
            ("fp16", "int8"),
            ("bf16", "uint8"),
            ("fp32", "bf16"),
            ("fp32", "fp16"),
            ("int8", "int8"),
            ("fp16", "bf16"),
        ]
    ),
    scale=st.sampled_from([0.0078125, 0.05, 1.0, 0.3]),
    zp=st.integers(-5, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_annotation_against_ort(n, c, h, w, block, cpu_format, pair, scale, zp, seed):
    cpu_dtype, hw_dtype = pair
    cpu_shape = [n, c, h, w] if cpu_format == "NCHW" else [n, h, w, c]
    hw_shape = list(V.hw_shape(cpu_shape, cpu_format, f"HCWNC{block}"))
    quant = V.DTYPES[hw_dtype].kind in "iu" and V.DTYPES[cpu_dtype] in FLOATS
    if quant and hw_dtype == "uint8":
        zp = abs(zp)
    entry = {
        "tensor_name": "t",
        "cpu_shape": cpu_shape,
        "cpu_format": cpu_format,
        "cpu_dtype": cpu_dtype,
        "hw_shape": hw_shape,
        "hw_format": f"HCWNC{block}",
        "hw_dtype": hw_dtype,
        "scale_factor": scale if quant else -1.0,
        "zero_point": zp if quant else 0,
    }
    rep = V.load_hsi({"inputs": [entry], "outputs": [entry]})
    rng = np.random.default_rng(seed)
    cdt = V.DTYPES[cpu_dtype]
    x = (
        rand_float(rng, cpu_shape, scale, cdt)
        if cdt in FLOATS
        else rng.integers(-128, 128, cpu_shape).astype(cdt)
    )
    inp = rep.inputs[0]
    assert inp.plan.kind == "pack"  # one pass, dtype conversion fused
    hw = inp.to_hw(x)
    assert same(hw, ort_chain(x, inp.transformations()))
    out = rep.outputs[0]
    assert out.plan.kind == "unpack"
    hdt = V.DTYPES[hw_dtype]
    y = (
        rng.integers(-100, 100, hw_shape).astype(hdt)
        if hdt.kind in "iu"
        else rand_float(rng, hw_shape, 1.0, hdt)
    )
    if quant:  # an output goes int -> float: dequantize
        cpu = out.to_cpu(y)
        assert same(cpu, ort_chain(y, out.transformations()))
    else:
        assert same(out.to_cpu(y), ort_chain(y, out.transformations()))


# ---------------------------------------------------------------------------
# Random chains
# ---------------------------------------------------------------------------


def _divisors(n):
    return [d for d in range(2, n) if n % d == 0]


@st.composite
def layout_steps(draw, shape, max_steps=4, allow_pad=True, allow_slice=True):
    steps = []
    shape = tuple(shape)
    for _ in range(draw(st.integers(0, max_steps))):
        kinds = (
            ["reshape", "transpose"]
            + (["pad"] if allow_pad else [])
            + (["slice"] if allow_slice else [])
        )
        kind = draw(st.sampled_from(kinds))
        r = len(shape)
        if kind == "pad":
            start = tuple(draw(st.lists(st.integers(0, 2), min_size=r, max_size=r)))
            end = tuple(draw(st.lists(st.integers(0, 5), min_size=r, max_size=r)))
            if math.prod(n + s + e for n, s, e in zip(shape, start, end)) > 4000:
                continue
            step = V.Pad(start, end)
        elif kind == "transpose":
            step = V.Transpose(tuple(draw(st.permutations(range(r)))))
        elif kind == "slice":
            start = tuple(draw(st.integers(0, n - 1)) for n in shape)
            size = tuple(draw(st.integers(1, n - s)) for n, s in zip(shape, start))
            step = V.Slice(start, size)
        else:
            how = draw(st.sampled_from(["split", "merge", "add1", "drop1", "any"]))
            new = list(shape)
            if how == "split":
                cands = [(i, d) for i, n in enumerate(shape) for d in _divisors(n)]
                if not cands or r >= 6:
                    continue
                i, d = draw(st.sampled_from(cands))
                new[i : i + 1] = [shape[i] // d, d]
            elif how == "merge":
                if r < 2:
                    continue
                i = draw(st.integers(0, r - 2))
                new[i : i + 2] = [shape[i] * shape[i + 1]]
            elif how == "add1":
                if r >= 6:
                    continue
                new.insert(draw(st.integers(0, r)), 1)
            elif how == "drop1":
                ones = [i for i, n in enumerate(shape) if n == 1]
                if not ones or r < 2:
                    continue
                del new[draw(st.sampled_from(ones))]
            else:  # an arbitrary factorisation of the element count
                total = math.prod(shape)
                new = []
                rest = total
                for _ in range(draw(st.integers(0, 3))):
                    ds = [d for d in range(1, rest + 1) if rest % d == 0]
                    d = draw(st.sampled_from(ds))
                    new.append(d)
                    rest //= d
                new.append(rest)
            step = V.Reshape(tuple(new))
        steps.append(step)
        shape = step.out_shape(shape)
    return steps


def _json(steps):
    return [s.to_dict() for s in steps]


@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_input_chains(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=5), label="cpu_shape"))
    cpu_dtype = data.draw(st.sampled_from(["fp32", "fp16", "bf16", "int8"]), label="cpu_dtype")
    head = []
    if cpu_dtype != "int8":
        kind = data.draw(st.sampled_from(["quantize", "cast", "none"]))
        if kind == "quantize":
            to = data.draw(st.sampled_from(["int8", "uint8", "int16", "uint16"]))
            info = np.iinfo(V.DTYPES[to])
            zp = data.draw(st.integers(max(info.min, -20), min(info.max, 20)))
            head = [V.Quantize(to, data.draw(st.sampled_from([0.0078125, 0.1, 0.37, 2.0])), zp)]
        elif kind == "cast":
            head = [V.Cast(data.draw(st.sampled_from(["fp32", "fp16", "bf16"])))]
    steps = head + data.draw(layout_steps(shape))
    shapes, dt = [shape], V.DTYPES[cpu_dtype]
    for s in steps:
        shapes.append(s.out_shape(shapes[-1]))
        dt = s.out_dtype(dt)
    hw_dtype = {
        v: k
        for k, v in V.DTYPES.items()
        if k in ("fp32", "fp16", "bf16", "int8", "uint8", "int16", "uint16")
    }[dt]
    entry = {
        "tensor_name": "in",
        "cpu_shape": list(shape),
        "cpu_dtype": cpu_dtype,
        "hw_shape": list(shapes[-1]),
        "hw_dtype": hw_dtype,
        "rt_transformations": _json(steps),
    }
    rep = V.load_hsi(json.dumps({"inputs": [entry], "outputs": []}))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    cdt = V.DTYPES[cpu_dtype]
    x = (
        rand_float(rng, shape, 0.1, cdt)
        if cdt in FLOATS
        else rng.integers(-128, 128, shape).astype(cdt)
    )
    got = rep.inputs[0].to_hw(x)
    assert same(got, ort_chain(x, steps)), rep.inputs[0].plan.describe()


@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_output_chains(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=5), label="hw_shape"))
    hw_dtype = data.draw(st.sampled_from(["int8", "uint8", "int16", "bf16"]), label="hw_dtype")
    allow_pad = data.draw(st.booleans())
    steps = data.draw(layout_steps(shape, allow_pad=allow_pad))
    hdt = V.DTYPES[hw_dtype]
    if hdt.kind in "iu" and data.draw(st.booleans()):
        info = np.iinfo(hdt)
        zp = data.draw(st.integers(max(info.min, -9), min(info.max, 9)))
        to = data.draw(st.sampled_from(["fp32", "fp16", "bf16"]))
        steps.append(V.Dequantize(to, data.draw(st.sampled_from([0.25, 0.013, 3.0])), zp))
    elif hdt in FLOATS and data.draw(st.booleans()):
        steps.append(V.Cast("fp32"))
    shapes, dt = [shape], hdt
    for s in steps:
        shapes.append(s.out_shape(shapes[-1]))
        dt = s.out_dtype(dt)
    cpu_dtype = {V.DTYPES[k]: k for k in ("fp32", "fp16", "bf16", "int8", "uint8", "int16")}[dt]
    entry = {
        "tensor_name": "out",
        "cpu_shape": list(shapes[-1]),
        "cpu_dtype": cpu_dtype,
        "hw_shape": list(shape),
        "hw_dtype": hw_dtype,
        "rt_transformations": _json(steps),
    }
    rep = V.load_hsi({"inputs": [], "outputs": [entry]})
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if hdt.kind in "iu":
        info = np.iinfo(hdt)
        y = rng.integers(max(info.min, -3000), min(info.max, 3000) + 1, shape).astype(hdt)
    else:
        y = rand_float(rng, shape, 0.1, hdt)
    got = rep.outputs[0].to_cpu(y)
    assert same(got, ort_chain(y, steps)), rep.outputs[0].plan.describe()


def test_seed_chains_against_ort():
    from pathlib import Path

    rep = V.load_hsi(Path(__file__).parent / "data" / "vitis" / "seed_rt_transformations.json")
    rng = np.random.default_rng(7)
    x = rand_float(rng, (1, 3, 32, 32), 0.0078125)
    assert same(rep.inputs[0].to_hw(x), ort_chain(x, rep.inputs[0].transformations()))
    y = rng.integers(-128, 128, (32, 1, 32, 1, 8)).astype(np.int8)
    assert same(rep.outputs[0].to_cpu(y), ort_chain(y, rep.outputs[0].transformations()))


def test_planner_uses_one_pass_for_standard_chains():
    """Chains that are a layout change compile to one Layout; others fall back to numpy."""
    steps = [
        V.Pad((0, 0, 0, 0), (0, 5, 0, 0)),
        V.Reshape((1, 1, 8, 32, 32)),
        V.Transpose((3, 1, 4, 0, 2)),
    ]
    plan = V.plan_chain(steps, (1, 3, 32, 32), np.int8, dims="NCHW")
    assert plan.kind == "pack" and str(plan.layout) == "HCWN8c"
    # a slice in the middle of an input chain: numpy, step by step
    odd = [V.Pad((0, 0), (0, 3)), V.Slice((1, 0), (2, 5)), V.Transpose((1, 0))]
    plan = V.plan_chain(odd, (4, 2), np.int8)
    assert plan.kind == "numpy"
    x = np.arange(8, dtype=np.int8).reshape(4, 2)
    assert same(plan.run(x), ort_chain(x, odd))
    # a leading slice stays one pass (a view, then one pack)
    lead = [
        V.Slice((0, 1, 0, 0), (1, 3, 4, 4)),
        V.Pad((0, 0, 0, 0), (0, 1, 0, 0)),
        V.Reshape((1, 1, 4, 4, 4)),
        V.Transpose((3, 1, 4, 0, 2)),
    ]
    plan = V.plan_chain(lead, (1, 5, 4, 4), np.float32)
    assert plan.kind == "pack" and len(plan.prefix) == 1
    x = np.arange(80, dtype=np.float32).reshape(1, 5, 4, 4)
    assert same(plan.run(x), ort_chain(x, lead))
