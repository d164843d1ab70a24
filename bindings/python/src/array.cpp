// SPDX-License-Identifier: BSD-3-Clause
// skein.Array: an n-dimensional array on one device, with NumPy's shape, dtype and byte strides.
// Host data moves through NumPy arrays (the buffer protocol); views (slices, reshape, transpose,
// indexing with steps) share the device memory as in NumPy.
#include <pybind11/operators.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace skein::python {

namespace {

// The host array of `source` as a C-contiguous array of `dtype` and the array's shape, or a
// LogicError naming `call` (no silent conversion: another dtype or shape is refused).
py::array host_source(const py::object& source, const Array& a, const char* call) {
  py::array host = py::array::ensure(source);
  if (!host) throw py::error_already_set();
  if (to_dtype(host.dtype(), call) != a.dtype()) {
    raise_argument(call,
                   "the host array's dtype " + py::str(host.dtype()).cast<std::string>() +
                       " is not the array's " + std::string(name(a.dtype())),
                   "Convert it first: numpy.asarray(host, dtype=array.dtype).");
  }
  const Shape shape(host.shape(), host.shape() + host.ndim());
  if (shape != a.shape()) {
    raise_argument(call,
                   "the host array's shape " + to_string(shape) + " is not the array's " +
                       to_string(a.shape()),
                   "Pass a host array of the same shape (reshape it first if its size is right).");
  }
  return py::array::ensure(host, py::array::c_style);
}

py::array get_array(const Array& a, const py::object& dest) {
  py::array out;
  if (dest.is_none()) {
    out = py::array(to_numpy(a.dtype()),
                    std::vector<py::ssize_t>(a.shape().begin(), a.shape().end()));
  } else {
    out = dest.cast<py::array>();
    const Shape shape(out.shape(), out.shape() + out.ndim());
    if (!(out.flags() & py::array::c_style) || !out.writeable() ||
        to_dtype(out.dtype(), "Array.get") != a.dtype() || shape != a.shape()) {
      raise_argument(
          "Array.get",
          "dest must be a writable C-contiguous NumPy array of the array's shape " +
              to_string(a.shape()) + " and dtype " + std::string(name(a.dtype())) + "; got shape " +
              to_string(shape) + ", dtype " + py::str(out.dtype()).cast<std::string>(),
          "Pass dest=None to get a new array, or numpy.empty(array.shape, array.dtype).");
    }
  }
  const std::span<std::byte> bytes(static_cast<std::byte*>(out.mutable_data()),
                                   static_cast<std::size_t>(out.nbytes()));
  const py::gil_scoped_release release;
  a.get(bytes);
  return out;
}

// NumPy-style basic indexing: ints, slices with positive steps, and one Ellipsis, as a view.
Array index(const Array& a, const py::object& key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  std::size_t explicit_axes = 0;
  for (const auto item : items) {
    if (!item.is(py::ellipsis())) ++explicit_axes;
  }
  if (explicit_axes > a.ndim()) {
    raise_argument("Array.__getitem__",
                   "too many indices (" + std::to_string(explicit_axes) + ") for an array of " +
                       std::to_string(a.ndim()) + " dimension(s)",
                   "Give at most one index per axis.");
  }
  const auto itemsize = a.itemsize();
  std::size_t offset_bytes = 0;
  Shape shape;
  Strides strides;
  std::size_t axis = 0;
  for (const auto item : items) {
    if (item.is(py::ellipsis())) {
      const std::size_t skip = a.ndim() - explicit_axes;
      for (std::size_t k = 0; k < skip; ++k, ++axis) {
        shape.push_back(a.shape()[axis]);
        strides.push_back(a.strides()[axis]);
      }
      explicit_axes = a.ndim();  // a second Ellipsis adds no axes
      continue;
    }
    const auto n = static_cast<py::ssize_t>(a.shape()[axis]);
    if (py::isinstance<py::slice>(item)) {
      py::ssize_t start = 0, stop = 0, step = 0, length = 0;
      if (!item.cast<py::slice>().compute(n, &start, &stop, &step, &length)) {
        throw py::error_already_set();
      }
      if (step <= 0) {
        raise_argument("Array.__getitem__",
                       "a slice's step must be positive; got " + std::to_string(step),
                       "Skein's views have non-negative strides: copy to the host and reverse "
                       "there, or index with a positive step.");
      }
      if (length > 0) offset_bytes += static_cast<std::size_t>(start) * a.strides()[axis];
      shape.push_back(static_cast<std::size_t>(length));
      strides.push_back(a.strides()[axis] * static_cast<std::size_t>(step));
    } else {
      auto i = item.cast<py::ssize_t>();
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        throw py::index_error(
            "skein: Array.__getitem__: index " + std::to_string(item.cast<py::ssize_t>()) +
            " is out of bounds for axis " + std::to_string(axis) + " of size " + std::to_string(n));
      }
      offset_bytes += static_cast<std::size_t>(i) * a.strides()[axis];
    }
    ++axis;
  }
  for (; axis < a.ndim(); ++axis) {
    shape.push_back(a.shape()[axis]);
    strides.push_back(a.strides()[axis]);
  }
  return a.view(offset_bytes / itemsize, std::move(shape), std::move(strides));
}

// NumPy's and pygpu's flags object (Array.flags): attributes, and NumPy's keys ('C_CONTIGUOUS',
// 'C', ...) for flags[...].
bool flag_by_key(const ArrayFlags& f, const std::string& key) {
  if (key == "C_CONTIGUOUS" || key == "C" || key == "CONTIGUOUS") return f.c_contiguous;
  if (key == "F_CONTIGUOUS" || key == "F" || key == "FORTRAN") return f.f_contiguous;
  if (key == "OWNDATA" || key == "O") return f.owndata;
  if (key == "ALIGNED" || key == "A") return f.aligned;
  if (key == "WRITEABLE" || key == "W") return f.writeable;
  if (key == "BEHAVED" || key == "B") return f.behaved();
  if (key == "CARRAY" || key == "CA") return f.carray();
  if (key == "FARRAY" || key == "FA") return f.farray();
  if (key == "FNC") return f.fnc();
  if (key == "FORC") return f.forc();
  if (key == "UPDATEIFCOPY" || key == "U" || key == "WRITEBACKIFCOPY" || key == "X") return false;
  throw py::key_error("skein: ArrayFlags: unknown flag '" + key +
                      "'; use one of NumPy's: C_CONTIGUOUS, F_CONTIGUOUS, OWNDATA, ALIGNED, "
                      "WRITEABLE, BEHAVED, CARRAY, FARRAY, FNC, FORC, UPDATEIFCOPY");
}

// NumPy's flag bits (flags.num): C_CONTIGUOUS 0x1, F_CONTIGUOUS 0x2, OWNDATA 0x4, ALIGNED 0x100,
// WRITEABLE 0x400.
long flag_bits(const ArrayFlags& f) {
  return (f.c_contiguous ? 0x1 : 0) | (f.f_contiguous ? 0x2 : 0) | (f.owndata ? 0x4 : 0) |
         (f.aligned ? 0x100 : 0) | (f.writeable ? 0x400 : 0);
}

void bind_array_flags(py::module_& m) {
  py::class_<ArrayFlags> flags(
      m, "ArrayFlags",
      "NumPy's and pygpu's array flags (Array.flags), fixed when read: attributes and "
      "flags['C_CONTIGUOUS'] etc. writeable is always True (Skein has no read-only arrays); "
      "owndata is True for an array whose memory was allocated for it (Array.empty, zeros, "
      "from_host, a copy, ...), False for a view or an array over memory it adopted.");
  flags.def_readonly("c_contiguous", &ArrayFlags::c_contiguous)
      .def_readonly("f_contiguous", &ArrayFlags::f_contiguous)
      .def_readonly("contiguous", &ArrayFlags::c_contiguous, "c_contiguous (pygpu's name).")
      .def_readonly("fortran", &ArrayFlags::f_contiguous, "f_contiguous (pygpu's name).")
      .def_readonly("aligned", &ArrayFlags::aligned,
                    "The first element and the strides of axes longer than 1 are multiples of "
                    "the dtype's kernel alignment (its itemsize).")
      .def_readonly("writeable", &ArrayFlags::writeable)
      .def_readonly("owndata", &ArrayFlags::owndata)
      .def_property_readonly("behaved", &ArrayFlags::behaved, "aligned and writeable.")
      .def_property_readonly("carray", &ArrayFlags::carray, "behaved and c_contiguous.")
      .def_property_readonly("farray", &ArrayFlags::farray,
                             "behaved, f_contiguous and not c_contiguous.")
      .def_property_readonly("fnc", &ArrayFlags::fnc, "f_contiguous and not c_contiguous.")
      .def_property_readonly("forc", &ArrayFlags::forc, "f_contiguous or c_contiguous.")
      .def_property_readonly("updateifcopy", [](const ArrayFlags&) { return false; })
      .def_property_readonly("writebackifcopy", [](const ArrayFlags&) { return false; })
      .def_property_readonly("num", &flag_bits, "NumPy's bits of the flags above, as an int.")
      .def("__getitem__", &flag_by_key, py::arg("key"))
      .def(py::self == py::self)
      .def("__repr__", [](const ArrayFlags& f) {
        auto line = [](const char* name, bool v) {
          return std::string("  ") + name + " : " + (v ? "True" : "False") + "\n";
        };
        return line("C_CONTIGUOUS", f.c_contiguous) + line("F_CONTIGUOUS", f.f_contiguous) +
               line("OWNDATA", f.owndata) + line("WRITEABLE", f.writeable) +
               line("ALIGNED", f.aligned) + line("WRITEBACKIFCOPY", false);
      });
}

}  // namespace

Shape to_new_shape(const py::handle& obj, std::size_t size, const char* call) {
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj)) {
    if (py::isinstance<py::int_>(obj) && obj.cast<long long>() == -1) return {size};
    return to_shape(obj, call);
  }
  Shape shape;
  std::optional<std::size_t> unknown;
  for (const auto item : obj) {
    if (py::isinstance<py::int_>(item) && item.cast<long long>() == -1) {
      if (unknown) {
        raise_argument(call, "can only specify one unknown dimension (-1)",
                       "Give at most one -1 in the shape.");
      }
      unknown = shape.size();
      shape.push_back(1);
    } else {
      shape.push_back(to_shape(item, call).front());
    }
  }
  if (unknown) {
    const std::size_t known = shape_size(shape);
    if (known == 0 || size % known != 0) {
      raise_argument(call,
                     "cannot reshape an array of " + std::to_string(size) +
                         " elements into shape " + py::str(obj).cast<std::string>(),
                     "The sizes other than -1 must divide the number of elements.");
    }
    shape[*unknown] = size / known;
  }
  return shape;
}

Order to_order(const std::string& order, const char* call) {
  if (order == "C") return Order::C;
  if (order == "F") return Order::F;
  raise_argument(call, "order '" + order + "' is not 'C' or 'F'", "Give order='C' or order='F'.");
}

void bind_array(py::module_& m) {
  bind_array_flags(m);
  py::class_<Array>(m, "Array", "An n-dimensional array on one device (NumPy's conventions).")
      .def_static(
          "empty",
          [](const Queue& q, const py::object& shape, const py::object& dtype,
             const py::object& device_idx, const std::string& order) {
            return Array::empty(q, to_shape(shape, "Array.empty"), to_dtype(dtype, "Array.empty"),
                                to_order(order, "Array.empty"),
                                to_device_idx(device_idx, "Array.empty"));
          },
          py::arg("queue"), py::arg("shape"), py::arg("dtype"), py::arg("device_idx") = py::none(),
          py::arg("order") = "C",
          "An uninitialised array on the queue's first device (or device_idx).")
      .def_static(
          "zeros",
          [](const Queue& q, const py::object& shape, const py::object& dtype,
             const py::object& device_idx, const std::string& order) {
            return Array::zeros(q, to_shape(shape, "Array.zeros"), to_dtype(dtype, "Array.zeros"),
                                to_order(order, "Array.zeros"),
                                to_device_idx(device_idx, "Array.zeros"));
          },
          py::arg("queue"), py::arg("shape"), py::arg("dtype"), py::arg("device_idx") = py::none(),
          py::arg("order") = "C")
      .def_static(
          "from_host",
          [](const Queue& q, const py::object& host_arr, const py::object& device_idx) {
            const py::array host = py::array::ensure(host_arr, py::array::c_style);
            if (!host) throw py::error_already_set();
            const Shape shape(host.shape(), host.shape() + host.ndim());
            Array a = Array::empty(q, shape, to_dtype(host.dtype(), "Array.from_host"),
                                   to_device_idx(device_idx, "Array.from_host"));
            const std::span<const std::byte> bytes(static_cast<const std::byte*>(host.data()),
                                                   static_cast<std::size_t>(host.nbytes()));
            const py::gil_scoped_release release;
            a.set(bytes);
            return a;
          },
          py::arg("queue"), py::arg("host_arr"), py::arg("device_idx") = py::none(),
          "A new array with the shape, dtype and values of a host array (any NumPy array or "
          "what numpy.asarray takes).")
      .def_property_readonly("queue", &Array::queue)
      .def_property_readonly("data", &Array::data, "The Buffer the array's elements lie in.")
      .def_property_readonly("device_idx", &Array::device_idx)
      .def_property_readonly("shape", [](const Array& a) { return to_tuple(a.shape()); })
      .def_property_readonly("strides", [](const Array& a) { return to_tuple(a.strides()); })
      .def_property_readonly("dtype", [](const Array& a) { return to_numpy(a.dtype()); })
      .def_property_readonly("skein_dtype", &Array::dtype)
      .def_property_readonly("ndim", &Array::ndim)
      .def_property_readonly("size", &Array::size)
      .def_property_readonly("itemsize", &Array::itemsize)
      .def_property_readonly("nbytes", &Array::nbytes)
      .def_property_readonly("offset", &Array::offset, "Bytes from the buffer's start.")
      .def_property_readonly("is_c_contiguous", &Array::is_c_contiguous)
      .def_property_readonly("is_f_contiguous", &Array::is_f_contiguous)
      .def_property_readonly("flags", &Array::flags,
                             "NumPy's and pygpu's flags (skein.ArrayFlags): c_contiguous, "
                             "f_contiguous, aligned, writeable, owndata, behaved, carray, ...")
      .def("get", &get_array, py::arg("dest") = py::none(),
           "The array's values as a new C-ordered NumPy array (or into `dest`).")
      .def(
          "set",
          [](const Array& a, const py::object& source) {
            if (py::isinstance<Array>(source)) {
              a.set(source.cast<Array>());
              return;
            }
            const py::array host = host_source(source, a, "Array.set");
            const std::span<const std::byte> bytes(static_cast<const std::byte*>(host.data()),
                                                   static_cast<std::size_t>(host.nbytes()));
            const py::gil_scoped_release release;
            a.set(bytes);
          },
          py::arg("array"),
          "Copies a host array (same shape and dtype) or another skein.Array into this one.")
      .def("fill_zero", &Array::fill_zero)
      .def("slice", &Array::slice, py::arg("begin"), py::arg("end"),
           "Elements [begin, end) of the first axis, as a view.")
      .def(
          "view",
          [](const Array& a, std::size_t element_offset, const py::object& shape,
             const py::object& strides) {
            return a.view(element_offset, to_shape(shape, "Array.view"),
                          strides.is_none() ? Strides{} : to_shape(strides, "Array.view"));
          },
          py::arg("element_offset"), py::arg("shape"), py::arg("strides") = py::none())
      .def(
          "reshape",
          [](const Array& a, const py::args& args, const std::string& order,
             const py::object& queue) {
            const py::object shape = args.size() == 1 ? py::object(args[0]) : py::object(args);
            const char* call = "Array.reshape";
            const Queue& q = queue.is_none() ? a.queue() : queue.cast<const Queue&>();
            return skein::reshape(q, a, to_new_shape(shape, a.size(), call), to_order(order, call));
          },
          py::arg("order") = "C", py::arg("queue") = py::none(),
          "The same elements in another shape (one extent may be -1), read and placed in `order` "
          "('C' or 'F'): a view sharing the memory when the strides allow one (NumPy's rule), "
          "else a copy made on `queue` (the array's own by default), as NumPy's and pygpu's "
          "reshape. flags.owndata, or skein.may_share_memory, says which.")
      .def(
          "transpose",
          [](const Array& a, const py::args& args) {
            if (args.size() == 0) return a.transpose();
            const py::object axes = args.size() == 1 ? py::object(args[0]) : py::object(args);
            if (axes.is_none()) return a.transpose();
            return a.transpose(to_shape(axes, "Array.transpose"));
          },
          "The axes reversed, or permuted as `axes` says (a view).")
      .def_property_readonly("T", [](const Array& a) { return a.transpose(); })
      .def("single_device_view", &Array::single_device_view, py::arg("device_idx"))
      .def("__getitem__", &index, py::arg("key"))
      .def("__len__",
           [](const Array& a) {
             if (a.ndim() == 0) throw py::type_error("len() of a 0-d skein.Array");
             return a.shape()[0];
           })
      .def("__repr__", [](const Array& a) {
        return "<skein.Array shape=" + to_string(a.shape()) +
               " dtype=" + std::string(name(a.dtype())) +
               " device_idx=" + std::to_string(a.device_idx()) + ">";
      });
}

}  // namespace skein::python
