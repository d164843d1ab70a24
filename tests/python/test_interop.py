# SPDX-License-Identifier: BSD-3-Clause
"""Zero-copy interop: DLPack both ways (skein.Array.__dlpack__, skein.from_dlpack), the CUDA array
interface, NumPy host round trips (copies), and on the GPU machine CuPy and PyTorch round trips
that keep the device pointer. Every value is checked against the NumPy array it came from."""

import ctypes
import gc
import os
import runpy

import numpy
import pytest

import skein

KDL_CPU, KDL_CUDA, KDL_OPENCL = 1, 2, 4

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def values(shape, dtype, seed=0):
    """Distinct exact values of `dtype` in `shape`."""
    rng = numpy.random.default_rng(seed)
    v = rng.integers(1, 100, size=int(numpy.prod(shape, dtype=numpy.int64)))
    if numpy.issubdtype(dtype, numpy.complexfloating):
        v = v + 1j * rng.integers(1, 100, size=v.size)
    return numpy.asarray(v, dtype=dtype).reshape(shape)


def is_cuda(queue):
    return queue.context.api.shortcut == "cuda"


def cuda_pointer(array):
    return array.__cuda_array_interface__["data"][0]


class HostView:
    """What NumPy >= 2.1's from_dlpack(x, device="cpu") asks of a producer, for NumPy 1.24: the
    standard's dl_device=(kDLCPU, 0) request (a host copy)."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (KDL_CPU, 0)

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(dl_device=(KDL_CPU, 0))


NEEDS_DLPACK = pytest.mark.skipif(
    not skein.config["dlpack"],
    reason="this Skein was built without DLPack (SKEIN_WITH_DLPACK found no dlpack.h): "
           "test_without_dlpack_the_calls_say_so checks its error instead")


@pytest.mark.skipif(skein.config["dlpack"], reason="this Skein has DLPack")
def test_without_dlpack_the_calls_say_so(queue):
    a = skein.Array.from_host(queue, numpy.arange(4, dtype=numpy.float32))
    with pytest.raises(skein.LogicError, match="no DLPack"):
        a.__dlpack__()
    with pytest.raises(skein.LogicError, match="no DLPack"):
        skein.from_dlpack(a)
    numpy.testing.assert_array_equal(a.get(), numpy.arange(4))


# --- DLPack between Skein arrays (every backend) --------------------------------------------------

def test_dlpack_device_names_the_backend_and_device(queue):
    a = skein.Array.zeros(queue, 4, numpy.float32)
    kind, device = a.__dlpack_device__()
    assert kind == (KDL_CUDA if is_cuda(queue) else KDL_OPENCL)
    assert device == 0 if not is_cuda(queue) else device >= 0


@NEEDS_DLPACK
@pytest.mark.parametrize("shape, dtype", [
    ((0,), numpy.float32), ((1,), numpy.int8), ((1000,), numpy.float64),
    ((3, 17), numpy.complex64), ((2, 3, 5), numpy.uint16)])
def test_round_trip_shares_memory_both_ways(queue, shape, dtype):
    a = skein.Array.from_host(queue, values(shape, dtype))
    b = skein.from_dlpack(a)
    assert (b.shape, b.dtype, b.queue == queue) == (a.shape, a.dtype, True)
    numpy.testing.assert_array_equal(b.get(), values(shape, dtype))
    # Writes through either array are the other's: one memory, no copy.
    a.set(values(shape, dtype, seed=1))
    numpy.testing.assert_array_equal(b.get(), values(shape, dtype, seed=1))
    b.set(values(shape, dtype, seed=2))
    numpy.testing.assert_array_equal(a.get(), values(shape, dtype, seed=2))


@NEEDS_DLPACK
def test_views_and_bfloat16_keep_their_layout(queue):
    host = values((6, 10), numpy.float32)
    a = skein.Array.from_host(queue, host)
    for view, expect in [(a[1::2, 3:9:2], host[1::2, 3:9:2]), (a.T, host.T), (a[4], host[4])]:
        b = skein.from_dlpack(view)
        assert b.shape == expect.shape and b.strides == view.strides
        numpy.testing.assert_array_equal(b.get(), expect)
    bits = numpy.arange(7, dtype=numpy.uint16)
    bf = skein.Array.from_host(queue, bits.view(skein.bfloat16))
    out = skein.from_dlpack(bf)
    assert out.skein_dtype == bf.skein_dtype
    numpy.testing.assert_array_equal(out.get().view(numpy.uint16), bits)


@NEEDS_DLPACK
def test_copy_true_gives_a_separate_array(queue):
    a = skein.Array.from_host(queue, values((9,), numpy.int32))
    b = skein.from_dlpack(a, copy=True)
    a.set(numpy.zeros(9, numpy.int32))
    numpy.testing.assert_array_equal(b.get(), values((9,), numpy.int32))


@NEEDS_DLPACK
def test_an_exported_capsule_keeps_the_memory_after_the_array_is_gone(queue):
    a = skein.Array.from_host(queue, values((1000,), numpy.float64))
    capsule = a.__dlpack__()
    assert _capsule_name(capsule) == b"dltensor"
    del a
    gc.collect()
    b = skein.from_dlpack(capsule, queue)
    assert _capsule_name(capsule) == b"used_dltensor"
    numpy.testing.assert_array_equal(b.get(), values((1000,), numpy.float64))
    # A consumed capsule cannot be imported again (its tensor is b's now); b stays usable.
    with pytest.raises(skein.LogicError, match="used_dltensor"):
        skein.from_dlpack(capsule, queue)
    numpy.testing.assert_array_equal(b.get(), values((1000,), numpy.float64))


@NEEDS_DLPACK
def test_unconsumed_capsules_are_deleted_with_them(queue):
    # Many unconsumed exports of a large array: each capsule's destructor runs the deleter, which
    # drops its reference; memory then stays bounded (a leak would exhaust a device in the loop
    # long before its end only for huge sizes, so this checks the protocol's mechanics instead).
    a = skein.Array.zeros(queue, 1 << 16, numpy.float32)
    for _ in range(50):
        capsule = a.__dlpack__()
        assert _capsule_name(capsule) == b"dltensor"
        del capsule
    numpy.testing.assert_array_equal(a.get(), numpy.zeros(1 << 16, numpy.float32))


# --- NumPy (host): copies through DLPack ----------------------------------------------------------

@pytest.mark.parametrize("shape", [(0,), (1,), (257,), (4, 33)])
def test_numpy_round_trip(queue, shape):
    host = values(shape, numpy.float32)
    a = skein.from_dlpack(host, queue)  # NumPy's __dlpack__: a copy onto the queue's device
    host[...] = -1  # the device array is a copy
    numpy.testing.assert_array_equal(a.get(), values(shape, numpy.float32))
    back = numpy.from_dlpack(HostView(a))
    numpy.testing.assert_array_equal(back, values(shape, numpy.float32))


def test_host_tensors_need_a_queue_and_a_copy(queue):
    host = values((5,), numpy.int64)
    with pytest.raises(skein.LogicError, match="without a queue"):
        skein.from_dlpack(host)
    with pytest.raises(skein.LogicError, match="copy=False"):
        skein.from_dlpack(host, queue, copy=False)
    a = skein.Array.from_host(queue, host)
    with pytest.raises(BufferError, match="copy=False"):
        a.__dlpack__(dl_device=(KDL_CPU, 0), copy=False)
    with pytest.raises(BufferError, match="neither"):
        a.__dlpack__(dl_device=(7, 0))
    # What a user does next: the array is intact.
    numpy.testing.assert_array_equal(skein.from_dlpack(host, queue).get(), host)


def test_objects_without_a_protocol_are_refused(queue):
    with pytest.raises(skein.LogicError, match="neither __dlpack__ nor __cuda_array_interface__"):
        skein.from_dlpack([1, 2, 3], queue)


@NEEDS_DLPACK
def test_streams_are_cuda_only(queue):
    a = skein.Array.from_host(queue, values((8,), numpy.float32))
    if is_cuda(queue):
        with pytest.raises(skein.LogicError, match="ambiguous"):
            a.__dlpack__(stream=0)
        b = skein.from_dlpack(_Producer(a, stream=1))  # the legacy default stream
    else:
        with pytest.raises(skein.LogicError, match="Pass stream=None"):
            a.__dlpack__(stream=5)
        b = skein.from_dlpack(a)
    numpy.testing.assert_array_equal(b.get(), values((8,), numpy.float32))


class _Producer:
    """A DLPack producer over a skein.Array that passes a fixed stream (as a foreign library's
    consumer would name its own)."""

    def __init__(self, array, stream):
        self.array, self.stream = array, stream

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=self.stream)


# --- The CUDA array interface ---------------------------------------------------------------------

def test_cuda_array_interface_exists_on_cuda_only(queue):
    a = skein.Array.from_host(queue, values((4, 6), numpy.float32))
    if not is_cuda(queue):
        assert not hasattr(a, "__cuda_array_interface__")
        return
    cai = a.__cuda_array_interface__
    assert (cai["version"], cai["shape"], cai["typestr"], cai["strides"]) == (
        3, (4, 6), "<f4", None)
    assert cai["data"][1] is False and cai["data"][0] != 0 and cai["stream"] != 0
    view = a[1:, 2::2]
    assert cuda_pointer(view) == cai["data"][0] + (1 * 6 + 2) * 4
    assert view.__cuda_array_interface__["strides"] == (24, 8)
    assert not hasattr(skein.Array.zeros(queue, 3, skein.bfloat16), "__cuda_array_interface__")


class _CaiOnly:
    """An object with only __cuda_array_interface__ (as Numba's device arrays)."""

    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def test_cuda_array_interface_import_shares_memory(queue):
    if not is_cuda(queue):
        pytest.skip("the CUDA array interface is CUDA's")
    host = values((5, 7), numpy.int32)
    a = skein.Array.from_host(queue, host)
    b = skein.from_dlpack(_CaiOnly(a.T.__cuda_array_interface__), queue)
    assert cuda_pointer(b) == cuda_pointer(a) and b.shape == (7, 5)
    numpy.testing.assert_array_equal(b.get(), host.T)
    with pytest.raises(skein.LogicError, match="does not say its device"):
        skein.from_dlpack(_CaiOnly(a.__cuda_array_interface__))
    readonly = dict(a.__cuda_array_interface__, data=(cuda_pointer(a), True))
    with pytest.raises(skein.LogicError, match="read-only"):
        skein.from_dlpack(_CaiOnly(readonly), queue)


# --- CuPy and PyTorch (the GPU machine) -----------------------------------------------------------

def _cuda_ordinal(queue):
    """The CUDA ordinal of the queue's device (skips on other backends)."""
    if not is_cuda(queue):
        pytest.skip("CuPy and PyTorch share CUDA arrays")
    return skein.Array.zeros(queue, 1, numpy.int8).__dlpack_device__()[1]


@NEEDS_DLPACK
def test_cupy_round_trip_keeps_the_pointer(queue):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (only the GPU machine has it)")
    with cupy.cuda.Device(_cuda_ordinal(queue)):
        _cupy_round_trip(cupy, queue)


def _cupy_round_trip(cupy, queue):
    c = cupy.arange(1000, dtype=cupy.float32).reshape(10, 100)
    s = skein.from_dlpack(c, queue)
    assert cuda_pointer(s) == c.data.ptr and s.shape == (10, 100)
    numpy.testing.assert_array_equal(s.get(), numpy.arange(1000, dtype=numpy.float32)
                                     .reshape(10, 100))
    s.set(values((10, 100), numpy.float32))  # a write through Skein, seen by CuPy
    queue.synchronize()
    for back in (cupy.from_dlpack(s), cupy.asarray(s)):  # DLPack, then the CUDA array interface
        assert back.data.ptr == c.data.ptr
        numpy.testing.assert_array_equal(cupy.asnumpy(back), values((10, 100), numpy.float32))
    del c  # Skein's array keeps CuPy's memory alive
    gc.collect()
    numpy.testing.assert_array_equal(s.get(), values((10, 100), numpy.float32))
    # Without a queue: Skein's default queue of the tensor's device.
    d = skein.from_dlpack(cupy.ones(3, dtype=cupy.int64))
    numpy.testing.assert_array_equal(d.get(), numpy.ones(3, numpy.int64))


@NEEDS_DLPACK
def test_torch_round_trip_keeps_the_pointer(queue):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (only the GPU machine "
                                                "has it)")
    ordinal = _cuda_ordinal(queue)
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    t = torch.arange(12, dtype=torch.float64, device=f"cuda:{ordinal}").reshape(3, 4)
    s = skein.from_dlpack(t, queue)
    assert cuda_pointer(s) == t.data_ptr()
    numpy.testing.assert_array_equal(s.get(), numpy.arange(12.0).reshape(3, 4))
    s.set(values((3, 4), numpy.float64))
    queue.synchronize()
    back = torch.from_dlpack(s)
    assert back.data_ptr() == t.data_ptr()
    numpy.testing.assert_array_equal(back.cpu().numpy(), values((3, 4), numpy.float64))
    # A transposed (strided) tensor keeps its strides.
    st = skein.from_dlpack(t.t(), queue)
    numpy.testing.assert_array_equal(st.get(), values((3, 4), numpy.float64).T)


# --- The guide's examples (docs/examples/*.py in "From Python"), run as written -----------------

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples")


def test_example_python_basics_runs(capsys):
    runpy.run_path(os.path.join(EXAMPLES, "python_basics.py"), run_name="__main__")
    assert "python_basics: OK" in capsys.readouterr().out


@NEEDS_DLPACK
def test_example_cupy_interop_runs(capsys):
    pytest.importorskip("cupy", reason="CuPy is not installed (only the GPU machine has it)")
    if "cuda" not in {api.shortcut for api in skein.API.all_available()}:
        pytest.skip("no CUDA device")
    runpy.run_path(os.path.join(EXAMPLES, "cupy_interop.py"), run_name="__main__")
    assert "cupy_interop: OK" in capsys.readouterr().out
