// SPDX-License-Identifier: BSD-3-Clause
// Element types: NumPy's dtypes on the Python side, skein::Dtype on the C++ side.
#include <string>

#include "bindings.hpp"

namespace skein::python {

namespace {

// NumPy's name for each Skein dtype: Skein's own (the same words), but for bfloat16, which NumPy
// lacks and whose bits are a uint16.
std::string numpy_name(Dtype dtype) {
  return dtype == Dtype::bfloat16 ? std::string("uint16") : std::string(name(dtype));
}

py::dtype make_bfloat16() {
  py::dict metadata;
  metadata["skein"] = "bfloat16";
  return py::module_::import("numpy").attr("dtype")("uint16", py::arg("metadata") = metadata);
}

}  // namespace

py::dtype to_numpy(Dtype dtype) {
  if (is_record(dtype)) return record_to_numpy(dtype);
  if (dtype == Dtype::bfloat16) {
    return py::module_::import("skein._skein").attr("bfloat16").cast<py::dtype>();
  }
  return py::dtype(numpy_name(dtype));
}

Dtype to_dtype(const py::handle& obj, const char* call) {
  if (py::isinstance<Dtype>(obj)) return obj.cast<Dtype>();
  if (py::isinstance<py::str>(obj)) {
    const auto text = obj.cast<std::string>();
    try {
      return dtype_from_name(text);
    } catch (const Error&) {
      // Not one of Skein's names: NumPy may still know it ("f4", "<f8", "double").
    }
  }
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  } catch (const py::error_already_set&) {
    raise_argument(call, "'" + py::str(obj).cast<std::string>() + "' is not a dtype",
                   "Give a NumPy dtype (numpy.float32, 'float64', numpy.dtype('int32')), a "
                   "skein.Dtype, or skein.bfloat16.");
  }
  const py::object metadata = dt.attr("metadata");
  if (!metadata.is_none() && metadata.contains("skein") &&
      py::str(metadata["skein"]).cast<std::string>() == "bfloat16") {
    return Dtype::bfloat16;
  }
  if (auto record = record_from_numpy(dt, call)) return *record;
  const auto kind = dt.kind();
  const auto size = dt.itemsize();
  const bool native = dt.attr("isnative").cast<bool>();
  if (native && dt.attr("fields").is_none()) {
    for (const Dtype d : all_dtypes) {
      if (d == Dtype::bfloat16) continue;
      if (dt.equal(py::dtype(numpy_name(d)))) return d;
    }
  }
  raise_argument(call,
                 "NumPy dtype '" + py::str(dt).cast<std::string>() + "' (kind '" +
                     std::string(1, kind) + "', " + std::to_string(size) +
                     " bytes) has no Skein element type",
                 "Skein's element types are int8-64, uint8-64, float16, bfloat16, float32, "
                 "float64, complex64 and complex128 in the machine's byte order; convert the "
                 "array first (e.g. numpy.asarray(a, dtype=numpy.float32)).");
}

Shape to_shape(const py::handle& obj, const char* call) {
  auto one = [&](const py::handle& item) -> std::size_t {
    if (!py::isinstance<py::int_>(py::reinterpret_borrow<py::object>(item)) &&
        !py::hasattr(item, "__index__")) {
      raise_argument(
          call,
          "a shape's extents must be integers; got '" + py::str(item).cast<std::string>() + "'",
          "Give an int or a sequence of ints, e.g. (4, 5).");
    }
    const auto value = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!value) throw py::error_already_set();
    const auto n = value.cast<long long>();
    if (n < 0) {
      raise_argument(call, "a shape's extents must not be negative; got " + std::to_string(n),
                     "Give sizes of 0 or more.");
    }
    return static_cast<std::size_t>(n);
  };
  if (py::isinstance<py::int_>(obj) ||
      (!py::isinstance<py::sequence>(obj) && py::hasattr(obj, "__index__"))) {
    return {one(obj)};
  }
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj)) {
    raise_argument(call,
                   "a shape must be an int or a sequence of ints; got '" +
                       py::str(obj).cast<std::string>() + "'",
                   "Give e.g. 16 or (4, 5).");
  }
  Shape shape;
  for (const auto item : obj.cast<py::sequence>()) shape.push_back(one(item));
  return shape;
}

py::tuple to_tuple(const std::vector<std::size_t>& values) {
  py::tuple t(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) t[i] = py::int_(values[i]);
  return t;
}

std::optional<std::size_t> to_device_idx(const py::handle& obj, const char* call) {
  if (obj.is_none()) return std::nullopt;
  const auto n = obj.cast<long long>();
  if (n < 0) {
    raise_argument(call, "device_idx must not be negative; got " + std::to_string(n),
                   "Give the index of a device of the queue's context, or None.");
  }
  return static_cast<std::size_t>(n);
}

void bind_dtypes(py::module_& m) {
  py::enum_<Dtype> dtype(m, "Dtype", "Skein's element types (skein::Dtype).");
  for (const Dtype d : all_dtypes) dtype.value(std::string(name(d)).c_str(), d);
  dtype.def_property_readonly("itemsize", [](Dtype d) { return itemsize(d); })
      .def_property_readonly(
          "numpy", [](Dtype d) { return to_numpy(d); },
          "The NumPy dtype (skein.bfloat16 for bfloat16).");
  m.attr("bfloat16") = make_bfloat16();
  m.def(
      "dtype", [](const py::object& obj) { return to_numpy(to_dtype(obj, "skein.dtype")); },
      py::arg("dtype"),
      "The NumPy dtype Skein uses for `dtype` (anything NumPy takes as a dtype, a skein.Dtype, or "
      "'bfloat16'); raises skein.LogicError for one Skein has no element type for.");
}

}  // namespace skein::python
