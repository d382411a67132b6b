"""GGUF files: written with the ``gguf`` package's writer, read back with lk.ggml.load_gguf and the CLI."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import cli
from layoutkit.commands import ggml as ggml_cmd

gguf = pytest.importorskip("gguf", reason="the optional gguf package is not installed")
G = lk.ggml
QT = gguf.GGMLQuantizationType

BLOCK_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
               "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "BF16"]  # fmt: skip


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small GGUF file: metadata, float tensors, every quantizable block type, a 3-D tensor."""
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name("tiny test model")
    w.add_uint32("llama.block_count", 2)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a"])
    arrays = {}
    a = rng.standard_normal((3, 512)).astype(np.float32)
    arrays["token_embd.weight"] = ("F32", a)
    w.add_tensor("token_embd.weight", a)
    h = rng.standard_normal((2, 64)).astype(np.float16)
    arrays["output_norm.weight"] = ("F16", h)
    w.add_tensor("output_norm.weight", h)
    cube = rng.standard_normal((2, 3, 256)).astype(np.float32)
    qc = G.quantize(cube, "Q4_K", imatrix=rng.uniform(0.5, 2, 256))
    arrays["blk.0.cube"] = ("Q4_K", qc)
    w.add_tensor("blk.0.cube", qc, raw_dtype=QT.Q4_K)
    for name in BLOCK_TYPES:
        x = rng.standard_normal((4, 512)).astype(np.float32)
        q = G.quantize(x, name)
        arrays[f"blk.1.{name.lower()}"] = (name, q)
        w.add_tensor(f"blk.1.{name.lower()}", q, raw_dtype=QT[name])
    ids = np.arange(10, dtype=np.int32)
    arrays["ids"] = ("I32", ids)
    w.add_tensor("ids", ids)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path, arrays


def test_load_lists_every_tensor_like_ggml(model):
    path, arrays = model
    f = G.load_gguf(path)
    assert f.names() == list(arrays)
    assert len(f) == len(arrays) and "ids" in f and "nope" not in f
    assert f.version == 3 and f.alignment == 32
    reader = gguf.GGUFReader(str(path))  # gguf's own view of the same table
    by_name = {t.name: t for t in reader.tensors}
    for t in f:
        r = by_name[t.name]
        assert t.offset == r.data_offset
        assert t.nbytes == r.n_bytes
        assert int(t.type) == int(r.tensor_type)
        assert t.ne[: len(r.shape)] == tuple(int(v) for v in r.shape)
        # ne/nb exactly as ggml's new tensor of that type and extents
        ref = G.new_tensor(t.type, *t.ne, no_alloc=True)
        assert (t.ne, t.nb) == (ref.ne, ref.nb)
        assert t.offset % f.alignment == 0
    cube = f["blk.0.cube"]
    assert (
        cube.ne == (256, 3, 2, 1) and cube.nb == (144, 144, 432, 864) and cube.shape == (2, 3, 256)
    )
    assert cube.type_name == "Q4_K" and cube.nelements == 1536


def test_raw_and_dequantize_round_trip(model):
    path, arrays = model
    with G.load_gguf(path) as f:
        for name, (tname, data) in arrays.items():
            t = f[name]
            assert t.type_name == tname
            raw = f.raw(name)
            assert not raw.flags.writeable
            if data.dtype == np.uint8:  # quantize() output: blocks (or BF16 bytes)
                assert np.array_equal(raw, data)
                y = f.dequantize(name)
                assert np.array_equal(y.view(np.uint32), G.dequantize(data, tname).view(np.uint32))
            else:
                assert np.array_equal(f.array(name), data)
                assert np.array_equal(f.dequantize(name), data.astype(np.float32))
            assert f.dequantize(name).shape == t.shape
        assert np.array_equal(f.tensor("blk.0.cube").dequantize(), f.dequantize("blk.0.cube"))
        out = np.empty((4, 512), np.float32)
        assert f.dequantize("blk.1.q8_0", out=out, threads=2) is out
    with pytest.raises(lk.LayoutError, match="closed"):
        f.raw("ids")


def test_metadata(model):
    path, _ = model
    md = G.load_gguf(path).metadata
    assert md["general.architecture"] == "llama"
    assert md["general.name"] == "tiny test model"
    assert md["llama.block_count"] == 2
    assert md["tokenizer.ggml.tokens"] == ["<s>", "</s>", "a"]


def test_errors_name_the_problem(model, tmp_path):
    path, _ = model
    with pytest.raises(lk.LayoutError, match="no such file"):
        G.load_gguf(tmp_path / "missing.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOTGGUF" * 10)
    with pytest.raises(lk.LayoutError, match="not a readable GGUF file"):
        G.load_gguf(bad)
    with pytest.raises(lk.LayoutError, match="name 'nope': no such tensor"):
        G.load_gguf(path).dequantize("nope")
    with pytest.raises(lk.LayoutError, match="block type"):
        G.load_gguf(path).array("blk.1.q4_0")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[:-3000])
    with pytest.raises(lk.LayoutError, match="past the end of the file"):
        G.load_gguf(cut)


def test_missing_gguf_package_is_a_clear_error(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(lk.LayoutError, match=r"pip install 'layoutkit\[gguf\]'"):
        G.load_gguf(model[0])


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def test_cli_gguf_info(model, capsys):
    path, arrays = model
    assert cli.main(["gguf-info", str(path), "--metadata"]) == 0
    out = capsys.readouterr().out
    assert f"{len(arrays)} tensors" in out and "general.architecture" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("blk.0.cube"))
    assert "Q4_K" in line and "(256, 3, 2, 1)" in line and "(144, 144, 432, 864)" in line
    assert cli.main(["gguf-info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cube = next(t for t in doc["tensors"] if t["name"] == "blk.0.cube")
    assert cube["ne"] == [256, 3, 2, 1] and cube["offset"] == G.load_gguf(path)["blk.0.cube"].offset


def test_cli_gguf_dequantize(model, tmp_path, capsys):
    path, arrays = model
    out = tmp_path / "cube.npy"
    assert cli.main(["gguf-dequantize", str(path), "blk.0.cube", "-o", str(out)]) == 0
    assert np.array_equal(np.load(out), G.dequantize(arrays["blk.0.cube"][1], "Q4_K"))
    npz = tmp_path / "all.npz"
    assert cli.main(["gguf-dequantize", str(path), "--all", "-o", str(npz), "--threads", "2"]) == 0
    with np.load(npz) as z:
        assert sorted(z.files) == sorted(arrays)
        assert np.array_equal(z["blk.1.iq4_xs"], G.dequantize(arrays["blk.1.iq4_xs"][1], "IQ4_XS"))
    capsys.readouterr()
    assert cli.main(["gguf-dequantize", str(path), "nope"]) == 2
    assert "no such tensor" in capsys.readouterr().err
    assert cli.main(["gguf-dequantize", str(path), "ids", "blk.0.cube", "-o", "x.npy"]) == 2
    assert ".npz" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(model, tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    path, arrays = model
    npz = str(tmp_path / "p.npz")
    # not a terminal (pytest captures stderr): quiet
    assert cli.main(["gguf-dequantize", str(path), "--all", "-o", npz]) == 0
    assert capsys.readouterr().err == ""
    # a terminal: a tqdm bar on stderr counting tensors
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert cli.main(["gguf-dequantize", str(path), "--all", "-o", npz]) == 0
    assert f"{len(arrays)}/{len(arrays)}" in term.getvalue() and "dequantize" in term.getvalue()
    term2 = _Terminal()
    monkeypatch.setattr(sys, "stderr", term2)
    assert cli.main(["gguf-dequantize", str(path), "--all", "-o", npz, "--no-progress"]) == 0
    assert term2.getvalue() == ""
    assert list(ggml_cmd.progress([1, 2, 3], 3, "x")) == [1, 2, 3]


def test_cli_quantize_many_inputs_with_imatrix(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(3)
    paths = []
    for k in range(3):
        p = tmp_path / f"w{k}.npy"
        np.save(p, rng.standard_normal((4, 256)).astype(np.float32))
        paths.append(str(p))
    im = tmp_path / "im.npy"
    np.save(im, rng.uniform(0.5, 2, 256).astype(np.float32))
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert cli.main(["quantize", *paths, "--type", "Q4_K", "--imatrix", str(im)]) == 0
    assert "3/3" in term.getvalue()
    for p in paths:
        got = np.fromfile(p.replace(".npy", ".q4_k.bin"), np.uint8).reshape(4, -1)
        assert np.array_equal(got, G.quantize(np.load(p), "Q4_K", imatrix=np.load(im)))
    assert cli.main(["quantize", *paths, "--type", "Q4_K", "-o", "x.bin"]) == 2
