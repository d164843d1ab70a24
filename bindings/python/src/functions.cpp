// SPDX-License-Identifier: BSD-3-Clause
// Array functions after pygpu's and NumPy's: copies and dtype conversions (also as Array methods),
// reshape and atleast_1d/2d/3d, joining and splitting (split, hsplit, ...), take, transfer,
// may_share_memory and the reductions (sum, min, max, dot, nrm2, returning a new array or writing
// into `out`). The element-by-element functions, the operators and BLAS are in functions_math.cpp.
//
// Every function that makes device work enqueues it on the queue given (Array methods: the
// array's own queue unless one is given) and returns without waiting, as the C++ calls do; the
// calls that wait (take with mode='raise', transfer through the host) release the GIL meanwhile.
#include <string>
#include <vector>

#include "operands.hpp"

namespace skein::python {

namespace {

// A NumPy-style axis (negative counts from the end) as an index below `ndim`.
std::size_t to_axis(py::ssize_t axis, std::size_t ndim, const char* call) {
  const auto n = static_cast<py::ssize_t>(ndim);
  if (axis < -n || axis >= n) {
    raise_argument(call,
                   "axis " + std::to_string(axis) + " is out of bounds for " +
                       std::to_string(ndim) + " dimension(s)",
                   "Give an axis in [-ndim, ndim).");
  }
  return static_cast<std::size_t>(axis < 0 ? axis + n : axis);
}

std::vector<Array> array_list(const py::handle& seq, const char* call) {
  std::vector<Array> arrays;
  if (py::isinstance<Array>(seq) || !py::isinstance<py::sequence>(seq)) {
    raise_argument(call, "the arrays must be a sequence (list or tuple) of skein.Array",
                   "Pass [a, b, ...].");
  }
  for (const auto item : seq) {
    if (!py::isinstance<Array>(item)) {
      raise_argument(call,
                     "an item of the sequence is a " + std::string(Py_TYPE(item.ptr())->tp_name) +
                         ", not a skein.Array",
                     "Copy host arrays to the device first: Array.from_host(queue, host).");
    }
    arrays.push_back(item.cast<Array>());
  }
  return arrays;
}

TakeMode to_take_mode(const std::string& mode) {
  if (mode == "raise") return TakeMode::raise;
  if (mode == "wrap") return TakeMode::wrap;
  if (mode == "clip") return TakeMode::clip;
  raise_argument("skein.take", "mode '" + mode + "' is not 'raise', 'wrap' or 'clip'",
                 "Give one of NumPy's modes.");
}

// NumPy's axis= of a reduction (None, an int, or a tuple of ints) and out= into ReductionArgs.
ReductionArgs reduction_args(const py::object& axis, const py::object& out, bool deterministic,
                             std::size_t ndim, const char* call) {
  ReductionArgs args;
  args.deterministic = deterministic;
  args.out = to_out(out, call);
  if (axis.is_none()) return args;
  if (py::isinstance<py::int_>(axis)) {
    args.axis = to_axis(axis.cast<py::ssize_t>(), ndim, call);
  } else {
    for (const auto a : axis.cast<py::sequence>()) {
      args.axes.push_back(to_axis(a.cast<py::ssize_t>(), ndim, call));
    }
  }
  return args;
}

const Queue& queue_or(const Array& a, const py::object& queue) {
  return queue.is_none() ? a.queue() : py::cast<const Queue&>(queue);
}

void bind_copies(py::module_& m) {
  m.def(
      "astype",
      [](const Queue& q, const Array& x, const py::object& dtype) {
        return skein::astype(q, x, to_dtype(dtype, "skein.astype"));
      },
      py::arg("queue"), py::arg("x"), py::arg("dtype"),
      "A new contiguous array of `dtype` with x's values (NumPy's astype; complex to real is "
      "refused).");
  m.def(
      "copy",
      [](const Queue& q, const Array& a, const std::string& order) {
        return skein::copy(q, a, to_order(order, "skein.copy"));
      },
      py::arg("queue"), py::arg("a"), py::arg("order") = "C",
      "A new array with a's values in `order` ('C' or 'F'); any layout of a.");
  m.def("ascontiguousarray", &skein::ascontiguousarray, py::arg("queue"), py::arg("a"),
        "a itself when it is C-contiguous, else a C-ordered copy.");
  m.def("asfortranarray", &skein::asfortranarray, py::arg("queue"), py::arg("a"),
        "a itself when it is Fortran-contiguous, else a Fortran-ordered copy.");
  m.def(
      "transfer",
      [](const Array& a, const Queue& dest, const py::object& device_idx) {
        const auto idx = to_device_idx(device_idx, "skein.transfer");
        const py::gil_scoped_release release;  // through the host, it waits
        return skein::transfer(a, dest, idx);
      },
      py::arg("a"), py::arg("dest"), py::arg("device_idx") = py::none(),
      "A C-ordered copy of `a` on device `device_idx` of dest's context (pygpu's transfer).");
  m.def("may_share_memory", &skein::may_share_memory, py::arg("a"), py::arg("b"),
        "False when a and b certainly share no byte (NumPy's may_share_memory).");

  // The same as Array methods, on the array's own queue unless one is given.
  auto cls = py::reinterpret_borrow<py::object>(py::type::of<Array>());
  cls.attr("astype") = py::cpp_function(
      [](const Array& a, const py::object& dtype, const py::object& queue) {
        return skein::astype(queue_or(a, queue), a, to_dtype(dtype, "Array.astype"));
      },
      py::name("astype"), py::is_method(cls), py::arg("dtype"), py::arg("queue") = py::none(),
      "A new contiguous array of `dtype` with the array's values (on its queue by default).");
  cls.attr("copy") = py::cpp_function(
      [](const Array& a, const std::string& order, const py::object& queue) {
        return skein::copy(queue_or(a, queue), a, to_order(order, "Array.copy"));
      },
      py::name("copy"), py::is_method(cls), py::arg("order") = "C", py::arg("queue") = py::none(),
      "A new array with the same values in `order` (on the array's queue by default).");
  cls.attr("__copy__") = cls.attr("copy");
}

// NumPy's indices_or_sections: a positive int (equal sections: by_sections) or a sequence of
// indices (by_indices).
template <class BySections, class ByIndices>
std::vector<Array> split_by(const py::object& sections, const char* call, BySections by_sections,
                            ByIndices by_indices) {
  if (py::isinstance<py::int_>(sections)) {
    const auto n = sections.cast<py::ssize_t>();
    if (n <= 0) {
      raise_argument(call, "the number of sections must be positive",
                     "Give a positive int or a sequence of indices.");
    }
    return by_sections(static_cast<std::size_t>(n));
  }
  return by_indices(to_shape(sections, call));
}

// NumPy's atleast_nd(*arys): one array for one argument, else a list.
py::object each_array(const py::args& arys, Array (*f)(const Array&), const char* call) {
  const std::vector<Array> arrays = array_list(arys, call);
  if (arrays.size() == 1) return py::cast(f(arrays[0]));
  py::list out;
  for (const Array& a : arrays) out.append(f(a));
  return out;
}

void bind_shapes(py::module_& m) {
  m.def(
      "reshape",
      [](const Queue& q, const Array& a, const py::object& shape, const std::string& order) {
        const char* call = "skein.reshape";
        return skein::reshape(q, a, to_new_shape(shape, a.size(), call), to_order(order, call));
      },
      py::arg("queue"), py::arg("a"), py::arg("shape"), py::arg("order") = "C",
      "NumPy's and pygpu's reshape: a's elements read and placed in `order` ('C' or 'F') in "
      "`shape` (one extent may be -1); a view when the strides allow one, else a copy enqueued "
      "on `queue` (dense in `order`).");
  m.def(
      "atleast_1d",
      [](const py::args& arys) { return each_array(arys, &skein::atleast_1d, "skein.atleast_1d"); },
      "NumPy's atleast_1d: each array with at least 1 dimension (a view; a 0-d array becomes "
      "shape (1,)). One array for one argument, else a list.");
  m.def(
      "atleast_2d",
      [](const py::args& arys) { return each_array(arys, &skein::atleast_2d, "skein.atleast_2d"); },
      "NumPy's atleast_2d: (N,) becomes (1, N), a 0-d array (1, 1); views.");
  m.def(
      "atleast_3d",
      [](const py::args& arys) { return each_array(arys, &skein::atleast_3d, "skein.atleast_3d"); },
      "NumPy's atleast_3d: (N,) becomes (1, N, 1), (M, N) (M, N, 1), a 0-d array (1, 1, 1); "
      "views.");
}

void bind_joins(py::module_& m) {
  m.def(
      "concatenate",
      [](const Queue& q, const py::object& arrays, py::ssize_t axis) {
        auto list = array_list(arrays, "skein.concatenate");
        const std::size_t ndim = list.empty() ? 0 : list[0].ndim();
        return skein::concatenate(q, list, list.empty() ? 0 : to_axis(axis, ndim, "concatenate"));
      },
      py::arg("queue"), py::arg("arrays"), py::arg("axis") = 0,
      "The arrays joined along an existing axis (NumPy's concatenate), a new C-ordered array.");
  m.def(
      "stack",
      [](const Queue& q, const py::object& arrays, py::ssize_t axis) {
        auto list = array_list(arrays, "skein.stack");
        const std::size_t ndim = list.empty() ? 0 : list[0].ndim() + 1;
        return skein::stack(q, list, list.empty() ? 0 : to_axis(axis, ndim, "skein.stack"));
      },
      py::arg("queue"), py::arg("arrays"), py::arg("axis") = 0,
      "The arrays joined along a new axis (NumPy's stack).");
  m.def(
      "vstack",
      [](const Queue& q, const py::object& arrays) {
        return skein::vstack(q, array_list(arrays, "skein.vstack"));
      },
      py::arg("queue"), py::arg("arrays"));
  m.def(
      "hstack",
      [](const Queue& q, const py::object& arrays) {
        return skein::hstack(q, array_list(arrays, "skein.hstack"));
      },
      py::arg("queue"), py::arg("arrays"));
  m.def(
      "dstack",
      [](const Queue& q, const py::object& arrays) {
        return skein::dstack(q, array_list(arrays, "skein.dstack"));
      },
      py::arg("queue"), py::arg("arrays"));
  m.def(
      "split",
      [](const Array& a, const py::object& sections, py::ssize_t axis) {
        const std::size_t ax = to_axis(axis, a.ndim(), "skein.split");
        return split_by(
            sections, "skein.split", [&](std::size_t n) { return skein::split(a, n, ax); },
            [&](const Shape& at) { return skein::split(a, at, ax); });
      },
      py::arg("a"), py::arg("indices_or_sections"), py::arg("axis") = 0,
      "Views of `a` along `axis` (NumPy's split): equal sections, or parts at the indices.");
  m.def(
      "array_split",
      [](const Array& a, const py::object& sections, py::ssize_t axis) {
        const std::size_t ax = to_axis(axis, a.ndim(), "skein.array_split");
        return split_by(
            sections, "skein.array_split",
            [&](std::size_t n) { return skein::array_split(a, n, ax); },
            [&](const Shape& at) { return skein::split(a, at, ax); });
      },
      py::arg("a"), py::arg("indices_or_sections"), py::arg("axis") = 0,
      "As split, but sections need not be equal (NumPy's array_split).");
  using BySections = std::vector<Array> (*)(const Array&, std::size_t);
  using ByIndices = std::vector<Array> (*)(const Array&, const std::vector<std::size_t>&);
  const auto directional = [&m](const char* name, BySections by_n, ByIndices by_idx,
                                const char* doc) {
    m.def(
        name,
        [name, by_n, by_idx](const Array& a, const py::object& sections) {
          return split_by(
              sections, name, [&](std::size_t n) { return by_n(a, n); },
              [&](const Shape& at) { return by_idx(a, at); });
        },
        py::arg("a"), py::arg("indices_or_sections"), doc);
  };
  directional("hsplit", &skein::hsplit, &skein::hsplit,
              "split along axis 1 (axis 0 for a 1-D array): NumPy's hsplit, views.");
  directional("vsplit", &skein::vsplit, &skein::vsplit,
              "split along axis 0 of an array of 2 or more dimensions: NumPy's vsplit, views.");
  directional("dsplit", &skein::dsplit, &skein::dsplit,
              "split along axis 2 of an array of 3 or more dimensions: NumPy's dsplit, views.");
  m.def(
      "take",
      [](const Queue& q, const Array& a, const Array& indices, py::ssize_t axis,
         const std::string& mode) {
        const std::size_t ax = to_axis(axis, a.ndim(), "skein.take");
        const TakeMode tm = to_take_mode(mode);
        const py::gil_scoped_release release;  // mode='raise' waits for the index check
        return skein::take(q, a, indices, ax, tm);
      },
      py::arg("queue"), py::arg("a"), py::arg("indices"), py::arg("axis") = 0,
      py::arg("mode") = "raise",
      "NumPy's take: a's elements at `indices` (an integer array) along `axis`; mode 'raise', "
      "'wrap' or 'clip'.");
}

void bind_reductions(py::module_& m) {
  using Unary = Array (*)(const Queue&, const Array&, const ReductionArgs&);
  const auto unary = [&m](const char* name, Unary fn, const char* doc) {
    m.def(
        name,
        [fn, name](const Queue& q, const Array& x, const py::object& axis, const py::object& out,
                   bool deterministic) {
          return fn(q, x, reduction_args(axis, out, deterministic, x.ndim(), name));
        },
        py::arg("queue"), py::arg("x"), py::arg("axis") = py::none(), py::arg("out") = py::none(),
        py::arg("deterministic") = false, doc);
  };
  unary("sum", &skein::sum,
        "NumPy's sum as a device array (one element, or the reduced shape with axis=); "
        "integers accumulate in int64/uint64. Into `out` when given. Nothing is waited for.");
  unary("min", &skein::min, "The smallest element (NaN propagates), as sum.");
  unary("max", &skein::max, "The largest element (NaN propagates), as sum.");
  unary("nrm2", &skein::nrm2, "The 2-norm sqrt(sum |x|^2) in x's real dtype, as sum.");
  m.def(
      "dot",
      [](const Queue& q, const Array& x, const Array& y, const py::object& axis,
         const py::object& out, bool deterministic) {
        return skein::dot(q, x, y, reduction_args(axis, out, deterministic, x.ndim(), "dot"));
      },
      py::arg("queue"), py::arg("x"), py::arg("y"), py::arg("axis") = py::none(),
      py::arg("out") = py::none(), py::arg("deterministic") = false,
      "sum(x * y) in result_type(x, y), without conjugation (NumPy's dot of 1-D arrays), as sum.");
  m.def(
      "sum_dtype",
      [](const py::object& d) { return to_numpy(sum_dtype(to_dtype(d, "sum_dtype"))); },
      py::arg("dtype"), "The dtype skein.sum returns for arrays of `dtype`.");
  m.def(
      "nrm2_dtype",
      [](const py::object& d) { return to_numpy(nrm2_dtype(to_dtype(d, "nrm2_dtype"))); },
      py::arg("dtype"));
}

}  // namespace

void bind_functions(py::module_& m) {
  bind_copies(m);
  bind_joins(m);
  bind_shapes(m);
  bind_reductions(m);
  bind_math(m);
}

}  // namespace skein::python
