# Stubs for the Cython module _ggml_quants.pyx (GGML block quantization kernels).
# Cython signatures:
#   def quantize_blocks(int type_id, Py_ssize_t block_size, Py_ssize_t type_size,
#                       const float[::1] x, uint8_t[::1] out, int threads=1)
#   def quantize_rows_imatrix(int type_id, Py_ssize_t n_per_row, Py_ssize_t block_size,
#                             Py_ssize_t type_size, const float[::1] x, const float[::1] qw,
#                             uint8_t[::1] out, int threads=1)
#   def dequantize_blocks(int type_id, Py_ssize_t block_size, Py_ssize_t type_size,
#                         const uint8_t[::1] q, float[::1] out, int threads=1)
#   def fp32_to_fp16_bits(const float[::1] x, uint16_t[::1] out)
#   def fp16_bits_to_fp32(const uint16_t[::1] h, float[::1] out)
import numpy as np
import numpy.typing as npt

def kernels(force: str | None = None) -> str: ...
def can_quantize(type_id: int) -> bool: ...
def can_dequantize(type_id: int) -> bool: ...
def uses_imatrix(type_id: int) -> bool: ...
def native_pool() -> bool: ...
def blocks_into(
    quantize: bool,
    type_id: int,
    block_size: int,
    type_size: int,
    src: object,
    out: object,
) -> np.ndarray | None: ...
def quantize_blocks(
    type_id: int,
    block_size: int,
    type_size: int,
    x: npt.NDArray[np.float32],
    out: npt.NDArray[np.uint8],
    threads: int = 1,
) -> None: ...
def quantize_rows_imatrix(
    type_id: int,
    n_per_row: int,
    block_size: int,
    type_size: int,
    x: npt.NDArray[np.float32],
    qw: npt.NDArray[np.float32],
    out: npt.NDArray[np.uint8],
    threads: int = 1,
) -> None: ...
def dequantize_blocks(
    type_id: int,
    block_size: int,
    type_size: int,
    q: npt.NDArray[np.uint8],
    out: npt.NDArray[np.float32],
    threads: int = 1,
) -> None: ...
def fp32_to_fp16_bits(x: npt.NDArray[np.float32], out: npt.NDArray[np.uint16]) -> None: ...
def fp16_bits_to_fp32(h: npt.NDArray[np.uint16], out: npt.NDArray[np.float32]) -> None: ...
def row_kernels_capsule(type_id: int) -> object: ...
