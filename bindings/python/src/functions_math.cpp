// SPDX-License-Identifier: BSD-3-Clause
// Element-by-element functions (NumPy's ufuncs as Skein has them: add ... minimum, the
// comparisons, negative ... conjugate, axpy, scale, fill, copyto), result_type, the Python
// operators of skein.Array over them, and skein.blas (pygpu.blas: dot, nrm2, axpy, scal, gemv,
// ger, gemm, gemm_batched). Each enqueues its work and returns without waiting, except blas.dot
// and blas.nrm2 without `result`, which return a host value and release the GIL while they wait.
#include <string>
#include <vector>

#include "operands.hpp"

namespace skein::python {

namespace {

void bind_ufuncs(py::module_& m) {
  static constexpr BinaryOp binary_ops[] = {BinaryOp::add,      BinaryOp::subtract,
                                            BinaryOp::multiply, BinaryOp::divide,
                                            BinaryOp::maximum,  BinaryOp::minimum};
  for (const BinaryOp op : binary_ops) {
    const std::string name(skein::name(op));
    m.def(
        name.c_str(),
        [op](const Queue& q, const py::handle& a, const py::handle& b, const py::handle& out) {
          return skein::binary(q, op, to_operand(a, "skein.binary", "a"),
                               to_operand(b, "skein.binary", "b"), to_out(out, "skein.binary"));
        },
        py::arg("queue"), py::arg("a"), py::arg("b"), py::arg("out") = py::none(),
        ("NumPy's " + name + " of arrays or scalars (broadcast), in result_type(a, b).").c_str());
  }
  static constexpr CompareOp compare_ops[] = {CompareOp::equal,   CompareOp::not_equal,
                                              CompareOp::less,    CompareOp::less_equal,
                                              CompareOp::greater, CompareOp::greater_equal};
  for (const CompareOp op : compare_ops) {
    const std::string name(skein::name(op));
    m.def(
        name.c_str(),
        [op](const Queue& q, const py::handle& a, const py::handle& b, const py::handle& out) {
          return skein::compare(q, op, to_operand(a, "skein.compare", "a"),
                                to_operand(b, "skein.compare", "b"), to_out(out, "skein.compare"));
        },
        py::arg("queue"), py::arg("a"), py::arg("b"), py::arg("out") = py::none(),
        ("NumPy's " + name + ", as uint8 (1 where it holds; Skein has no bool dtype).").c_str());
  }
  static constexpr UnaryOp unary_ops[] = {UnaryOp::negative, UnaryOp::absolute, UnaryOp::square,
                                          UnaryOp::sqrt,     UnaryOp::exp,      UnaryOp::log,
                                          UnaryOp::sin,      UnaryOp::cos,      UnaryOp::tanh,
                                          UnaryOp::floor,    UnaryOp::ceil,     UnaryOp::conjugate};
  for (const UnaryOp op : unary_ops) {
    const std::string name(skein::name(op));
    m.def(
        name.c_str(),
        [op](const Queue& q, const py::handle& x, const py::handle& out) {
          return skein::unary(q, op, to_operand(x, "skein.unary", "x"), to_out(out, "skein.unary"));
        },
        py::arg("queue"), py::arg("x"), py::arg("out") = py::none(),
        ("NumPy's " + name + ".").c_str());
  }
  m.def(
      "axpy",
      [](const Queue& q, const py::handle& a, const py::handle& x, const py::handle& y,
         const py::handle& out) {
        return skein::axpy(q, to_operand(a, "skein.axpy", "a"), to_operand(x, "skein.axpy", "x"),
                           to_operand(y, "skein.axpy", "y"), to_out(out, "skein.axpy"));
      },
      py::arg("queue"), py::arg("a"), py::arg("x"), py::arg("y"), py::arg("out") = py::none(),
      "a * x + y (pass out=y to update y in place).");
  m.def(
      "scale",
      [](const Queue& q, const py::handle& a, const py::handle& x, const py::handle& out) {
        return skein::scale(q, to_operand(a, "skein.scale", "a"), to_operand(x, "skein.scale", "x"),
                            to_out(out, "skein.scale"));
      },
      py::arg("queue"), py::arg("a"), py::arg("x"), py::arg("out") = py::none(), "a * x.");
  m.def(
      "fill",
      [](const Queue& q, const Array& out, const py::handle& value) {
        skein::fill(q, out, to_operand(value, "skein.fill", "value"));
      },
      py::arg("queue"), py::arg("out"), py::arg("value"),
      "Every element of `out` set to `value` (NumPy's fill; strided views too).");
  m.def(
      "copyto",
      [](const Queue& q, const Array& dst, const py::handle& src) {
        skein::copy(q, to_operand(src, "skein.copyto", "src"), dst);
      },
      py::arg("queue"), py::arg("dst"), py::arg("src"),
      "NumPy's copyto: dst = src, converted to dst's dtype, src broadcast to dst's shape.");
  m.def(
      "result_type",
      [](const py::args& args) {
        std::vector<Operand> operands;
        for (const auto a : args) {
          if (py::isinstance<Array>(a) || PyLong_Check(a.ptr()) || PyFloat_Check(a.ptr()) ||
              PyComplex_Check(a.ptr()) || numpy_scalar_dtype(a)) {
            operands.push_back(to_operand(a, "skein.result_type", "an argument"));
          } else {
            // A dtype: a strong operand of that dtype.
            operands.push_back(Operand::typed_int(to_dtype(a, "skein.result_type"), 0));
          }
        }
        return to_numpy(skein::result_type(operands));
      },
      "NumPy 2's promotion over arrays, dtypes and scalars (Python scalars are weak), as Skein's "
      "kernels apply it.");
}

// a OP b for an Array on the left (or right, `reflected`), on the array's queue.
py::object binary_operator(BinaryOp op, const py::handle& self, const py::handle& other,
                           bool reflected) {
  // NumPy arrays and other foreign objects: let Python try their reflected operator.
  if (!py::isinstance<Array>(other) && !PyLong_Check(other.ptr()) && !PyFloat_Check(other.ptr()) &&
      !PyComplex_Check(other.ptr()) && !numpy_scalar_dtype(other)) {
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  }
  const auto& a = py::cast<const Array&>(self);
  const Operand x = to_operand(self, "skein.Array operator", "the array");
  const Operand y = to_operand(other, "skein.Array operator", "the other operand");
  return py::cast(reflected ? skein::binary(a.queue(), op, y, x)
                            : skein::binary(a.queue(), op, x, y));
}

void bind_operators() {
  auto cls = py::reinterpret_borrow<py::object>(py::type::of<Array>());
  const auto def = [&cls](const char* name, BinaryOp op, bool reflected) {
    cls.attr(name) = py::cpp_function(
        [op, reflected](const py::handle& self, const py::handle& other) {
          return binary_operator(op, self, other, reflected);
        },
        py::name(name), py::is_method(cls), py::arg("other"));
  };
  def("__add__", BinaryOp::add, false);
  def("__radd__", BinaryOp::add, true);
  def("__sub__", BinaryOp::subtract, false);
  def("__rsub__", BinaryOp::subtract, true);
  def("__mul__", BinaryOp::multiply, false);
  def("__rmul__", BinaryOp::multiply, true);
  def("__truediv__", BinaryOp::divide, false);
  def("__rtruediv__", BinaryOp::divide, true);
  cls.attr("__neg__") =
      py::cpp_function([](const Array& a) { return skein::unary(a.queue(), UnaryOp::negative, a); },
                       py::name("__neg__"), py::is_method(cls));
  cls.attr("__abs__") =
      py::cpp_function([](const Array& a) { return skein::unary(a.queue(), UnaryOp::absolute, a); },
                       py::name("__abs__"), py::is_method(cls));
}

void bind_array_blas(py::module_& m) {
  auto blas = m.def_submodule("blas",
                              "BLAS on one device (pygpu.blas) over cuBLAS / CLBlast: "
                              "float32 and float64, C-ordered arrays, NumPy's results.");
  blas.def(
      "status",
      [](const Api& api) {
        const auto s = skein::blas::status(api.id());
        return py::make_tuple(s.available, s.reason);
      },
      py::arg("api"), "(available, reason): whether BLAS can be used with contexts of `api`.");
  blas.def(
      "dot",
      [](const Queue& q, const Array& x, const Array& y, const py::object& result) -> py::object {
        if (!result.is_none()) {
          skein::blas::dot(q, x, y, result.cast<Array>());
          return result;
        }
        const py::gil_scoped_release release;
        const double v = skein::blas::dot(q, x, y);
        const py::gil_scoped_acquire acquire;
        return py::float_(v);
      },
      py::arg("queue"), py::arg("x"), py::arg("y"), py::arg("result") = py::none(),
      "x . y: a float (waits), or written into `result` (a one-element array; no wait).");
  blas.def(
      "nrm2",
      [](const Queue& q, const Array& x, const py::object& result) -> py::object {
        if (!result.is_none()) {
          skein::blas::nrm2(q, x, result.cast<Array>());
          return result;
        }
        const py::gil_scoped_release release;
        const double v = skein::blas::nrm2(q, x);
        const py::gil_scoped_acquire acquire;
        return py::float_(v);
      },
      py::arg("queue"), py::arg("x"), py::arg("result") = py::none(), "||x||_2, as dot.");
  blas.def("axpy", &skein::blas::axpy, py::arg("queue"), py::arg("alpha"), py::arg("x"),
           py::arg("y"), "y = alpha * x + y.");
  blas.def("scal", &skein::blas::scal, py::arg("queue"), py::arg("alpha"), py::arg("x"),
           "x = alpha * x.");
  blas.def(
      "gemv",
      [](const Queue& q, double alpha, const Array& a, const Array& x, double beta,
         const py::object& y, bool trans_a) -> Array {
        const skein::blas::GemvOptions o{.trans_a = trans_a};
        if (y.is_none()) return skein::blas::gemv(q, alpha, a, x, o);
        skein::blas::gemv(q, alpha, a, x, beta, y.cast<Array>(), o);
        return y.cast<Array>();
      },
      py::arg("queue"), py::arg("alpha"), py::arg("a"), py::arg("x"), py::arg("beta") = 0.0,
      py::arg("y") = py::none(), py::arg("trans_a") = false,
      "y = alpha * op(A) @ x + beta * y; a new array alpha * op(A) @ x without y.");
  blas.def(
      "ger",
      [](const Queue& q, double alpha, const Array& x, const Array& y,
         const py::object& a) -> Array {
        if (a.is_none()) return skein::blas::ger(q, alpha, x, y);
        skein::blas::ger(q, alpha, x, y, a.cast<Array>());
        return a.cast<Array>();
      },
      py::arg("queue"), py::arg("alpha"), py::arg("x"), py::arg("y"), py::arg("a") = py::none(),
      "A = alpha * outer(x, y) + A; a new array without A.");
  const auto gemm = [&blas](const char* name, bool batched) {
    blas.def(
        name,
        [batched](const Queue& q, double alpha, const Array& a, const Array& b, double beta,
                  const py::object& c, bool trans_a, bool trans_b, bool allow_tf32) -> Array {
          const skein::blas::GemmOptions o{
              .trans_a = trans_a, .trans_b = trans_b, .allow_tf32 = allow_tf32};
          if (c.is_none()) {
            return batched ? skein::blas::gemm_batched(q, alpha, a, b, o)
                           : skein::blas::gemm(q, alpha, a, b, o);
          }
          if (batched) {
            skein::blas::gemm_batched(q, alpha, a, b, beta, c.cast<Array>(), o);
          } else {
            skein::blas::gemm(q, alpha, a, b, beta, c.cast<Array>(), o);
          }
          return c.cast<Array>();
        },
        py::arg("queue"), py::arg("alpha"), py::arg("a"), py::arg("b"), py::arg("beta") = 0.0,
        py::arg("c") = py::none(), py::arg("trans_a") = false, py::arg("trans_b") = false,
        py::arg("allow_tf32") = false,
        batched ? "C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i] for 3-D arrays."
                : "C = alpha * op(A) @ op(B) + beta * C; a new array alpha * op(A) @ op(B) "
                  "without C.");
  };
  gemm("gemm", false);
  gemm("gemm_batched", true);
}

}  // namespace

void bind_math(py::module_& m) {
  bind_ufuncs(m);
  bind_operators();
  bind_array_blas(m);
}

}  // namespace skein::python
