// SPDX-License-Identifier: BSD-3-Clause
#include "skein/functions.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "skein/detail/errors.hpp"
#include "skein/ctypes.hpp"

namespace skein {

namespace {

bool is_storage_only(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }

[[noreturn]] void reject(std::string_view fn, const std::string& what, std::string_view hint = {}) {
  detail::raise_in(SKEIN_HERE, fmt::format("skein::functions::{}", fn), hint, "{}", what);
}

void require_arithmetic(std::string_view fn, Dtype d) {
  if (is_storage_only(d)) {
    reject(fn, fmt::format("{} is a storage-only dtype", name(d)),
           "Convert it to float32 first (functions::cast).");
  }
}

Dtype real_of(Dtype d) {
  if (d == Dtype::complex64) return Dtype::float32;
  if (d == Dtype::complex128) return Dtype::float64;
  return d;
}

Dtype complex_of(Dtype d) { return d == Dtype::float64 ? Dtype::complex128 : Dtype::complex64; }

// The float precision (32 or 64 bits) a dtype needs when it meets a float, as NumPy has it:
// 16-bit and smaller integers fit float32, wider ones need float64.
int float_bits(Dtype d) {
  switch (d) {
    case Dtype::float32:
    case Dtype::complex64:
    case Dtype::int8:
    case Dtype::int16:
    case Dtype::uint8:
    case Dtype::uint16: return 32;
    default: return 64;
  }
}

Dtype signed_of_size(std::size_t size) {
  switch (size) {
    case 1: return Dtype::int8;
    case 2: return Dtype::int16;
    case 4: return Dtype::int32;
    default: return Dtype::int64;
  }
}

Dtype promote(Dtype a, Dtype b) {
  if (a == b) return a;
  if (!is_integer(a) || !is_integer(b)) {
    const bool cplx = is_complex(a) || is_complex(b);
    const bool wide = std::max(float_bits(a), float_bits(b)) == 64;
    if (cplx) return wide ? Dtype::complex128 : Dtype::complex64;
    return wide ? Dtype::float64 : Dtype::float32;
  }
  if (is_signed(a) == is_signed(b)) return itemsize(a) >= itemsize(b) ? a : b;
  const Dtype s = is_signed(a) ? a : b;
  const Dtype u = is_signed(a) ? b : a;
  if (itemsize(s) > itemsize(u)) return s;
  if (itemsize(u) < 8) return signed_of_size(itemsize(u) * 2);
  return Dtype::float64;  // no integer holds both int64 and uint64
}

std::string make(Dtype complex) { return "skein_make_" + ctype(complex).substr(6); }

// A C expression converting `x` from one dtype to another. `x` must be a plain name when `from`
// is complex (its parts are read separately).
std::string convert(std::string_view fn, Dtype from, Dtype to, const std::string& x) {
  if (from == to) return x;
  if (from == Dtype::float16)
    return convert(fn, Dtype::float32, to, "skein_float16_to_float(" + x + ")");
  if (from == Dtype::bfloat16)
    return convert(fn, Dtype::float32, to, "skein_bfloat16_to_float(" + x + ")");
  if (is_complex(from) && !is_complex(to)) {
    reject(fn,
           fmt::format("converting {} to {} would drop the imaginary part", name(from), name(to)),
           "Take the real part (.re) explicitly, or use a complex output dtype.");
  }
  if (to == Dtype::float16) {
    return "skein_float16_from_float(" + convert(fn, from, Dtype::float32, x) + ")";
  }
  if (to == Dtype::bfloat16) {
    return "skein_bfloat16_from_float(" + convert(fn, from, Dtype::float32, x) + ")";
  }
  if (is_complex(to)) {
    const std::string r = ctype(real_of(to));
    if (is_complex(from)) return fmt::format("{}(({}){}.re, ({}){}.im)", make(to), r, x, r, x);
    return fmt::format("{}(({}){}, ({})0)", make(to), r, x, r);
  }
  return fmt::format("(({}){})", ctype(to), x);
}

// `a op b` (+ or *) in dtype `t`. Integers wrap around like NumPy's: the arithmetic is done in an
// unsigned type of at least int's width, since signed overflow is undefined in C and even
// uint16 * uint16 promotes to (signed) int.
std::string wrapping_arith(Dtype t, const std::string& a, char op, const std::string& b) {
  if (!is_integer(t)) return fmt::format("({})({} {} {})", ctype(t), a, op, b);
  const std::string u = itemsize(t) == 8 ? "uint64_t" : "uint32_t";
  return fmt::format("({0})(({1}){2} {3} ({1}){4})", ctype(t), u, a, op, b);
}

std::string params(std::span<const Dtype> in, std::span<const std::string> names) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    out += fmt::format("{}{} {}", i ? ", " : "", ctype(in[i]), names[i]);
  }
  return out;
}

Module function_module(std::string_view fn, Dtype out, std::span<const Dtype> in,
                       std::span<const std::string> names, const std::string& body) {
  return Module(fmt::format("WITHIN_KERNEL INLINE {} ${{prefix}}({})\n{{\n{}}}\n", ctype(out),
                            params(in, names), body),
                {}, std::string(fn));
}

std::vector<std::string> arg_names(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(fmt::format("a{}", i));
  return out;
}

// add and mul: a real accumulator while the inputs are real, complex from the first complex one,
// so that real factors never meet a zero imaginary part (0 * inf would give NaN).
Module fold(std::string_view fn, char op, const std::vector<Dtype>& in,
            std::optional<Dtype> out_opt) {
  if (in.empty()) reject(fn, "needs at least one input dtype");
  for (Dtype d : in) require_arithmetic(fn, d);
  const Dtype out = out_opt.value_or(result_type(in));
  require_arithmetic(fn, out);
  if (!is_complex(out)) {
    for (Dtype d : in) {
      if (is_complex(d)) {
        reject(fn,
               fmt::format("a {} input with a real output ({}) would drop the imaginary part",
                           name(d), name(out)),
               "Use a complex output dtype.");
      }
    }
  }
  const Dtype real = real_of(out);
  const std::string R = ctype(real);
  const std::string O = ctype(out);
  const auto names = arg_names(in.size());
  std::string body;
  bool acc_complex = is_complex(in[0]);
  if (acc_complex) {
    body += fmt::format("  {} c = {};\n", O, convert(fn, in[0], out, names[0]));
  } else {
    body += fmt::format("  {} r = {};\n", R, convert(fn, in[0], real, names[0]));
  }
  for (std::size_t i = 1; i < in.size(); ++i) {
    const std::string t = fmt::format("t{}", i);
    if (!is_complex(in[i])) {
      body += fmt::format("  const {} {} = {};\n", R, t, convert(fn, in[i], real, names[i]));
      if (!acc_complex) {
        body += fmt::format("  r = {};\n", wrapping_arith(real, "r", op, t));
      } else if (op == '+') {
        body += fmt::format("  c = {}(c.re + {}, c.im);\n", make(out), t);
      } else {
        body += fmt::format("  c = {0}(c.re * {1}, c.im * {1});\n", make(out), t);
      }
      continue;
    }
    body += fmt::format("  const {} {} = {};\n", O, t, convert(fn, in[i], out, names[i]));
    if (!acc_complex) {
      if (op == '+') {
        body += fmt::format("  {0} c = {1}(r + {2}.re, {2}.im);\n", O, make(out), t);
      } else {
        body += fmt::format("  {0} c = {1}(r * {2}.re, r * {2}.im);\n", O, make(out), t);
      }
      acc_complex = true;
    } else if (op == '+') {
      body += fmt::format("  c = {0}(c.re + {1}.re, c.im + {1}.im);\n", make(out), t);
    } else {
      body +=
          fmt::format("  c = {0}(c.re * {1}.re - c.im * {1}.im, c.re * {1}.im + c.im * {1}.re);\n",
                      make(out), t);
    }
  }
  if (acc_complex) {
    body += "  return c;\n";
  } else if (is_complex(out)) {
    body += fmt::format("  return {}(r, ({})0);\n", make(out), R);
  } else {
    body += "  return r;\n";
  }
  return function_module(fn, out, in, names, body);
}

void require_float(std::string_view fn, Dtype d, bool complex_ok) {
  require_arithmetic(fn, d);
  if (is_integer(d) || (!complex_ok && is_complex(d))) {
    reject(fn,
           fmt::format("needs a {} dtype, got {}",
                       complex_ok ? "float or complex" : "float (float32 or float64)", name(d)),
           "Cast integers to a float dtype first (functions::cast).");
  }
}

}  // namespace

Dtype result_type(std::span<const Dtype> dtypes) {
  if (dtypes.empty()) {
    detail::raise_in(SKEIN_HERE, "skein::result_type", {}, "needs at least one dtype");
  }
  for (Dtype d : dtypes) {
    if (is_record(d)) detail::raise_record_dtype(d, "skein::result_type");
    if (is_storage_only(d)) {
      detail::raise_in(SKEIN_HERE, "skein::result_type", "Convert it to float32 first.",
                       "{} is a storage-only dtype", name(d));
    }
  }
  Dtype out = dtypes[0];
  for (Dtype d : dtypes.subspan(1)) out = promote(out, d);
  return out;
}

namespace functions {

Module add(const std::vector<Dtype>& in, std::optional<Dtype> out) {
  return fold("add", '+', in, out);
}
Module mul(const std::vector<Dtype>& in, std::optional<Dtype> out) {
  return fold("mul", '*', in, out);
}

Module div(Dtype a, Dtype b, std::optional<Dtype> out_opt) {
  constexpr std::string_view fn = "div";
  require_arithmetic(fn, a);
  require_arithmetic(fn, b);
  const Dtype in[] = {a, b};
  const Dtype out = out_opt.value_or(result_type(in));
  require_arithmetic(fn, out);
  const auto names = arg_names(2);
  std::string body;
  if (!is_complex(out)) {
    body = fmt::format("  return ({})({} / {});\n", ctype(out), convert(fn, a, out, "a0"),
                       convert(fn, b, out, "a1"));
    return function_module(fn, out, in, names, body);
  }
  const Dtype real = real_of(out);
  const std::string R = ctype(real), O = ctype(out), mk = make(out);
  const std::string x = fmt::format("  const {} x = {};\n", is_complex(a) ? O : R,
                                    convert(fn, a, is_complex(a) ? out : real, "a0"));
  const std::string y = fmt::format("  const {} y = {};\n", is_complex(b) ? O : R,
                                    convert(fn, b, is_complex(b) ? out : real, "a1"));
  const std::string n = fmt::format("  const {} n = y.re * y.re + y.im * y.im;\n", R);
  body = x + y;
  if (!is_complex(a) && !is_complex(b)) {
    body += fmt::format("  return {}(x / y, ({})0);\n", mk, R);
  } else if (!is_complex(b)) {
    body += fmt::format("  return {}(x.re / y, x.im / y);\n", mk);
  } else if (!is_complex(a)) {
    body += n + fmt::format("  return {}(x * y.re / n, -x * y.im / n);\n", mk);
  } else {
    body += n + fmt::format(
                    "  return {}((x.re * y.re + x.im * y.im) / n, "
                    "(x.im * y.re - x.re * y.im) / n);\n",
                    mk);
  }
  return function_module(fn, out, in, names, body);
}

Module conj(Dtype d) {
  require_arithmetic("conj", d);
  const std::string body = is_complex(d) ? fmt::format("  return {}(a0.re, -a0.im);\n", make(d))
                                         : std::string("  return a0;\n");
  return function_module("conj", d, std::span(&d, 1), arg_names(1), body);
}

Module exp(Dtype d) {
  require_float("exp", d, true);
  std::string body;
  if (is_complex(d)) {
    body = fmt::format("  const {} e = exp(a0.re);\n  return {}(e * cos(a0.im), e * sin(a0.im));\n",
                       ctype(real_of(d)), make(d));
  } else {
    body = "  return exp(a0);\n";
  }
  return function_module("exp", d, std::span(&d, 1), arg_names(1), body);
}

Module pow(Dtype base, std::optional<Dtype> exponent_opt, std::optional<Dtype> out_opt) {
  constexpr std::string_view fn = "pow";
  require_arithmetic(fn, base);
  const Dtype e = exponent_opt.value_or(real_of(base));
  const Dtype out = out_opt.value_or(base);
  require_arithmetic(fn, e);
  require_arithmetic(fn, out);
  if (is_complex(e)) {
    reject(fn, fmt::format("complex exponents ({}) are not supported", name(e)),
           "Use a float or integer exponent dtype.");
  }
  if (is_integer(out) && !is_integer(e)) {
    reject(fn,
           fmt::format("a {} exponent with an integer output ({}) is not supported", name(e),
                       name(out)),
           "Use an integer exponent or a float output dtype.");
  }
  const Dtype in[] = {base, e};
  const Dtype real = real_of(out);
  const std::string O = ctype(out), R = ctype(real);
  const bool cplx = is_complex(out);
  const std::string one =
      cplx ? fmt::format("{}(({})1, ({})0)", make(out), R, R) : fmt::format("({})1", O);
  std::string body = fmt::format("  {} x = {};\n", O, convert(fn, base, out, "a0"));

  if (is_integer(e)) {
    if (is_signed(e)) {
      body += "  uint64_t m = a1 < 0 ? (uint64_t)0 - (uint64_t)a1 : (uint64_t)a1;\n";
      if (is_integer(out)) {
        // Only 1 and -1 have integer reciprocals; every other base truncates to 0.
        body += fmt::format("  if (a1 < 0) return x == ({0})1 ? ({0})1 : ", O);
        body += is_signed(out)
                    ? fmt::format("x == ({0})(-1) ? ((m & 1) ? ({0})(-1) : ({0})1) : ({0})0;\n", O)
                    : fmt::format("({})0;\n", O);
      }
    } else {
      body += "  uint64_t m = (uint64_t)a1;\n";
    }
    const std::string k = "m";
    body += fmt::format("  {} r = {};\n", O, one);
    const std::string mul_rx =
        cplx ? fmt::format("{}(r.re * x.re - r.im * x.im, r.re * x.im + r.im * x.re)", make(out))
             : wrapping_arith(out, "r", '*', "x");
    const std::string mul_xx =
        cplx ? fmt::format("{}(x.re * x.re - x.im * x.im, (({})2) * x.re * x.im)", make(out), R)
             : wrapping_arith(out, "x", '*', "x");
    body += fmt::format(
        "  while ({0}) {{\n    if ({0} & 1) r = {1};\n    x = {2};\n    {0} >>= 1;\n  }}\n", k,
        mul_rx, mul_xx);
    if (is_signed(e) && !is_integer(out)) {
      if (cplx) {
        body += fmt::format(
            "  if (a1 < 0) {{\n    const {} n = r.re * r.re + r.im * r.im;\n"
            "    r = {}(r.re / n, -r.im / n);\n  }}\n",
            R, make(out));
      } else {
        body += fmt::format("  if (a1 < 0) r = ({})1 / r;\n", O);
      }
    }
    body += "  return r;\n";
    return function_module(fn, out, in, arg_names(2), body);
  }

  if (!cplx) {
    body += fmt::format("  return pow(x, {});\n", convert(fn, e, out, "a1"));
    return function_module(fn, out, in, arg_names(2), body);
  }
  // Complex base, real exponent: polar form. At zero, 0^y is 1 for y == 0, 0 for y > 0 and
  // infinite for y < 0 (1 / 0 at run time: no constant to spell it).
  body += fmt::format("  const {} y = {};\n", R, convert(fn, e, real, "a1"));
  body += fmt::format("  const {} r = hypot(x.re, x.im);\n", R);
  body += fmt::format(
      "  if (r == ({0})0) return {1}(y == ({0})0 ? ({0})1 : y > ({0})0 ? ({0})0 : ({0})1 / r, "
      "({0})0);\n",
      R, make(out));
  body +=
      fmt::format("  const {} rho = pow(r, y);\n  const {} theta = y * atan2(x.im, x.re);\n", R, R);
  body += fmt::format("  return {}(rho * cos(theta), rho * sin(theta));\n", make(out));
  return function_module(fn, out, in, arg_names(2), body);
}

Module polar(Dtype d) {
  require_float("polar", d, false);
  const Dtype in[] = {d, d};
  return function_module(
      "polar", complex_of(d), in, arg_names(2),
      fmt::format("  return {}(a0 * cos(a1), a0 * sin(a1));\n", make(complex_of(d))));
}

Module polar_unit(Dtype d) {
  require_float("polar_unit", d, false);
  return function_module("polar_unit", complex_of(d), std::span(&d, 1), arg_names(1),
                         fmt::format("  return {}(cos(a0), sin(a0));\n", make(complex_of(d))));
}

Module norm(Dtype d) {
  require_arithmetic("norm", d);
  if (is_complex(d)) {
    return function_module("norm", real_of(d), std::span(&d, 1), arg_names(1),
                           "  return a0.re * a0.re + a0.im * a0.im;\n");
  }
  return function_module("norm", d, std::span(&d, 1), arg_names(1),
                         fmt::format("  return {};\n", wrapping_arith(d, "a0", '*', "a0")));
}

Module cast(Dtype from, Dtype to) {
  return function_module("cast", to, std::span(&from, 1), arg_names(1),
                         fmt::format("  return {};\n", convert("cast", from, to, "a0")));
}

}  // namespace functions
}  // namespace skein
