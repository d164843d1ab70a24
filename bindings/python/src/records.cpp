// SPDX-License-Identifier: BSD-3-Clause
// Record (struct) dtypes in Python: NumPy structured dtypes registered as Skein dtypes
// (skein/records.hpp), the field views, flattening, C paths and constants, and the dtype helpers
// min_scalar_type, complex_for and real_for.
#include <map>
#include <numeric>
#include <skein/records.hpp>
#include <string>

#include "bindings.hpp"

namespace skein::python {

namespace {

// The NumPy dtype each record was registered with from Python (kept for the process, as the
// registry; never destroyed, so no Python object outlives the interpreter in a static).
std::map<Dtype, py::object>& numpy_of_records() {
  static auto* m = new std::map<Dtype, py::object>();
  return *m;
}

// The StructType of a NumPy structured dtype, whose offsets and itemsize must be the C layout
// Skein gives it (np.dtype([...], align=True), but for complex fields: see the hint).
StructType struct_from_numpy(const py::dtype& dt, const char* call) {
  const py::object names = dt.attr("names");
  if (names.is_none()) {
    raise_argument(call,
                   "dtype '" + py::str(py::handle(dt)).cast<std::string>() + "' has no fields",
                   "Give a structured dtype, e.g. numpy.dtype([('x', 'f4'), ('w', 'f8')], "
                   "align=True).");
  }
  const auto fields = dt.attr("fields").cast<py::dict>();
  StructType t;
  std::vector<std::size_t> offsets;
  for (const auto name_obj : names) {
    const auto fname = name_obj.cast<std::string>();
    const auto f = fields[name_obj].cast<py::tuple>();
    py::dtype fdt = f[0].cast<py::dtype>();
    offsets.push_back(f[1].cast<std::size_t>());
    std::size_t count = 0;
    const py::object sub = fdt.attr("subdtype");
    if (!sub.is_none()) {
      const auto st = sub.cast<py::tuple>();
      const auto shape = st[1].cast<py::tuple>();
      if (shape.size() != 1) {
        raise_argument(
            call,
            "field '" + fname + "' is a " + std::to_string(shape.size()) + "-dimensional array",
            "Give array fields one dimension (flatten the shape).");
      }
      count = shape[0].cast<std::size_t>();
      fdt = st[0].cast<py::dtype>();
    }
    if (!fdt.attr("names").is_none()) {
      t.add(fname, struct_from_numpy(fdt, call), count);
    } else {
      t.add(fname, to_dtype(fdt, call), count);
    }
  }
  const std::size_t size = dt.itemsize();
  if (offsets != t.offsets() || size != t.itemsize()) {
    std::string want;
    for (auto o : t.offsets()) want += (want.empty() ? "" : ", ") + std::to_string(o);
    raise_argument(
        call,
        "the field offsets or itemsize of '" + py::str(py::handle(dt)).cast<std::string>() +
            "' are not the C layout Skein gives these fields (offsets " + want + ", itemsize " +
            std::to_string(t.itemsize()) + ")",
        "Build the dtype with align=True; complex fields are aligned to their whole size in "
        "Skein (NumPy aligns them to their part's), so give such dtypes explicit 'offsets' and "
        "'itemsize' (skein.record_numpy_dtype shows the layout).");
  }
  return t;
}

// A NumPy dtype with the layout of a StructType: names, formats, offsets, itemsize.
py::dtype numpy_from_struct(const StructType& t) {
  py::list names, formats, offs;
  const auto offsets = t.offsets();
  for (std::size_t k = 0; k < t.fields().size(); ++k) {
    const auto& f = t.fields()[k];
    names.append(f.name);
    py::object base = f.is_struct() ? py::object(numpy_from_struct(*std::get<1>(f.type)))
                                    : py::object(to_numpy(std::get<0>(f.type)));
    if (f.count) base = py::make_tuple(base, py::make_tuple(f.count));
    formats.append(base);
    offs.append(offsets[k]);
  }
  py::dict spec;
  spec["names"] = names;
  spec["formats"] = formats;
  spec["offsets"] = offs;
  spec["itemsize"] = t.itemsize();
  return py::module_::import("numpy").attr("dtype")(spec).cast<py::dtype>();
}

FieldPath to_path(const py::handle& obj, const char* call) {
  if (py::isinstance<py::str>(obj)) return {obj.cast<std::string>()};
  FieldPath path;
  for (const auto item : obj.cast<py::sequence>()) {
    if (py::isinstance<py::str>(item)) {
      path.emplace_back(item.cast<std::string>());
    } else if (py::isinstance<py::int_>(item)) {
      const auto i = item.cast<long long>();
      if (i < 0) raise_argument(call, "a negative index in the path", "Give indices >= 0.");
      path.emplace_back(static_cast<std::size_t>(i));
    } else {
      raise_argument(call,
                     "path element '" + py::str(item).cast<std::string>() +
                         "' is neither a field name nor an index",
                     "Give a list of str and int, e.g. ['s', 1, 'b'].");
    }
  }
  return path;
}

py::list from_path(const FieldPath& path) {
  py::list out;
  for (const auto& e : path) {
    if (e.index() == 0) {
      out.append(std::get<0>(e));
    } else {
      out.append(std::get<1>(e));
    }
  }
  return out;
}

// One field of a skein.StructType from (name, type) or (name, type, count): the type a
// skein.StructType or anything skein.dtype takes.
void add_field(StructType& t, const std::string& name, const py::handle& type, std::size_t count) {
  if (py::isinstance<StructType>(type)) {
    t.add(name, type.cast<const StructType&>(), count);
  } else {
    t.add(name, to_dtype(type, "skein.StructType"), count);
  }
}

StructType struct_from_list(const py::object& fields) {
  StructType t;
  if (fields.is_none()) return t;
  for (const auto item : fields.cast<py::sequence>()) {
    const auto f = item.cast<py::sequence>();
    if (f.size() < 2 || f.size() > 3) {
      raise_argument("skein.StructType", "a field must be (name, type) or (name, type, count)",
                     "Give e.g. [('x', numpy.float32), ('n', numpy.int32, 3)].");
    }
    add_field(t, f[0].cast<std::string>(), f[1], f.size() == 3 ? f[2].cast<std::size_t>() : 0);
  }
  return t;
}

Dtype register_numpy(const py::object& obj, const std::string& cname) {
  constexpr const char* call = "skein.register_dtype";
  if (py::isinstance<StructType>(obj)) return register_dtype(obj.cast<const StructType&>(), cname);
  const py::dtype dt = py::dtype::from_args(obj);
  const Dtype d = register_dtype(struct_from_numpy(dt, call), cname);
  numpy_of_records().emplace(d, dt);  // the first NumPy dtype registered for it stays
  return d;
}

}  // namespace

std::optional<Dtype> record_from_numpy(const py::dtype& dt, const char* call) {
  if (dt.attr("names").is_none()) return std::nullopt;
  for (const auto& [d, n] : numpy_of_records()) {
    if (dt.equal(n.cast<py::dtype>())) return d;
  }
  // Registered from C++ (or under an equal layout): compare with each record's NumPy layout.
  for (const Dtype d : record_dtypes()) {
    if (dt.equal(numpy_from_struct(record_type(d)))) return d;
  }
  raise_argument(call,
                 "the structured dtype '" + py::str(py::handle(dt)).cast<std::string>() +
                     "' is not a registered record dtype",
                 "Register it first: skein.register_dtype(dtype, 'cname').");
}

py::dtype record_to_numpy(Dtype dtype) {
  if (auto it = numpy_of_records().find(dtype); it != numpy_of_records().end()) {
    return it->second.cast<py::dtype>();
  }
  return numpy_from_struct(record_type(dtype));
}

void bind_records(py::module_& m) {
  py::class_<StructType>(m, "StructType",
                         "A C struct's fields and layout (skein::StructType): "
                         "StructType([('x', numpy.float32), ('n', numpy.int32, 3), ('s', other)]).")
      .def(py::init(&struct_from_list), py::arg("fields") = py::none())
      .def(
          "add",
          [](StructType& t, const std::string& name, const py::object& type,
             std::size_t count) -> StructType& {
            add_field(t, name, type, count);
            return t;
          },
          py::arg("name"), py::arg("type"), py::arg("count") = 0,
          py::return_value_policy::reference_internal,
          "Appends a field (a dtype or a StructType; count > 0: an array of count elements).")
      .def_property_readonly("names",
                             [](const StructType& t) {
                               py::list out;
                               for (const auto& f : t.fields()) out.append(f.name);
                               return out;
                             })
      .def_property_readonly("offsets", &StructType::offsets)
      .def_property_readonly("itemsize", &StructType::itemsize)
      .def_property_readonly("alignment", &StructType::alignment)
      .def(
          "aligned", [](const StructType& t, std::size_t a) { return align(t, a); },
          py::arg("alignment"), "A copy aligned to at least `alignment` (skein::align).")
      .def("numpy_dtype", &numpy_from_struct, "The NumPy dtype with this layout.")
      .def(
          "__eq__", [](const StructType& a, const StructType& b) { return a == b; },
          py::is_operator());
  m.def("register_dtype", &register_numpy, py::arg("dtype"), py::arg("cname"),
        "pygpu's register_dtype: a skein.Dtype for arrays of a skein.StructType or of a NumPy "
        "structured dtype (with the C layout: numpy.dtype([...], align=True)), called `cname` in "
        "kernel source. Arrays "
        "of it go to and from NumPy structured arrays (Array.from_host, get, set); kernels "
        "declare parameters as `cname x`. The same dtype under the same name gives the same "
        "skein.Dtype; a different one under a taken name raises skein.LogicError.");
  m.def(
      "record_numpy_dtype",
      [](const py::object& d) { return to_numpy(to_dtype(d, "skein.record_numpy_dtype")); },
      py::arg("dtype"), "The NumPy dtype of a record dtype (its C layout).");
  m.def(
      "ctype", [](const py::object& d) { return ctype(to_dtype(d, "skein.ctype")); },
      py::arg("dtype"),
      "pygpu's dtype_to_ctype: the C type of a dtype in kernel source ('float', "
      "'skein_complex64', a record's cname).");
  m.def(
      "ctype_struct",
      [](const py::object& d, const std::optional<std::string>& name, bool ignore_alignment) {
        if (py::isinstance<StructType>(d)) {
          return ctype_struct(d.cast<const StructType&>(), name ? *name : std::string("record"),
                              ignore_alignment);
        }
        const Dtype dt = to_dtype(d, "skein.ctype_struct");
        return ctype_struct(record_type(dt), name ? *name : std::string(skein::name(dt)),
                            ignore_alignment);
      },
      py::arg("dtype"), py::arg("name") = py::none(), py::arg("ignore_alignment") = false,
      "grunnur's ctype_struct: the C typedef of a record dtype (under its cname, or `name`) or "
      "of a skein.StructType (under `name`, default 'record'); "
      "ignore_alignment drops the ALIGN attributes.");
  m.def(
      "flatten_dtype",
      [](const py::object& d) {
        py::list out;
        for (const auto& f : flatten_dtype(to_dtype(d, "skein.flatten_dtype"))) {
          out.append(py::make_tuple(from_path(f.path), to_numpy(f.dtype), f.offset));
        }
        return out;
      },
      py::arg("dtype"),
      "grunnur's flatten_dtype: [(path, dtype, offset)] for every scalar leaf of a record dtype, "
      "array fields unrolled (path: a list of field names and indices).");
  m.def(
      "c_path", [](const py::object& path) { return c_path(to_path(path, "skein.c_path")); },
      py::arg("path"), "grunnur's c_path: 'a.b[2]' for ['a', 'b', 2].");
  m.def(
      "extract_field",
      [](const Array& a, const py::object& path) {
        return extract_field(a, to_path(path, "skein.extract_field"));
      },
      py::arg("array"), py::arg("path"),
      "grunnur's extract_field: a view (no copy) of one field of every element of an array of "
      "a record dtype: its dtype, the array's strides, an extra last axis for an unindexed "
      "array field. get() and set() of the view read and write that field.");
  m.def(
      "c_constant",
      [](const py::object& value, const py::object& dtype) {
        constexpr const char* call = "skein.c_constant";
        if (py::isinstance<py::array>(value) || py::hasattr(value, "dtype")) {
          const py::array a = py::array::ensure(value);
          const Dtype d = dtype.is_none() ? to_dtype(a.dtype(), call) : to_dtype(dtype, call);
          if (is_record(d) || dtype.is_none()) {
            if (to_dtype(a.dtype(), call) != d || a.size() != 1) {
              raise_argument(call, "give one element of the dtype",
                             "Pass a NumPy scalar or a one-element array of that dtype.");
            }
            const py::array c = py::array::ensure(a, py::array::c_style);
            const auto* p = static_cast<const std::byte*>(c.data());
            return c_constant(std::span<const std::byte>(p, itemsize(d)), d);
          }
        }
        if (py::isinstance<py::bool_>(value)) raise_argument(call, "a bool", "Give a number.");
        Operand v = py::isinstance<py::int_>(value) ? Operand(value.cast<std::int64_t>())
                    : py::isinstance<py::float_>(value)
                        ? Operand(value.cast<double>())
                        : Operand(value.cast<std::complex<double>>());
        return dtype.is_none() ? c_constant(v) : c_constant(v, to_dtype(dtype, call));
      },
      py::arg("value"), py::arg("dtype") = py::none(),
      "grunnur's c_constant: a value as C source; a record element (a NumPy structured scalar "
      "or one-element array) as a brace initializer, a complex as skein_make_complex64(re, im).");
  m.def(
      "min_scalar_type",
      [](const py::object& value, bool force_signed) -> py::dtype {
        if (py::isinstance<py::bool_>(value)) {
          raise_argument("skein.min_scalar_type", "a bool", "Give an int, float or complex.");
        }
        if (py::isinstance<py::int_>(value)) {
          if (value < py::int_(0))
            return to_numpy(min_scalar_type_of_int(value.cast<std::int64_t>(), force_signed));
          return to_numpy(min_scalar_type_of_uint(value.cast<std::uint64_t>(), force_signed));
        }
        if (py::isinstance<py::float_>(value))
          return to_numpy(min_scalar_type(value.cast<double>()));
        return to_numpy(min_scalar_type(value.cast<std::complex<double>>()));
      },
      py::arg("value"), py::arg("force_signed") = false,
      "NumPy's min_scalar_type (grunnur's, with force_signed): the smallest dtype holding the "
      "value.");
  m.def(
      "complex_for",
      [](const py::object& d) { return to_numpy(complex_for(to_dtype(d, "skein.complex_for"))); },
      py::arg("dtype"), "grunnur's complex_for: float32 -> complex64, float64 -> complex128.");
  m.def(
      "real_for",
      [](const py::object& d) { return to_numpy(real_for(to_dtype(d, "skein.real_for"))); },
      py::arg("dtype"), "grunnur's real_for: complex64 -> float32, complex128 -> float64.");
}

}  // namespace skein::python
