"""Byte-exact checks against committed ggml C output (``tests/data/ggml/golden.npz``).

The fixture is ggml's own output (ggml-python 0.0.45 = ggml 0.15.3, x86-64, no
FMA), made by ``tests/data/ggml/make_golden.py``: rows of normal, uniform,
Laplace and weight-like data plus edge rows (zeros, -0.0, constant rows, tiny,
subnormal, huge, one outlier per super-block, rounding ties, one live group),
quantized to every type without importance weights and, for the types whose
ggml quantizer uses them, with them. These run without the C library; the same
comparison on fresh random data lives in ``test_ggml_c_oracle.py``.
"""

from __future__ import annotations

import pathlib

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import layoutkit as lk
from layoutkit import _ggml_quants as K

G = lk.ggml
GOLDEN = np.load(pathlib.Path(__file__).parent / "data" / "ggml" / "golden.npz")
X = GOLDEN["x"]
W = GOLDEN["imatrix"]
PLAIN = sorted(k.split("/", 1)[1] for k in GOLDEN.files if k.startswith("q/"))
WEIGHTED = sorted(k.split("/", 1)[1] for k in GOLDEN.files if k.startswith("qi/"))
ROW_NAMES = [
    "normal", "normal", "uniform", "laplace", "weight-like", "zeros", "-0.0", "+-0",
    "const 3", "const -1.5", "tiny", "subnormal", "huge", "fp16-range", "outlier",
    "neg outlier", "ties", "round ties", "halves", "one live group",
]  # fmt: skip


def _diff_report(got: np.ndarray, want: np.ndarray, type_size: int) -> str:
    g = got.reshape(X.shape[0], -1, type_size)
    w = want.reshape(X.shape[0], -1, type_size)
    bad = np.argwhere(np.any(g != w, axis=2))
    rows = sorted({ROW_NAMES[r] for r, _ in bad})
    return f"{len(bad)} blocks differ, in rows: {rows}"


def test_fixture_is_what_the_script_describes():
    assert X.shape == (len(ROW_NAMES), 512) and X.dtype == np.float32
    assert W.shape == (512,) and (W == 0).any()
    assert {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ4_NL", "IQ4_XS", "Q1_0"} <= set(
        PLAIN
    )
    assert set(WEIGHTED) == {i.name for i in G.types() if K.uses_imatrix(i.id)}


@pytest.mark.parametrize("name", PLAIN)
def test_quantize_equals_ggml_c(name):
    want = GOLDEN[f"q/{name}"]
    got = G.quantize(X, name)
    info = G.type_info(name)
    assert got.shape == want.shape
    assert np.array_equal(got, want), _diff_report(got, want, info.type_size)


@pytest.mark.parametrize("name", WEIGHTED)
def test_quantize_with_imatrix_equals_ggml_c(name):
    want = GOLDEN[f"qi/{name}"]
    got = G.quantize(X, name, imatrix=W)
    info = G.type_info(name)
    assert np.array_equal(got, want), _diff_report(got, want, info.type_size)
    # and the weights matter (otherwise this test would prove nothing)
    assert not np.array_equal(got, G.quantize(X, name))


@pytest.mark.parametrize("name", WEIGHTED)
def test_imatrix_threads_and_out_give_the_same_bytes(name):
    x = np.tile(X, (3, 1))
    want = np.tile(GOLDEN[f"qi/{name}"], (3, 1))
    for threads in (1, 2, 5):
        assert np.array_equal(G.quantize(x, name, imatrix=W, threads=threads), want)
    out = np.empty_like(want)
    assert G.quantize(x, name, imatrix=W.astype(np.float64), out=out) is out
    assert np.array_equal(out, want)
    # leading dims are rows too
    assert np.array_equal(
        G.quantize(x.reshape(3, -1, 512), name, imatrix=W), want.reshape(3, -1, want.shape[-1])
    )


@pytest.mark.parametrize("name", ["Q2_K", "Q4_K", "Q6_K", "IQ4_NL", "IQ4_XS"])
def test_slow_types_threads_identical(name):
    x = np.tile(X, (8, 1))
    want = np.tile(GOLDEN[f"q/{name}"], (8, 1))
    assert np.array_equal(G.quantize(x, name, threads=2), want)
    assert np.array_equal(G.quantize(x, name, threads=7), want)


def test_iq4_edge_blocks():
    # an all-zero IQ4_XS super-block: d = -0.0 (= -max_scale / 32 with max_scale 0),
    # every 6-bit scale 0 - 32 + 32 = 32 (scales_h 0b10 per sub-block), codes 8
    z = G.quantize(np.zeros(256, np.float32), "IQ4_XS").tobytes()
    assert z == bytes.fromhex("0080aaaa00000000") + b"\x88" * 128
    assert G.quantize(np.zeros(32, np.float32), "IQ4_NL").tobytes() == b"\x00\x00" + b"\x88" * 16
    # the values are kvalues_iq4nl times the scale
    q = G.quantize(np.array([-127, 113, *([0] * 30)], np.float32), "IQ4_NL")
    y = G.dequantize(q, "IQ4_NL")
    assert y[0] == -y[1] * 127 / 113 or abs(y[0] + 127) < 1


def test_q8_k_bsums():
    q = GOLDEN["q/Q8_K"].reshape(-1, 292)
    qs = q[:, 4:260].view(np.int8).astype(np.int32).reshape(-1, 16, 16).sum(axis=2)
    bs = q[:, 260:].copy().view("<i2")
    assert np.array_equal(qs, bs)
    assert np.array_equal(G.quantize(X, "Q8_K"), GOLDEN["q/Q8_K"])


def test_imatrix_argument_errors():
    x = X[:2]
    with pytest.raises(lk.LayoutError, match=r"imatrix.shape=\(256,\): expected \(512,\)"):
        G.quantize(x, "Q4_K", imatrix=W[:256])
    with pytest.raises(lk.LayoutError, match="one weight per column"):
        G.quantize(x, "Q4_K", imatrix=W.reshape(2, 256))
    with pytest.raises(TypeError, match="imatrix: expected a float array"):
        G.quantize(x, "Q4_K", imatrix=np.ones(512, np.int32))
    with pytest.raises(ValueError, match="qw must hold"):
        K.quantize_rows_imatrix(12, 512, 256, 144, x.reshape(-1), W[:3], np.empty(576, np.uint8))
    with pytest.raises(ValueError, match="no importance-matrix quantizer"):
        K.quantize_rows_imatrix(8, 512, 32, 34, x.reshape(-1), W, np.empty(1088, np.uint8))


@pytest.mark.parametrize("name", ["Q8_0", "Q8_K", "TQ1_0", "MXFP4", "Q1_0", "F16"])
def test_types_without_weighted_search_ignore_imatrix(name):
    # ggml's quantizers for these take no weights (ggml_quantize_chunk ignores them)
    assert np.array_equal(G.quantize(X, name, imatrix=W), G.quantize(X, name))


# ---------------------------------------------------------------------------
# round trips within each type's error bound (hypothesis)
# ---------------------------------------------------------------------------

# max |x - y| over a block, as a fraction of the block's max |x| (measured worst
# cases on adversarial data are about 2/3 of these)
_BOUND = {"Q2_K": 0.9, "Q3_K": 0.5, "Q4_K": 0.25, "Q5_K": 0.15, "Q6_K": 0.1,
          "IQ4_NL": 0.3, "IQ4_XS": 0.3}  # fmt: skip
_values = st.one_of(st.just(0.0), st.floats(-1e3, 1e3, width=32, allow_subnormal=False))


@pytest.mark.parametrize("name", sorted(_BOUND))
@settings(max_examples=25, deadline=None)
@given(
    x=hnp.arrays(np.float32, st.tuples(st.integers(1, 2), st.just(256)), elements=_values),
    w=st.one_of(
        st.none(),
        hnp.arrays(np.float32, 256, elements=st.floats(0.125, 10, width=32)),
    ),
)
def test_k_and_iq4_roundtrip_error_bound(name, x, w):
    y = G.dequantize(G.quantize(x, name, imatrix=w), name)
    bs = G.type_info(name).block_size
    for xb, yb in zip(x.reshape(-1, bs), y.reshape(-1, bs), strict=True):
        amax = float(np.abs(xb).max())
        # fp16 scales lose relative precision below 2^-14: an absolute slack
        assert float(np.abs(xb.astype(np.float64) - yb).max()) <= _BOUND[name] * amax + 1e-3


@settings(max_examples=20, deadline=None)
@given(
    x=hnp.arrays(np.float32, (3, 256), elements=st.floats(-50, 50, width=32)),
    name=st.sampled_from(WEIGHTED),
)
def test_unit_imatrix_is_a_valid_weighting(name, x):
    # all-ones weights run the weighted search: same shape, finite, decodable
    q = G.quantize(x, name, imatrix=np.ones(256, np.float32))
    assert q.shape == G.quantize(x, name).shape
    assert np.isfinite(G.dequantize(q, name)).all()
