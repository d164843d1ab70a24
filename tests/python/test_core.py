# SPDX-License-Identifier: BSD-3-Clause
"""The package's core: errors, dtypes, discovery, contexts, queues, buffers and arrays, against
NumPy on the host."""

import builtins

import numpy
import pytest

import skein
from skein import _skein

NUMPY_DTYPES = [numpy.int8, numpy.int16, numpy.int32, numpy.int64, numpy.uint8, numpy.uint16,
                numpy.uint32, numpy.uint64, numpy.float16, numpy.float32, numpy.float64,
                numpy.complex64, numpy.complex128]


def host_values(shape, dtype, seed=0):
    """Values that differ element by element and survive the dtype (no overflow, exact)."""
    rng = numpy.random.default_rng(seed)
    n = int(numpy.prod(shape, dtype=numpy.int64))
    values = rng.integers(0, 100, size=n)
    if numpy.issubdtype(dtype, numpy.complexfloating):
        values = values + 1j * rng.integers(0, 100, size=n)
    return numpy.asarray(values, dtype=dtype).reshape(shape)


# --- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, builtin", [
    ("LogicError", builtins.ValueError), ("RuntimeError", builtins.RuntimeError),
    ("ApiUnavailableError", builtins.RuntimeError), ("MemoryError", builtins.MemoryError),
    ("LaunchError", Exception), ("CompileError", Exception), ("RenderError", builtins.ValueError),
    ("TimeoutError", builtins.TimeoutError), ("CheckpointError", builtins.RuntimeError)])
def test_every_cxx_exception_becomes_its_class_with_message_and_parts(kind, builtin):
    with pytest.raises(getattr(skein, kind)) as info:
        _skein._raise_for_test(kind)
    e = info.value
    assert type(e) is getattr(skein, kind)
    assert isinstance(e, skein.Error) and isinstance(e, builtin)
    assert str(e) == ("skein: skein._raise_for_test: a test of the translation [TEST_CODE = 7] on "
                      "no device. Nothing to do.")
    assert (e.call, e.code, e.code_name, e.device, e.hint) == (
        "skein._raise_for_test", 7, "TEST_CODE", "no device", "Nothing to do.")
    if kind == "CompileError":
        assert (e.log, e.source, e.options) == ("the log", "the source", "-O3")
    if kind == "MemoryError":
        assert (e.requested, e.available) == (1024, 512)


def test_a_base_skein_error_is_skein_error_only():
    with pytest.raises(skein.Error) as info:
        _skein._raise_for_test("Error")
    assert type(info.value) is skein.Error


# --- dtypes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_dtypes_map_both_ways(dtype):
    assert skein.dtype(dtype) == numpy.dtype(dtype)
    assert skein.dtype(numpy.dtype(dtype).name) == numpy.dtype(dtype)
    assert skein.dtype(getattr(skein.Dtype, numpy.dtype(dtype).name)) == numpy.dtype(dtype)


def test_python_types_and_bfloat16():
    assert skein.dtype(float) == numpy.float64
    assert skein.dtype(int) == numpy.int64
    assert skein.dtype(complex) == numpy.complex128
    assert skein.dtype("bfloat16").metadata == {"skein": "bfloat16"}
    assert skein.Dtype.bfloat16.itemsize == 2


@pytest.mark.parametrize("bad", [bool, ">f4", "U8", object, [("a", "f4")], "not-a-dtype"])
def test_dtypes_skein_has_not_are_refused_with_a_logic_error(bad):
    with pytest.raises(skein.LogicError, match="skein.dtype"):
        skein.dtype(bad)


# --- discovery --------------------------------------------------------------------------------------

def test_discovery_agrees_with_status():
    available = {api.shortcut for api in skein.API.all_available()}
    status = {s.id.shortcut: s for s in skein.API.status()}
    assert available == {k for k, s in status.items() if s.available}
    for k, s in status.items():
        if not s.available:
            assert s.reason
            with pytest.raises(skein.ApiUnavailableError):
                skein.API.all_by_shortcut(k)
    assert skein.API.all_by_shortcut() == skein.API.all_available()


def test_platforms_and_devices(backend):
    api, platform = backend
    assert platform in skein.Platform.all(api)
    assert platform.api == api
    assert skein.Platform.from_index(api, platform.index) == platform
    devices = skein.Device.all(platform)
    assert devices == platform.devices and devices
    for i, device in enumerate(devices):
        assert device.index == i and device.platform == platform
        assert device.params.compute_units >= 1
        assert device.params.max_total_local_size >= 1
        assert device.name in device.description
    assert skein.Platform.all_by_masks(api, include_masks=[platform.name]) != []
    assert platform not in skein.Platform.all_by_masks(api, exclude_masks=[".*"])


def test_context_from_criteria_and_filters(backend):
    api, platform = backend
    context = skein.Context.from_criteria(api, platform_include_masks=[platform.name])
    assert context.api == api and context.num_devices == 1
    with pytest.raises(skein.LogicError, match="unknown device filter"):
        skein.Context.from_criteria(api, device_mask="x")
    with pytest.raises(skein.Error):
        skein.Context.from_criteria(api, device_include_masks=["no device is called this"])


def test_queue_on_several_devices(multi_context):
    queue = skein.Queue(multi_context)
    assert queue.device_idxs == [0, 1]
    one = skein.Queue.on_device_idxs(multi_context, [1])
    assert one.device_idxs == [1] and one.has_device(1) and not one.has_device(0)
    a = skein.Array.from_host(queue, numpy.arange(5, dtype=numpy.int32), device_idx=1)
    assert a.device_idx == 1
    queue.synchronize()
    queue.synchronize(1)
    numpy.testing.assert_array_equal(a.get(), numpy.arange(5))


def test_events_order_and_time(queue):
    start = queue.record_event()
    a = skein.Array.from_host(queue, numpy.ones(1000, dtype=numpy.float32))
    end = queue.record_event()
    end.wait()
    assert end.query()
    assert end.time_since(start) >= 0.0
    numpy.testing.assert_array_equal(a.get(), numpy.ones(1000))


# --- buffers ----------------------------------------------------------------------------------------

def test_buffer_round_trip_and_sub_regions(context, queue):
    buf = skein.Buffer.allocate(context, 0, 64)
    assert buf.size == 64 and buf.offset == 0 and buf.device_idx == 0
    host = numpy.arange(16, dtype=numpy.int32)
    buf.set(queue, host)
    sub = buf.get_sub_region(16, 32)
    out = numpy.zeros(8, dtype=numpy.int32)
    sub.get(queue, out)
    numpy.testing.assert_array_equal(out, host[4:12])
    other = skein.Buffer.allocate(context, 0, 64)
    other.set(queue, buf)
    back = numpy.zeros(16, dtype=numpy.int32)
    other.get(queue, back)
    numpy.testing.assert_array_equal(back, host)
    with pytest.raises(skein.LogicError, match="C-contiguous"):
        buf.get(queue, numpy.zeros((4, 8), dtype=numpy.int32)[:, ::2])


# --- arrays -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 3, 4)])
def test_from_host_get_round_trip(queue, dtype, shape):
    host = host_values(shape, dtype)
    a = skein.Array.from_host(queue, host)
    assert a.shape == shape and a.dtype == numpy.dtype(dtype)
    assert a.size == host.size and a.nbytes == host.nbytes and a.ndim == len(shape)
    if host.size:  # NumPy gives a 0-size array stride 0, Skein the contiguous ones
        assert a.strides == host.strides
    out = a.get()
    assert out.dtype == host.dtype and out.shape == host.shape
    numpy.testing.assert_array_equal(out, host)


def test_from_host_takes_strided_and_list_inputs(queue):
    host = numpy.arange(24, dtype=numpy.float64).reshape(4, 6)
    numpy.testing.assert_array_equal(skein.Array.from_host(queue, host[:, ::2]).get(), host[:, ::2])
    numpy.testing.assert_array_equal(skein.Array.from_host(queue, host.T).get(), host.T)
    numpy.testing.assert_array_equal(skein.Array.from_host(queue, [1.5, 2.5]).get(), [1.5, 2.5])


def test_empty_zeros_and_orders(queue):
    z = skein.Array.zeros(queue, (3, 4), numpy.float32)
    numpy.testing.assert_array_equal(z.get(), numpy.zeros((3, 4)))
    f = skein.Array.zeros(queue, (3, 4), "float64", order="F")
    assert f.is_f_contiguous and not f.is_c_contiguous and f.strides == (8, 24)
    f.set(numpy.arange(12.0).reshape(3, 4))
    numpy.testing.assert_array_equal(f.get(), numpy.arange(12.0).reshape(3, 4))
    e = skein.Array.empty(queue, 5, numpy.int16)
    assert e.shape == (5,) and e.dtype == numpy.int16
    assert skein.Array.empty(queue, (), numpy.float32).shape == ()
    with pytest.raises(skein.LogicError, match="order 'X'"):
        skein.Array.empty(queue, 3, numpy.float32, order="X")


def test_set_from_host_and_from_array_and_into_dest(queue):
    a = skein.Array.zeros(queue, (2, 3), numpy.int32)
    a.set(numpy.arange(6, dtype=numpy.int32).reshape(2, 3))
    b = skein.Array.empty(queue, (2, 3), numpy.int32)
    b.set(a)
    dest = numpy.empty((2, 3), dtype=numpy.int32)
    assert b.get(dest) is dest
    numpy.testing.assert_array_equal(dest, numpy.arange(6).reshape(2, 3))
    b.fill_zero()
    numpy.testing.assert_array_equal(b.get(), numpy.zeros((2, 3)))


def test_set_and_get_refuse_another_dtype_or_shape_then_the_array_is_intact(queue):
    a = skein.Array.from_host(queue, numpy.arange(6, dtype=numpy.float32))
    with pytest.raises(skein.LogicError, match="dtype float64 is not the array's float32"):
        a.set(numpy.zeros(6))
    with pytest.raises(skein.LogicError, match=r"shape \(2, 3\) is not the array's \(6\)"):
        a.set(numpy.zeros((2, 3), dtype=numpy.float32))
    with pytest.raises(skein.LogicError, match="dest must be"):
        a.get(numpy.empty(5, dtype=numpy.float32))
    numpy.testing.assert_array_equal(a.get(), numpy.arange(6))


def test_views_share_memory_as_numpy(queue):
    host = numpy.arange(60, dtype=numpy.float32).reshape(3, 4, 5)
    a = skein.Array.from_host(queue, host)
    for key in [1, -1, (1, 2), slice(1, 3), (slice(None), 1), (Ellipsis, 2),
                (slice(0, 3, 2), slice(1, None), slice(None, None, 2)), (0, Ellipsis),
                (slice(5, 9),)]:
        numpy.testing.assert_array_equal(a[key].get(), host[key], err_msg=str(key))
    numpy.testing.assert_array_equal(a.T.get(), host.T)
    numpy.testing.assert_array_equal(a.transpose(1, 0, 2).get(), host.transpose(1, 0, 2))
    numpy.testing.assert_array_equal(a.reshape(12, 5).get(), host.reshape(12, 5))
    numpy.testing.assert_array_equal(a.reshape((4, 15)).get(), host.reshape(4, 15))
    numpy.testing.assert_array_equal(a.slice(1, 2).get(), host[1:2])
    numpy.testing.assert_array_equal(a.view(5, (2, 2), (20, 8)).get(),
                                     numpy.lib.stride_tricks.as_strided(host.ravel()[5:], (2, 2), (20, 8)))
    # A write through a view lands in the parent.
    a[1, :, 2].set(numpy.full(4, -1, dtype=numpy.float32))
    host[1, :, 2] = -1
    numpy.testing.assert_array_equal(a.get(), host)
    assert len(a) == 3


def test_bad_indices_and_reshapes_raise(queue):
    a = skein.Array.from_host(queue, numpy.arange(12, dtype=numpy.int64).reshape(3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        a[3]
    with pytest.raises(skein.LogicError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(skein.LogicError, match="step must be positive"):
        a[::-1]
    with pytest.raises(skein.LogicError, match="Keep the number of elements"):
        a.reshape(5, 2)
    # A strided view that no view can reshape is copied (NumPy's and pygpu's reshape).
    numpy.testing.assert_array_equal(a[:, :2].reshape(6).get(), [0, 1, 4, 5, 8, 9])
    assert a[:, :2].reshape(6).flags.owndata
    with pytest.raises(skein.LogicError, match="must not be negative"):
        skein.Array.empty(a.queue, (2, -1), numpy.float32)
    with pytest.raises(skein.LogicError, match="has no Skein element type"):
        skein.Array.from_host(a.queue, numpy.zeros(3, dtype=bool))
    numpy.testing.assert_array_equal(a.get(), numpy.arange(12).reshape(3, 4))


def test_a_device_not_in_the_queue_is_refused(queue):
    with pytest.raises(skein.LogicError, match="device 5 is not in the queue"):
        skein.Array.empty(queue, 3, numpy.float32, device_idx=5)
    with pytest.raises(skein.LogicError, match="must not be negative"):
        skein.Array.empty(queue, 3, numpy.float32, device_idx=-1)
