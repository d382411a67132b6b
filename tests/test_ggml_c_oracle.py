"""layoutkit.ggml against ggml's own C library (the ``ggml-python`` package, optional).

``pip install ggml-python==0.0.45`` builds ggml 0.15.3 from source (about two
minutes) and exposes ``libggml-base.so`` with every ``quantize_row_*_ref`` /
``dequantize_row_*`` and the tensor functions; ggml.md §4 describes it as the C
oracle. Without it this module is skipped. Here the C code is the reference:
no known-divergence exclusions (only blocks holding NaN, whose bytes ggml
leaves to undefined float->int conversions).
"""

from __future__ import annotations

import ctypes
import itertools
import pathlib

import numpy as np
import pytest

import layoutkit as lk

cg = pytest.importorskip("ggml", reason="ggml-python (ggml's C library) is not installed")
if not hasattr(cg, "ggml_quantize_chunk"):  # pragma: no cover - some other 'ggml' module
    pytest.skip("the installed 'ggml' module is not ggml-python", allow_module_level=True)

G = lk.ggml
BASE = ctypes.CDLL(str(pathlib.Path(cg.__file__).parent / "lib" / "libggml-base.so"))
FP = ctypes.POINTER(ctypes.c_float)
VP = ctypes.c_void_p


def _fn(name, args):
    f = getattr(BASE, name, None)
    if f is None:
        return None
    f.argtypes = args
    f.restype = None
    return f


def c_quantize(x, name, imatrix=None):
    info = G.type_info(name)
    x = np.ascontiguousarray(x, np.float32)
    rows, n = x.reshape(-1, x.shape[-1]).shape
    out = np.zeros(rows * (n // info.block_size) * info.type_size, np.uint8)  # Q8_K: bsums
    ref = _fn(f"quantize_row_{info.ggml_name}_ref", (FP, VP, ctypes.c_int64))
    if imatrix is not None:
        w = np.ascontiguousarray(imatrix, np.float32)
        cg.ggml_quantize_chunk(
            info.id, x.ctypes.data_as(FP), out.ctypes.data_as(VP), 0, rows, n, w.ctypes.data_as(FP)
        )
    elif name in ("Q8_1", "Q8_K", "Q1_0", "NVFP4") and ref is not None:
        ref(x.ctypes.data_as(FP), out.ctypes.data_as(VP), x.size)
    elif name == "F16":
        f = _fn("ggml_fp32_to_fp16_row", (FP, VP, ctypes.c_int64))
        f(x.ctypes.data_as(FP), out.ctypes.data_as(VP), x.size)
    elif name == "BF16":
        f = _fn("ggml_fp32_to_bf16_row_ref", (FP, VP, ctypes.c_int64))
        f(x.ctypes.data_as(FP), out.ctypes.data_as(VP), x.size)
    else:
        cg.ggml_quantize_chunk(
            info.id, x.ctypes.data_as(FP), out.ctypes.data_as(VP), 0, rows, n, None
        )
    return out.reshape(*x.shape[:-1], -1)


def c_dequantize(q, name):
    info = G.type_info(name)
    q = np.ascontiguousarray(q)
    n = q.size // info.type_size * info.block_size
    y = np.empty(n, np.float32)
    if name == "F16":
        f = _fn("ggml_fp16_to_fp32_row", (VP, FP, ctypes.c_int64))
    elif name == "BF16":
        f = _fn("ggml_bf16_to_fp32_row", (VP, FP, ctypes.c_int64))
    else:
        f = _fn(f"dequantize_row_{info.ggml_name}", (VP, FP, ctypes.c_int64))
    if f is None:
        pytest.skip(f"this ggml build has no dequantizer for {name}")
    f(q.ctypes.data_as(VP), y.ctypes.data_as(FP), n)
    return y.reshape(*q.shape[:-1], -1)


QUANT = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "TQ1_0", "TQ2_0", "MXFP4",
         "Q8_K", "Q1_0", "NVFP4", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]  # fmt: skip
WEIGHTED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL",
            "IQ4_XS"]  # fmt: skip


def _dataset(seed):
    rng = np.random.default_rng(seed)
    n = 1024
    parts = [
        rng.standard_normal((8, n)),
        rng.uniform(-1, 1, (4, n)),
        rng.laplace(0, 1, (4, n)),
        rng.standard_normal((2, n)) * 1e-6,
        rng.standard_normal((2, n)) * 1e4,
        rng.integers(-20, 21, (4, n)) / 2,
        np.zeros((1, n)),
        np.full((1, n), -0.0),
        np.where(np.arange(n) % 2 == 0, 0.0, -0.0)[None],
        np.full((1, n), 3.0),
        np.full((1, n), 1e-40),
        np.tile([1.0, -3.0, 3.0, 0.5], (1, n // 4)),
        np.tile([127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5], (1, n // 8)),
        np.tile([0.49999997, -0.49999997, 1.0, -1.0], (1, n // 4)),
        np.where(np.arange(n) % 3 == 0, 1e5, -1e5)[None],
    ]
    return np.concatenate(parts).astype(np.float32)


@pytest.mark.parametrize("name", QUANT)
def test_quantize_bytes_equal_c(name):
    info = G.type_info(name)
    x = _dataset(info.id)
    want = c_quantize(x, name)
    got = G.quantize(x, name)
    assert got.shape == want.shape
    bad = np.any(got.reshape(-1, info.type_size) != want.reshape(-1, info.type_size), axis=1)
    assert not bad.any(), (
        f"{name}: {bad.sum()} of {bad.size} blocks differ: {np.flatnonzero(bad)[:8]}"
    )


@pytest.mark.parametrize("name", WEIGHTED)
def test_quantize_with_imatrix_bytes_equal_c(name):
    info = G.type_info(name)
    x = _dataset(info.id + 500)
    rng = np.random.default_rng(info.id)
    for w in (
        rng.uniform(0, 5, x.shape[1]) ** 2,
        np.ones(x.shape[1]),
        np.where(rng.random(x.shape[1]) < 0.1, 0.0, rng.exponential(1.0, x.shape[1])),
    ):
        want = c_quantize(x, name, imatrix=w)
        got = G.quantize(x, name, imatrix=w)
        bad = np.any(got.reshape(-1, info.type_size) != want.reshape(-1, info.type_size), axis=1)
        assert not bad.any(), (
            f"{name}: {bad.sum()} of {bad.size} blocks differ: {np.flatnonzero(bad)[:8]}"
        )


@pytest.mark.parametrize("name", [*WEIGHTED, "Q8_0", "MXFP4", "Q1_0", "TQ2_0"])
def test_imatrix_many_random_rows_equal_c(name):
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((24, 2048), dtype=np.float32) * rng.uniform(0.01, 3, (24, 1))
    w = rng.gamma(0.5, 2.0, 2048).astype(np.float32)
    assert np.array_equal(G.quantize(x, name, imatrix=w, threads=2), c_quantize(x, name, w))


@pytest.mark.parametrize(
    "name", ["Q4_0", "Q8_0", "Q5_0", "Q4_1", "TQ1_0", "MXFP4", "Q4_K", "Q6_K", "IQ4_NL", "IQ4_XS"]
)
def test_quantize_many_random_blocks_equal_c(name):
    rows = 32 if name.endswith("_K") or name.startswith("IQ") else 256  # slow searches
    x = np.random.default_rng(99).standard_normal((rows, 4096), dtype=np.float32)
    assert np.array_equal(G.quantize(x, name), c_quantize(x, name))


@pytest.mark.parametrize("name", ["Q4_0", "Q5_0", "Q8_0", "Q8_1", "TQ2_0", "Q1_0"])
def test_quantize_nan_blocks_like_c_on_this_platform(name):
    # Not a promise (ggml.md: NaN bytes are not pinned), but the kernels follow C's
    # sequential semantics; report the agreement with x86-64 C.
    x = _dataset(5)[:8]
    x[:, ::37] = np.nan
    assert np.array_equal(G.quantize(x, name), c_quantize(x, name))


@pytest.mark.parametrize(
    "name",
    [i.name for i in G.types() if i.can_dequantize and i.name not in ("F32", "Q2_0", "Q8_1")],
)
def test_dequantize_random_bytes_equal_c(name):
    info = G.type_info(name)
    rng = np.random.default_rng(info.id + 1000)
    q = rng.integers(0, 256, (4, 32 * info.type_size), dtype=np.uint8)
    got = G.dequantize(q, name)
    want = c_dequantize(q, name)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# ---------------------------------------------------------------------------
# tensor model
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctx():
    c = cg.ggml_init(cg.ggml_init_params(mem_size=64 * 1024 * 1024, mem_buffer=None, no_alloc=True))
    yield c
    cg.ggml_free(c)


def _c_state(t):
    c = t.contents
    return (
        tuple(c.ne[i] for i in range(4)),
        tuple(c.nb[i] for i in range(4)),
        cg.ggml_nbytes(t),
        bool(cg.ggml_is_contiguous(t)),
        bool(cg.ggml_is_contiguous_1(t)),
        bool(cg.ggml_is_contiguous_2(t)),
        bool(cg.ggml_is_permuted(t)),
        bool(cg.ggml_is_transposed(t)),
        cg.ggml_n_dims(t),
    )


def _lk_state(t):
    return (
        t.ne,
        t.nb,
        t.nbytes,
        t.is_contiguous(),
        t.is_contiguous_1(),
        t.is_contiguous_2(),
        t.is_permuted(),
        t.is_transposed(),
        t.n_dims,
    )


@pytest.mark.parametrize("type_name", ["F32", "F16", "Q4_0", "Q8_0", "Q4_K"])
def test_permutations_match_c(ctx, type_name):
    info = G.type_info(type_name)
    ne = (2 * info.block_size, 3, 1, 5)
    for perm in itertools.permutations(range(4)):
        ct = cg.ggml_permute(ctx, cg.ggml_new_tensor_4d(ctx, info.id, *ne), *perm)
        lt = G.new_tensor(type_name, *ne).permute(*perm)
        assert _lk_state(lt) == _c_state(ct), perm
        ct2 = cg.ggml_transpose(ctx, ct)
        assert _lk_state(lt.transpose()) == _c_state(ct2), perm


def test_views_and_flags_match_c(ctx):
    rng = np.random.default_rng(3)
    a_c = cg.ggml_new_tensor_4d(ctx, 0, 4, 3, 2, 5)
    a = G.new_tensor("F32", 4, 3, 2, 5)
    for _ in range(400):
        ne = [int(v) for v in rng.integers(1, 5, 4)]
        nb1 = 4 * int(rng.integers(1, 6))
        nb2 = nb1 * int(rng.integers(1, 4))
        nb3 = nb2 * int(rng.integers(1, 3))
        off = 4 * int(rng.integers(0, 8))
        data_size = 4 * ne[0] * ne[1] * ne[2] * ne[3]
        if data_size + off > a.nbytes:
            with pytest.raises(lk.LayoutError):
                a.view_4d(*ne, nb1, nb2, nb3, off)
            continue  # ggml would abort
        v_c = cg.ggml_view_4d(ctx, a_c, *ne, nb1, nb2, nb3, off)
        v = a.view_4d(*ne, nb1, nb2, nb3, off)
        assert _lk_state(v) == _c_state(v_c)
        for perm in [(1, 0, 2, 3), (0, 2, 1, 3), (3, 1, 2, 0)]:
            assert _lk_state(v.permute(*perm)) == _c_state(cg.ggml_permute(ctx, v_c, *perm))


def test_reshape_matches_c(ctx):
    a_c = cg.ggml_new_tensor_4d(ctx, 0, 2, 3, 4, 5)
    r_c = cg.ggml_reshape_2d(ctx, a_c, 6, 20)
    assert _lk_state(G.new_tensor("F32", 2, 3, 4, 5).reshape_2d(6, 20)) == _c_state(r_c)
    q_c = cg.ggml_reshape_3d(ctx, cg.ggml_new_tensor_2d(ctx, 2, 128, 6), 64, 4, 3)
    assert _lk_state(G.new_tensor("Q4_0", 128, 6).reshape_3d(64, 4, 3)) == _c_state(q_c)
