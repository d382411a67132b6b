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
        flat = np.empty(want.size, np.float32)
        res = layout.pack(x, out=flat)
        assert res.shape == want.shape and res.tobytes() == want.tobytes()
        assert res.base is flat or res is flat
    for _ in range(2):  # a size off by one is refused on the repeat path too
        with pytest.raises(lk.LayoutError, match="holds 63 elements, expected 64"):
            layout.pack(x, out=np.empty(want.size - 1, np.float32))
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


@pytest.mark.parametrize("api", ["to_format", "from_format", "to_hw", "to_cpu"])
def test_adapter_shortcuts_check_out_and_follow_the_data(api):
    """TensorRT and Vitis entry points keep the plan of a successful call; later
    calls still check out= and follow new data."""
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (1, 3, 5, 6)).astype(np.int8)
    trt_buf = lk.tensorrt.to_format(x, "kCHW32")
    hw_buf = lk.vitis.to_hw(x, "NCHW", "HCWNC4")

    def call(src, out=None):
        if api == "to_format":
            return lk.tensorrt.to_format(src, "kCHW32", out=out)
        if api == "from_format":
            return lk.tensorrt.from_format(src, "kCHW32", [1, 3, 5, 6], out=out)
        if api == "to_hw":
            return lk.vitis.to_hw(src, "NCHW", "HCWNC4", out=out)
        return lk.vitis.to_cpu(src, "HCWNC4", (1, 3, 5, 6), "NCHW", out=out)

    src = {"to_format": x, "to_hw": x, "from_format": trt_buf, "to_cpu": hw_buf}[api]
    want = call(src)
    good = np.empty_like(want)
    for _ in range(3):
        got = call(src, good)
        assert got.tobytes() == want.tobytes() and got.shape == want.shape
        assert np.shares_memory(got, good)
        if api in ("to_format", "to_hw"):
            assert got is good  # out= of the result's own shape comes back itself
    flat = np.empty(want.size, want.dtype)
    for _ in range(2):  # a flat out= comes back in the result's shape
        got = call(src, flat)
        assert got.shape == want.shape and np.shares_memory(got, flat)
        assert flat.tobytes() == want.tobytes()
    for bad in (
        np.empty(want.shape, np.uint8),
        np.empty(want.size + 1, np.int8),
        np.empty((*want.shape[:-1], 2 * want.shape[-1]), np.int8)[..., ::2],
    ):
        with pytest.raises(lk.LayoutError, match="out"):
            call(src, bad)
    read_only = np.empty_like(want)
    read_only.flags.writeable = False
    with pytest.raises(lk.LayoutError, match=r"read-only|writeable"):
        call(src, read_only)
    changed = src.copy()
    changed.reshape(-1)[:8] = 5
    assert call(changed).tobytes() != want.tobytes()


def test_rank0_linear_out_is_checked():
    x = np.array(3, np.int8)
    out = np.empty((), np.int8)
    assert lk.tensorrt.to_format(x, "kLINEAR", out=out) is out and out == 3
    with pytest.raises(lk.LayoutError, match="dtype"):
        lk.tensorrt.to_format(x, "kLINEAR", out=np.empty((), np.int16))
    with pytest.raises(lk.LayoutError, match="dtype"):
        lk.tensorrt.from_format(x, "kLINEAR", (), out=np.empty((), np.float32))


def test_float_and_bool_shapes_are_not_taken_for_a_kept_call():
    """3.0 == 3 and True == 1 hash alike: after a call with an int shape, the
    same shape with a float or a bool in it is still refused (numpy ints are
    accepted, through the full checks)."""
    x = np.arange(105, dtype=np.uint8).reshape(1, 3, 5, 7)
    layout = lk.Layout("NCHW4c")
    for _ in range(2):
        lk.convert(x, (1, 3, 5, 7), "NCHW", NHWC)
        layout.size((1, 3, 5, 7))
    with pytest.raises(TypeError, match=r"shape\[1\] = 3.0"):
        lk.convert(x, (1, 3.0, 5, 7), "NCHW", NHWC)
    with pytest.raises(TypeError, match="bool"):
        lk.convert(x, (True, 3, 5, 7), "NCHW", NHWC)
    with pytest.raises(TypeError, match=r"shape\[1\] = 3.0"):
        layout.size((1, 3.0, 5, 7))
    got = lk.convert(x, (1, np.int64(3), 5, 7), "NCHW", NHWC)
    assert got.tobytes() == ref_pack(x, "NHWC", dims="NCHW").tobytes()


def test_kept_calls_are_told_apart_by_dtype_strides_and_arguments():
    """Calls kept side by side (dtype, strides, layout, pad value and shape each
    differing in one) come back in any order with their own results, also once
    more calls were made than are kept."""
    rng = np.random.default_rng(2)
    base = rng.integers(0, 100, (1, 6, 5, 7)).astype(np.uint8)
    calls = []
    for dtype in (np.uint8, np.int8, np.uint16):
        x = base.astype(dtype)
        for view in (x[:, :3], x[:, ::2], x[:, 3:][..., ::-1]):
            for tag in ("NCHW4c", "NCHW8c"):
                for pad in (0, 9):
                    calls.append((view, tag, pad))
    assert len(calls) > 32  # more than the calls kept: the oldest are dropped
    want = [ref_pack(np.ascontiguousarray(v), t, pad_value=p) for v, t, p in calls]
    for _ in range(2):
        for k in rng.permutation(len(calls)):
            view, tag, pad = calls[k]
            got = lk.Layout(tag).pack(view, pad_value=pad)
            assert got.dtype == view.dtype and got.tobytes() == want[k].tobytes(), (k, tag, pad)
    x = np.ascontiguousarray(base[:, :3])
    for shape, tag in (((1, 3, 5, 7), "NCHW4c"), ((1, 3, 7, 5), "NCHW4c")):
        for _ in range(2):  # the same buffer read as two logical shapes
            got = lk.convert(x, shape, "NCHW", tag)
            assert got.tobytes() == ref_pack(x.reshape(shape), tag).tobytes()


def test_a_mutable_pad_value_is_read_on_every_call():
    x = np.ones((1, 3, 2, 2), np.float32)
    pad = np.array(2.0, np.float32)
    layout = lk.Layout("NCHW4c")
    assert layout.pack(x, pad_value=pad).reshape(-1)[3] == 2.0
    pad[()] = 5.0
    assert layout.pack(x, pad_value=pad).reshape(-1)[3] == 5.0


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_repeats_with_threads_and_without_out_match_the_first_call(threads):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 255, (1, 5, 300, 700)).astype(np.uint8)  # output over 2 MiB
    layout = lk.Layout("NCHW8c")
    want = ref_pack(x, "NCHW8c").tobytes()
    out = np.empty(layout.physical_shape(x.shape), np.uint8)
    for _ in range(3):
        assert layout.pack(x, threads=threads).tobytes() == want
        out.fill(0x5A)
        assert layout.pack(x, out=out, threads=threads) is out and out.tobytes() == want


def test_adapter_repeats_are_told_apart_by_their_arguments():
    """Adapter calls kept side by side (format, pad value, the direction) come
    back in any order with their own results, flat HW buffers included."""
    rng = np.random.default_rng(4)
    x = rng.integers(-100, 100, (1, 5, 3, 6)).astype(np.int8)
    calls = {
        "hcwnc4": lambda: lk.vitis.to_hw(x, "NCHW", "HCWNC4"),
        "hcwnc8": lambda: lk.vitis.to_hw(x, "NCHW", "HCWNC8"),
        "chw32": lambda: lk.tensorrt.to_format(x, "kCHW32"),
        "chw32 pad 3": lambda: lk.tensorrt.to_format(x, "kCHW32", pad_value=3),
        "chw4": lambda: lk.tensorrt.to_format(x, "kCHW4"),
    }
    want = {name: call().copy() for name, call in calls.items()}
    flat4, flat8 = want["hcwnc4"].reshape(-1), want["hcwnc8"].reshape(-1)
    calls["cpu4"] = lambda: lk.vitis.to_cpu(flat4, "HCWNC4", x.shape, "NCHW")
    calls["cpu8"] = lambda: lk.vitis.to_cpu(flat8, "HCWNC8", x.shape, "NCHW")
    want["cpu4"] = want["cpu8"] = x
    assert want["chw32"].tobytes() != want["chw32 pad 3"].tobytes()
    names = list(calls)
    for k in np.concatenate([rng.permutation(len(names)) for _ in range(4)]):
        got = calls[names[k]]()
        assert got.shape == want[names[k]].shape, names[k]
        assert got.tobytes() == want[names[k]].tobytes(), names[k]
