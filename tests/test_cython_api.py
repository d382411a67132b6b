"""The Cython API: a downstream extension that cimports layoutkit.kernels.

Builds a small extension against the installed package (``layoutkit.get_include()``
on Cython's include path), runs a repack and GGML rows inside its own ``nogil``
code, and compares the bytes with the Python API. Skipped with the reason when
Cython or a C compiler is missing.
"""

import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import layoutkit as lk

DOWNSTREAM_PYX = textwrap.dedent(
    """
    # cython: language_level=3, boundscheck=False, wraparound=False
    from layoutkit.kernels cimport (
        GgmlKernel, RepackKernel, lk_ggml_dequantize_row, lk_ggml_quantize_row, lk_repack,
    )


    def repack(RepackKernel k, const unsigned char[::1] src, unsigned char[::1] dst):
        cdef int rc
        if src.shape[0] < k.c_plan.src_bytes or dst.shape[0] < k.c_plan.dst_bytes:
            raise ValueError("buffers too small")
        with nogil:
            rc = lk_repack(&k.c_plan, &src[0], &dst[0])
        return rc


    def repack_many(RepackKernel k, const unsigned char[:, ::1] src, unsigned char[:, ::1] dst):
        # A batch of images inside one nogil block, as a preprocessing loop would.
        cdef Py_ssize_t i
        with nogil:
            for i in range(src.shape[0]):
                lk_repack(&k.c_plan, &src[i, 0], &dst[i, 0])


    def quantize_rows(GgmlKernel k, const float[:, ::1] x, unsigned char[:, ::1] y):
        cdef Py_ssize_t r
        cdef int rc = 0
        with nogil:
            for r in range(x.shape[0]):
                rc |= lk_ggml_quantize_row(&k.c_kernel, &x[r, 0], &y[r, 0], x.shape[1], NULL)
        return rc


    def dequantize_rows(GgmlKernel k, const unsigned char[:, ::1] q, float[:, ::1] y):
        cdef Py_ssize_t r
        cdef int rc = 0
        with nogil:
            for r in range(q.shape[0]):
                rc |= lk_ggml_dequantize_row(&k.c_kernel, &q[r, 0], &y[r, 0], y.shape[1])
        return rc


    def bad_call(RepackKernel k):
        return lk_repack(&k.c_plan, NULL, NULL)
    """
)

SETUP_PY = textwrap.dedent(
    """
    import layoutkit
    from Cython.Build import cythonize
    from setuptools import Extension, setup

    setup(
        name="downstream",
        ext_modules=cythonize(
            [Extension("downstream", ["downstream.pyx"])],
            include_path=[layoutkit.get_include()],
        ),
    )
    """
)


@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    pytest.importorskip("Cython", reason="Cython is needed to build a downstream extension")
    cc = sysconfig.get_config_var("CC") or "cc"
    if shutil.which(cc.split()[0]) is None:
        pytest.skip(f"no C compiler ({cc}) to build a downstream extension")
    work = tmp_path_factory.mktemp("downstream")
    (work / "downstream.pyx").write_text(DOWNSTREAM_PYX)
    (work / "setup.py").write_text(SETUP_PY)
    env = dict(os.environ)
    # The build imports this very layoutkit (installed, or a source tree on PYTHONPATH).
    env["PYTHONPATH"] = os.pathsep.join(
        [lk.get_include(), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(work))
    try:
        yield importlib.import_module("downstream")
    finally:
        sys.path.remove(str(work))


def test_get_include_holds_the_pxd():
    assert os.path.isfile(os.path.join(lk.get_include(), "layoutkit", "kernels.pxd"))


@pytest.mark.parametrize(
    ("src", "dst", "dims", "shape", "dtype", "extra"),
    [
        ("NCHW", "HCWN4c", "NCHW", (1, 3, 224, 224), "int8", {}),
        ("NCHW", "NHWC8h8w32c", "NCHW", (2, 5, 19, 23), "uint16", {"pad_value": 7}),
        ("NHWC", "NCHW32c", "NCHW", (1, 40, 9, 11), "uint8", {}),
        ("NCHW", "HCWN4c", "NCHW", (1, 3, 64, 64), "float32",
         {"dst_dtype": "int8", "scale": 0.05, "zero_point": -3}),
    ],
)  # fmt: skip
def test_downstream_repack_matches_convert(downstream, src, dst, dims, shape, dtype, extra):
    a, b = lk.Layout(src, dims=dims), lk.Layout(dst, dims=dims)
    k = lk.kernels.RepackKernel(a, b, shape, dtype, **extra)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(a.physical_shape(shape)) * 40).astype(dtype)
    want = lk.convert(
        x,
        shape,
        a,
        b,
        extra.get("pad_value", 0),
        dtype=extra.get("dst_dtype"),
        scale=extra.get("scale"),
        zero_point=extra.get("zero_point"),
    )
    out = np.full(k.dst_bytes, 0xAB, np.uint8)
    assert downstream.repack(k, x.reshape(-1).view(np.uint8), out) == 0
    assert out.tobytes() == want.tobytes()
    assert k.run(x).tobytes() == want.tobytes()
    batch = np.stack([x.reshape(-1).view(np.uint8)] * 3)
    outs = np.zeros((3, k.dst_bytes), np.uint8)
    downstream.repack_many(k, batch, outs)
    assert all(row.tobytes() == want.tobytes() for row in outs)
    assert downstream.bad_call(k) == -1


@pytest.mark.parametrize("name", ["Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_NL"])
def test_downstream_ggml_rows_match_python(downstream, name):
    k = lk.kernels.GgmlKernel(name)
    rows, n = 3, 512
    x = np.random.default_rng(1).standard_normal((rows, n)).astype(np.float32)
    q = np.zeros((rows, n // k.block_size * k.type_size), np.uint8)
    assert downstream.quantize_rows(k, x, q) == 0
    assert q.tobytes() == lk.ggml.quantize(x, name).tobytes()
    y = np.zeros((rows, n), np.float32)
    assert downstream.dequantize_rows(k, q, y) == 0
    assert y.tobytes() == lk.ggml.dequantize(q, name).reshape(rows, n).tobytes()


def test_kernel_errors():
    with pytest.raises(lk.LayoutError, match="extent"):
        lk.kernels.RepackKernel("NCHW", "NCHW4c", (1, 0, 2, 2), "uint8")
    with pytest.raises(lk.LayoutError, match="no single-pass plan"):
        lk.kernels.RepackKernel("NCHW3c", "NCHW4c", (1, 6, 2, 2), "uint8")
    k = lk.kernels.RepackKernel("NCHW", "NCHW4c", (1, 3, 2, 2), "uint8")
    with pytest.raises(lk.LayoutError, match="src: expected 12 bytes"):
        k.run(np.zeros(11, np.uint8))
    with pytest.raises(lk.LayoutError, match="out"):
        k.run(np.zeros(12, np.uint8), out=np.zeros(12, np.uint8))
    g = lk.kernels.GgmlKernel("Q4_0")
    with pytest.raises(lk.LayoutError, match="block size 32"):
        g.quantize(np.zeros(33, np.float32))
    with pytest.raises(lk.LayoutError, match="imatrix"):
        g.quantize(np.zeros(32, np.float32), imatrix=np.ones(5, np.float32))
    # The same dtype rules as lk.ggml.quantize / dequantize: integers are not
    # silently cast, and float bytes are not read as blocks.
    with pytest.raises(lk.ggml.DTypeError, match=r"x: expected a float array.*int64"):
        g.quantize(np.arange(32))
    with pytest.raises(lk.ggml.DTypeError, match="imatrix: expected a float array"):
        g.quantize(np.zeros(32, np.float32), imatrix=np.ones(32, np.int32))
    with pytest.raises(lk.ggml.DTypeError, match="q: expected a uint8 array of Q4_0"):
        g.dequantize(np.zeros(18, np.int8))
    blocks = lk.ggml.quantize(np.linspace(-1, 1, 32), "Q4_0")
    assert g.quantize(np.linspace(-1, 1, 32)).tobytes() == blocks.tobytes()
    assert g.dequantize(blocks.tobytes()).tobytes() == lk.ggml.dequantize(blocks, "Q4_0").tobytes()
