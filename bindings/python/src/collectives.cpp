// SPDX-License-Identifier: BSD-3-Clause
// skein.Runtime (MPI started by Skein, adopted from mpi4py, or one rank without MPI) and
// skein.Communicator with its collectives over skein.Array (one per local device). Every call that
// waits for other ranks or for the device releases the GIL: a rank's other Python threads run
// meanwhile (and the MPI backend's collectives return only once the data has moved).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dist_common.hpp"
#include "skein/communicator.hpp"
#include "skein/runtime.hpp"

namespace skein::python {

ReduceOp to_reduce_op(const py::handle& obj, const char* call) {
  if (py::isinstance<ReduceOp>(obj)) return obj.cast<ReduceOp>();
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (s == name(op)) return op;
    }
  }
  raise_argument(call, "op " + py::repr(obj).cast<std::string>() + " is not a reduce operation",
                 "Give 'sum', 'prod', 'min', 'max', 'avg' or a skein.ReduceOp.");
}

std::vector<Array> to_arrays(const py::handle& obj, const char* call) {
  if (py::isinstance<Array>(obj)) return {obj.cast<Array>()};
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    std::vector<Array> out;
    for (const auto item : obj.cast<py::sequence>()) {
      if (!py::isinstance<Array>(item)) {
        raise_argument(call, "an element of the list is " + py::repr(item).cast<std::string>(),
                       "Pass a skein.Array or a list of them, one per local device.");
      }
      out.push_back(item.cast<Array>());
    }
    return out;
  }
  raise_argument(call, "got " + py::repr(obj).cast<std::string>() + ", not arrays",
                 "Pass a skein.Array or a list of them, one per local device.");
}

Operand to_scalar_operand(const py::handle& obj, const char* call) {
  if (py::isinstance<py::bool_>(obj)) {
    raise_argument(call, "a bool is not a kernel operand", "Pass 0 or 1 (an int).");
  }
  if (py::isinstance<py::int_>(obj)) return Operand(obj.cast<std::int64_t>());
  if (py::isinstance<py::float_>(obj)) return Operand(obj.cast<double>());
  if (PyComplex_Check(obj.ptr()) != 0) return Operand(obj.cast<std::complex<double>>());
  if (py::isinstance<py::array>(obj) || py::hasattr(obj, "dtype")) {
    const py::array a = py::array::ensure(obj);
    if (a && a.ndim() == 0) {
      const Dtype dtype = to_dtype(a.dtype(), call);
      if (is_complex(dtype)) {
        return Operand::typed(dtype, py::reinterpret_borrow<py::object>(obj)
                                         .attr("__complex__")()
                                         .cast<std::complex<double>>());
      }
      if (is_integer(dtype)) {
        return Operand::typed_int(
            dtype, py::int_(py::reinterpret_borrow<py::object>(obj)).cast<std::int64_t>());
      }
      return Operand::typed(dtype, py::float_(py::reinterpret_borrow<py::object>(obj)));
    }
  }
  raise_argument(call, "operand " + py::repr(obj).cast<std::string>() + " is not a scalar",
                 "Pass a distributed array, a Python number or a NumPy scalar (or, to skein.dist's "
                 "calls, a list of skein.Array, one per local member, as the *_to_devices calls "
                 "return them).");
}

std::span<const std::byte> root_host_bytes(const py::handle& host, Dtype dtype, const Shape& shape,
                                           py::array& keep, std::string& problem,
                                           const char* call) {
  // A span whose size cannot be the array's (one byte more), so that the call fails everywhere.
  static const std::byte wrong[1] = {};
  const std::size_t nbytes = shape_size(shape) * itemsize(dtype);
  if (host.is_none()) {
    problem = "the root rank's host array is None";
    return nbytes == 0 ? std::span<const std::byte>(wrong) : std::span<const std::byte>();
  }
  keep = py::array::ensure(host, py::array::c_style);
  if (!keep) throw py::error_already_set();
  const Shape given(keep.shape(), keep.shape() + keep.ndim());
  const Dtype given_dtype = to_dtype(keep.dtype(), call);
  if (given_dtype != dtype || given != shape) {
    problem = "the root rank's host array is " + to_string(given) + " " +
              std::string(name(given_dtype)) + ", not the distributed array's " + to_string(shape) +
              " " + std::string(name(dtype));
    return nbytes == 0 ? std::span<const std::byte>(wrong) : std::span<const std::byte>();
  }
  return {static_cast<const std::byte*>(keep.data()), static_cast<std::size_t>(keep.nbytes())};
}

py::array to_host_array(const std::vector<std::byte>& bytes, Dtype dtype, const Shape& shape) {
  py::array out(to_numpy(dtype), std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

namespace {

ApiId to_api_id(const py::handle& obj) {
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (s == "cuda") return ApiId::cuda;
    if (s == "opencl") return ApiId::opencl;
  } else if (py::hasattr(obj, "id")) {
    return obj.attr("id").cast<ApiId>();
  }
  raise_argument("Runtime", "api " + py::repr(obj).cast<std::string>() + " is not an API",
                 "Give 'cuda', 'opencl', a skein.API, or None (SKEIN_API, else CUDA first).");
}

PlacementOptions placement(const py::object& api, const py::object& devices_per_rank,
                           const py::object& device_index, const py::object& share_devices,
                           const py::object& device_masks) {
  PlacementOptions p;
  if (!api.is_none()) p.api = to_api_id(api);
  if (!devices_per_rank.is_none()) p.devices_per_rank = devices_per_rank.cast<std::size_t>();
  if (!device_index.is_none()) p.device_index = device_index.cast<std::size_t>();
  if (!share_devices.is_none()) p.share_devices = share_devices.cast<bool>();
  if (!device_masks.is_none()) {
    p.device_masks = py::isinstance<py::str>(device_masks)
                         ? std::vector<std::string>{device_masks.cast<std::string>()}
                         : device_masks.cast<std::vector<std::string>>();
  }
  return p;
}

#if SKEIN_HAS_MPI
// An mpi4py communicator (its py2f() handle) or a Fortran integer handle as an MPI_Comm.
MPI_Comm to_mpi_comm(const py::handle& comm, const char* call) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    raise_argument(call, "MPI is not initialised",
                   "Import mpi4py.MPI first (it initialises MPI), or make skein.Runtime() "
                   "without comm, which starts MPI itself.");
  }
  MPI_Fint handle = 0;
  if (py::hasattr(comm, "py2f")) {
    handle = comm.attr("py2f")().cast<MPI_Fint>();
  } else if (py::isinstance<py::int_>(comm)) {
    handle = comm.cast<MPI_Fint>();
  } else {
    raise_argument(call, "comm " + py::repr(comm).cast<std::string>() + " is not a communicator",
                   "Pass an mpi4py communicator (MPI.COMM_WORLD, comm.Split(...)) or a Fortran "
                   "integer handle.");
  }
  const MPI_Comm c = MPI_Comm_f2c(handle);
  if (c == MPI_COMM_NULL) {
    raise_argument(call, "comm is MPI_COMM_NULL", "Pass a valid communicator.");
  }
  return c;
}

// An MPI communicator as an mpi4py one when mpi4py imports (a handle that does not own it), else
// as its Fortran integer handle.
py::object from_mpi_comm(MPI_Comm comm) {
  const MPI_Fint handle = MPI_Comm_c2f(comm);
  try {
    return py::module_::import("mpi4py.MPI").attr("Comm").attr("f2py")(handle);
  } catch (const py::error_already_set&) {
    return py::int_(handle);
  }
}
#endif

std::unique_ptr<Runtime> make_runtime(const py::object& comm, bool mpi, PlacementOptions p) {
#if SKEIN_HAS_MPI
  if (!comm.is_none()) {
    const MPI_Comm c = to_mpi_comm(comm, "Runtime");
    const py::gil_scoped_release release;
    return std::make_unique<Runtime>(c, p);
  }
  if (mpi) {
    const py::gil_scoped_release release;
    return std::make_unique<Runtime>(nullptr, nullptr, p);
  }
#else
  if (!comm.is_none()) {
    raise_argument("Runtime", "this Skein was built without MPI, so it cannot adopt comm",
                   "Rebuild Skein with MPI (SKEIN_WITH_MPI), or make Runtime(mpi=False).");
  }
  (void)mpi;
#endif
  return std::make_unique<Runtime>(p);
}

void bind_runtime(py::module_& m) {
  py::class_<Runtime, std::unique_ptr<Runtime>>(
      m, "Runtime", py::dynamic_attr(),
      "This rank's runtime: MPI (started, or adopted from mpi4py), its place on the node and its "
      "devices (SKEIN_API, SKEIN_DEVICES, SKEIN_DEVICES_PER_RANK, ... fill what is not given).")
      .def(py::init([](const py::object& comm, bool mpi, const py::object& api,
                       const py::object& devices_per_rank, const py::object& device_index,
                       const py::object& share_devices, const py::object& device_masks) {
             return make_runtime(
                 comm, mpi,
                 placement(api, devices_per_rank, device_index, share_devices, device_masks));
           }),
           py::arg("comm") = py::none(), py::kw_only(), py::arg("mpi") = true,
           py::arg("api") = py::none(), py::arg("devices_per_rank") = py::none(),
           py::arg("device_index") = py::none(), py::arg("share_devices") = py::none(),
           py::arg("device_masks") = py::none(),
           "comm: an mpi4py communicator to adopt (Skein works on its own duplicate and never "
           "finalises MPI); None: MPI_COMM_WORLD, starting MPI unless it runs (then Skein "
           "finalises it when the Runtime goes). mpi=False: one rank without MPI.")
      .def_property_readonly("rank", &Runtime::rank)
      .def_property_readonly("size", &Runtime::size)
      .def_property_readonly("local_rank", &Runtime::local_rank)
      .def_property_readonly("local_size", &Runtime::local_size)
      .def_property_readonly("host", &Runtime::host)
      .def_property_readonly("uses_mpi", &Runtime::uses_mpi)
      .def_property_readonly("initialised_mpi", &Runtime::initialised_mpi)
      .def_property_readonly("context", &Runtime::context, "This rank's devices, in one context.")
      .def_property_readonly(
          "devices", [](const Runtime& r) { return r.context().devices(); },
          "This rank's devices (skein.Device).")
      .def_property_readonly(
          "queue",
          [](const py::object& self) {
            // One queue over the rank's devices, made at the first use and kept.
            if (!py::hasattr(self, "_queue")) {
              self.attr("_queue") = py::cast(Queue(self.cast<const Runtime&>().context()));
            }
            return self.attr("_queue");
          },
          "A queue over this rank's devices (the same one at every use).")
      .def_property_readonly("placement_table", &Runtime::placement_table)
#if SKEIN_HAS_MPI
      .def_property_readonly(
          "comm", [](const Runtime& r) { return from_mpi_comm(r.comm()); },
          "Skein's own duplicate of the communicator, as an mpi4py communicator (its Fortran "
          "handle when mpi4py is missing): for the application's own MPI calls beside Skein's.")
      .def_property_readonly("fortran_comm",
                             [](const Runtime& r) { return MPI_Comm_c2f(r.comm()); })
#endif
      .def("__repr__", [](const Runtime& r) {
        return "<skein.Runtime rank " + std::to_string(r.rank()) + " of " +
               std::to_string(r.size()) + ", " + std::to_string(r.context().num_devices()) +
               " device(s)" + (r.uses_mpi() ? "" : ", no MPI") + ">";
      });
}

CommunicatorOptions communicator_options(const py::object& backend, const py::object& timeout,
                                         const py::object& check_agreement,
                                         const py::object& nccl_blocking) {
  CommunicatorOptions o;
  if (!backend.is_none()) {
    const auto s = backend.cast<std::string>();
    if (s == "nccl") {
      o.backend = CollectiveBackend::nccl;
    } else if (s == "mpi") {
      o.backend = CollectiveBackend::mpi;
    } else if (s == "automatic") {
      o.backend = CollectiveBackend::automatic;
    } else {
      raise_argument("Communicator", "backend '" + s + "' is not one Skein has",
                     "Give 'automatic', 'nccl', 'mpi' or None (SKEIN_BACKEND).");
    }
  }
  if (!timeout.is_none()) o.timeout_seconds = timeout.cast<double>();
  if (!check_agreement.is_none()) o.check_agreement = check_agreement.cast<bool>();
  if (!nccl_blocking.is_none()) o.nccl_blocking = nccl_blocking.cast<bool>();
  return o;
}

using Events = std::vector<Event>;

// The collectives: arrays converted while the GIL is held, then the call without it.
void bind_collective_calls(py::class_<Communicator>& c) {
  c.def(
       "all_reduce",
       [](Communicator& self, const Queue& q, const py::object& send, const py::object& recv,
          const py::object& op) {
         const auto s = to_arrays(send, "Communicator.all_reduce");
         const auto r = recv.is_none() ? s : to_arrays(recv, "Communicator.all_reduce");
         const ReduceOp o = to_reduce_op(op, "Communicator.all_reduce");
         const py::gil_scoped_release release;
         return self.all_reduce(q, s, r, o);
       },
       py::arg("queue"), py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = "sum",
       "Reduces every member's `send` into every member's `recv` (recv=None: in place). Arrays: "
       "one per local device (or one skein.Array when the rank has one device). Returns one "
       "event per local device.")
      .def(
          "all_gather",
          [](Communicator& self, const Queue& q, const py::object& send, const py::object& recv) {
            const auto s = to_arrays(send, "Communicator.all_gather");
            const auto r = to_arrays(recv, "Communicator.all_gather");
            const py::gil_scoped_release release;
            return self.all_gather(q, s, r);
          },
          py::arg("queue"), py::arg("send"), py::arg("recv"),
          "Every member's `send` (n elements) into every member's `recv` (size * n elements), in "
          "member order.")
      .def(
          "broadcast",
          [](Communicator& self, const Queue& q, const py::object& data, int root) {
            const auto d = to_arrays(data, "Communicator.broadcast");
            const py::gil_scoped_release release;
            return self.broadcast(q, d, root);
          },
          py::arg("queue"), py::arg("data"), py::arg("root") = 0,
          "The root member's `data` to every member's `data`.")
      .def(
          "reduce",
          [](Communicator& self, const Queue& q, const py::object& send, const py::object& recv,
             const py::object& op, int root) {
            const auto s = to_arrays(send, "Communicator.reduce");
            const auto r = recv.is_none() ? s : to_arrays(recv, "Communicator.reduce");
            const ReduceOp o = to_reduce_op(op, "Communicator.reduce");
            const py::gil_scoped_release release;
            return self.reduce(q, s, r, o, root);
          },
          py::arg("queue"), py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = "sum",
          py::arg("root") = 0,
          "The reduction into the root member's `recv` (others' are not written).")
      .def(
          "reduce_scatter",
          [](Communicator& self, const Queue& q, const py::object& send, const py::object& recv,
             const py::object& op) {
            const auto s = to_arrays(send, "Communicator.reduce_scatter");
            const auto r = to_arrays(recv, "Communicator.reduce_scatter");
            const ReduceOp o = to_reduce_op(op, "Communicator.reduce_scatter");
            const py::gil_scoped_release release;
            return self.reduce_scatter(q, s, r, o);
          },
          py::arg("queue"), py::arg("send"), py::arg("recv"), py::arg("op") = "sum",
          "`send` has size * n elements; member r receives the reduction of block r.")
      .def(
          "all_to_all",
          [](Communicator& self, const Queue& q, const py::object& send, const py::object& recv) {
            const auto s = to_arrays(send, "Communicator.all_to_all");
            const auto r = to_arrays(recv, "Communicator.all_to_all");
            const py::gil_scoped_release release;
            return self.all_to_all(q, s, r);
          },
          py::arg("queue"), py::arg("send"), py::arg("recv"),
          "Block j of every member's `send` to member j's `recv`, at block i.")
      .def(
          "send",
          [](Communicator& self, const Queue& q, const Array& data, int peer,
             std::size_t local_device) {
            const py::gil_scoped_release release;
            return self.send(q, local_device, data, peer);
          },
          py::arg("queue"), py::arg("data"), py::arg("peer"), py::arg("local_device") = 0,
          "This rank's `local_device` sends `data` to member `peer`.")
      .def(
          "recv",
          [](Communicator& self, const Queue& q, const Array& data, int peer,
             std::size_t local_device) {
            const py::gil_scoped_release release;
            return self.recv(q, local_device, data, peer);
          },
          py::arg("queue"), py::arg("data"), py::arg("peer"), py::arg("local_device") = 0,
          "This rank's `local_device` receives `data` from member `peer`.")
      .def(
          "barrier",
          [](Communicator& self, const Queue& q) {
            const py::gil_scoped_release release;
            self.barrier(q);
          },
          py::arg("queue"), "Returns when every member has reached it.");
}

void bind_communicator(py::module_& m) {
  py::class_<Communicator> c(
      m, "Communicator",
      "Collectives over every device of every rank: members are (rank, local device) pairs, "
      "numbered rank by rank. NCCL for CUDA devices, MPI (staged through the host) for any.");
  c.def(py::init([](const Runtime& runtime, const py::object& backend, const py::object& timeout,
                    const py::object& check_agreement, const py::object& nccl_blocking) {
          const auto o = communicator_options(backend, timeout, check_agreement, nccl_blocking);
          const py::gil_scoped_release release;
          return Communicator(runtime, o);
        }),
        py::arg("runtime"), py::kw_only(), py::arg("backend") = py::none(),
        py::arg("timeout") = py::none(), py::arg("check_agreement") = py::none(),
        py::arg("nccl_blocking") = py::none(), py::keep_alive<1, 2>(),
        "Over every rank of the runtime and each rank's devices. backend 'automatic', 'nccl' or "
        "'mpi'; timeout in seconds (0: none); None: the SKEIN_* variables' values, else defaults.")
#if SKEIN_HAS_MPI
      .def_static(
          "from_mpi",
          [](const py::object& comm, const Context& context, std::vector<std::size_t> device_idxs,
             const py::object& backend, const py::object& timeout,
             const py::object& check_agreement) {
            const MPI_Comm mc = to_mpi_comm(comm, "Communicator.from_mpi");
            const auto o = communicator_options(backend, timeout, check_agreement, py::none());
            const py::gil_scoped_release release;
            return Communicator(mc, context, std::move(device_idxs), o);
          },
          py::arg("comm"), py::arg("context"), py::arg("device_idxs") = std::vector<std::size_t>{},
          py::kw_only(), py::arg("backend") = py::none(), py::arg("timeout") = py::none(),
          py::arg("check_agreement") = py::none(),
          "Over the ranks of an mpi4py communicator and the given devices of `context` (all "
          "when empty). MPI must run (mpi4py started it, or a skein.Runtime).")
      .def_property_readonly(
          "mpi_comm", [](const Communicator& self) { return from_mpi_comm(self.mpi_comm()); },
          "Skein's MPI communicator over these ranks (mpi4py; never free it).")
#endif
      .def_property_readonly("size", &Communicator::size, "Members (devices over all ranks).")
      .def_property_readonly("local_size", &Communicator::local_size, "This rank's members.")
      .def("rank_of", &Communicator::rank_of, py::arg("local_device") = 0,
           "The member number of this rank's local_device-th device.")
      .def("device_idx", &Communicator::device_idx, py::arg("local_device") = 0,
           "The context device index of this rank's local_device-th member.")
      .def_property_readonly("context", &Communicator::context)
      .def_property_readonly("backend",
                             [](const Communicator& self) { return name(self.backend()); })
      .def_property_readonly("backend_description", &Communicator::backend_description)
      .def(
          "split",
          [](const Communicator& self, int color, int key) {
            const py::gil_scoped_release release;
            return self.split(color, key);
          },
          py::arg("color"), py::arg("key") = 0,
          "Ranks of the same color form a new communicator, ordered by key (MPI_Comm_split).")
      .def("group_start", &Communicator::group_start)
      .def("group_end",
           [](Communicator& self) {
             const py::gil_scoped_release release;
             self.group_end();
           })
      .def("__eq__", [](const Communicator& a, const Communicator& b) { return a == b; })
      .def("__repr__", [](const Communicator& self) {
        return "<skein.Communicator " + std::to_string(self.size()) + " members, " +
               std::to_string(self.local_size()) + " here, " + std::string(name(self.backend())) +
               ">";
      });
  bind_collective_calls(c);
}

}  // namespace

void bind_collectives(py::module_& m) {
  py::enum_<ReduceOp>(m, "ReduceOp", "How a collective combines values.")
      .value("sum", ReduceOp::sum)
      .value("prod", ReduceOp::prod)
      .value("min", ReduceOp::min)
      .value("max", ReduceOp::max)
      .value("avg", ReduceOp::avg);
  bind_runtime(m);
  bind_communicator(m);
}

}  // namespace skein::python
