"""Regenerate ``golden.npz``: ggml's own C output for the byte-exact tests.

Needs ggml's C library through ``ggml-python`` (``pip install ggml-python==0.0.45``,
which builds ggml 0.15.3 from source; not a layoutkit dependency)::

    python tests/data/ggml/make_golden.py

The archive holds the float32 input rows ``x`` (edge rows included), the
importance weights ``imatrix`` (one per column), and for each type ``q/<TYPE>``
= what ggml writes without importance weights (``ggml_quantize_chunk``; the
``quantize_row_*_ref`` functions for Q8_1, Q8_K, NVFP4 and Q1_0, which
``ggml_quantize_chunk`` does not reach or treats the same) and ``qi/<TYPE>`` =
``ggml_quantize_chunk`` with the importance weights, for the types whose
quantizer uses them. ``meta`` records the ggml-python version. Only layoutkit's
tests read it; layoutkit itself never needs ggml.
"""

from __future__ import annotations

import ctypes
import pathlib
from importlib.metadata import version

import numpy as np

OUT = pathlib.Path(__file__).with_name("golden.npz")
N = 512  # elements per row: 2 K-quant super-blocks, 16 blocks of 32

# (name, type id, block size, bytes per block) from ggml-common.h
TYPES = {
    "F16": (1, 1, 2), "BF16": (30, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
    "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "IQ4_NL": (20, 32, 18), "IQ4_XS": (23, 256, 136), "TQ1_0": (34, 256, 54),
    "TQ2_0": (35, 256, 66), "MXFP4": (39, 32, 17), "NVFP4": (40, 64, 36), "Q1_0": (41, 128, 18),
}  # fmt: skip
REF_ONLY = {"Q8_1": "q8_1", "Q8_K": "q8_K", "NVFP4": "nvfp4", "Q1_0": "q1_0"}
IMATRIX_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                 "IQ4_NL", "IQ4_XS"]  # fmt: skip


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20260601)
    n = N
    idx = np.arange(n)
    outlier = rng.standard_normal(n)
    outlier[idx % 256 == 37] = 60.0  # one outlier per super-block
    outlier_neg = rng.standard_normal(n)
    outlier_neg[idx % 256 == 200] = -1e3
    rows = [
        rng.standard_normal(n),
        rng.standard_normal(n),
        rng.uniform(-1, 1, n),
        rng.laplace(0, 1, n),
        rng.standard_normal(n) * 0.02,  # weight-like
        np.zeros(n),  # zeros
        np.full(n, -0.0),
        np.where(idx % 2 == 0, 0.0, -0.0),
        np.full(n, 3.0),  # constant rows
        np.full(n, -1.5),
        rng.standard_normal(n) * 1e-6,  # tiny
        np.full(n, 1e-40) * np.sign(rng.standard_normal(n)),  # subnormal
        rng.standard_normal(n) * 1e4,  # huge
        rng.uniform(-6e4, 6e4, n),
        outlier,
        outlier_neg,
        rng.integers(-20, 21, n) / 2,  # ties
        np.tile([127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5], n // 8),
        np.tile([0.49999997, -0.49999997, 1.0, -1.0], n // 4),
        np.where(idx < 16, rng.standard_normal(n), 0.0),  # one live group, rest zero
    ]
    x = np.stack(rows).astype(np.float32)
    w = rng.uniform(0.0, 4.0, n) ** 2
    w[rng.integers(0, n, 24)] = 0.0  # a few unused columns
    return x, w.astype(np.float32)


def main() -> None:
    import ggml as cg

    base = ctypes.CDLL(str(pathlib.Path(cg.__file__).parent / "lib" / "libggml-base.so"))
    fp = ctypes.POINTER(ctypes.c_float)
    vp = ctypes.c_void_p
    x, w = inputs()
    rows = x.shape[0]
    out: dict[str, np.ndarray] = {"x": x, "imatrix": w}

    def run(name: str, imatrix: np.ndarray | None) -> np.ndarray:
        tid, bs, ts = TYPES[name]
        q = np.zeros((rows, N // bs * ts), np.uint8)  # Q8_K: bsums of zero blocks stay 0
        if name in REF_ONLY and imatrix is None:
            f = getattr(base, f"quantize_row_{REF_ONLY[name]}_ref")
            f.argtypes = (fp, vp, ctypes.c_int64)
            f.restype = None
            f(x.ctypes.data_as(fp), q.ctypes.data_as(vp), x.size)
        else:
            im = None if imatrix is None else imatrix.ctypes.data_as(fp)
            cg.ggml_quantize_chunk(tid, x.ctypes.data_as(fp), q.ctypes.data_as(vp), 0, rows, N, im)
        return q

    for name in TYPES:
        out[f"q/{name}"] = run(name, None)
    for name in IMATRIX_TYPES:
        out[f"qi/{name}"] = run(name, w)
    out["meta"] = np.array(f"ggml-python {version('ggml-python')} (ggml's C, x86-64)")
    np.savez_compressed(OUT, **out)  # type: ignore[arg-type]
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(out)} arrays)")


if __name__ == "__main__":
    main()
