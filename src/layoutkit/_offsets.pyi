# Cython signature: def offsets_kernel(const int64_t[:, ::1] idx, const int64_t[::1] left_pad,
#     const int64_t[::1] ddim, const int64_t[::1] dweight, const int64_t[::1] dmod,
#     const int64_t[::1] dstride, int64_t[::1] out)
import numpy as np
import numpy.typing as npt

def offsets_kernel(
    idx: npt.NDArray[np.int64],
    left_pad: npt.NDArray[np.int64],
    ddim: npt.NDArray[np.int64],
    dweight: npt.NDArray[np.int64],
    dmod: npt.NDArray[np.int64],
    dstride: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
) -> None: ...
