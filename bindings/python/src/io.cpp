// SPDX-License-Identifier: BSD-3-Clause
// skein.hdf5: HDF5 files of distributed arrays written and read by every rank together (a file
// any HDF5 tool reads as plain arrays), and skein.CheckpointManager: checkpoints safe against a
// job killed at any moment, restored onto any layout or rank count. Where Skein was built without
// HDF5 (skein.hdf5.available() is False) every call raises skein.Error saying so. Every call
// touching a file is collective and releases the GIL.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist_common.hpp"
#include "skein/checkpoint.hpp"
#include "skein/grid_array.hpp"
#include "skein/hdf5.hpp"

namespace skein::python {

namespace {

using hdf5::File;

hdf5::FileOptions file_options(bool serial, const py::object& max_bytes_per_call) {
  hdf5::FileOptions o;
  o.serial = serial;
  if (!max_bytes_per_call.is_none()) o.max_bytes_per_call = max_bytes_per_call.cast<std::size_t>();
  return o;
}

hdf5::WriteOptions write_options(const py::kwargs& kwargs, const char* call) {
  hdf5::WriteOptions o;
  for (const auto& [key, value] : kwargs) {
    const auto k = key.cast<std::string>();
    if (k == "chunk_rows") {
      o.chunk_rows = value.cast<std::size_t>();
    } else if (k == "checksum") {
      o.checksum = value.cast<bool>();
    } else if (k == "compression") {
      o.compression = value.cast<int>();
    } else if (k == "shuffle") {
      o.shuffle = value.cast<bool>();
    } else if (k == "step") {
      if (!value.is_none()) o.step = value.cast<std::int64_t>();
    } else if (k == "time") {
      if (!value.is_none()) o.time = value.cast<double>();
    } else if (k == "attributes") {
      if (!value.is_none()) o.attributes = value.cast<hdf5::Attributes>();
    } else if (k == "overwrite") {
      o.overwrite = value.cast<bool>();
    } else {
      raise_argument(call, "unknown write option '" + k + "'",
                     "The options are chunk_rows, checksum, compression, shuffle, step, time, "
                     "attributes and overwrite.");
    }
  }
  return o;
}

// Writes or reads one kind of array; the GIL released around the file's collective call.
template <class A>
void bind_array_io(py::class_<File>& c) {
  c.def(
      "write",
      [](File& f, const std::string& name, const A& array, const py::kwargs& kwargs) {
        const hdf5::WriteOptions o = write_options(kwargs, "hdf5.File.write");
        const py::gil_scoped_release release;
        f.write(name, array, o);
      },
      py::arg("name"), py::arg("array"),
      "Collective: the array's global array as dataset `name` (groups made as needed). Keyword "
      "options: chunk_rows, checksum (default True), compression (0-9), shuffle, step, time, "
      "attributes (a dict), overwrite.");
  c.def(
      "read",
      [](File& f, const std::string& name, const A& array) {
        const py::gil_scoped_release release;
        f.read(name, array);
      },
      py::arg("name"), py::arg("array"),
      "Collective: dataset `name` into an array of any layout with its shape and dtype (halos "
      "are not written: exchange them after).");
}

void bind_file_host(py::class_<File>& c) {
  c.def(
       "write_host",
       [](File& f, const std::string& name, const py::object& data, int root,
          const py::kwargs& kwargs) {
         const hdf5::WriteOptions o = write_options(kwargs, "hdf5.File.write_host");
         // Only the root's data is read; the other ranks pass its dtype and shape too (every
         // rank's call must be the same), so that they need not hold the data.
         const py::array host = py::array::ensure(data, py::array::c_style);
         if (!host) throw py::error_already_set();
         const Shape shape(host.shape(), host.shape() + host.ndim());
         const Dtype dtype = to_dtype(host.dtype(), "hdf5.File.write_host");
         const std::span<const std::byte> bytes(static_cast<const std::byte*>(host.data()),
                                                static_cast<std::size_t>(host.nbytes()));
         const py::gil_scoped_release release;
         f.write_host(name, bytes, shape, dtype, root, o);
       },
       py::arg("name"), py::arg("data"), py::arg("root") = 0,
       "Collective: the root rank's NumPy array as dataset `name` (a 0-d array: a scalar "
       "dataset). Every rank passes an array of the same shape and dtype; only the root's values "
       "are written.")
      .def(
          "read_host",
          [](File& f, const std::string& name) {
            hdf5::DatasetInfo info;
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              info = f.info(name);
              bytes = f.read_host_bytes(name);
            }
            return to_host_array(bytes, info.dtype, info.shape);
          },
          py::arg("name"), "Collective: the whole dataset as a NumPy array on every rank.");
}

void bind_file_metadata(py::class_<File>& c) {
  c.def(
       "info",
       [](File& f, const std::string& name) {
         const py::gil_scoped_release release;
         return f.info(name);
       },
       py::arg("name"))
      .def(
          "exists",
          [](File& f, const std::string& name) {
            const py::gil_scoped_release release;
            return f.exists(name);
          },
          py::arg("name"))
      .def(
          "datasets",
          [](File& f, const std::string& group) {
            const py::gil_scoped_release release;
            return f.datasets(group);
          },
          py::arg("group") = "/", "The datasets under a group (recursively), sorted.")
      .def(
          "set_attribute",
          [](File& f, const std::string& object, const std::string& name,
             const hdf5::AttributeValue& value) {
            const py::gil_scoped_release release;
            f.set_attribute(object, name, value);
          },
          py::arg("object"), py::arg("name"), py::arg("value"),
          "Collective: an attribute (int, float, str, or a list of ints or floats) of a dataset "
          "or group ('/': the file). Every rank passes the same value.")
      .def(
          "attributes",
          [](File& f, const std::string& object) {
            const py::gil_scoped_release release;
            return f.attributes(object);
          },
          py::arg("object") = "/")
      .def(
          "attribute",
          [](File& f, const std::string& object, const std::string& name) {
            const py::gil_scoped_release release;
            return f.attribute(object, name);
          },
          py::arg("object"), py::arg("name"), "One attribute, or None.");
}

void bind_file(py::module_& h) {
  py::class_<hdf5::DatasetInfo>(h, "DatasetInfo", "What a dataset holds.")
      .def_readonly("name", &hdf5::DatasetInfo::name)
      .def_property_readonly("shape", [](const hdf5::DatasetInfo& i) { return to_tuple(i.shape); })
      .def_property_readonly("dtype", [](const hdf5::DatasetInfo& i) { return to_numpy(i.dtype); })
      .def_readonly("chunk_rows", &hdf5::DatasetInfo::chunk_rows)
      .def_readonly("compression", &hdf5::DatasetInfo::compression)
      .def_readonly("checksum", &hdf5::DatasetInfo::checksum)
      .def_readonly("step", &hdf5::DatasetInfo::step)
      .def_readonly("time", &hdf5::DatasetInfo::time)
      .def_readonly("layout", &hdf5::DatasetInfo::layout)
      .def_readonly("attributes", &hdf5::DatasetInfo::attributes)
      .def("__repr__", [](const hdf5::DatasetInfo& i) { return "<" + i.describe() + ">"; });

  py::class_<File> c(h, "File",
                     "An HDF5 file open on every rank of a communicator (through MPI-IO, or "
                     "through rank 0). A context manager: leaving the block closes it.");
  c.def_static(
       "create",
       [](Communicator& comm, const std::string& path, bool serial,
          const py::object& max_bytes_per_call) {
         const auto o = file_options(serial, max_bytes_per_call);
         const py::gil_scoped_release release;
         return File::create(comm, path, o);
       },
       py::arg("comm"), py::arg("path"), py::kw_only(), py::arg("serial") = false,
       py::arg("max_bytes_per_call") = py::none(), py::keep_alive<0, 1>(),
       "Collective: creates the file (replacing one that exists). serial: every transfer "
       "through rank 0 even where HDF5 has MPI-IO.")
      .def_static(
          "open",
          [](Communicator& comm, const std::string& path, const std::string& mode, bool serial,
             const py::object& max_bytes_per_call) {
            if (mode != "r" && mode != "r+") {
              raise_argument("hdf5.File.open", "mode '" + mode + "' is not 'r' or 'r+'",
                             "Give mode='r' (read only) or 'r+' (read and write).");
            }
            const auto access = mode == "r" ? hdf5::Access::read_only : hdf5::Access::read_write;
            const auto o = file_options(serial, max_bytes_per_call);
            const py::gil_scoped_release release;
            return File::open(comm, path, access, o);
          },
          py::arg("comm"), py::arg("path"), py::arg("mode") = "r", py::kw_only(),
          py::arg("serial") = false, py::arg("max_bytes_per_call") = py::none(),
          py::keep_alive<0, 1>(), "Collective: opens an existing file.")
      .def_property_readonly("path", &File::path)
      .def_property_readonly("is_open", &File::is_open)
      .def_property_readonly("parallel", &File::parallel)
      .def_property_readonly("rank", &File::rank)
      .def_property_readonly("ranks", &File::ranks)
      .def("flush",
           [](File& f) {
             const py::gil_scoped_release release;
             f.flush();
           })
      .def("close",
           [](File& f) {
             const py::gil_scoped_release release;
             f.close();
           })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](File& f, const py::args&) {
        // Closed on every exit: an exception inside the block left every rank there (collective
        // calls raise on every rank), so every rank closes.
        if (!f.is_open()) return;
        const py::gil_scoped_release release;
        f.close();
      });
  bind_array_io<DistArray>(c);
  bind_array_io<GridArray>(c);
  bind_array_io<ReplicatedArray>(c);
  bind_file_host(c);
  bind_file_metadata(c);
}

CheckpointArrays to_checkpoint_arrays(const py::dict& arrays, const char* call) {
  CheckpointArrays out;
  for (const auto& [key, value] : arrays) {
    const auto name = key.cast<std::string>();
    if (py::isinstance<DistArray>(value)) {
      out.emplace(name, value.cast<DistArray>());
    } else if (py::isinstance<GridArray>(value)) {
      out.emplace(name, value.cast<GridArray>());
    } else if (py::isinstance<ReplicatedArray>(value)) {
      out.emplace(name, value.cast<ReplicatedArray>());
    } else {
      raise_argument(call, "arrays['" + name + "'] is " + py::repr(value).cast<std::string>(),
                     "Give a dict of names to DistArray, GridArray or ReplicatedArray.");
    }
  }
  return out;
}

void bind_checkpoint_info(py::module_& m) {
  py::class_<CheckpointInfo>(m, "CheckpointInfo", "A complete checkpoint.")
      .def_readonly("step", &CheckpointInfo::step)
      .def_readonly("time", &CheckpointInfo::time)
      .def_property_readonly("file", [](const CheckpointInfo& i) { return i.file.string(); })
      .def_property_readonly("marker", [](const CheckpointInfo& i) { return i.marker.string(); })
      .def_readonly("bytes", &CheckpointInfo::bytes)
      .def_readonly("sha256", &CheckpointInfo::sha256)
      .def_readonly("ranks", &CheckpointInfo::ranks, "The number of ranks that wrote it.")
      .def_property_readonly(
          "arrays",
          [](const CheckpointInfo& i) {
            py::dict out;
            for (const auto& [name, e] : i.arrays) {
              const char* kind = e.grid ? "grid" : e.replicated ? "replicated" : "distributed";
              out[py::str(name)] = py::make_tuple(to_tuple(e.shape), to_numpy(e.dtype), kind);
            }
            return out;
          },
          "name -> (shape, dtype, kind) of each array.")
      .def_readonly("attributes", &CheckpointInfo::attributes)
      .def("__repr__", [](const CheckpointInfo& i) {
        return "<skein.CheckpointInfo step " + std::to_string(i.step) + ", " + i.file.string() +
               ">";
      });
}

void bind_checkpoints(py::module_& m) {
  bind_checkpoint_info(m);
  py::class_<CheckpointManager>(
      m, "CheckpointManager",
      "Checkpoints of distributed arrays in a directory, safe against a job killed at any "
      "moment, restored onto any layout and number of ranks. Every call is collective.")
      .def(py::init([](Communicator& comm, const std::string& directory, std::size_t keep,
                       const std::string& on_corrupt, bool serial) {
             CheckpointOptions o;
             o.keep = keep;
             if (on_corrupt == "fall_back") {
               o.on_corrupt = OnCorrupt::fall_back;
             } else if (on_corrupt != "refuse") {
               raise_argument("CheckpointManager", "on_corrupt '" + on_corrupt + "' is unknown",
                              "Give 'refuse' (raise CheckpointError) or 'fall_back'.");
             }
             o.file.serial = serial;
             const py::gil_scoped_release release;
             return std::make_unique<CheckpointManager>(comm, directory, std::move(o));
           }),
           py::arg("comm"), py::arg("directory"), py::kw_only(), py::arg("keep") = 2,
           py::arg("on_corrupt") = "refuse", py::arg("serial") = false, py::keep_alive<1, 2>(),
           "keep: the newest checkpoints kept (0: all); on_corrupt: 'refuse' or 'fall_back' to "
           "an older one when the newest does not match its marker.")
      .def_property_readonly("directory",
                             [](const CheckpointManager& c) { return c.directory().string(); })
      .def(
          "write",
          [](CheckpointManager& c, std::int64_t step, double time, const py::dict& arrays,
             const py::object& attributes) {
            const auto a = to_checkpoint_arrays(arrays, "CheckpointManager.write");
            const auto attrs =
                attributes.is_none() ? hdf5::Attributes{} : attributes.cast<hdf5::Attributes>();
            const py::gil_scoped_release release;
            return c.write(step, time, a, attrs);
          },
          py::arg("step"), py::arg("time"), py::arg("arrays"), py::arg("attributes") = py::none(),
          "Writes the checkpoint of `step`: arrays is a dict of names to distributed arrays; "
          "attributes a dict of user values.")
      .def("list",
           [](CheckpointManager& c) {
             const py::gil_scoped_release release;
             return c.list();
           })
      .def(
          "latest_complete",
          [](CheckpointManager& c) {
            const py::gil_scoped_release release;
            return c.latest_complete();
          },
          "The newest complete checkpoint whose file matches its marker, or None.")
      .def(
          "verify",
          [](CheckpointManager& c, std::int64_t step) {
            const py::gil_scoped_release release;
            return c.verify(step);
          },
          py::arg("step"))
      .def(
          "restore",
          [](CheckpointManager& c, const CheckpointInfo& info, const py::dict& arrays) {
            const auto a = to_checkpoint_arrays(arrays, "CheckpointManager.restore");
            const py::gil_scoped_release release;
            return c.restore(info, a);
          },
          py::arg("checkpoint"), py::arg("arrays"))
      .def(
          "restore_latest",
          [](CheckpointManager& c, const py::dict& arrays) {
            const auto a = to_checkpoint_arrays(arrays, "CheckpointManager.restore_latest");
            const py::gil_scoped_release release;
            return c.restore_latest(a);
          },
          py::arg("arrays"),
          "Reads the newest complete checkpoint into `arrays` (any layout); its info, or None "
          "when there is none (nothing read).");
}

}  // namespace

void bind_io(py::module_& m) {
  py::module_ h = m.def_submodule("hdf5", "HDF5 files of distributed arrays.");
  h.def("available", &hdf5::available, "Whether this Skein was built with HDF5.");
  h.def("parallel_available", &hdf5::parallel_available, "Whether its HDF5 has MPI-IO.");
  h.def("library_description", &hdf5::library_description);
  bind_file(h);
  bind_checkpoints(m);
}

}  // namespace skein::python
