// SPDX-License-Identifier: BSD-3-Clause
// The built-in elementwise operations (skein/elementwise.hpp): axpy, scale, fill, copy, astype,
// binary, compare and unary, each an ElementwiseKernel per operation and dtypes, made on first use
// and kept for the process; and the hooks through which Array copies between layouts and zeroes
// views with them (strided_copy.hpp).
#include <fmt/format.h>

#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "codegen/programs.hpp"
#include "codegen/types.hpp"
#include "elementwise_impl.hpp"
#include "promotion.hpp"
#include "skein/ctypes.hpp"
#include "skein/detail/errors.hpp"
#include "skein/functions.hpp"
#include "strided_copy.hpp"

namespace skein {

std::string_view name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::subtract: return "subtract";
    case BinaryOp::multiply: return "multiply";
    case BinaryOp::divide: return "divide";
    case BinaryOp::maximum: return "maximum";
    case BinaryOp::minimum: return "minimum";
  }
  return "?";
}

std::string_view name(CompareOp op) {
  switch (op) {
    case CompareOp::equal: return "equal";
    case CompareOp::not_equal: return "not_equal";
    case CompareOp::less: return "less";
    case CompareOp::less_equal: return "less_equal";
    case CompareOp::greater: return "greater";
    case CompareOp::greater_equal: return "greater_equal";
  }
  return "?";
}

std::string_view name(UnaryOp op) {
  switch (op) {
    case UnaryOp::negative: return "negative";
    case UnaryOp::absolute: return "absolute";
    case UnaryOp::square: return "square";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sin: return "sin";
    case UnaryOp::cos: return "cos";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::floor: return "floor";
    case UnaryOp::ceil: return "ceil";
    case UnaryOp::conjugate: return "conjugate";
  }
  return "?";
}

namespace {

using detail::codegen::builtin_kernel;
using detail::codegen::builtin_key;

// The dtype a parameter is declared with: an array's own, or the loop dtype for a scalar.
Dtype declared(const Operand& o, Dtype loop) { return o.is_array() ? o.dtype() : loop; }

std::string unsigned_for(Dtype d) { return itemsize(d) == 8 ? "uint64_t" : "uint32_t"; }

// C for `a op b` on compute values of dtype t.
std::string arith(Dtype t, const std::string& a, char op, const std::string& b) {
  t = detail::codegen::compute_dtype(t);
  if (is_complex(t)) {
    const std::string m = detail::codegen::make_complex(t);
    if (op == '+') return fmt::format("{}({}.re + {}.re, {}.im + {}.im)", m, a, b, a, b);
    if (op == '-') return fmt::format("{}({}.re - {}.re, {}.im - {}.im)", m, a, b, a, b);
    return fmt::format("{0}({1}.re * {2}.re - {1}.im * {2}.im, {1}.re * {2}.im + {1}.im * {2}.re)",
                       m, a, b);
  }
  if (is_integer(t)) {
    // Wrap around as NumPy does: signed overflow is undefined in C, so go through unsigned.
    const std::string u = unsigned_for(t);
    return fmt::format("(({})(({}){} {} ({}){}))", ctype(t), u, a, op, u, b);
  }
  return fmt::format("({} {} {})", a, op, b);
}

std::string param_list(const std::vector<std::pair<Dtype, std::string>>& ps) {
  std::vector<std::string> parts;
  for (const auto& [d, n] : ps) parts.push_back(fmt::format("{} {}", name(d), n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The built-ins' calls: into `out` through the kept plans, or into a new array.
template <class... Ops>
Array run(const ElementwiseKernel& k, const Queue& queue, const std::optional<Array>& out,
          const Ops&... ops) {
  if (out) {
    const std::array<Operand, sizeof...(Ops) + 1> all{Operand(ops)..., Operand(*out)};
    detail::elementwise_enqueue(k, queue, all);
    return *out;
  }
  const std::array<Operand, sizeof...(Ops)> in{Operand(ops)...};
  return k(queue, in).front();
}

void check_out(const std::optional<Array>& out, Dtype expected, const char* call) {
  if (out && out->dtype() != expected) {
    detail::raise_in(SKEIN_HERE, call, "Pass an output of the result's dtype, or none.",
                     "the output is {}, the result dtype is {}", name(out->dtype()),
                     name(expected));
  }
}

std::string fn(const char* f, Dtype t) {
  return detail::codegen::compute_dtype(t) == Dtype::float32 ? fmt::format("_skein_f32({})", f) : f;
}

// Defines _skein_f32(f): CUDA's float math functions carry an `f` suffix, OpenCL's are overloaded.
const char* kMathPreamble = R"(#ifndef _skein_f32
#ifdef CUDA
#define _skein_f32(fn) fn##f
#else
#define _skein_f32(fn) fn
#endif
#endif
)";

// The scalar `value` as copy() writes it into an array of dtype d: NumPy's fill, where floats
// truncate toward zero for integer arrays and integers wrap (LogicError where the conversion would
// drop an imaginary part).
Operand fill_value(const Operand& value, Dtype d) {
  const auto bytes = value.bytes_as(d, "skein::copy value", true);
  if (!is_integer(d)) return value;
  return visit_dtype(d, [&](auto t) -> Operand {
    using T = decltype(t);
    if constexpr (std::is_integral_v<T>) {
      T x;
      std::memcpy(&x, bytes.data(), sizeof(T));
      return Operand(x);
    } else {
      return Operand(0);
    }
  });
}

// NumPy's float type for float functions of an integer dtype.
Dtype float_for(Dtype d) {
  if (!is_integer(d)) return d;
  if (itemsize(d) == 1) return Dtype::float16;
  if (itemsize(d) == 2) return Dtype::float32;
  return Dtype::float64;
}

}  // namespace

Array axpy(const Queue& queue, const Operand& a, const Operand& x, const Operand& y,
           const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &x, &y};
  const Dtype r = detail::result_type_of(ops);
  check_out(out, r, "skein::axpy");
  const Dtype da = declared(a, r), dx = declared(x, r), dy = declared(y, r);
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(1, da, dx, dy, r), [&] {
    const std::string ca = detail::codegen::convert_value(da, r, "a"),
                      cx = detail::codegen::convert_value(dx, r, "x"),
                      cy = detail::codegen::convert_value(dy, r, "y");
    return ElementwiseKernel(param_list({{da, "a"}, {dx, "x"}, {dy, "y"}}), param_list({{r, "z"}}),
                             "z = " + arith(r, arith(r, ca, '*', cx), '+', cy),
                             {.name = "skein_axpy"});
  });
  return run(k, queue, out, a, x, y);
}

Array scale(const Queue& queue, const Operand& a, const Operand& x,
            const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &x};
  const Dtype r = detail::result_type_of(ops);
  check_out(out, r, "skein::scale");
  const Dtype da = declared(a, r), dx = declared(x, r);
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(2, da, dx, r), [&] {
    return ElementwiseKernel(param_list({{da, "a"}, {dx, "x"}}), param_list({{r, "z"}}),
                             "z = " + arith(r, detail::codegen::convert_value(da, r, "a"), '*',
                                            detail::codegen::convert_value(dx, r, "x")),
                             {.name = "skein_scale"});
  });
  return run(k, queue, out, a, x);
}

void fill(const Queue& queue, const Array& out, const Operand& value) { copy(queue, value, out); }

void copy(const Queue& queue, const Operand& src, const Array& dst) {
  const Dtype s = src.is_array() ? src.dtype() : dst.dtype();
  const Dtype d = dst.dtype();
  if ((is_record(s) || is_record(d)) && s != d) {
    detail::raise_in(SKEIN_HERE, "skein::copy",
                     "Copy between arrays of one record dtype, or a field's view (extract_field) "
                     "into a numeric array.",
                     "cannot convert {} to {}: record dtypes copy only to themselves", name(s),
                     name(d));
  }
  if (is_complex(s) && !is_complex(d)) {
    detail::raise_in(SKEIN_HERE, "skein::copy",
                     "Take the real part explicitly (an ElementwiseKernel with z = x.re).",
                     "copying {} into {} would drop the imaginary part", name(s), name(d));
  }
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(3, s, d), [&] {
    return ElementwiseKernel(param_list({{s, "x"}}), param_list({{d, "z"}}),
                             "z = " + detail::codegen::convert_value(s, d, "x"),
                             {.name = "skein_copy"});
  });
  if (src.is_array()) {
    const std::array<Operand, 2> args{src, Operand(dst)};
    detail::elementwise_enqueue(k, queue, args);
  } else {
    k(queue, {fill_value(src, d), dst});
  }
}

void detail::strided_copy(const Queue& queue, const Array& src, const Array& dst) {
  copy(queue, src, dst);
}

void detail::strided_fill_zero(const Queue& queue, const Array& dst) {
  if (is_record(dst.dtype())) {  // a record has no scalar zero: copy from a zeroed dense array
    const Array zeros = Array::zeros(queue, dst.shape(), dst.dtype(), dst.device_idx());
    copy(queue, zeros, dst);
    return;
  }
  fill(queue, dst, 0);
}

Array astype(const Queue& queue, const Array& x, Dtype dtype) {
  if (is_complex(x.dtype()) && !is_complex(dtype)) {
    detail::raise_in(SKEIN_HERE, "skein::astype",
                     "Take the real part explicitly (an ElementwiseKernel with z = x.re).",
                     "converting {} to {} would drop the imaginary part", name(x.dtype()),
                     name(dtype));
  }
  Array out = Array::empty(queue, x.shape(), dtype, x.device_idx());
  copy(queue, x, out);
  return out;
}

Array binary(const Queue& queue, BinaryOp op, const Operand& a, const Operand& b,
             const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &b};
  const Dtype r = detail::result_type_of(ops);
  const Dtype c = (op == BinaryOp::divide && is_integer(r)) ? Dtype::float64 : r;
  if (is_complex(c) && (op == BinaryOp::maximum || op == BinaryOp::minimum)) {
    detail::raise_in(SKEIN_HERE, "skein::binary", "Compare real and imaginary parts explicitly.",
                     "{} is not defined for {}", name(op), name(c));
  }
  check_out(out, c, "skein::binary");
  const Dtype da = declared(a, r), db = declared(b, r);
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(4, op, da, db, c), [&] {
    const std::string x = detail::codegen::convert_value(da, c, "a"),
                      y = detail::codegen::convert_value(db, c, "b");
    std::string expr;
    RenderGlobals globals;
    switch (op) {
      case BinaryOp::add: expr = arith(c, x, '+', y); break;
      case BinaryOp::subtract: expr = arith(c, x, '-', y); break;
      case BinaryOp::multiply: expr = arith(c, x, '*', y); break;
      case BinaryOp::divide:
        if (is_complex(c)) {
          globals.emplace("div", functions::div(c, c));
          expr = fmt::format("${{div}}({}, {})", x, y);
        } else {
          expr = fmt::format("({} / {})", x, y);
        }
        break;
      case BinaryOp::maximum:
      case BinaryOp::minimum: {
        const char* cmp = op == BinaryOp::maximum ? ">=" : "<=";
        const std::string CT = detail::codegen::compute_ctype(c);
        if (is_integer(c)) {
          expr = fmt::format("(({0}){1} {2} ({0}){3} ? ({0}){1} : ({0}){3})", CT, x, cmp, y);
        } else {
          // NaN propagates, as NumPy's maximum / minimum.
          expr = fmt::format("_skein_pick(({0}){1}, ({0}){2})", CT, x, y);
        }
        break;
      }
    }
    std::string preamble;
    if ((op == BinaryOp::maximum || op == BinaryOp::minimum) && !is_integer(c)) {
      const std::string CT = detail::codegen::compute_ctype(c);
      preamble = fmt::format(
          "WITHIN_KERNEL INLINE {0} _skein_pick({0} a, {0} b)\n{{\n"
          "    if (a != a) return a;\n    if (b != b) return b;\n    return a {1} b ? a : b;\n}}\n",
          CT, op == BinaryOp::maximum ? ">=" : "<=");
    }
    return ElementwiseKernel(
        param_list({{da, "a"}, {db, "b"}}), param_list({{c, "z"}}), "z = " + expr,
        {.name = "skein_" + std::string(name(op)), .preamble = preamble, .globals = globals});
  });
  return run(k, queue, out, a, b);
}

Array compare(const Queue& queue, CompareOp op, const Operand& a, const Operand& b,
              const std::optional<Array>& out) {
  const Operand* const ops[] = {&a, &b};
  const Dtype r = detail::result_type_of(ops);
  if (is_complex(r) && op != CompareOp::equal && op != CompareOp::not_equal) {
    detail::raise_in(SKEIN_HERE, "skein::compare", "Compare real parts (or magnitudes) explicitly.",
                     "{} is not defined for {}", name(op), name(r));
  }
  check_out(out, Dtype::uint8, "skein::compare");
  const Dtype da = declared(a, r), db = declared(b, r);
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(5, op, da, db, r), [&] {
    const std::string x = detail::codegen::convert_value(da, r, "a"),
                      y = detail::codegen::convert_value(db, r, "b");
    static const char* ops_c[] = {"==", "!=", "<", "<=", ">", ">="};
    const char* o = ops_c[static_cast<int>(op)];
    std::string cond;
    if (is_complex(r)) {
      cond = fmt::format("(({0}).re == ({1}).re && ({0}).im == ({1}).im)", x, y);
      if (op == CompareOp::not_equal) cond = "!" + cond;
    } else {
      cond = fmt::format("({} {} {})", x, o, y);
    }
    return ElementwiseKernel(param_list({{da, "a"}, {db, "b"}}), "uint8 z",
                             fmt::format("z = {} ? 1 : 0", cond),
                             {.name = "skein_" + std::string(name(op))});
  });
  return run(k, queue, out, a, b);
}

Array unary(const Queue& queue, UnaryOp op, const Operand& x, const std::optional<Array>& out) {
  const Dtype d = x.is_array() ? x.dtype() : result_type(std::span<const Operand>(&x, 1));
  if (is_record(d)) detail::raise_record_dtype(d, "skein::unary");
  const bool float_fn = op == UnaryOp::sqrt || op == UnaryOp::exp || op == UnaryOp::log ||
                        op == UnaryOp::sin || op == UnaryOp::cos || op == UnaryOp::tanh ||
                        op == UnaryOp::floor || op == UnaryOp::ceil;
  if (is_complex(d) && float_fn && op != UnaryOp::exp) {
    detail::raise_in(SKEIN_HERE, "skein::unary",
                     "Complex inputs take negative, absolute, square, exp and conjugate.",
                     "{} of {} is not supported", name(op), name(d));
  }
  Dtype r = float_fn ? float_for(d) : d;
  if (op == UnaryOp::absolute && is_complex(d))
    r = d == Dtype::complex64 ? Dtype::float32 : Dtype::float64;
  check_out(out, r, "skein::unary");
  const auto& k = builtin_kernel<ElementwiseKernel>(builtin_key(6, op, d, r), [&] {
    const Dtype c = detail::codegen::compute_dtype(r);
    const std::string v = detail::codegen::convert_value(d, float_fn ? r : d, "x");
    const std::string CT = detail::codegen::compute_ctype(d);
    std::string expr;
    RenderGlobals globals;
    switch (op) {
      case UnaryOp::negative:
        if (is_complex(d)) {
          expr = fmt::format("{}(-x.re, -x.im)", detail::codegen::make_complex(d));
        } else if (is_integer(d)) {
          expr = fmt::format("(({})(({})0 - ({})x))", CT, unsigned_for(d), unsigned_for(d));
        } else {
          expr = "-x";
        }
        break;
      case UnaryOp::absolute:
        if (is_complex(d)) {
          expr = fmt::format("{}(x.re, x.im)", fn("hypot", r));
        } else if (is_integer(d) && is_signed(d)) {
          expr = fmt::format("(x < 0 ? (({})(({})0 - ({})x)) : x)", CT, unsigned_for(d),
                             unsigned_for(d));
        } else if (is_integer(d)) {
          expr = "x";
        } else {
          expr = fmt::format("{}(x)", fn("fabs", d));
        }
        break;
      case UnaryOp::square: expr = arith(d, "x", '*', "x"); break;
      case UnaryOp::conjugate:
        expr =
            is_complex(d) ? fmt::format("{}(x.re, -x.im)", detail::codegen::make_complex(d)) : "x";
        break;
      case UnaryOp::exp:
        if (is_complex(d)) {
          globals.emplace("exp", functions::exp(d));
          expr = "${exp}(x)";
          break;
        }
        [[fallthrough]];
      default: expr = fmt::format("{}({})", fn(std::string(name(op)).c_str(), c), v); break;
    }
    return ElementwiseKernel(
        param_list({{d, "x"}}), param_list({{r, "z"}}), "z = " + expr,
        {.name = "skein_" + std::string(name(op)), .preamble = kMathPreamble, .globals = globals});
  });
  return run(k, queue, out, x);
}

}  // namespace skein
