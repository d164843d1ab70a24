// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/params.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>

#include "codegen/types.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail::codegen {

// --- parameters --------------------------------------------------------------------------------

namespace {
std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    const std::size_t b = i;
    while (i < s.size() && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    if (i > b) out.emplace_back(s.substr(b, i - b));
  }
  return out;
}
}  // namespace

std::vector<ParamDecl> parse_params(std::string_view text, bool output, const std::string& call,
                                    const std::string& kernel) {
  std::vector<ParamDecl> out;
  if (trim(text).empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const auto words = split_words(item);
    auto bad = [&](const std::string& why) {
      raise_in(SKEIN_HERE, call,
               "Write each parameter as `TYPE NAME` or `raw TYPE NAME`, separated by commas, "
               "e.g. \"T x, float32 a, raw T y\".",
               "kernel '{}': {} parameter '{}' in \"{}\": {}", kernel, output ? "output" : "input",
               item, text, why);
    };
    if (item.empty()) bad("empty parameter");
    if (item.find_first_of("*&[]()") != std::string::npos) {
      bad("pointers and qualifiers are not part of the syntax (arrays are passed at call time; "
          "`raw` gives a pointer)");
    }
    ParamDecl p;
    p.output = output;
    std::size_t first = 0;
    if (words.size() >= 2 && words[0] == "raw") {
      p.raw = true;
      first = 1;
    }
    if (words.size() < first + 2) bad("a type and a name are needed");
    p.name = words.back();
    std::string type;
    for (std::size_t i = first; i + 1 < words.size(); ++i)
      type += (type.empty() ? "" : " ") + words[i];
    p.type = type;
    if (!is_identifier(p.name)) bad(fmt::format("'{}' is not a C identifier", p.name));
    p.dtype = dtype_from_type_name(type);
    if (!p.dtype && !is_identifier(type)) {
      bad(
          fmt::format("'{}' is neither a dtype (float32, int64, ..., or a C name such as float) "
                      "nor a placeholder identifier",
                      type));
    }
    out.push_back(std::move(p));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

void check_reserved(const std::vector<ParamDecl>& params,
                    std::span<const std::string_view> reserved, const std::string& call,
                    const std::string& kernel) {
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const bool is_reserved =
        p.name.rfind("_skein", 0) == 0 ||
        std::find(reserved.begin(), reserved.end(), std::string_view(p.name)) != reserved.end();
    if (is_reserved) {
      raise_in(SKEIN_HERE, call,
               fmt::format("Rename it: {} and names starting with _skein are the generated "
                           "code's.",
                           fmt::join(reserved, ", ")),
               "kernel '{}': parameter name '{}' is reserved", kernel, p.name);
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (params[j].name == p.name) {
        raise_in(SKEIN_HERE, call, "Give each parameter its own name.",
                 "kernel '{}': parameter '{}' is declared twice", kernel, p.name);
      }
    }
    for (const auto& q : params) {
      if (!q.dtype && q.type == p.name) {
        raise_in(SKEIN_HERE, call, "Use different names for types and parameters.",
                 "kernel '{}': '{}' is both a type placeholder and a parameter name", kernel,
                 p.name);
      }
    }
  }
}

namespace {

// OpenCL C's built-in functions (1.2 to 3.0) that a kernel's name could take, and the prefixes of
// whole families of them. Sorted.
// clang-format off
constexpr std::string_view kBuiltins[] = {
    "abs", "abs_diff", "acos", "acosh", "acospi", "add_sat", "all", "any", "asin", "asinh",
    "asinpi", "atan", "atan2", "atan2pi", "atanh", "atanpi", "barrier", "bitselect", "cbrt", "ceil",
    "clamp", "clz", "copysign", "cos", "cosh", "cospi", "cross", "ctz", "degrees", "distance",
    "dot", "erf", "erfc", "exp", "exp10", "exp2", "expm1", "fabs", "fast_distance", "fast_length",
    "fast_normalize", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "fract", "frexp", "hadd",
    "hypot", "ilogb", "isequal", "isfinite", "isgreater", "isgreaterequal", "isinf", "isless",
    "islessequal", "islessgreater", "isnan", "isnormal", "isnotequal", "isordered", "isunordered",
    "ldexp", "length", "lgamma", "lgamma_r", "log", "log10", "log1p", "log2", "logb", "mad",
    "mad24", "mad_hi", "mad_sat", "max", "maxmag", "mem_fence", "min", "minmag", "mix", "modf",
    "mul24", "mul_hi", "nan", "nextafter", "normalize", "popcount", "pow", "pown", "powr",
    "prefetch", "printf", "radians", "read_mem_fence", "remainder", "remquo", "rhadd", "rint",
    "rootn", "rotate", "round", "rsqrt", "select", "shuffle", "shuffle2", "sign", "signbit", "sin",
    "sincos", "sinh", "sinpi", "smoothstep", "sqrt", "step", "sub_sat", "tan", "tanh", "tanpi",
    "tgamma", "trunc", "upsample", "wait_group_events", "write_mem_fence"};
// clang-format on
constexpr std::string_view kBuiltinPrefixes[] = {
    "as_",     "async_",     "atom_",      "atomic_", "convert_", "get_",        "half_",
    "native_", "read_image", "sub_group_", "vload",   "vstore",   "work_group_", "write_image"};

bool is_opencl_builtin(std::string_view name) {
  if (std::binary_search(std::begin(kBuiltins), std::end(kBuiltins), name)) return true;
  return std::any_of(std::begin(kBuiltinPrefixes), std::end(kBuiltinPrefixes),
                     [&](std::string_view p) { return name.substr(0, p.size()) == p; });
}

}  // namespace

void check_kernel_name(const std::string& kernel, const std::string& call) {
  if (!is_identifier(kernel) || kernel.rfind("_skein", 0) == 0) {
    raise_in(SKEIN_HERE, call, "Name the kernel with a C identifier.",
             "'{}' is not a usable kernel name", kernel);
  }
  if (is_opencl_builtin(kernel)) {
    raise_in(SKEIN_HERE, call,
             fmt::format("Choose another name (e.g. with a prefix of your code's: 'my_{}'): the "
                         "kernel's entry point would clash with the built-in function on OpenCL.",
                         kernel),
             "'{}' is the name of an OpenCL C built-in function", kernel);
  }
}

std::vector<ParamDecl> declare_kernel(std::string_view in_params, std::string_view out_params,
                                      const std::string& operation, const std::string& kernel,
                                      std::span<const std::string_view> reserved,
                                      std::span<const std::string> taken, const std::string& call,
                                      std::string_view example, std::size_t& n_in) {
  check_kernel_name(kernel, call);
  auto params = parse_params(in_params, false, call, kernel);
  n_in = params.size();
  auto outs = parse_params(out_params, true, call, kernel);
  if (outs.empty()) {
    raise_in(SKEIN_HERE, call, "Declare at least one output parameter.",
             "kernel '{}' has no output", kernel);
  }
  params.insert(params.end(), outs.begin(), outs.end());
  check_reserved(params, reserved, call, kernel);
  for (const auto& p : params) {
    if (std::find(taken.begin(), taken.end(), p.name) != taken.end()) {
      raise_in(SKEIN_HERE, call, "Rename the parameter or the kernel.",
               "kernel '{}': parameter '{}' has the kernel's name", kernel, p.name);
    }
  }
  if (operation.find_first_not_of(" \t\r\n;") == std::string::npos) {
    raise_in(SKEIN_HERE, call, fmt::format("Write the operation, e.g. \"{}\".", example),
             "kernel '{}': the operation is empty", kernel);
  }
  return params;
}

std::vector<std::string> describe_arguments(const std::vector<ParamDecl>& params,
                                            const std::string& kernel) {
  std::vector<std::string> what;
  for (const auto& p : params)
    what.push_back(fmt::format("argument '{}' of kernel '{}'", p.name, kernel));
  return what;
}

Dtype param_dtype(const ParamDecl& p, const Bindings& b, const std::string& call,
                  const std::string& kernel) {
  if (p.dtype) return *p.dtype;
  auto it = b.find(p.type);
  if (it == b.end()) {
    raise_in(SKEIN_HERE, call,
             "Pass the output array, or bind the placeholder through an input argument.",
             "kernel '{}': the type {} of parameter '{}' is not bound by any argument", kernel,
             p.type, p.name);
  }
  return it->second;
}

std::string placeholder_typedefs(const Bindings& b) {
  std::string out;
  for (const auto& [n, d] : b) out += fmt::format("    typedef {} {};\n", compute_ctype(d), n);
  return out;
}

}  // namespace skein::detail::codegen
