// SPDX-License-Identifier: BSD-3-Clause
// Zero-copy interop of skein.Array with the other Python array libraries: the DLPack protocol
// (Array.__dlpack__, Array.__dlpack_device__, skein.from_dlpack, after the array API standard) over
// skein::to_dlpack / skein::from_dlpack, and on CUDA the __cuda_array_interface__ (version 3) both
// ways. Host data (NumPy) is copied: a device array cannot be a view of host memory.
//
// Streams. A CUDA consumer names in __dlpack__(stream=S) the stream it will use the tensor on; the
// producer makes S wait for the producer's pending work (an event, no host wait). When Skein is the
// consumer it names its queue's stream, and when it imports a __cuda_array_interface__ that names a
// stream, its queue waits for that stream. OpenCL has no such exchange: an exported OpenCL array's
// queue is synchronised before the capsule is handed out.
//
// Lifetimes. An exported capsule holds the array (and so its memory) until the consumer calls the
// tensor's deleter, or until the capsule dies unconsumed; an imported tensor is owned by the Array
// and its Buffer, whose last handle runs the producer's deleter with the GIL held (producers'
// deleters drop Python references, and Skein may release the last handle with the GIL released).
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#if SKEIN_HAS_CUDA
#include "skein/cuda.hpp"
#endif
#if SKEIN_HAS_DLPACK
#include "skein/dlpack.hpp"
#endif

namespace skein::python {

namespace {

// DLPack's device types (DLDeviceType: fixed by its ABI, so usable without its header).
constexpr int kDeviceCpu = 1, kDeviceCuda = 2, kDeviceCudaHost = 3, kDeviceOpenCL = 4;

ApiId api_of(const Array& a) { return a.queue().context().api().id(); }

// (device type, device id) as __dlpack_device__ gives them: the CUDA ordinal, or for OpenCL the
// device's index in the array's context (skein/dlpack.hpp).
std::pair<int, int> device_of(const Array& a) {
#if SKEIN_HAS_CUDA
  if (api_of(a) == ApiId::cuda) {
    const Device& device = a.queue().context().device(a.device_idx());
    return {kDeviceCuda, static_cast<int>(cuda::native_device(device))};
  }
#endif
  return {kDeviceOpenCL, static_cast<int>(a.device_idx())};
}

// Bytes from the first element to past the last (0 for an empty array).
std::size_t extent_of(const Shape& shape, const Strides& strides, std::size_t itemsize) {
  std::size_t extent = itemsize;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    extent += (shape[i] - 1) * strides[i];
  }
  return extent;
}

// A contiguous device copy of `a` on its queue and device.
Array device_copy(const Array& a) {
  Array copy = Array::empty(a.queue(), a.shape(), a.dtype(), Order::C, a.device_idx());
  copy.set(a);
  return copy;
}

// The queues that skein.from_dlpack uses when it is given none, one per CUDA device, made on first
// use over the device's primary context (the one CuPy and PyTorch use), kept in the module.
Queue default_cuda_queue(int ordinal, const char* call) {
  py::module_ m = py::module_::import("skein._skein");
  if (!py::hasattr(m, "_default_queues")) m.attr("_default_queues") = py::dict();
  py::dict queues = m.attr("_default_queues");
  const py::int_ key(ordinal);
  if (queues.contains(key)) return queues[key].cast<Queue>();
#if SKEIN_HAS_CUDA
  for (const Platform& platform : Api::from_id(ApiId::cuda).platforms()) {
    for (const Device& device : platform.devices()) {
      if (static_cast<int>(cuda::native_device(device)) == ordinal) {
        Queue queue(Context::from_devices(device));
        queues[key] = py::cast(queue);
        return queue;
      }
    }
  }
#endif
  raise_argument(call,
                 "the tensor is on CUDA device " + std::to_string(ordinal) +
                     ", which this Skein build or machine does not have",
                 "Pass queue= on the tensor's device, or check skein.API.status().");
}

#if SKEIN_HAS_CUDA
// The CUstream that an int names in the protocols: 1 the legacy default stream, 2 the per-thread
// default stream, anything else a stream handle (0 is refused by both protocols as ambiguous).
CUstream to_stream(const py::handle& value, const char* call) {
  if (!py::isinstance<py::int_>(value)) {
    raise_argument(
        call, "stream must be None or an int; got '" + py::str(value).cast<std::string>() + "'",
        "Pass the stream's handle as an int (cupy: stream.ptr; torch: stream.cuda_stream).");
  }
  const auto s = value.cast<std::intptr_t>();
  if (s == 0) {
    raise_argument(call, "stream 0 is ambiguous (the protocols disallow it)",
                   "Pass 1 for the legacy default stream, 2 for the per-thread one, or a handle.");
  }
  if (s == 1) return CU_STREAM_LEGACY;
  if (s == 2) return CU_STREAM_PER_THREAD;
  return reinterpret_cast<CUstream>(s);
}

// The int that names a queue's stream in the protocols (a null handle is the legacy stream: 1).
py::int_ stream_value(const Queue& queue, std::size_t device_idx) {
  const auto s = reinterpret_cast<std::intptr_t>(cuda::native_stream(queue, device_idx));
  return py::int_(s == 0 ? 1 : s);
}

// Makes later work on `waiter` wait for the work enqueued so far on `done` (an event: no host
// wait).
void order(const Queue& done, CUstream waiter, std::size_t device_idx) {
  if (cuda::native_stream(done, device_idx) == waiter) return;
  const Queue theirs = cuda::queue_from_native(done.context(), {device_idx}, std::span(&waiter, 1));
  theirs.wait_for(done.record_event(device_idx), device_idx);
}
void order(CUstream done, const Queue& waiter, std::size_t device_idx) {
  if (cuda::native_stream(waiter, device_idx) == done) return;
  const Queue theirs = cuda::queue_from_native(waiter.context(), {device_idx}, std::span(&done, 1));
  waiter.wait_for(theirs.record_event(device_idx), device_idx);
}
#endif

// --- __dlpack__ and __dlpack_device__
// -------------------------------------------------------------

#if SKEIN_HAS_DLPACK
// The capsule's destructor: a capsule still named "dltensor" was never consumed, so its tensor is
// still the producer's to delete; a consumer renamed it "used_dltensor" and owns the tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  auto* tensor = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (tensor == nullptr) {
    PyErr_WriteUnraisable(capsule);
  } else if (tensor->deleter != nullptr) {
    tensor->deleter(tensor);
  }
  PyErr_Restore(type, value, traceback);
}

py::object to_capsule(const Array& a) {
  DLManagedTensor* tensor = skein::to_dlpack(a);
  PyObject* capsule = PyCapsule_New(tensor, "dltensor", &capsule_destructor);
  if (capsule == nullptr) {
    tensor->deleter(tensor);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}
#endif

// Makes the consumer's `stream` (the protocol's value) wait for the array's pending work.
void ready_for_consumer(const Array& a, const py::object& stream) {
  constexpr const char* call = "Array.__dlpack__";
#if SKEIN_HAS_CUDA
  if (api_of(a) == ApiId::cuda) {
    // None: the consumer gave no stream, and the standard says the legacy default stream then.
    if (!stream.is_none() && py::isinstance<py::int_>(stream) && stream.cast<long long>() == -1) {
      return;  // -1: the consumer asks for no synchronisation.
    }
    const CUstream s = stream.is_none() ? CU_STREAM_LEGACY : to_stream(stream, call);
    order(a.queue(), s, a.device_idx());
    return;
  }
#endif
  if (!stream.is_none()) {
    raise_argument(call,
                   "stream=" + py::str(stream).cast<std::string>() + " was given for an array of " +
                       std::string(name(api_of(a))),
                   "Pass stream=None: only CUDA has streams to exchange; the array's queue is "
                   "synchronised before the tensor is handed out.");
  }
  const py::gil_scoped_release release;
  a.queue().synchronize(a.device_idx());
}

py::object array_dlpack(const Array& a, const py::object& stream, const py::object& max_version,
                        const py::object& dl_device, const py::object& copy) {
  (void)max_version;  // Only unversioned capsules ("dltensor"), which the standard lets a
                      // producer return whatever version the consumer could take.
  const bool must_copy = !copy.is_none() && copy.cast<bool>();
  const bool may_copy = copy.is_none() || must_copy;
  if (!dl_device.is_none()) {
    const auto wanted = dl_device.cast<std::pair<int, int>>();
    if (wanted.first == kDeviceCpu) {
      // A host copy, as NumPy >= 2.1's from_dlpack(x, device="cpu") asks for: a NumPy array's own
      // capsule (the copy is the consumer's).
      if (!may_copy) {
        throw py::buffer_error(
            "skein: Array.__dlpack__: a device array reaches the host only as "
            "a copy, and copy=False was given. Pass copy=None or True.");
      }
      return py::cast(a).attr("get")().attr("__dlpack__")();
    }
    if (wanted != device_of(a)) {
      throw py::buffer_error("skein: Array.__dlpack__: dl_device (" + std::to_string(wanted.first) +
                             ", " + std::to_string(wanted.second) +
                             ") is neither the array's device nor the host. Copy the array to "
                             "that device with Skein first.");
    }
  }
#if SKEIN_HAS_DLPACK
  const Array exported = must_copy ? device_copy(a) : a;
  ready_for_consumer(exported, stream);
  return to_capsule(exported);
#else
  (void)stream;
  raise_argument("Array.__dlpack__",
                 "this build of Skein has no DLPack (SKEIN_WITH_DLPACK found no dlpack.h)",
                 "Rebuild with Debian's libdlpack-dev installed, or use "
                 "__cuda_array_interface__ on CUDA.");
#endif
}

// --- __cuda_array_interface__
// ---------------------------------------------------------------------

py::dict array_cai(const Array& a) {
#if SKEIN_HAS_CUDA
  if (api_of(a) == ApiId::cuda) {
    if (a.dtype() == Dtype::bfloat16) {
      // An AttributeError, so that hasattr() is False and consumers take the DLPack path.
      throw py::attribute_error(
          "skein: Array.__cuda_array_interface__: bfloat16 has no typestr; "
          "use DLPack (__dlpack__), which describes it");
    }
    py::dict cai;
    cai["shape"] = to_tuple(a.shape());
    cai["typestr"] = to_numpy(a.dtype()).attr("str");
    const CUdeviceptr base = cuda::native_pointer(a.data());
    cai["data"] = py::make_tuple(py::int_(base == 0 ? 0 : base + a.offset()), false);
    cai["strides"] = a.strides() == contiguous_strides(a.shape(), a.itemsize())
                         ? py::object(py::none())
                         : py::object(to_tuple(a.strides()));
    cai["version"] = 3;
    // The consumer synchronises with this stream before it touches the data.
    cai["stream"] = stream_value(a.queue(), a.device_idx());
    return cai;
  }
#endif
  throw py::attribute_error(
      "skein: Array.__cuda_array_interface__: only CUDA arrays have it (this "
      "one is on " +
      std::string(name(api_of(a))) + "); use DLPack (__dlpack__) for other devices");
}

// --- import
// ------------------------------------------------------------------------------------------

#if SKEIN_HAS_DLPACK
// The wrapper Skein owns around an imported tensor: its deleter runs the producer's with the GIL.
struct Imported {
  DLManagedTensor tensor{};
  DLManagedTensor* original = nullptr;
};

void imported_deleter(DLManagedTensor* self) {
  auto* imported = static_cast<Imported*>(self->manager_ctx);
  DLManagedTensor* original = imported->original;
  delete imported;
  // After the interpreter's end the producer's objects are gone: nothing left to release.
  if (original->deleter == nullptr || Py_IsInitialized() == 0) return;
  const py::gil_scoped_acquire gil;
  original->deleter(original);
}

// An Array over a "dltensor" capsule's tensor on `queue`; the capsule is renamed "used_dltensor"
// once Skein owns the tensor (on an error it stays the capsule's, which deletes it).
Array import_capsule(const py::object& capsule, const Queue& queue) {
  constexpr const char* call = "skein.from_dlpack";
  PyObject* c = capsule.ptr();
  if (!PyCapsule_IsValid(c, "dltensor")) {
    const char* got = PyCapsule_GetName(c);
    PyErr_Clear();
    const std::string name = got != nullptr ? got : "(none)";
    raise_argument(
        call, "the capsule is named '" + name + "', not 'dltensor'",
        name == "used_dltensor"
            ? "A capsule is consumed once: ask the producer for a new one."
            : "Pass an unversioned DLPack capsule (call __dlpack__ without max_version).");
  }
  auto* original = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
  auto* imported = new Imported;
  imported->original = original;
  imported->tensor.dl_tensor = original->dl_tensor;
  imported->tensor.manager_ctx = imported;
  imported->tensor.deleter = &imported_deleter;
  std::optional<Array> array;
  try {
    array = skein::from_dlpack(queue, &imported->tensor);
  } catch (...) {
    delete imported;
    throw;
  }
  PyCapsule_SetName(c, "used_dltensor");
  return *array;
}
#endif

#if SKEIN_HAS_CUDA
// An Array over the memory that `obj`'s __cuda_array_interface__ describes, on `queue` (a CUDA
// queue over the memory's device); the Array keeps `obj` alive.
Array import_cai(const py::object& obj, const Queue& queue) {
  constexpr const char* call = "skein.from_dlpack";
  const py::dict cai = obj.attr("__cuda_array_interface__");
  if (queue.context().api().id() != ApiId::cuda) {
    raise_argument(call,
                   "a __cuda_array_interface__ object was given a " +
                       std::string(name(queue.context().api().id())) + " queue",
                   "Pass a CUDA queue on the object's device.");
  }
  if (cai.contains("mask") && !cai["mask"].is_none()) {
    raise_argument(call, "the object has a mask",
                   "Fill the masked values and pass the data alone.");
  }
  const py::tuple data = cai["data"];
  if (data[1].cast<bool>()) {
    raise_argument(call, "the object's memory is read-only and Skein's arrays are writable",
                   "Copy it into a writable array first.");
  }
  const auto pointer = data[0].cast<std::uintptr_t>();
  const Dtype dtype = to_dtype(py::dtype(cai["typestr"].cast<std::string>()), call);
  const Shape shape = to_shape(cai["shape"], call);
  const std::size_t es = itemsize(dtype);
  Strides strides = contiguous_strides(shape, es);
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    const py::tuple given = cai["strides"];
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const auto s = given[i].cast<long long>();
      if (s < 0) {
        raise_argument(call,
                       "stride " + std::to_string(i) + " is negative (" + std::to_string(s) + ")",
                       "Copy the object into a layout without negative strides first.");
      }
      strides[i] = static_cast<std::size_t>(s);
    }
  }
  const std::size_t extent = extent_of(shape, strides, es);
  // The producer's stream (version 3): Skein's queue waits for its pending work.
  const py::object stream = cai.contains("stream") ? py::object(cai["stream"]) : py::none();
  // The object stays alive while the Buffer does; its reference is dropped with the GIL.
  auto keep = std::shared_ptr<py::object>(new py::object(obj), [](py::object* o) {
    if (Py_IsInitialized() == 0) return;
    const py::gil_scoped_acquire gil;
    delete o;
  });
  std::exception_ptr first;
  for (std::size_t d : queue.device_idxs()) {
    Buffer buffer;
    try {
      buffer =
          cuda::buffer_from_native(queue.context(), d, extent ? pointer : 0, extent, [keep] {});
    } catch (const LogicError&) {
      if (!first) first = std::current_exception();
      continue;  // Not this device's memory: the next device of the queue.
    }
    if (!stream.is_none()) order(to_stream(stream, call), queue, d);
    return Array(queue, std::move(buffer), shape, dtype, strides, 0);
  }
  std::rethrow_exception(first);
}
#endif

Queue queue_for(const py::object& obj, const py::object& queue, std::pair<int, int> device,
                const char* call) {
  if (!queue.is_none()) return queue.cast<Queue>();
  if (py::isinstance<Array>(obj)) return obj.cast<const Array&>().queue();
  if (device.first == kDeviceCuda) return default_cuda_queue(device.second, call);
  raise_argument(call,
                 "the tensor is on DLPack device type " + std::to_string(device.first) +
                     ", for which Skein has no default queue",
                 "Pass queue=: a skein.Queue over the tensor's device.");
}

Array from_dlpack(const py::object& obj, const py::object& queue_obj, const py::object& copy) {
  constexpr const char* call = "skein.from_dlpack";
  const bool must_copy = !copy.is_none() && copy.cast<bool>();
  const bool may_copy = copy.is_none() || must_copy;
  const bool has_dlpack = py::hasattr(obj, "__dlpack__") && py::hasattr(obj, "__dlpack_device__");
#if SKEIN_HAS_CUDA
  // Objects with only the CUDA array interface (Numba's, older CuPy's).
  if (!has_dlpack && py::hasattr(obj, "__cuda_array_interface__")) {
    if (queue_obj.is_none()) {
      raise_argument(call, "a __cuda_array_interface__ object does not say its device",
                     "Pass queue=: a CUDA skein.Queue over the object's device.");
    }
    const Array a = import_cai(obj, queue_obj.cast<Queue>());
    return must_copy ? device_copy(a) : a;
  }
#endif
#if SKEIN_HAS_DLPACK
  // A bare capsule (torch.utils.dlpack.to_dlpack, cupy.ndarray.toDlpack): its producer's streams
  // are the caller's to order.
  if (PyCapsule_CheckExact(obj.ptr()) != 0) {
    if (queue_obj.is_none()) {
      raise_argument(call, "a bare DLPack capsule was given without a queue",
                     "Pass queue=, or pass the array itself (it has __dlpack__).");
    }
    const Array a = import_capsule(obj, queue_obj.cast<Queue>());
    return must_copy ? device_copy(a) : a;
  }
#endif
  if (!has_dlpack) {
    raise_argument(call,
                   "a '" + py::str(py::type::of(obj).attr("__name__")).cast<std::string>() +
                       "' has neither __dlpack__ nor __cuda_array_interface__",
                   "Pass a DLPack array (CuPy, PyTorch, JAX, NumPy, skein.Array); for other host "
                   "data use skein.Array.from_host(queue, numpy.asarray(data)).");
  }
  const auto device = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
  if (device.first == kDeviceCpu || device.first == kDeviceCudaHost) {
    // Host memory cannot back a device array: the values are copied, as copy=None allows.
    if (!may_copy) {
      raise_argument(call, "the tensor is in host memory and copy=False was given",
                     "A device array over host memory is impossible: pass copy=None (a copy).");
    }
    if (queue_obj.is_none()) {
      raise_argument(call, "a host tensor was given without a queue to copy it to",
                     "Pass queue=: the skein.Queue whose device receives the copy.");
    }
    const py::object host = py::module_::import("numpy").attr("from_dlpack")(obj);
    return py::module_::import("skein._skein")
        .attr("Array")
        .attr("from_host")(queue_obj, host)
        .cast<Array>();
  }
#if SKEIN_HAS_DLPACK
  const Queue queue = queue_for(obj, queue_obj, device, call);
  py::object capsule;
#if SKEIN_HAS_CUDA
  if (device.first == kDeviceCuda && queue.context().api().id() == ApiId::cuda) {
    // The producer orders its work before Skein's stream on the tensor's device (when the queue
    // has it; from_dlpack names the mismatch otherwise).
    std::optional<std::size_t> d;
    for (std::size_t i : queue.device_idxs()) {
      if (static_cast<int>(cuda::native_device(queue.context().device(i))) == device.second) d = i;
    }
    if (d) capsule = obj.attr("__dlpack__")(py::arg("stream") = stream_value(queue, *d));
  }
#endif
  if (!capsule) capsule = obj.attr("__dlpack__")();
  const Array a = import_capsule(capsule, queue);
  return must_copy ? device_copy(a) : a;
#else
  (void)device;
  raise_argument(call, "this build of Skein has no DLPack (SKEIN_WITH_DLPACK found no dlpack.h)",
                 "Rebuild with Debian's libdlpack-dev installed.");
#endif
}

}  // namespace

void bind_interop(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::object>(py::type::of<Array>());
  cls.attr("__dlpack__") = py::cpp_function(
      &array_dlpack, py::name("__dlpack__"), py::is_method(cls), py::kw_only(),
      py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
      py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
      "A DLPack capsule over the array's memory (no copy; the array API standard's protocol).\n\n"
      "stream: on CUDA the consumer's stream (1 legacy default, 2 per-thread default, a handle,\n"
      "None for the legacy default, -1 for no ordering), which is made to wait for the array's\n"
      "pending work; elsewhere None (the array's queue is synchronised first). dl_device=(1, 0)\n"
      "gives a host copy; copy=True a device copy.");
  cls.attr("__dlpack_device__") = py::cpp_function(
      [](const Array& a) { return py::make_tuple(device_of(a).first, device_of(a).second); },
      py::name("__dlpack_device__"), py::is_method(cls),
      "(device type, device id): (2, CUDA ordinal) on CUDA, (4, device index in the context) on "
      "OpenCL.");
  cls.attr("__cuda_array_interface__") =
      py::module_::import("builtins")
          .attr("property")(py::cpp_function(&array_cai, py::is_method(cls)), py::none(),
                            py::none(),
                            "The CUDA array interface (version 3), on CUDA arrays only (an "
                            "AttributeError elsewhere): "
                            "shape, typestr, data (pointer, False), strides (None when "
                            "C-contiguous), stream (the "
                            "array's queue's stream, to synchronise with before use).");
  m.def("from_dlpack", &from_dlpack, py::arg("obj"), py::arg("queue") = py::none(), py::kw_only(),
        py::arg("copy") = py::none(),
        "A skein.Array over another library's device array, without a copy: anything with "
        "__dlpack__ (CuPy, PyTorch, JAX, skein.Array), a bare DLPack capsule, or on CUDA an "
        "object with __cuda_array_interface__ (Numba). The Array keeps the producer's memory "
        "alive. queue: the skein.Queue to use (a CUDA tensor gets, without one, a default queue "
        "of its device; a skein.Array its own). Host tensors (NumPy) are copied to queue's device "
        "(copy=False refuses that); copy=True always copies.");
}

}  // namespace skein::python
