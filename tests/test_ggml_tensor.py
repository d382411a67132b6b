"""GGML tensor model (ne/nb, permute, views, contiguity) and the ``layoutkit`` GGML CLI.

Expected values are the worked examples of ggml.md §5 and seed-systems.md §5.3,
measured there on ggml's C library.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import LayoutError
from layoutkit.cli import main

G = lk.ggml


# ---------------------------------------------------------------------------
# seed-systems.md §5.3 worked examples
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "ne", "nb", "nbytes"),
    [
        ("F32", (2, 6), (4, 8, 48, 48), 48),
        ("Q4_0", (64, 6), (18, 36, 216, 216), 216),
        ("Q4_0", (32, 6), (18, 18, 108, 108), 108),  # the seed's call as written
        ("F16", (5, 3, 2, 1), (2, 10, 30, 60), 60),
        ("Q8_0", (64, 3, 2, 1), (34, 68, 204, 408), 408),
        ("Q4_K", (512, 2, 1, 1), (144, 288, 576, 576), 576),
        ("F32", (2, 3, 4, 5), (4, 8, 24, 96), 480),
        ("Q4_0", (64, 3, 2), (18, 36, 108, 216), 216),
        ("Q4_K", (512, 4), (144, 288, 1152, 1152), 1152),
    ],
)
def test_new_tensor(t, ne, nb, nbytes):
    x = G.new_tensor(t, *ne)
    assert x.ne == (*ne, *([1] * (4 - len(ne))))
    assert x.nb == nb
    assert x.nbytes == nbytes
    assert x.is_contiguous() and not x.is_permuted() and not x.is_transposed()
    assert x.data is not None and x.data.size == nbytes


@pytest.mark.parametrize(
    ("ne", "perm", "ne2", "nb2", "nbytes"),
    [
        ((3, 4), (1, 0, 2, 3), (4, 3, 1, 1), (12, 4, 48, 48), 48),
        ((64, 12, 4, 1), (0, 2, 1, 3), (64, 4, 12, 1), (4, 3072, 256, 12288), 12288),
        ((2, 3, 4, 5), (0, 3, 1, 2), (2, 4, 5, 3), (4, 24, 96, 8), 480),
        ((2, 3, 4, 5), (1, 2, 0, 3), (4, 2, 3, 5), (24, 4, 8, 96), 480),
        ((2, 3, 4, 5), (2, 0, 1, 3), (3, 4, 2, 5), (8, 24, 4, 96), 480),
    ],
)
def test_permute_examples(ne, perm, ne2, nb2, nbytes):
    p = G.new_tensor("F32", *ne).permute(*perm)
    assert (p.ne, p.nb, p.nbytes) == (ne2, nb2, nbytes)
    assert p.op == "PERMUTE"


def test_element_addresses():
    q = G.new_tensor("F32", 64, 12, 4, 1).permute(0, 2, 1, 3)
    assert q.locate(5, 2, 7, 0) == (7956, 0)
    base = G.new_tensor("F32", 64, 12, 4, 1)
    assert base.locate(5, 7, 2, 0) == (7956, 0)  # the same element of the source
    assert G.new_tensor("Q8_0", 64, 3, 2, 1).locate(40, 2, 1, 0) == (374, 8)
    with pytest.raises(LayoutError, match="out of range"):
        base.locate(64, 0, 0, 0)
    with pytest.raises(LayoutError, match="out of range"):
        base.locate(-1)


def test_seed_case_iii():
    a = G.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))  # ne (3, 4)
    t = a.permute(1, 0, 2, 3)
    assert t.ne[:2] == (4, 3) and t.nb[:2] == (12, 4)
    row0 = [t.locate(i, 0)[0] for i in range(4)]
    assert row0 == [0, 12, 24, 36]
    assert t.to_numpy()[0].tolist() == [0, 3, 6, 9]


# ---------------------------------------------------------------------------
# ggml.md §5 measured examples
# ---------------------------------------------------------------------------


def test_transpose_and_quantized_nbytes():
    a = G.new_tensor("F32", 2, 3, 4, 5)
    t = a.transpose()
    assert (t.ne, t.nb) == ((3, 2, 4, 5), (8, 4, 24, 96))
    assert t.is_transposed() and t.is_permuted()
    q = G.new_tensor("Q4_0", 64, 3, 2).transpose()
    assert (q.ne, q.nb, q.nbytes) == ((3, 64, 2, 1), (36, 18, 108, 216), 1245)
    with pytest.raises(LayoutError, match="block size"):
        q.dequantize()


def test_views():
    a = G.new_tensor("F32", 2, 3, 4, 5)
    v = a.view_2d(2, 6, 8, 24)
    assert (v.ne, v.nb, v.nbytes, v.offset) == ((2, 6, 1, 1), (4, 8, 48, 48), 48, 24)
    v = a.view_4d(2, 3, 2, 5, 8, 24, 96, 96)
    assert (v.nb, v.nbytes) == ((4, 8, 24, 96), 432)
    assert not v.is_contiguous()
    with pytest.raises(LayoutError, match="addresses"):  # ggml accepts it, but it runs off the end
        v.to_numpy()
    v1 = a.view_1d(7, 8)
    assert (v1.ne, v1.nb) == ((7, 1, 1, 1), (4, 28, 28, 28))
    v3 = a.view_3d(2, 2, 4, 8, 24, 4)
    assert v3.nb == (4, 8, 24, 96)
    assert a.view((2, 6), (4, 8, 48, 48), 24).nb == (4, 8, 48, 48)
    # a view of a view accumulates the offset against the base tensor
    vv = a.view_1d(100, 40).view_1d(10, 8)
    assert vv.offset == 48
    with pytest.raises(LayoutError, match="ggml asserts"):
        a.view_1d(121)
    with pytest.raises(LayoutError, match="ggml asserts"):
        a.view_1d(100, 100).view_1d(10, 350)
    with pytest.raises(LayoutError, match="element stride"):
        a.view((2, 6), (8, 8, 48, 48))
    with pytest.raises(LayoutError, match="block size"):
        G.new_tensor("Q4_0", 64, 2).view_1d(16)
    with pytest.raises(LayoutError, match=">= 0"):
        a.view_1d(4, -4)


def test_contiguity_flags():
    a = G.new_tensor("F32", 2, 3, 4, 5)
    v = a.view_2d(1, 3, 8, 0)
    assert (v.is_contiguous(), v.is_contiguous_1()) == (False, True)
    v = a.view_3d(2, 2, 4, 8, 24, 0)
    assert (v.is_contiguous(), v.is_contiguous_1(), v.is_contiguous_2()) == (False, False, True)
    h = G.new_tensor("F16", 8, 2)
    v = h.view_2d(7, 2, 16, 0)
    assert (v.is_contiguous(), v.is_contiguous_1()) == (False, True)
    c = a.transpose().cont()
    assert c.is_contiguous() and c.nb == (4, 12, 24, 96) and c.op == "CONT"
    # a permutation that only moves a size-1 dim: permuted and contiguous at once
    b = G.new_tensor("F32", 4, 1, 3).permute(0, 3, 1, 2)
    assert b.is_permuted() and b.is_contiguous()
    assert a.is_contiguously_allocated() and not a.view_2d(1, 3, 8).is_contiguously_allocated()
    assert a.is_contiguous_rows() and not a.transpose().is_contiguous_rows()
    assert G.new_tensor("F32", 3, 4, 5).permute(2, 0, 1, 3).is_contiguous_channels()
    assert G.new_tensor("F32", 0, 3).is_empty() and G.new_tensor("F32", 0, 3).nbytes == 0


def test_reshape():
    a = G.new_tensor("F32", 2, 3, 4, 5)
    r = a.reshape_2d(6, 20)
    assert (r.ne, r.nb, r.op) == ((6, 20, 1, 1), (4, 24, 480, 480), "RESHAPE")
    assert a.reshape(G.new_tensor("F32", 120)).ne == (120, 1, 1, 1)
    with pytest.raises(LayoutError, match="not contiguous"):
        a.transpose().reshape(6, 20)
    with pytest.raises(LayoutError, match="elements"):
        a.reshape(7, 20)
    q = G.new_tensor("Q4_0", 64, 4)
    assert q.reshape(128, 2).nb == (18, 72, 144, 144)
    with pytest.raises(LayoutError, match="block size"):
        q.reshape(16, 16)


def test_n_dims_nrows_and_sizes():
    a = G.new_tensor("F32", 2, 3, 1, 1)
    assert (a.n_dims, a.nrows, a.nelements, a.shape, a.shape4) == (2, 3, 6, (3, 2), (1, 1, 3, 2))
    assert G.new_tensor("F32", 5).n_dims == 1
    assert G.new_tensor("F32", 1, 1, 1, 7).n_dims == 4
    assert G.new_tensor("F32", 3).nbytes_pad == 16
    assert G.new_tensor("Q8_0", 96, 2).row_size == 102


def test_new_tensor_errors():
    with pytest.raises(LayoutError, match="block size 32"):
        G.new_tensor("Q4_0", 33)
    with pytest.raises(LayoutError, match="1 to 4"):
        G.new_tensor("F32", 1, 2, 3, 4, 5)
    with pytest.raises(LayoutError, match=">= 0"):
        G.new_tensor("F32", 3, -1)
    with pytest.raises(TypeError):
        G.new_tensor("F32", 2.5)
    with pytest.raises(LayoutError, match="permutation"):
        G.new_tensor("F32", 2, 3).permute(0, 0, 1, 2)
    with pytest.raises(LayoutError, match="permutation"):
        G.new_tensor("F32", 2, 3).permute(0, 1, 2, 4)
    with pytest.raises(LayoutError, match="needs"):
        G.new_tensor("F32", 4, data=bytes(8))
    assert G.new_tensor("F32", 4, no_alloc=True).data is None
    with pytest.raises(LayoutError, match="no data"):
        G.new_tensor("F32", 4, no_alloc=True).to_numpy()


# ---------------------------------------------------------------------------
# numpy conversion: all 24 permutations against numpy
# ---------------------------------------------------------------------------


def _numpy_axes(p):
    """ggml permute (p0..p3) as numpy transpose axes on (ne3, ne2, ne1, ne0): axes[3-p_i] = 3-i."""
    axes = [0] * 4
    for i, pi in enumerate(p):
        axes[3 - pi] = 3 - i
    return axes


@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
def test_permute_against_numpy(perm):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(5, 4, 3, 2)  # ne (2, 3, 4, 5)
    t = G.from_numpy(x)
    p = t.permute(*perm)
    ref = x.transpose(_numpy_axes(perm))
    assert p.to_numpy(4).shape == ref.shape
    assert np.array_equal(p.to_numpy(4), ref)
    c = p.cont()
    assert c.is_contiguous()
    assert np.array_equal(c.to_numpy(4), ref)
    assert c.tobytes() == np.ascontiguousarray(ref).tobytes()
    # the Layout bridge: convert repacks the base buffer into the logical order
    out = lk.convert(p.base_elements(), p.layout_shape, p.layout(), "ABCD")
    assert np.array_equal(out.reshape(p.shape4), ref)
    back = lk.convert(out, p.shape4, "ABCD", p.layout())
    assert np.array_equal(back.reshape(-1), x.reshape(-1))


def test_to_numpy_is_zero_copy_and_strided():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = G.from_numpy(x)
    assert t.ne == (4, 3, 2, 1) and t.nb == (4, 16, 48, 96)
    v = t.to_numpy()
    v[0, 0, 0] = 100
    assert x[0, 0, 0] == 100  # same memory
    tt = t.transpose().to_numpy()
    assert np.array_equal(tt, x.transpose(0, 2, 1))
    # non-contiguous numpy input is viewed with its own strides
    y = np.arange(60, dtype=np.float32).reshape(6, 10)[::2, 1::3]
    ty = G.from_numpy(y)
    assert ty.nb[:2] == (12, 80) and not ty.is_contiguous()
    assert np.array_equal(ty.to_numpy(), y)
    assert np.array_equal(ty.cont().to_numpy(), y) and ty.cont().is_contiguous()
    # negative strides are copied
    z = np.arange(6, dtype=np.float32)[::-1]
    assert np.array_equal(G.from_numpy(z).to_numpy(), z)
    # read-only memory stays read-only
    ro = np.arange(4, dtype=np.float32)
    ro.flags.writeable = False
    assert not G.from_numpy(ro).to_numpy().flags.writeable


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "float64", "int8", "int16", "int32", "int64"]
)
def test_from_numpy_dtypes(dtype):
    x = (np.arange(12) - 5).astype(dtype).reshape(3, 4)
    t = G.from_numpy(x)
    assert G.type_info(t.type).name == {
        "float32": "F32", "float16": "F16", "float64": "F64", "int8": "I8",
        "int16": "I16", "int32": "I32", "int64": "I64",
    }[dtype]  # fmt: skip
    assert np.array_equal(t.to_numpy(), x)
    assert np.array_equal(t.dequantize(), x.astype(np.float32))


def test_bf16_and_quantized_tensors():
    import ml_dtypes

    x = np.linspace(-2, 2, 128, dtype=np.float32).reshape(2, 64)
    b = G.from_numpy(x.astype(ml_dtypes.bfloat16))
    assert b.type == G.GGMLType.BF16
    assert np.array_equal(
        b.to_numpy().astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    q = G.from_numpy(x, "Q8_0")
    assert q.ne == (64, 2, 1, 1) and q.nb == (34, 68, 136, 136)
    assert np.array_equal(q.dequantize(), G.dequantize(G.quantize(x, "Q8_0"), "Q8_0"))
    assert q.tobytes() == G.quantize(x, "Q8_0").tobytes()
    assert q.blocks().shape == (1, 1, 2, 2, 34)
    with pytest.raises(LayoutError, match="block type"):
        q.to_numpy()
    # rows of a quantized tensor can be permuted (blocks stay innermost)
    q3 = G.from_numpy(np.arange(4 * 3 * 64, dtype=np.float32).reshape(4, 3, 64), "Q4_0")
    p = q3.permute(0, 2, 1, 3)
    ref = G.dequantize(
        G.quantize(np.arange(4 * 3 * 64, dtype=np.float32).reshape(4, 3, 64), "Q4_0"), "Q4_0"
    )
    assert np.array_equal(p.dequantize(), ref.transpose(1, 0, 2))
    assert np.array_equal(p.cont().dequantize(), ref.transpose(1, 0, 2))
    assert p.layout_shape == (1, 3, 4, 2)
    out = lk.convert(p.base_elements(), p.layout_shape, p.layout(), "ABCD")
    assert out.tobytes() == p.cont().tobytes()
    with pytest.raises(LayoutError, match=r"block size|innermost"):
        q3.permute(1, 0, 2, 3).layout()
    with pytest.raises(TypeError, match="no GGML type"):
        G.from_numpy(np.zeros(3, np.uint16))
    with pytest.raises(LayoutError, match="at most 4"):
        G.from_numpy(np.zeros((1, 1, 1, 1, 1), np.float32))


def test_layout_rejects_gapped_strides():
    a = G.new_tensor("F32", 2, 3, 4, 5)
    with pytest.raises(LayoutError, match="not a permutation of a packed"):
        a.view_2d(1, 3, 8).layout()
    assert str(a.layout()) == "ABCD"
    assert str(a.transpose().layout()) == "ABDC"


@settings(max_examples=40, deadline=None)
@given(
    ne=st.lists(st.integers(1, 4), min_size=4, max_size=4),
    perm=st.permutations(range(4)),
    perm2=st.permutations(range(4)),
)
def test_permute_composition_property(ne, perm, perm2):
    x = np.arange(int(np.prod(ne)), dtype=np.int32).reshape(ne[::-1])
    t = G.from_numpy(x).permute(*perm).permute(*perm2)
    ref = x.transpose(_numpy_axes(perm)).transpose(_numpy_axes(perm2))
    assert np.array_equal(t.to_numpy(4), ref)
    assert t.nbytes == x.nbytes
    out = lk.convert(t.base_elements(), t.layout_shape, t.layout(), "ABCD")
    assert np.array_equal(out.reshape(t.shape4), ref)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def test_cli_quantize_dequantize_roundtrip(tmp_path, capsys):
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    np.save(tmp_path / "w.npy", x)
    out = tmp_path / "w.bin"
    assert main(["quantize", str(tmp_path / "w.npy"), "--type", "Q4_0", "-o", str(out)]) == 0
    assert out.read_bytes() == G.quantize(x, "Q4_0").tobytes()
    npy = tmp_path / "back.npy"
    assert main(["dequantize", str(out), "--type", "q4_0", "--shape", "4x64", "-o", str(npy)]) == 0
    assert np.array_equal(np.load(npy), G.dequantize(G.quantize(x, "Q4_0"), "Q4_0"))
    assert main(["dequantize", str(out), "--type", "Q4_0", "-o", str(npy)]) == 0
    assert np.load(npy).shape == (256,)
    assert "Q4_0" in capsys.readouterr().out


def test_cli_errors(tmp_path, capsys):
    x = np.zeros((2, 48), np.float32)
    np.save(tmp_path / "a.npy", x)
    assert main(["quantize", str(tmp_path / "a.npy"), "--type", "Q4_0"]) == 2
    assert "block size 32" in capsys.readouterr().err
    assert main(["quantize", str(tmp_path / "missing.npy"), "--type", "Q4_0"]) == 2
    assert main(["quantize", str(tmp_path / "a.npy"), "--type", "Q9_9"]) == 2
    (tmp_path / "b.bin").write_bytes(bytes(20))
    assert main(["dequantize", str(tmp_path / "b.bin"), "--type", "Q4_0"]) == 2
    assert "whole number" in capsys.readouterr().err
    assert main(["dequantize", str(tmp_path / "b.bin"), "--type", "Q4_0", "--shape", "2x32"]) == 2
    assert "needs 36 bytes" in capsys.readouterr().err


def test_cli_types(capsys):
    assert main(["ggml-types"]) == 0
    out = capsys.readouterr().out
    assert "Q8_1" in out and "36" in out and "Q4_0_4_4" not in out
    assert main(["ggml-types", "--all"]) == 0
    assert "Q4_0_4_4" in capsys.readouterr().out


def test_cli_help_has_examples(capsys):
    for cmd in ("quantize", "dequantize", "ggml-types"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "example:" in capsys.readouterr().out


def test_empty_tensors():
    t = G.new_tensor("F32", 3, 0)
    assert (t.nbytes, t.nelements, t.shape, t.is_empty()) == (0, 0, (0, 3), True)
    assert t.to_numpy().shape == (0, 3) and t.dequantize().shape == (0, 3)
    q = G.new_tensor("Q4_0", 0, 3)
    assert q.dequantize().shape == (3, 0) and q.cont().tobytes() == b""
    assert G.from_numpy(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert G.new_tensor("Q8_0", 64, 0, 2).cont().ne == (64, 0, 2, 1)


@settings(max_examples=60, deadline=None)
@given(
    ne=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    mult=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    off=st.integers(0, 16),
)
def test_views_against_numpy_as_strided(ne, mult, off):
    base = np.arange(600, dtype=np.float32)
    a = G.from_numpy(base)
    ne4 = (*ne, *([1] * (4 - len(ne))))
    nb1 = 4 * ne4[0] * mult[0]
    nb2 = nb1 * ne4[1] * mult[1]
    nb3 = nb2 * ne4[2] * mult[2]
    try:
        v = a.view_4d(*ne4, nb1, nb2, nb3, 4 * off)
    except LayoutError:
        assert 4 * ne4[0] * ne4[1] * ne4[2] * ne4[3] + 4 * off > base.nbytes  # ggml's assert
        return
    shape = ne4[::-1]
    strides = (nb3, nb2, nb1, 4)
    if 4 * off + v.nbytes > base.nbytes:
        with pytest.raises(LayoutError, match="addresses"):
            v.to_numpy(4)
        return
    ref = np.lib.stride_tricks.as_strided(base[off:], shape=shape, strides=strides)
    assert np.array_equal(v.to_numpy(4), ref)
    assert np.array_equal(v.cont().to_numpy(4), ref)
    assert v.nbytes == 4 + sum((n - 1) * s for n, s in zip(ne4, v.nb, strict=True))
