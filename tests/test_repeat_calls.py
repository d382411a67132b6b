"""Repeated calls with the same arguments take a shortcut past validation that
was already done; it must not change results or let bad arguments through."""

import numpy as np
import pytest
from reference import ref_pack

import layoutkit as lk

NHWC = lk.Layout("NHWC", dims="NCHW")


def test_repeats_give_the_same_bytes_as_the_first_call():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (1, 3, 9, 11)).astype(np.uint8)
    first = lk.convert(x, x.shape, "NCHW", NHWC)
    for _ in range(3):
        assert lk.convert(x, x.shape, "NCHW", NHWC).tobytes() == first.tobytes()
    x[0, 1, 2, 3] = 7  # new data, same call: the result follows the data
    assert (
        lk.convert(x, x.shape, "NCHW", NHWC).tobytes() == ref_pack(x, "NHWC", dims="NCHW").tobytes()
    )


@pytest.mark.parametrize("api", ["convert", "pack", "unpack"])
def test_out_is_checked_on_every_call(api):
    x = np.zeros((1, 4, 4, 4), np.float32)  # as many elements packed as logical
    layout = lk.Layout("NCHW4c")
    packed = layout.pack(x)

    def call(out):
        if api == "convert":
            return lk.convert(x, x.shape, "NCHW", layout, out=out)
        if api == "pack":
            return layout.pack(x, out=out)
        return layout.unpack(packed, x.shape, out=out)

    good = np.empty_like(call(None))
    for _ in range(2):
        call(good)
    with pytest.raises(lk.LayoutError, match="out: dtype"):
        call(np.empty(good.shape, np.float64))
    with pytest.raises(lk.LayoutError, match="read-only"):
        ro = np.empty_like(good)
        ro.setflags(write=False)
        call(ro)
    src = packed if api == "unpack" else x
    with pytest.raises(lk.LayoutError, match="overlaps"):
        call(src.reshape(good.shape))


def test_argument_types_are_not_conflated():
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(1, 3, 4, 4)
    layout = lk.Layout("NCHW4c")
    for _ in range(2):
        layout.pack(x, dtype=np.int8, scale=0.5, zero_point=1)
    with pytest.raises(TypeError, match="zero_point"):
        layout.pack(x, dtype=np.int8, scale=0.5, zero_point=True)
    with pytest.raises(TypeError, match="zero_point"):
        layout.pack(x, dtype=np.int8, scale=0.5, zero_point=1.0)
    # pad values 1 and 1.5 (both valid for float32) give their own bytes
    a = layout.pack(x, pad_value=1)
    b = layout.pack(x, pad_value=1.5)
    assert a.reshape(-1)[3] == 1 and b.reshape(-1)[3] == 1.5


def test_strided_and_copied_inputs_repeat_correctly():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 100, (1, 6, 8, 10)).astype(np.int16)
    view = base[:, ::2, :, ::-1]  # strided logical tensor for pack
    layout = lk.Layout("NCHW4c")
    want = ref_pack(np.ascontiguousarray(view), "NCHW4c")
    for _ in range(3):
        assert layout.pack(view).tobytes() == want.tobytes()
    # a non-contiguous buffer for convert is copied first, every time
    buf = np.asfortranarray(rng.integers(0, 100, (1, 3, 5, 7)).astype(np.int16))
    want = ref_pack(np.ascontiguousarray(buf).reshape(1, 3, 5, 7), "NHWC", dims="NCHW")
    for _ in range(3):
        assert lk.convert(buf, (1, 3, 5, 7), "NCHW", NHWC).tobytes() == want.tobytes()


def test_list_shapes_still_work():
    x = np.arange(24, dtype=np.uint8).reshape(1, 3, 2, 4)
    for _ in range(2):
        got = lk.convert(x, [1, 3, 2, 4], "NCHW", NHWC)
    assert got.tobytes() == ref_pack(x, "NHWC", dims="NCHW").tobytes()
