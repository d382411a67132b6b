"""AMD Vitis AI NPU (``layoutkit.vitis``): seed-systems.md §2.2-2.9 vectors, the seed's
JSON examples verbatim, report round trips, every error rule of §2.9, and conversions
against an independent numpy model (pad -> reshape -> transpose, written here).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import layoutkit as lk
from layoutkit import LayoutError

V = lk.vitis
DATA = Path(__file__).parent / "data" / "vitis"
BF16 = np.dtype(ml_dtypes.bfloat16)


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# ---------------------------------------------------------------------------
# An independent numpy model of HCWNCx (seed-systems.md §2.2 formula)
# ---------------------------------------------------------------------------


def ref_hcwnc(x_nchw: np.ndarray, block: int) -> np.ndarray:
    n, c, h, w = x_nchw.shape
    cb = -(-c // block)
    out = np.zeros((h, cb, w, n, block), dtype=x_nchw.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        out[hi, ci // block, wi, ni, ci % block] = x_nchw[ni, ci, hi, wi]
    return out


def ref_offset(shape_nchw, index, block):
    n, c, _h, w = shape_nchw
    cb = -(-c // block)
    ni, ci, hi, wi = index
    return (((hi * cb + ci // block) * w + wi) * n + ni) * block + ci % block


def np_quantize(x, scale, zp, dtype):
    v = x.astype(np.float32) / np.float32(scale)
    info = np.iinfo(dtype)
    r = np.clip(np.rint(v) + zp, info.min, info.max)
    r = np.where(np.isnan(v), zp, r)
    return r.astype(dtype)


# ---------------------------------------------------------------------------
# §2.3 / §2.8 shapes and offsets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu_shape", "cpu_format", "hw_format", "expected"),
    [
        ((1, 3, 224, 224), "NCHW", "HCWNC4", (224, 1, 224, 1, 4)),
        ((1, 2048, 7, 7), "NCHW", "HCWNC8", (7, 256, 7, 1, 8)),
        ((1, 3, 640, 640), "NCHW", "HCWNC4", (640, 1, 640, 1, 4)),
        ((1, 224, 224, 3), "NHWC", "HCWNC4", (224, 1, 224, 1, 4)),
        ((2, 3, 2, 2), "NCHW", "HCWNC4", (2, 1, 2, 2, 4)),
        ((1, 17, 3, 5), "NCHW", "HCWNC16", (3, 2, 5, 1, 16)),
        ((1, 3, 32, 32), "NCHW", "HCWNC4", (32, 1, 32, 1, 4)),
        ((1, 3, 32, 32), "NCHW", "NHWC", (1, 32, 32, 3)),
        ((1, 32, 32, 3), "NHWC", "NCHW", (1, 3, 32, 32)),
        ((1, 84, 8400), "NHW", "NHW", (1, 84, 8400)),
        ((4, 10), "AB", "AB", (4, 10)),
        ((4, 10), "NC", "AB", (4, 10)),
        ((2, 5, 7), "NCH", "NHC", (2, 7, 5)),
    ],
)
def test_hw_shape(cpu_shape, cpu_format, hw_format, expected):
    assert V.hw_shape(cpu_shape, cpu_format, hw_format) == expected
    assert V.hw_shape(list(cpu_shape), cpu_format.lower(), hw_format) == expected


def test_640_size_matches_vart():
    shape = V.hw_shape((1, 3, 640, 640), "NCHW", "HCWNC4")
    assert math.prod(shape) == 1638400


def _landing(x_shape, cpu_format, hw_format, index, dtype):
    """Byte offset where element ``index`` of a CPU tensor lands in the HW buffer."""
    x = np.zeros(x_shape, dtype=dtype)
    x[index] = 1
    hw = V.to_hw(x, cpu_format, hw_format)
    (pos,) = np.flatnonzero(hw.reshape(-1) != 0)
    return int(pos) * hw.dtype.itemsize, hw.nbytes


@pytest.mark.parametrize(
    ("x_shape", "cpu_format", "hw_format", "index", "dtype", "byte", "total"),
    [
        # §2.8
        ((1, 3, 224, 224), "NCHW", "HCWNC4", (0, 2, 10, 100), np.int8, 9362, 200704),
        ((1, 3, 224, 224), "NCHW", "HCWNC4", (0, 2, 10, 100), BF16, 18724, 401408),
        ((1, 2048, 7, 7), "NCHW", "HCWNC8", (0, 1000, 3, 5), np.int8, 50048, 100352),
        ((2, 3, 2, 2), "NCHW", "HCWNC4", (1, 1, 1, 0), np.int8, 21, 32),
        ((1, 3, 32, 32), "NCHW", "HCWNC4", (0, 2, 5, 7), BF16, 1340, 8192),
        # §2.7 (HCWNC8 via the annotation form)
        ((1, 3, 32, 32), "NCHW", "HCWNC8", (0, 2, 5, 7), np.int8, 1338, 8192),
        ((1, 3, 32, 32), "NCHW", "HCWNC8", (0, 0, 31, 31), np.int8, 8184, 8192),
        ((1, 3, 32, 32), "NCHW", "HCWNC8", (0, 1, 0, 1), np.int8, 9, 8192),
        # §2.7 non-involutive NHWC vector: (n, h, w, c)
        ((2, 3, 4, 3), "NHWC", "HCWNC4", (1, 2, 3, 2), np.int8, 94, 96),
        ((2, 3, 4, 3), "NHWC", "HCWNC4", (0, 1, 0, 0), np.int8, 32, 96),
    ],
)
def test_golden_offsets(x_shape, cpu_format, hw_format, index, dtype, byte, total):
    assert _landing(x_shape, cpu_format, hw_format, index, dtype) == (byte, total)


def test_rgb_example_memory_order():
    # seed: for each (h, w): R, G, B, 0
    x = np.arange(1, 13, dtype=np.uint8).reshape(1, 3, 2, 2)
    hw = V.to_hw(x, "NCHW", "HCWNC4")
    assert hw.reshape(-1).tolist() == [1, 5, 9, 0, 2, 6, 10, 0, 3, 7, 11, 0, 4, 8, 12, 0]


@pytest.mark.parametrize("block", [4, 8, 16])
@pytest.mark.parametrize(
    "shape", [(1, 3, 5, 7), (2, 8, 3, 2), (3, 17, 2, 4), (1, 1, 1, 1), (2, 33, 1, 3)]
)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float32, np.float16, BF16, np.int64])
def test_against_model(block, shape, dtype):
    rng = np.random.default_rng(sum(shape) + block)
    x = (rng.integers(1, 100, shape)).astype(dtype)
    fmt = f"HCWNC{block}"
    ref = ref_hcwnc(x, block)
    hw = V.to_hw(x, "NCHW", fmt)
    assert hw.dtype == x.dtype and hw.shape == ref.shape
    assert np.array_equal(hw.view(np.uint8), ref.view(np.uint8))
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    assert np.array_equal(V.to_hw(nhwc, "NHWC", fmt).view(np.uint8), ref.view(np.uint8))
    assert np.array_equal(V.to_cpu(hw, fmt, shape, "NCHW"), x)
    assert np.array_equal(V.to_cpu(hw.reshape(-1), fmt, nhwc.shape, "NHWC"), nhwc)
    for idx in [(0, 0, 0, 0), tuple(s - 1 for s in shape)]:
        assert (
            ref_offset(shape, idx, block)
            == np.flatnonzero(
                V.to_hw(
                    np.eye(1, x.size, np.ravel_multi_index(idx, shape), dtype=np.int8).reshape(
                        shape
                    ),
                    "NCHW",
                    fmt,
                ).reshape(-1)
            )[0]
        )


def test_strided_and_readonly_inputs():
    base = np.arange(2 * 6 * 5 * 9, dtype=np.float32).reshape(2, 6, 5, 9)
    x = base[:, ::2, :, 1::2]  # non-contiguous
    x.setflags(write=False)
    assert np.array_equal(V.to_hw(x, "NCHW", "HCWNC4"), ref_hcwnc(np.ascontiguousarray(x), 4))
    nhwc = base.transpose(0, 2, 3, 1)  # a view
    assert np.array_equal(V.to_hw(nhwc, "NHWC", "HCWNC8"), ref_hcwnc(np.ascontiguousarray(base), 8))


def test_plain_formats():
    x = np.arange(24, dtype=np.int16).reshape(1, 2, 3, 4)
    assert np.array_equal(V.to_hw(x, "NCHW", "NHWC"), x.transpose(0, 2, 3, 1))
    assert np.array_equal(V.to_cpu(x.transpose(0, 2, 3, 1), "NHWC", x.shape, "NCHW"), x)
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(V.to_hw(y, "AB", "AB"), y)
    assert np.array_equal(V.to_cpu(y.reshape(-1), "NC", (3, 4), "AB"), y)
    z = np.arange(30, dtype=np.uint8).reshape(1, 5, 6)
    assert np.array_equal(V.to_hw(z, "NHW", "NHW"), z)
    assert np.array_equal(V.to_hw(z, "NCH", "NHC"), z.transpose(0, 2, 1))


def test_out_argument():
    x = np.ones((1, 3, 4, 4), dtype=np.int8)
    out = np.full(64, 7, dtype=np.int8)
    res = V.to_hw(x, "NCHW", "HCWNC4", out=out)
    assert res.shape == (4, 1, 4, 1, 4) and np.shares_memory(res, out)
    assert out.reshape(-1, 4)[:, 3].tolist() == [0] * 16  # padding written
    back = np.empty(48, dtype=np.int8)
    V.to_cpu(res, "HCWNC4", x.shape, "NCHW", out=back)
    assert np.array_equal(back.reshape(x.shape), x)
    with pytest.raises(LayoutError, match="allocate from the hw_shape"):
        V.to_hw(x, "NCHW", "HCWNC4", out=np.empty(48, dtype=np.int8))
    with pytest.raises(LayoutError, match="dtype"):
        V.to_hw(x, "NCHW", "HCWNC4", out=np.empty(64, dtype=np.uint8))


def test_vart_strict():
    assert V.hw_shape((2, 3, 2, 2), "NCHW", "HCWNC4") == (2, 1, 2, 2, 4)
    with pytest.raises(LayoutError, match="N = 1"):
        V.hw_shape((2, 3, 2, 2), "NCHW", "HCWNC4", vart_strict=True)
    with pytest.raises(LayoutError, match="N = 1"):
        V.to_hw(np.zeros((2, 3, 2, 2), np.int8), "NCHW", "HCWNC8", vart_strict=True)
    rep = load("seed_report.json")
    rep["inputs"][0]["cpu_shape"][0] = 2
    rep["inputs"][0]["hw_shape"][3] = 2
    V.load_hsi(rep)
    with pytest.raises(LayoutError, match=r"inputs\[0\] 'compute_graph.ifm_ddr'.*N = 1"):
        V.load_hsi(rep, vart_strict=True)


# ---------------------------------------------------------------------------
# §2.8 quantize / dequantize / bf16 vectors
# ---------------------------------------------------------------------------


def _entry(cpu_dtype, hw_dtype, scale, zp, role="inputs", shape=(1, 1, 1, 8)):
    n, c, h, w = shape
    e = {
        "tensor_name": "t",
        "cpu_shape": list(shape),
        "cpu_format": "NCHW",
        "cpu_dtype": cpu_dtype,
        "hw_shape": [h, -(-c // 4), w, n, 4],
        "hw_format": "HCWNC4",
        "hw_dtype": hw_dtype,
        "scale_factor": scale,
        "zero_point": zp,
    }
    rep = V.load_hsi(
        {"inputs": [e] if role == "inputs" else [], "outputs": [e] if role == "outputs" else []}
    )
    return (rep.inputs or rep.outputs)[0]


def _hw_values(entry, values):
    x = np.array(values, dtype=entry.cpu_np_dtype).reshape(entry.cpu_shape)
    return entry.to_hw(x)[0, 0, :, 0, 0].tolist()


def test_quantize_vectors_int8():
    e = _entry("fp32", "int8", 0.0078125, 0)
    vals = [0.5, 0.00390625, 0.01171875, -0.01171875, 0.2, 1.0, -1.5, np.nan]
    assert _hw_values(e, vals) == [64, 0, 2, -2, 26, 127, -128, 0]


def test_quantize_vectors_uint8_zero_point():
    e = _entry("fp32", "uint8", 0.5, 3)
    assert _hw_values(e, [1.25, 1.75, -2.0, np.nan, 0, 0, 0, 0]) == [5, 7, 0, 3, 3, 3, 3, 3]


def test_quantize_padding_is_raw_zero_with_zero_point():
    # decision 7: channel padding is raw 0 even when the zero point is not 0
    e = _entry("fp32", "uint8", 0.5, 3, shape=(1, 3, 2, 2))
    hw = e.to_hw(np.zeros((1, 3, 2, 2), np.float32))
    assert hw[..., :3].tolist() == np.full((2, 1, 2, 1, 3), 3).tolist()
    assert not hw[..., 3].any()


@pytest.mark.parametrize("src", [np.float16, BF16])
def test_quantize_half_inputs(src):
    e = _entry({np.float16: "fp16"}.get(src, "bf16"), "int8", 0.0078125, 0)
    vals = np.array([0.5, 0.01171875, -1.5, 0.25, 0, 1, -1, 0.125], dtype=src)
    assert _hw_values(e, vals) == np_quantize(vals, 0.0078125, 0, np.int8).tolist()


def test_dequantize_vectors():
    e = _entry("fp32", "int8", 0.25, 0, role="outputs", shape=(1, 3, 1, 1))
    y = np.array([-3, 127, -128, 99], dtype=np.int8)  # last one is padding
    assert e.to_cpu(y).reshape(-1).tolist() == [-0.75, 31.75, -32.0]
    e2 = _entry("fp32", "uint8", 0.5, 3, role="outputs", shape=(1, 2, 1, 1))
    assert e2.to_cpu(np.array([5, 0, 9, 9], np.uint8)).reshape(-1).tolist() == [1.0, -1.5]


BF16_TABLE = [
    (0x3F800001, 0x3F80),
    (0x3F808000, 0x3F80),
    (0x3F818000, 0x3F82),
    (0x3F80FFFF, 0x3F81),
    (0x3DCCCCCD, 0x3DCD),
    (0x40490FDB, 0x4049),
    (0x7F7FFFFF, 0x7F80),
    (0x7F800001, 0x7FC0),
    (0x80000000, 0x8000),
]


def test_bf16_rne_table():
    e = _entry("fp32", "bf16", -1.0, 0, shape=(1, 1, 1, 9))
    x = np.array([a for a, _ in BF16_TABLE], dtype=np.uint32).view(np.float32)
    hw = e.to_hw(x.reshape(1, 1, 1, 9))
    assert hw.dtype == BF16
    bits = hw[0, 0, :, 0, 0].view(np.uint16).tolist()
    assert [hex(b) for b in bits] == [hex(b) for _, b in BF16_TABLE]


def test_bf16_output_cast_exact():
    e = _entry("fp32", "bf16", 1, 0, role="outputs", shape=(1, 4, 2, 2))
    y = np.arange(16).astype(np.float32).astype(BF16) / BF16.type(3)
    cpu = e.to_cpu(y)
    assert cpu.dtype == np.float32
    assert np.array_equal(
        cpu, ref_unhcwnc(y.reshape(2, 1, 2, 1, 4), (1, 4, 2, 2)).astype(np.float32)
    )


def ref_unhcwnc(hw, shape):
    n, c, h, w = shape
    x = np.empty(shape, dtype=hw.dtype)
    b = hw.shape[-1]
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        x[ni, ci, hi, wi] = hw[hi, ci // b, wi, ni, ci % b]
    return x


def test_fp16_cast():
    e = _entry("fp32", "fp16", 1.0, 0, shape=(1, 2, 1, 1))
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11], dtype=np.float32).reshape(1, 2, 1, 1)
    assert e.to_hw(x).reshape(-1)[:2].tolist() == [1.0, 1 + 2 * 2**-10]


# ---------------------------------------------------------------------------
# The seed's JSON examples, verbatim
# ---------------------------------------------------------------------------


def test_seed_report_example():
    rep = V.load_hsi(DATA / "seed_report.json")
    (inp,), (out,) = rep.inputs, rep.outputs
    assert inp.name == "compute_graph.ifm_ddr" and inp.tensor_name is None
    assert inp.cpu_dtype == "int8" and inp.scale_factor == 1 and inp.zero_point is None
    assert inp.hw_shape == [224, 1, 224, 1, 4] and inp.form == "annotation"
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 3, 224, 224)).astype(np.int8)
    hw = inp.to_hw(x)
    assert hw.shape == (224, 1, 224, 1, 4) and hw.dtype == np.int8
    assert np.array_equal(hw[..., :3], x.transpose(2, 0, 3, 1)[:, None].reshape(224, 1, 224, 1, 3))
    assert not hw[..., 3].any()
    y = rng.integers(-128, 128, (7, 256, 7, 1, 8)).astype(np.int8)
    cpu = out.to_cpu(y)
    assert cpu.shape == (1, 2048, 7, 7)
    assert cpu[0, 1000, 3, 5] == y.reshape(-1)[50048]
    assert np.array_equal(cpu, ref_unhcwnc(y, (1, 2048, 7, 7)))
    assert "Layout('HCWN4c', dims='NCHW').pack" in inp.plan.describe()
    assert "Layout('HCWN8c', dims='NCHW').unpack" in out.plan.describe()


def test_seed_annotation_example():
    rep = V.load_hsi((DATA / "seed_annotation.json").read_text())
    inp, out = rep.inputs[0], rep.outputs[0]
    assert [t.op for t in inp.transformations()] == ["cast", "pad", "reshape", "transpose"]
    assert [t.to_dict() for t in inp.transformations()][1:] == [
        {
            "transformation": "pad",
            "pad_at_start": [0, 0, 0, 0],
            "pad_at_end": [0, 1, 0, 0],
            "output_shape": [1, 4, 32, 32],
        },
        {"transformation": "reshape", "output_shape": [1, 1, 4, 32, 32]},
        {"transformation": "transpose", "perm": [3, 1, 4, 0, 2]},
    ]
    x = np.random.default_rng(1).normal(size=(1, 3, 32, 32)).astype(np.float32)
    hw = inp.to_hw(x)
    assert hw.dtype == BF16 and hw.nbytes == 8192
    assert hw.reshape(-1)[670] == x[0, 2, 5, 7].astype(BF16)
    assert np.array_equal(hw.view(np.uint16), ref_hcwnc(x.astype(BF16), 4).view(np.uint16))
    assert [t.op for t in out.transformations()] == ["transpose", "reshape", "slice", "cast"]
    y = np.random.default_rng(2).normal(size=(30, 1, 30, 1, 4)).astype(BF16)
    cpu = out.to_cpu(y)
    assert cpu.dtype == np.float32 and cpu.shape == (1, 4, 30, 30)
    assert np.array_equal(cpu, ref_unhcwnc(y, (1, 4, 30, 30)).astype(np.float32))


def test_seed_transformation_example():
    rep = V.load_hsi(json.loads((DATA / "seed_rt_transformations.json").read_text()))
    inp, out = rep.inputs[0], rep.outputs[0]
    assert inp.form == "transformations" and inp.hw_format == "NCHW"  # ignored (§2.10)
    assert "Layout('HCWN8c', dims='NCHW').pack + fp32->int8" in inp.plan.describe()
    x = np.random.default_rng(3).uniform(-1.1, 1.1, (1, 3, 32, 32)).astype(np.float32)
    hw = inp.to_hw(x)
    assert hw.shape == (32, 1, 32, 1, 8) and hw.nbytes == 8192
    q = np_quantize(x, 0.0078125, 0, np.int8)
    flat = hw.reshape(-1)
    assert (
        flat[1338] == q[0, 2, 5, 7] and flat[8184] == q[0, 0, 31, 31] and flat[9] == q[0, 1, 0, 1]
    )
    assert not hw[..., 3:].any()
    assert np.array_equal(hw, ref_hcwnc(q, 8))
    # the output chain, applied in list order from the HW buffer
    y = np.random.default_rng(4).integers(-128, 128, (32, 1, 32, 1, 8)).astype(np.int8)
    cpu = out.to_cpu(y)
    assert cpu.shape == (1, 4, 32, 32) and cpu.dtype == np.float32
    assert np.array_equal(cpu, ref_unhcwnc(y, (1, 8, 32, 32))[:, :4].astype(np.float32) * 0.25)
    # round trip through a report whose output undoes the input (channels that exist)
    back = out.to_cpu(hw)
    assert np.array_equal(back[:, :3], q.astype(np.float32) * 0.25) and not back[:, 3].any()


def test_non_involutive_chain_report():
    # §2.7: NHWC -> HCWNC4 with perm [1,3,2,0,4]; the output side uses its inverse [3,0,2,1,4]
    rep = V.load_hsi(
        {
            "inputs": [
                {
                    "tensor_name": "x",
                    "cpu_shape": [2, 3, 4, 3],
                    "cpu_dtype": "int8",
                    "hw_shape": [3, 1, 4, 2, 4],
                    "hw_dtype": "int8",
                    "rt_transformations": [
                        {
                            "transformation": "pad",
                            "pad_at_start": [0, 0, 0, 0],
                            "pad_at_end": [0, 0, 0, 1],
                            "output_shape": [2, 3, 4, 4],
                        },
                        {"transformation": "reshape", "output_shape": [2, 3, 4, 1, 4]},
                        {"transformation": "transpose", "perm": [1, 3, 2, 0, 4]},
                    ],
                }
            ],
            "outputs": [
                {
                    "tensor_name": "y",
                    "cpu_shape": [2, 3, 4, 3],
                    "cpu_dtype": "int8",
                    "hw_shape": [3, 1, 4, 2, 4],
                    "hw_dtype": "int8",
                    "rt_transformations": [
                        {"transformation": "transpose", "perm": [3, 0, 2, 1, 4]},
                        {"transformation": "reshape", "output_shape": [2, 3, 4, 4]},
                        {"transformation": "slice", "start": [0, 0, 0, 0], "size": [2, 3, 4, 3]},
                    ],
                }
            ],
        }
    )
    x = np.arange(72, dtype=np.int8).reshape(2, 3, 4, 3) + 1
    hw = rep.input("x").to_hw(x)
    assert hw.shape == (3, 1, 4, 2, 4)
    assert hw.reshape(-1)[94] == x[1, 2, 3, 2] and hw.reshape(-1)[32] == x[0, 1, 0, 0]
    assert np.array_equal(hw, V.to_hw(x, "NHWC", "HCWNC4"))
    assert rep.input("x").plan.kind == "pack" and rep.output("y").plan.kind == "unpack"
    assert np.array_equal(rep.output("y").to_cpu(hw), x)
    # the same perm used on the output side (the inverse rule) would not round-trip
    wrong = x.transpose(1, 3, 2, 0)  # noqa: F841  (documenting: [1,3,2,0,4] != its inverse)
    assert [1, 3, 2, 0, 4] != list(np.argsort([1, 3, 2, 0, 4]))


# ---------------------------------------------------------------------------
# Reports: fields, round trip, lookups
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["seed_report.json", "seed_annotation.json", "seed_rt_transformations.json"]
)
def test_round_trip(name, tmp_path):
    raw = load(name)
    rep = V.load_hsi(raw)
    assert rep.to_dict() == raw
    assert json.loads(rep.to_json()) == raw
    assert V.load_hsi(rep.to_json()).to_dict() == raw
    path = tmp_path / "flexmlrt-hsi.json"
    rep.save(path)
    assert V.load_hsi(path).to_dict() == raw
    assert V.load_hsi(str(path)).to_dict() == raw
    assert V.load_hsi(path.read_bytes()).to_dict() == raw
    for e, r in zip(rep, raw["inputs"] + raw["outputs"]):
        for k, v in r.items():
            assert getattr(e, k) == v
        assert e.to_dict() == r


def test_unknown_fields_kept():
    raw = load("seed_report.json")
    raw["version"] = "1.2"
    raw["inputs"][0]["vendor_ext"] = {"a": [1, 2]}
    rep = V.load_hsi(raw)
    assert rep.extra == {"version": "1.2"}
    assert rep.inputs[0].extra == {"vendor_ext": {"a": [1, 2]}}
    assert rep.to_dict() == raw


def test_lookup_by_name():
    rep = V.load_hsi(DATA / "seed_report.json")
    assert rep.input("compute_graph.ifm_ddr") is rep.inputs[0]
    assert rep.output(0) is rep.outputs[0] and rep.output("0") is rep.outputs[0]
    assert len(rep) == 2 and [e.role for e in rep] == ["input", "output"]
    with pytest.raises(LayoutError, match=r"compute_graph\.ifm_ddr"):
        rep.input("nope")
    assert "HCWNC4" in repr(rep.inputs[0]) and "2048" in rep.outputs[0].summary()


def test_wrong_direction():
    rep = V.load_hsi(DATA / "seed_report.json")
    with pytest.raises(LayoutError, match=r"inputs\[0\] 'compute_graph.ifm_ddr' is an input"):
        rep.inputs[0].to_cpu(np.zeros(200704, np.int8))
    with pytest.raises(LayoutError, match="is an output"):
        rep.outputs[0].to_hw(np.zeros((1, 2048, 7, 7), np.int8))


# ---------------------------------------------------------------------------
# §2.9 error cases (each names the tensor and the field)
# ---------------------------------------------------------------------------

RT = load("seed_rt_transformations.json")


def _bad(mutate, role="inputs"):
    raw = json.loads(
        json.dumps(RT if mutate.__name__.startswith("rt_") else load("seed_report.json"))
    )
    mutate(raw[role][0])
    return raw


def _set(key, value):
    def f(e):
        e[key] = value

    f.__name__ = f"set_{key}"
    return f


def _del(key):
    def f(e):
        del e[key]

    f.__name__ = f"del_{key}"
    return f


def _rt(k, **changes):
    def f(e):
        step = e["rt_transformations"][k]
        for key, v in changes.items():
            if v is None:
                del step[key]
            else:
                step[key] = v

    f.__name__ = f"rt_{k}"
    return f


def _rt_list(fn):
    def f(e):
        fn(e["rt_transformations"])

    f.__name__ = "rt_list"
    return f


ANN = r"inputs\[0\] 'compute_graph.ifm_ddr'"
RTI = r"inputs\[0\]\.rt_transformations"
RTO = r"outputs\[0\]\.rt_transformations"

ERRORS = [
    # missing / malformed fields
    (_del("cpu_shape"), "inputs", ANN + r": missing required field 'cpu_shape'"),
    (_del("hw_dtype"), "inputs", ANN + r": missing required field 'hw_dtype'"),
    (
        _del("cpu_format"),
        "inputs",
        ANN + r": missing required field 'cpu_format'.*unless rt_transformations",
    ),
    (
        _del("hw_format"),
        "outputs",
        r"outputs\[0\] 'compute_graph.ofm_ddr': missing required field 'hw_format'",
    ),
    (
        _set("cpu_shape", [1, 3, "224", 224]),
        "inputs",
        ANN + r"\.cpu_shape\[2\] is '224'; expected an integer",
    ),
    (_set("cpu_shape", [1, -3, 224, 224]), "inputs", ANN + r"\.cpu_shape\[1\] is -3"),
    (
        _set("cpu_dtype", "float33"),
        "inputs",
        ANN + r"\.cpu_dtype is 'float33'.*did you mean 'float32'",
    ),
    (
        _set("hw_format", "HCWNC5"),
        "inputs",
        ANN + r"\.hw_format is 'HCWNC5': HCWNC block size 5 is not supported",
    ),
    (
        _set("hw_format", "HCWNC32"),
        "inputs",
        ANN + r"\.hw_format.*expected HCWNC4, HCWNC8 or HCWNC16",
    ),
    (_set("cpu_format", "NCWH"), "inputs", ANN + r"\.cpu_format is 'NCWH'"),
    (
        _set("cpu_format", "HCWNC4"),
        "inputs",
        ANN + r"\.cpu_format is .HCWNC4.; the CPU side must be a plain format",
    ),
    (
        _set("cpu_shape", [1, 3, 224]),
        "inputs",
        ANN + r"\.cpu_shape is \[1, 3, 224\] \(3 dims\); format NCHW needs 4",
    ),
    (_set("name", 7), "inputs", r"inputs\[0\]: field 'name' is 7; expected a string"),
    # hw_shape inconsistent with the derivation
    (
        _set("hw_shape", [224, 1, 224, 1, 8]),
        "inputs",
        ANN + r"\.hw_shape.*hw_shape\[4\] \(block size 4\) is 8, expected 4",
    ),
    (
        _set("hw_shape", [224, 2, 224, 1, 4]),
        "inputs",
        ANN
        + r"\.hw_shape.*hw_shape\[1\] \(ceil\(C/4\) channel blocks\) is 2, expected 1 with C = 3",
    ),
    (_set("hw_shape", [224, 224, 1, 1, 4]), "inputs", ANN + r"\.hw_shape.*hw_shape\[1\]"),
    (
        _set("hw_shape", [224, 1, 224, 4]),
        "inputs",
        ANN + r"\.hw_shape is \[224, 1, 224, 4\]; expected \[224, 1, 224, 1, 4\]",
    ),
    # dtype / scale rules (annotation form)
    (_set("scale_factor", 0.5), "inputs", ANN + r"\.scale_factor is 0.5.*expected 1 or -1"),
    (
        _set("hw_dtype", "uint8"),
        "inputs",
        ANN + r": cpu_dtype 'int8' and hw_dtype 'uint8' cannot be converted",
    ),
]


def _fp32_input(**kw):
    e = {
        "tensor_name": "img",
        "cpu_shape": [1, 3, 4, 4],
        "cpu_format": "NCHW",
        "cpu_dtype": "fp32",
        "hw_shape": [4, 1, 4, 1, 4],
        "hw_format": "HCWNC4",
        "hw_dtype": "int8",
    }
    e.update(kw)
    return {"inputs": [e], "outputs": []}


def _int_output(**kw):
    e = {
        "tensor_name": "logits",
        "cpu_shape": [1, 3, 4, 4],
        "cpu_format": "NCHW",
        "cpu_dtype": "fp32",
        "hw_shape": [4, 1, 4, 1, 4],
        "hw_format": "HCWNC4",
        "hw_dtype": "int8",
    }
    e.update(kw)
    return {"inputs": [], "outputs": [e]}


@pytest.mark.parametrize(
    ("mutate", "role", "pattern"),
    ERRORS,
    ids=[f"{i}-{m.__name__}" for i, (m, _, _) in enumerate(ERRORS)],
)
def test_report_errors(mutate, role, pattern):
    raw = load("seed_report.json")
    mutate(raw[role][0])
    with pytest.raises(LayoutError, match=pattern):
        V.load_hsi(raw)


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        (
            _fp32_input(scale_factor=-1.0),
            r"inputs\[0\] 'img'\.scale_factor is -1.0 \(unset\).*needs a quantize scale",
        ),
        (_fp32_input(), r"inputs\[0\] 'img'\.scale_factor is 'missing' \(unset\)"),
        (
            _fp32_input(scale_factor=0),
            r"inputs\[0\] 'img'\.scale_factor is 0; expected a finite number > 0",
        ),
        (
            _fp32_input(scale_factor=-0.5),
            r"'img'\.scale_factor is -0.5; expected a finite number > 0",
        ),
        (_fp32_input(scale_factor="0.5"), r"'img'\.scale_factor is '0.5'; expected a number"),
        (
            _fp32_input(scale_factor=0.5, zero_point=200),
            r"'img'\.zero_point is 200; expected a value that fits int8",
        ),
        (
            _fp32_input(scale_factor=0.5, zero_point=1.5),
            r"'img'\.zero_point is 1.5; expected an integer",
        ),
        (
            _int_output(scale_factor=-1),
            r"outputs\[0\] 'logits'\.scale_factor.*int8 -> fp32 needs a dequantize scale",
        ),
        (
            _fp32_input(scale_factor=1, cpu_dtype="int8", hw_dtype="fp32"),
            r"'img': cpu_dtype 'int8' and hw_dtype 'fp32' cannot be converted for an input",
        ),
        (
            {
                "inputs": [
                    {"cpu_shape": [1], "cpu_dtype": "int8", "hw_shape": [1], "hw_dtype": "int8"}
                ]
            },
            r"inputs\[0\]: missing required fields 'cpu_format', 'hw_format'",
        ),
        ({"inputs": "x"}, r"report: field 'inputs' is 'x'; expected a list"),
        ({"inputs": [3]}, r"inputs\[0\] is int 3; expected a JSON object"),
        ({"tensors": []}, r"missing 'inputs' and 'outputs' \(keys found: 'tensors'\)"),
        ([1, 2], r"expected an object with 'inputs' and 'outputs'"),
        ("{not json", r"not valid JSON.*line 1 column 2"),
        ("/no/such/flexmlrt-hsi.json", r"no such file"),
    ],
)
def test_report_errors_more(raw, pattern):
    src = raw if isinstance(raw, str) else json.dumps(raw)
    with pytest.raises(LayoutError, match=pattern):
        V.load_hsi(src)


def test_load_type_error():
    with pytest.raises(TypeError, match="src: expected a path"):
        V.load_hsi(3.5)


RT_ERRORS = [
    # quantize position / types
    (
        "inputs",
        _rt_list(lambda c: c.append(c.pop(0))),
        RTI + r"\[3\] \(quantize\): quantize must be the first entry",
    ),
    (
        "outputs",
        _rt_list(lambda c: c.insert(0, c.pop())),
        RTO + r"\[0\] \(dequantize\): dequantize must be the last entry",
    ),
    (
        "outputs",
        _rt_list(
            lambda c: c.insert(
                0, {"transformation": "quantize", "scale": 1, "to_dtype": "int8", "zero_point": 0}
            )
        ),
        RTO + r"\[0\] \(quantize\): quantize is only allowed as the first entry of an input chain",
    ),
    (
        "inputs",
        _rt_list(
            lambda c: c.append({"transformation": "dequantize", "scale": 1, "to_dtype": "fp32"})
        ),
        RTI + r"\[4\] \(dequantize\): dequantize is only allowed",
    ),
    ("inputs", _rt(0, to_dtype="fp16"), RTI + r"\[0\]\.to_dtype is 'fp16'; quantize needs int8"),
    ("inputs", _rt(0, scale=0), RTI + r"\[0\]\.scale is 0; expected a finite number > 0"),
    ("inputs", _rt(0, scale=-1.0), RTI + r"\[0\]\.scale is -1.0"),
    ("inputs", _rt(0, scale=None), RTI + r"\[0\] \(quantize\): missing field 'scale'"),
    (
        "inputs",
        _rt(0, zero_point=128),
        RTI + r"\[0\]\.zero_point is 128; expected a value that fits int8",
    ),
    ("outputs", _rt(3, to_dtype="int8"), RTO + r"\[3\]\.to_dtype is 'int8'; dequantize needs fp32"),
    # pad
    ("inputs", _rt(1, pad_at_end=[0, 5, 0]), RTI + r"\[1\]\.pad_at_end has 3 values; expected 4"),
    ("inputs", _rt(1, pad_at_start=[0, -1, 0, 0]), RTI + r"\[1\]\.pad_at_start\[1\] is -1"),
    (
        "inputs",
        _rt(1, output_shape=[1, 9, 32, 32]),
        RTI + r"\[1\]\.output_shape is \[1, 9, 32, 32\]; expected \[1, 8, 32, 32\]",
    ),
    # reshape
    (
        "inputs",
        _rt(2, output_shape=[1, 1, 8, 32, 31]),
        RTI + r"\[2\]\.output_shape is \[1, 1, 8, 32, 31\].*cannot change the count",
    ),
    # transpose
    (
        "inputs",
        _rt(3, perm=[3, 1, 4, 0, 0]),
        RTI + r"\[3\]\.perm is \[3, 1, 4, 0, 0\]; expected a permutation of 0..4",
    ),
    ("inputs", _rt(3, perm=[3, 1, 0, 2]), RTI + r"\[3\]\.perm"),
    # slice
    (
        "outputs",
        _rt(2, size=[1, 9, 32, 32]),
        RTO + r"\[2\]: axis 1 slice \[0, 9\) is out of bounds for extent 8",
    ),
    (
        "outputs",
        _rt(2, size=[1, 0, 32, 32]),
        RTO + r"\[2\]\.size\[1\] is 0; expected an integer >= 1",
    ),
    ("outputs", _rt(2, start=[0, -1, 0, 0]), RTO + r"\[2\]\.start\[1\] is -1"),
    # op names / shapes
    (
        "inputs",
        _rt(3, transformation="transpse"),
        RTI + r"\[3\]\.transformation is 'transpse'.*did you mean 'transpose'",
    ),
    ("inputs", _rt(3, transformation=None), RTI + r"\[3\]: missing field 'transformation'"),
    (
        "inputs",
        _rt_list(lambda c: c.pop()),
        RTI
        + r": the chain ends with shape \[1, 1, 8, 32, 32\] but hw_shape is \[32, 1, 32, 1, 8\]",
    ),
    (
        "inputs",
        _rt_list(lambda c: c.pop(0)),
        RTI + r": the chain ends in fp32 but hw_dtype is 'int8'; add a quantize step first",
    ),
    (
        "outputs",
        _rt_list(lambda c: c.pop()),
        RTO + r": the chain ends in int8 but cpu_dtype is 'fp32'; add a dequantize step last",
    ),
    ("inputs", _rt_list(lambda c: c.__setitem__(1, 5)), RTI + r"\[1\] is 5; expected an object"),
    ("inputs", _set("rt_transformations", {"a": 1}), RTI + r" is \{'a': 1\}; expected a list"),
]


@pytest.mark.parametrize(
    ("role", "mutate", "pattern"), RT_ERRORS, ids=[str(i) for i in range(len(RT_ERRORS))]
)
def test_chain_errors(role, mutate, pattern):
    raw = json.loads(json.dumps(RT))
    mutate(raw[role][0])
    with pytest.raises(LayoutError, match=pattern):
        V.load_hsi(raw)


def test_rt_form_ignores_formats_and_top_level_scale():
    raw = json.loads(json.dumps(RT))
    raw["inputs"][0]["hw_format"] = "whatever"
    raw["inputs"][0]["scale_factor"] = 123.0
    del raw["inputs"][0]["cpu_format"]
    V.load_hsi(raw)


def test_chain_implicit_cast_and_cast_op():
    e = {
        "tensor_name": "x",
        "cpu_shape": [1, 3, 2, 2],
        "cpu_dtype": "fp32",
        "hw_shape": [1, 4, 2, 2],
        "hw_dtype": "bf16",
        "rt_transformations": [
            {"transformation": "pad", "pad_at_start": [0, 0, 0, 0], "pad_at_end": [0, 1, 0, 0]}
        ],
    }
    entry = V.load_hsi({"inputs": [e]}).inputs[0]
    steps = entry.transformations()
    assert steps[-1].op == "cast" and steps[-1].implicit and "[implicit]" in str(steps[-1])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(1, 3, 2, 2)
    hw = entry.to_hw(x)
    assert hw.dtype == BF16 and np.array_equal(hw[:, :3], x.astype(BF16)) and not hw[:, 3].any()
    e["rt_transformations"].insert(0, {"transformation": "cast", "to_dtype": "bf16"})
    assert np.array_equal(V.load_hsi({"inputs": [e]}).inputs[0].to_hw(x), hw)
    e["rt_transformations"][0] = {"transformation": "cast", "to_dtype": "int8"}
    with pytest.raises(LayoutError, match=r"\[0\] \(cast\): fp32 -> int8 is not a float cast"):
        V.load_hsi({"inputs": [e]})


# tensors supplied to to_hw / to_cpu


def test_tensor_errors():
    rep = V.load_hsi(DATA / "seed_rt_transformations.json")
    inp, out = rep.inputs[0], rep.outputs[0]
    with pytest.raises(LayoutError, match=r"inputs\[0\]: x has dtype int8; cpu_dtype is 'fp32'"):
        inp.to_hw(np.zeros((1, 3, 32, 32), np.int8))
    with pytest.raises(
        LayoutError,
        match=r"x has shape \[2, 3, 32, 32\]; cpu_shape is \[1, 3, 32, 32\] \(wrong batch size\?\)",
    ):
        inp.to_hw(np.zeros((2, 3, 32, 32), np.float32))
    with pytest.raises(
        LayoutError,
        match=r"x has shape \[1, 32, 32, 3\].*wrong dimension order\? cpu_format is 'NCHW'",
    ):
        inp.to_hw(np.zeros((1, 32, 32, 3), np.float32))
    with pytest.raises(LayoutError, match=r"outputs\[0\]: y holds 8191 elements.*needs 8192"):
        out.to_cpu(np.zeros(8191, np.int8))
    with pytest.raises(LayoutError, match=r"y has dtype uint8; hw_dtype is 'int8'"):
        out.to_cpu(np.zeros(8192, np.uint8))
    with pytest.raises(LayoutError, match=r"out: holds 100 elements.*8192"):
        inp.to_hw(np.zeros((1, 3, 32, 32), np.float32), out=np.zeros(100, np.int8))
    # after good calls (the repeat path), bad out= still gets the report's messages
    x = np.zeros((1, 3, 32, 32), np.float32)
    good = inp.to_hw(x)
    assert inp.to_hw(x, out=good) is good and inp.to_hw(x, out=good.reshape(-1)).shape == good.shape
    with pytest.raises(LayoutError, match=r"out: holds 3072 elements.*allocate from the hw_shape"):
        inp.to_hw(x, out=np.zeros(3072, np.int8))
    with pytest.raises(LayoutError, match=r"out: dtype is uint8; expected int8"):
        inp.to_hw(x, out=np.zeros(good.shape, np.uint8))
    with pytest.raises(TypeError, match=r"out: expected a numpy.ndarray, got list"):
        inp.to_hw(x, out=[0] * good.size)
    with pytest.raises(LayoutError, match=r"out: must be a writeable C-contiguous array"):
        inp.to_hw(x, out=np.zeros(2 * good.size, np.int8)[::2])
    rep2 = V.load_hsi(DATA / "seed_report.json")
    with pytest.raises(LayoutError, match=r"fp32.*quantize it first"):
        rep2.inputs[0].to_hw(np.zeros((1, 3, 224, 224), np.float32))


def test_function_errors():
    with pytest.raises(LayoutError, match=r"hw_format is 'HCWNC3'"):
        V.hw_shape((1, 3, 4, 4), "NCHW", "HCWNC3")
    with pytest.raises(LayoutError, match=r"cpu_format is 'NCWH'"):
        V.hw_shape((1, 3, 4, 4), "NCWH", "HCWNC4")
    with pytest.raises(
        LayoutError, match=r"x.shape is \[1, 3, 4\] \(3 dims\); format NCHW needs 4"
    ):
        V.to_hw(np.zeros((1, 3, 4)), "NCHW", "HCWNC4")
    with pytest.raises(LayoutError, match=r"NHW.*HCWNC formats take an NCHW or NHWC tensor"):
        V.hw_shape((1, 3, 4), "NHW", "HCWNC4")
    with pytest.raises(LayoutError, match=r"different ranks"):
        V.hw_shape((1, 3, 4), "NHW", "NCHW")
    with pytest.raises(LayoutError, match=r"name different axes"):
        V.hw_shape((1, 3, 4), "NHW", "NCH")
    with pytest.raises(LayoutError, match=r"y holds 10 elements"):
        V.to_cpu(np.zeros(10, np.int8), "HCWNC4", (1, 3, 4, 4), "NCHW")
    with pytest.raises(TypeError, match="cpu_shape"):
        V.hw_shape("1x3", "NCHW", "HCWNC4")
    with pytest.raises(LayoutError, match=r"cpu_shape\[1\] is -3"):
        V.hw_shape((1, -3, 4, 4), "NCHW", "HCWNC4")


def test_zero_channels_and_empty():
    x = np.zeros((1, 0, 2, 2), np.int8)
    hw = V.to_hw(x, "NCHW", "HCWNC4")
    assert hw.shape == (2, 0, 2, 1, 4)
    assert V.to_cpu(hw, "HCWNC4", (1, 0, 2, 2), "NCHW").shape == (1, 0, 2, 2)


# ---------------------------------------------------------------------------
# CLI: layoutkit hsi
# ---------------------------------------------------------------------------


def test_cli_show(capsys):
    from layoutkit.cli import main

    assert main(["hsi", str(DATA / "seed_rt_transformations.json")]) == 0
    text = capsys.readouterr().out
    assert "inputs[0] (transformations form)" in text
    assert "3. transpose(perm=[3, 1, 4, 0, 2])" in text
    assert "Layout('HCWN8c', dims='NCHW').pack + fp32->int8" in text
    assert "hw:  32x1x32x1x8 NCHW (ignored" in text
    assert main(["hsi", str(DATA / "seed_annotation.json")]) == 0
    assert "0. cast(to_dtype=bf16)" in capsys.readouterr().out


def test_cli_convert(tmp_path, capsys):
    from layoutkit.cli import main

    rep = DATA / "seed_rt_transformations.json"
    x = np.random.default_rng(5).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    hw_path = tmp_path / "hw.bin"
    assert main(["hsi", str(rep), "--input", f"0={tmp_path / 'x.npy'}", "-o", str(hw_path)]) == 0
    entry = V.load_hsi(rep).inputs[0]
    assert hw_path.read_bytes() == entry.to_hw(x).tobytes()
    y_path = tmp_path / "y.npy"
    assert main(["hsi", str(rep), "--output", f"0={hw_path}", "-o", str(y_path)]) == 0
    y = np.load(y_path)
    assert y.shape == (1, 4, 32, 32) and y.dtype == np.float32
    assert np.array_equal(y, V.load_hsi(rep).outputs[0].to_cpu(np.fromfile(hw_path, np.int8)))
    assert "-> cpu 1x4x32x32 fp32" in capsys.readouterr().out
    # bf16 through .npy (saved as raw 2-byte records)
    ann = DATA / "seed_annotation.json"
    np.save(tmp_path / "hwb.npy", np.ones((30, 1, 30, 1, 4), BF16))
    assert (
        main(
            [
                "hsi",
                str(ann),
                "--output",
                f"0={tmp_path / 'hwb.npy'}",
                "-o",
                str(tmp_path / "o.npy"),
            ]
        )
        == 0
    )
    assert np.load(tmp_path / "o.npy").sum() == 3600


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--input", "nope=x.npy"], "no input named 'nope'"),
        (["--input", "x.npy"], "expected NAME=FILE"),
        (["--input", "0=/no/file.npy"], "no such file"),
        (["--output", "0=/no/file.bin"], "no such file"),
        (["--input", "0=a", "--output", "0=b"], "either --input or --output"),
        (["-o", "x.bin"], "-o needs --input"),
    ],
)
def test_cli_errors(args, pattern, capsys):
    from layoutkit.cli import main

    assert main(["hsi", str(DATA / "seed_rt_transformations.json"), *args]) == 2
    assert re.search(pattern, capsys.readouterr().err)


def test_cli_bad_sizes(tmp_path, capsys):
    from layoutkit.cli import main

    (tmp_path / "hw.bin").write_bytes(b"\0" * 100)
    rep = str(DATA / "seed_rt_transformations.json")
    assert main(["hsi", rep, "--output", f"0={tmp_path / 'hw.bin'}"]) == 2
    assert "100 bytes; expected 8192" in capsys.readouterr().err
    assert main(["hsi", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_python_lists_take_the_report_dtype():
    e = _entry("fp32", "int8", 0.5, 0, shape=(1, 1, 1, 2))
    assert e.to_hw([[[[1.0, -2.25]]]])[0, 0, :, 0, 0].tolist() == [2, -4]
    with pytest.raises(LayoutError, match="x has shape"):
        e.to_hw([[1.0, 2.0]])
