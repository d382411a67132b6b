"""Bad command-line input gives a one-line error and exit status 2, never a traceback."""

import io
import subprocess
import sys
import time

import numpy as np
import pytest

from layoutkit.cli import main


def run(capsys, *argv):
    """Exit status, stdout and stderr of ``layoutkit ARGV``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fails(capsys, *argv):
    """stderr of ``layoutkit ARGV``, which must fail with status 2 and one line."""
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert "Traceback" not in err and err.startswith(f"layoutkit {argv[0]}: error: ")
    return err


def fails_to_parse(capsys, *argv):
    """stderr of ``layoutkit ARGV``, which argparse must reject (status 2)."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err


# 1. demo --shape, unreadable .npy input


@pytest.mark.parametrize("shape", ["1x0x8x8", "0x3x8x8", "1x3x0x8", "1x3x8x0", "1x3x-1x8"])
def test_demo_rejects_empty_extents(capsys, shape):
    err = fails(capsys, "demo", "--shape", shape, "--repeat", "1")
    assert f"--shape {shape!r}" in err and ">= 1" in err


def test_demo_rejects_zero_repeat(capsys):
    assert "argument --repeat: expected an integer >= 1" in fails_to_parse(
        capsys, "demo", "--repeat", "0"
    )


def test_demo_tiny_shape_runs(capsys):
    code, out, _ = run(capsys, "demo", "--shape", "1x1x1x1", "--repeat", "1")
    assert code == 0 and "round-trip exactly" in out


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "No data left"),
        (b"hello world", "not a readable .npy file"),
        (np.lib.format.magic(1, 0) + b"\x10\x00{'descr': '<f4'", "not a readable .npy file"),
    ],
)
def test_quantize_unreadable_npy(capsys, tmp_path, content, reason):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(content)
    err = fails(capsys, "quantize", str(bad), "--type", "Q4_0", "-o", str(tmp_path / "q.bin"))
    assert repr(str(bad)) in err and reason in err


def test_quantize_truncated_npy_and_npz(capsys, tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.ones((2, 32), np.float32))
    (tmp_path / "cut.npy").write_bytes(good.read_bytes()[:-8])
    err = fails(capsys, "quantize", str(tmp_path / "cut.npy"), "--type", "Q4_0")
    assert "cut.npy" in err and "not a readable .npy file" in err
    np.savez(tmp_path / "arch.npz", a=np.ones(32, np.float32))
    (tmp_path / "arch.npz").rename(tmp_path / "arch.npy")
    assert "expected a .npy file" in fails(
        capsys, "quantize", str(tmp_path / "arch.npy"), "--type", "Q4_0"
    )


def test_imatrix_errors_name_the_option(capsys, tmp_path):
    np.save(tmp_path / "x.npy", np.ones((2, 32), np.float32))
    (tmp_path / "im.npy").write_bytes(b"")
    err = fails(
        capsys,
        "quantize",
        str(tmp_path / "x.npy"),
        "--type",
        "Q4_0",
        "--imatrix",
        str(tmp_path / "im.npy"),
    )
    assert "--imatrix" in err and "not a readable .npy file" in err


def test_hsi_unreadable_npy(capsys, tmp_path):
    from pathlib import Path

    report = Path(__file__).parent / "data" / "vitis" / "seed_rt_transformations.json"
    (tmp_path / "x.npy").write_bytes(b"")
    err = fails(capsys, "hsi", str(report), "--input", f"0={tmp_path / 'x.npy'}")
    assert "--input" in err and "not a readable .npy file" in err


# 2. broken pipe


class _ClosedPipe(io.StringIO):
    def write(self, s):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize(
    "argv",
    [
        ["trt-formats", "-v"],
        ["ggml-types", "-v"],
        ["explain", "NCHW4c", "--shape", "1x3x5x5"],
    ],
)
def test_broken_pipe_is_quiet(capsys, monkeypatch, argv):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(argv) == 0
    assert capsys.readouterr().err == ""


def test_broken_pipe_subprocess():
    # More output than a pipe buffer holds, so the writer must meet the closed pipe.
    cmd = [sys.executable, "-m", "layoutkit.cli", "explain", "NCHW4c", "--shape", "1x4x100x100"]
    cmd += ["--limit", "100000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"Broken pipe" not in err and b"Traceback" not in err


# 3. --index errors name --index


@pytest.mark.parametrize("index", ["a,b", "0,-1,0,0", ""])
def test_explain_index_errors_name_index(capsys, index):
    err = fails(capsys, "explain", "NCHW4c", "--shape", "1x3x2x2", "--index", index)
    assert f"--index {index!r}: expected integers >= 0" in err and "--shape" not in err


# 4. trt-formats --dtype / --shape


def test_trt_formats_unknown_dtype(capsys):
    err = fails(capsys, "trt-formats", "--shape", "1x3x5x10", "--dtype", "nonsense")
    assert "--dtype" in err and "'nonsense'" in err and "kHALF" in err


def test_trt_formats_dtype_needs_shape(capsys):
    assert "--dtype 'fp16' needs --shape" in fails(capsys, "trt-formats", "--dtype", "fp16")


def test_trt_formats_empty_shape(capsys):
    assert "--shape ''" in fails(capsys, "trt-formats", "--shape", "")


def test_trt_formats_good_dtype(capsys):
    code, out, _ = run(capsys, "trt-formats", "--shape", "1x3x5x10", "--dtype", "fp16")
    assert code == 0 and "storage for 1x3x5x10 fp16" in out and "[1][2][5][10][2]" in out


# 5. and 6. explain --limit


def test_explain_rejects_negative_limit(capsys):
    err = fails_to_parse(capsys, "explain", "NCHW4c", "--shape", "1x3x2x2", "--limit", "-1")
    assert "argument --limit: expected an integer >= 0, got '-1'" in err


def test_explain_limit_counts(capsys):
    argv = ["explain", "NCHW4c", "--shape", "1x3x2x2"]
    code, out, _ = run(capsys, *argv, "--limit", "3")
    assert code == 0 and "(8 runs of consecutive offsets)" in out
    lines = out[out.index("memory order") :].splitlines()[1:]
    assert len(lines) == 4 and lines[2] == "  ... 5 more runs ..."
    _, full, _ = run(capsys, *argv)
    listed = full[full.index("memory order") :].splitlines()[1:]
    assert len(listed) == 8 and lines[:2] == listed[:2] and lines[3] == listed[-1]
    _, out, _ = run(capsys, *argv, "--limit", "1")
    assert out.splitlines()[-2:] == ["  ... 7 more runs ...", listed[-1]]
    _, out, _ = run(capsys, *argv, "--limit", "0")
    assert "memory order" not in out


def test_explain_memory_order_matches_the_layout(capsys):
    # Every listed run must agree with Layout.index at its ends.
    from layoutkit import Layout

    layout, shape = Layout("NHWC8h8w32c", dims="NCHW"), (1, 3, 5, 30)
    code, out, _ = run(
        capsys, "explain", "NHWC8h8w32c", "--dims", "NCHW", "--shape", "1x3x5x30", "--limit", "1000"
    )
    assert code == 0
    runs = out[out.index("memory order") :].splitlines()[1:]
    covered = 0
    for line in runs:
        a, b = (int(v) for v in line.split("]")[0].strip(" [").split(".."))
        assert a == covered
        covered = b + 1
        if "padding" in line:
            assert layout.index(shape, a) is None and layout.index(shape, b) is None
        else:
            first = line.split("]")[1].split()[0]
            assert first == "(" + ",".join(map(str, layout.index(shape, a))) + ")"
    assert covered == layout.size(shape)


def test_explain_large_shape_small_limit_is_fast(capsys):
    t0 = time.perf_counter()
    code, out, _ = run(capsys, "explain", "NCHW4c", "--shape", "1x4x1000x1000", "--limit", "3")
    assert code == 0 and time.perf_counter() - t0 < 5
    assert "(1000000 runs of consecutive offsets)" in out
    assert out.splitlines()[-2:] == [
        "  ... 999997 more runs ...",
        "  [3999996..3999999]  (0,0,999,999) ... (0,3,999,999)",
    ]


# 7. directories


def test_directories_are_named_as_such(capsys, tmp_path):
    assert "is a directory" in fails(capsys, "gguf-info", str(tmp_path))
    assert "is a directory" in fails(capsys, "gguf-dequantize", str(tmp_path), "--all")
    assert "is a directory" in fails(capsys, "dequantize", str(tmp_path), "--type", "Q4_0")
    assert "is a directory" in fails(capsys, "quantize", str(tmp_path), "--type", "Q4_0")
    assert "is a directory" in fails(capsys, "hsi", str(tmp_path))
    assert "no such file" in fails(capsys, "gguf-info", str(tmp_path / "missing.gguf"))


def test_hsi_input_directory(capsys, tmp_path):
    from pathlib import Path

    report = Path(__file__).parent / "data" / "vitis" / "seed_rt_transformations.json"
    err = fails(capsys, "hsi", str(report), "--input", f"0={tmp_path}")
    assert "--input" in err and "is a directory" in err


# 8. empty --shape / --pitches


def test_dequantize_rejects_empty_shape(capsys, tmp_path):
    (tmp_path / "q.bin").write_bytes(bytes(18))
    err = fails(capsys, "dequantize", str(tmp_path / "q.bin"), "--type", "Q4_0", "--shape", "")
    assert "--shape ''" in err


@pytest.mark.parametrize("option", ["--pitches", "--align"])
def test_pitches_rejects_empty_lists(capsys, option):
    err = fails(capsys, "pitches", "--dims", "1,3,4,4", "--dtype", "uint8", option, "")
    assert f"{option} ''" in err


# 9. no command


def test_no_command_is_an_error(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == "" and "usage: layoutkit" in err


# threads


def test_threads_must_be_positive(capsys, tmp_path):
    err = fails_to_parse(
        capsys, "dequantize", str(tmp_path / "q.bin"), "--type", "Q4_0", "--threads", "0"
    )
    assert "argument --threads: expected an integer >= 1" in err
