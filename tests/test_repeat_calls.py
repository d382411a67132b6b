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


def test_repeated_out_of_another_shape_or_near_the_input():
    """The repeat path checks out= in C: a same-size out of another shape still
    works (and comes back in the result's shape), one touching the input's span
    (reversed strides included) is refused, one just past it is accepted."""
    layout = lk.Layout("NCHW4c")
    buf = np.zeros(2 * 48, np.float32)
    x = buf[:48].reshape(1, 3, 4, 4)
    want = ref_pack(x, "NCHW4c")
    for _ in range(2):
        res = layout.pack(x, out=np.empty(want.size, np.float32))
        assert res.shape == want.shape and res.tobytes() == want.tobytes()
    after = np.empty(48 + 64, np.float32)
    xr = after[:48][::-1].reshape(1, 3, 4, 4)  # negative strides
    for _ in range(2):
        assert (
            layout.pack(xr, out=after[48:].reshape(want.shape)).tobytes()
            == ref_pack(xr, "NCHW4c").tobytes()
        )
    with pytest.raises(lk.LayoutError, match="overlaps"):
        layout.pack(xr, out=after[47:111].reshape(want.shape))
    big = np.zeros(200, np.float32)
    xs = big[::2][:48].reshape(1, 3, 4, 4)  # strided: its span ends at element 94
    for _ in range(2):
        layout.pack(xs, out=big[95:159].reshape(want.shape))
    with pytest.raises(lk.LayoutError, match="overlaps"):
        layout.pack(xs, out=big[94:158].reshape(want.shape))
