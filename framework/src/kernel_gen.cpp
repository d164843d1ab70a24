// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_gen.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/ctypes.hpp"
#include "skein/memory_pool.hpp"
#include "skein/occupancy.hpp"

namespace skein::detail {

// --- types -------------------------------------------------------------------------------------

std::optional<Dtype> dtype_from_type_name(std::string_view text) {
  for (Dtype d : all_dtypes) {
    if (name(d) == text) return d;
  }
  static const std::pair<std::string_view, Dtype> c_names[] = {
      {"float", Dtype::float32},          {"double", Dtype::float64},
      {"int8_t", Dtype::int8},            {"int16_t", Dtype::int16},
      {"int32_t", Dtype::int32},          {"int64_t", Dtype::int64},
      {"uint8_t", Dtype::uint8},          {"uint16_t", Dtype::uint16},
      {"uint32_t", Dtype::uint32},        {"uint64_t", Dtype::uint64},
      {"signed char", Dtype::int8},       {"unsigned char", Dtype::uint8},
      {"short", Dtype::int16},            {"unsigned short", Dtype::uint16},
      {"int", Dtype::int32},              {"unsigned int", Dtype::uint32},
      {"unsigned", Dtype::uint32},        {"long long", Dtype::int64},
      {"unsigned long long", Dtype::uint64},
      {"skein_float16", Dtype::float16},  {"skein_bfloat16", Dtype::bfloat16},
      {"skein_complex64", Dtype::complex64}, {"skein_complex128", Dtype::complex128},
  };
  for (const auto& [n, d] : c_names) {
    if (n == text) return d;
  }
  return std::nullopt;
}

bool is_half(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }

Dtype compute_dtype(Dtype d) { return is_half(d) ? Dtype::float32 : d; }

std::string compute_ctype(Dtype d) { return ctype(compute_dtype(d)); }

std::string load_value(Dtype d, const std::string& stored) {
  if (d == Dtype::float16) return "skein_float16_to_float(" + stored + ")";
  if (d == Dtype::bfloat16) return "skein_bfloat16_to_float(" + stored + ")";
  return stored;
}

std::string store_value(Dtype d, const std::string& computed) {
  if (d == Dtype::float16) return "skein_float16_from_float(" + computed + ")";
  if (d == Dtype::bfloat16) return "skein_bfloat16_from_float(" + computed + ")";
  return computed;
}

namespace {
Dtype real_of(Dtype d) {
  if (d == Dtype::complex64) return Dtype::float32;
  if (d == Dtype::complex128) return Dtype::float64;
  return d;
}
}  // namespace

std::string convert_value(Dtype from, Dtype to, const std::string& v) {
  from = compute_dtype(from);
  to = compute_dtype(to);
  if (from == to) return v;
  if (is_complex(to)) {
    const std::string make = "skein_make_" + ctype(to).substr(6);
    const std::string r = ctype(real_of(to));
    if (is_complex(from)) return fmt::format("{}(({}){}.re, ({}){}.im)", make, r, v, r, v);
    return fmt::format("{}(({}){}, ({})0)", make, r, v, r);
  }
  if (is_complex(from)) return fmt::format("(({}){}.re)", ctype(to), v);
  return fmt::format("(({})({}))", ctype(to), v);
}

std::string scalar_param_ctype(Dtype d) { return is_half(d) ? "uint16_t" : ctype(d); }

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

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
    const std::string item =
        trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                : comma - start));
    const auto words = split_words(item);
    auto bad = [&](const std::string& why) {
      raise_in(SKEIN_HERE, call,
               "Write each parameter as `TYPE NAME` or `raw TYPE NAME`, separated by commas, "
               "e.g. \"T x, float32 a, raw T y\".",
               "kernel '{}': {} parameter '{}' in \"{}\": {}", kernel,
               output ? "output" : "input", item, text, why);
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
    for (std::size_t i = first; i + 1 < words.size(); ++i) type += (type.empty() ? "" : " ") + words[i];
    p.type = type;
    if (!is_identifier(p.name)) bad(fmt::format("'{}' is not a C identifier", p.name));
    p.dtype = dtype_from_type_name(type);
    if (!p.dtype && !is_identifier(type)) {
      bad(fmt::format("'{}' is neither a dtype (float32, int64, ..., or a C name such as float) "
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
constexpr std::string_view kBuiltins[] = {
    "abs", "abs_diff", "acos", "acosh", "acospi", "add_sat", "all", "any", "asin", "asinh", "asinpi", "atan",
    "atan2", "atan2pi", "atanh", "atanpi", "barrier", "bitselect", "cbrt", "ceil", "clamp", "clz", "copysign",
    "cos", "cosh", "cospi", "cross", "ctz", "degrees", "distance", "dot", "erf", "erfc", "exp", "exp10", "exp2",
    "expm1", "fabs", "fast_distance", "fast_length", "fast_normalize", "fdim", "floor", "fma", "fmax", "fmin",
    "fmod", "fract", "frexp", "hadd", "hypot", "ilogb", "isequal", "isfinite", "isgreater", "isgreaterequal",
    "isinf", "isless", "islessequal", "islessgreater", "isnan", "isnormal", "isnotequal", "isordered",
    "isunordered", "ldexp", "length", "lgamma", "lgamma_r", "log", "log10", "log1p", "log2", "logb", "mad",
    "mad24", "mad_hi", "mad_sat", "max", "maxmag", "mem_fence", "min", "minmag", "mix", "modf", "mul24",
    "mul_hi", "nan", "nextafter", "normalize", "popcount", "pow", "pown", "powr", "prefetch", "printf",
    "radians", "read_mem_fence", "remainder", "remquo", "rhadd", "rint", "rootn", "rotate", "round", "rsqrt",
    "select", "shuffle", "shuffle2", "sign", "signbit", "sin", "sincos", "sinh", "sinpi", "smoothstep", "sqrt",
    "step", "sub_sat", "tan", "tanh", "tanpi", "tgamma", "trunc", "upsample", "wait_group_events",
    "write_mem_fence"};
constexpr std::string_view kBuiltinPrefixes[] = {
    "as_", "async_", "atom_", "atomic_", "convert_", "get_", "half_", "native_", "read_image", "sub_group_",
    "vload", "vstore", "work_group_", "write_image"};

bool is_opencl_builtin(std::string_view name) {
  if (std::binary_search(std::begin(kBuiltins), std::end(kBuiltins), name)) return true;
  return std::any_of(std::begin(kBuiltinPrefixes), std::end(kBuiltinPrefixes),
                     [&](std::string_view p) { return name.substr(0, p.size()) == p; });
}

}  // namespace

void check_kernel_name(const std::string& kernel, const std::string& call) {
  if (!is_identifier(kernel) || kernel.rfind("_skein", 0) == 0) {
    raise_in(SKEIN_HERE, call, "Name the kernel with a C identifier.", "'{}' is not a usable kernel name", kernel);
  }
  if (is_opencl_builtin(kernel)) {
    raise_in(SKEIN_HERE, call,
             "Choose another name (e.g. with a prefix of your code's: 'my_{}'): the kernel's entry point would "
             "clash with the built-in function on OpenCL.",
             "'{}' is the name of an OpenCL C built-in function", kernel, kernel);
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
    raise_in(SKEIN_HERE, call, "Declare at least one output parameter.", "kernel '{}' has no output", kernel);
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

std::vector<std::string> describe_arguments(const std::vector<ParamDecl>& params, const std::string& kernel) {
  std::vector<std::string> what;
  for (const auto& p : params) what.push_back(fmt::format("argument '{}' of kernel '{}'", p.name, kernel));
  return what;
}

Bindings bind_types(const std::vector<ParamDecl>& params, std::span<const Operand> args,
                    const std::string& call, const std::string& kernel) {
  Bindings b;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t k = 0; k < args.size() && k < params.size(); ++k) {
      const auto& p = params[k];
      const auto& a = args[k];
      if (a.is_array() != (pass == 0)) continue;
      if (p.dtype) {
        if (a.is_array() && a.dtype() != *p.dtype) {
          raise_in(SKEIN_HERE, call,
                   "Pass an array of the declared dtype (convert with skein::astype), or declare "
                   "the parameter with a placeholder type.",
                   "kernel '{}': argument {} ('{}') is a {} array; the parameter is declared {}",
                   kernel, k, p.name, name(a.dtype()), name(*p.dtype));
        }
        continue;
      }
      auto it = b.find(p.type);
      if (it == b.end()) {
        b.emplace(p.type, a.dtype());
      } else if (a.is_array() && it->second != a.dtype()) {
        raise_in(SKEIN_HERE, call,
                 "Pass arrays of one dtype for parameters of one placeholder type, or use "
                 "different placeholders.",
                 "kernel '{}': argument {} ('{}') is a {} array, but placeholder {} is already "
                 "bound to {} by an earlier argument",
                 kernel, k, p.name, name(a.dtype()), p.type, name(it->second));
      }
    }
  }
  return b;
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

// --- arrays ------------------------------------------------------------------------------------

std::optional<std::size_t> common_device(const Queue& queue, std::span<const Operand> args,
                                         const std::vector<ParamDecl>& params,
                                         std::optional<std::size_t> launch_device,
                                         const std::string& call, const std::string& kernel) {
  auto named = [&](std::size_t k) {
    return k < params.size() ? fmt::format("argument {} ('{}')", k, params[k].name)
                             : fmt::format("argument {}", k);
  };
  std::optional<std::size_t> device;
  std::size_t first = 0;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (!args[k].is_array()) continue;
    const Array& a = args[k].array();
    if (a.data().context_id() != detail::impl_of(queue.context()).get()) {
      raise_in(SKEIN_HERE, call, "Use arrays and a queue of one context.",
               "kernel '{}': {} belongs to another context than the queue", kernel, named(k));
    }
    if (launch_device && a.device_idx() != *launch_device) {
      raise_in(SKEIN_HERE, call,
               "Give each device the arrays that live on it (one array per device, e.g. "
               "DistArray::local_arrays()), or copy the data there (Array::set).",
               "kernel '{}': {} is on device {}, but it was given for the launch on device {}",
               kernel, named(k), a.device_idx(), *launch_device);
    }
    if (!queue.has_device(a.device_idx())) {
      raise_in(SKEIN_HERE, call, "Use a queue that contains the arrays' device.",
               "kernel '{}': {} is on device {}, which is not in the queue (devices {})", kernel,
               named(k), a.device_idx(), fmt::join(queue.device_idxs(), ", "));
    }
    if (device && *device != a.device_idx()) {
      raise_in(SKEIN_HERE, call,
               "Put every array of one launch on one device (Array::single_device_view, or "
               "copy), or launch per device with per_device().",
               "kernel '{}': {} is on device {}, {} on device {}", kernel, named(first), *device,
               named(k), a.device_idx());
    }
    if (!device) {
      device = a.device_idx();
      first = k;
    }
  }
  return device;
}

Shape broadcast_shapes(std::span<const Operand> args, const std::vector<bool>& take,
                       const std::vector<ParamDecl>& params, const std::string& call,
                       const std::string& kernel) {
  Shape result;
  std::size_t from = 0;
  bool any = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (!take[k] || !args[k].is_array()) continue;
    const Shape& s = args[k].array().shape();
    if (!any) {
      result = s;
      from = k;
      any = true;
      continue;
    }
    Shape merged(std::max(result.size(), s.size()), 1);
    for (std::size_t i = 0; i < merged.size(); ++i) {
      const std::size_t r = i < result.size() ? result[result.size() - 1 - i] : 1;
      const std::size_t t = i < s.size() ? s[s.size() - 1 - i] : 1;
      if (r != t && r != 1 && t != 1) {
        raise_in(SKEIN_HERE, call,
                 "Give arrays of one shape, or shapes that broadcast (NumPy's rules: aligned on "
                 "the right, each dimension equal or 1).",
                 "kernel '{}': argument {} ('{}') has shape {}, which does not broadcast with "
                 "shape {} (from argument {}, '{}')",
                 kernel, k, k < params.size() ? params[k].name : "?", to_string(s),
                 to_string(result), from, params[from].name);
      }
      merged[merged.size() - 1 - i] = r == 1 ? t : r;
    }
    result = std::move(merged);
  }
  return result;
}

Layout make_layout(const Shape& shape, std::span<const ArrayShape> arrays) {
  Layout l;
  l.size = shape_size(shape);
  std::vector<std::uint64_t> dims;
  std::vector<std::vector<std::uint64_t>> strides(arrays.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    dims.push_back(shape[d]);
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      const ArrayShape& a = arrays[k];
      const std::size_t lead = shape.size() - a.shape.size();  // a's dimensions are right-aligned
      std::uint64_t s = 0;
      if (d >= lead && a.shape[d - lead] != 1) s = a.strides[d - lead];
      strides[k].push_back(s);
    }
  }
  // Merge dimension d into d + 1 where every array steps through both as through one.
  std::vector<std::uint64_t> mdims;
  std::vector<std::vector<std::uint64_t>> mstrides(arrays.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    bool merge = !mdims.empty();
    for (std::size_t k = 0; merge && k < arrays.size(); ++k) {
      merge = mstrides[k].back() == strides[k][d] * dims[d];
    }
    if (merge) {
      mdims.back() *= dims[d];
      for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].back() = strides[k][d];
    } else {
      mdims.push_back(dims[d]);
      for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].push_back(strides[k][d]);
    }
  }
  if (mdims.empty()) {
    mdims.push_back(1);
    for (std::size_t k = 0; k < arrays.size(); ++k) mstrides[k].push_back(arrays[k].itemsize);
  }
  l.shape = std::move(mdims);
  l.strides = std::move(mstrides);
  l.contiguous = l.shape.size() == 1;
  for (std::size_t k = 0; l.contiguous && k < arrays.size(); ++k) {
    l.contiguous = l.strides[k][0] == arrays[k].itemsize || l.shape[0] <= 1;
  }
  return l;
}

std::optional<std::uint64_t> common_vector_start(std::span<const Array* const> arrays) {
  for (std::uint64_t h = 0; h < 16; ++h) {
    bool ok = true;
    for (const Array* a : arrays) {
      if ((address_in_allocation(*a) + h * a->itemsize()) % 16 != 0) {
        ok = false;
        break;
      }
    }
    if (ok) return h;
  }
  return std::nullopt;
}

// --- compiled programs -------------------------------------------------------------------------

const Kernel& CompiledProgram::kernel(std::string_view name) const {
  auto it = kernels.find(name);
  if (it == kernels.end()) {
    raise_in<RuntimeError>(SKEIN_HERE, "skein kernel generator", "This is a bug in Skein.",
                           "the generated program has no kernel '{}'", name);
  }
  return it->second;
}

std::size_t CompiledProgram::resident(std::string_view kernel, std::size_t device_idx) const {
  auto it = resident_groups.find(kernel);
  if (it == resident_groups.end() || device_idx >= it->second.size()) return 1;
  return std::max<std::size_t>(1, it->second[device_idx]);
}

namespace {

struct CacheEntry {
  const void* context = nullptr;
  std::uint64_t owner = 0;
  std::shared_ptr<const CompiledProgram> program;
};

struct ProgramCache {
  std::mutex mutex;
  std::unordered_map<std::string, CacheEntry> entries;
};

ProgramCache& program_cache() {
  // Never destroyed: kernel objects with static storage (the built-ins) drop their entries from
  // their destructors, which may run after a function-local static would be gone.
  static auto* cache = new ProgramCache;
  return *cache;
}

std::atomic<std::uint64_t> next_owner{1};

// Drops the entries of contexts that only the cache still holds (each entry's Program holds one
// reference to its context). Called with the cache locked.
void purge_unused_contexts(ProgramCache& cache,
                           std::vector<std::shared_ptr<const CompiledProgram>>& dropped) {
  std::map<const void*, std::pair<long, long>> refs;  // context -> (entries, use_count)
  for (const auto& [key, e] : cache.entries) {
    auto& r = refs[e.context];
    r.first += 1;
    r.second = detail::impl_of(e.program->program.context()).use_count();
  }
  for (auto it = cache.entries.begin(); it != cache.entries.end();) {
    const auto& r = refs[it->second.context];
    if (r.second <= r.first) {
      dropped.push_back(std::move(it->second.program));
      it = cache.entries.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t resident_groups_on(const Kernel& kernel, const Device& device, std::size_t device_idx,
                               std::size_t local) {
  const auto& p = device.params();
  const std::size_t units = std::max<std::size_t>(1, p.compute_units);
  if (p.max_threads_per_compute_unit > 0 && p.compute_capability) {
    try {
      return units * std::max<std::size_t>(1, occupancy(kernel, device_idx, local).tb_per_mp);
    } catch (const LogicError&) {
      // Fall through to the estimate below.
    }
  }
  if (p.type == DeviceType::gpu) return units * std::max<std::size_t>(1, 1024 / local);
  return units * 4;
}

}  // namespace

std::uint64_t new_cache_owner() { return next_owner.fetch_add(1); }

void drop_cache_owner(std::uint64_t owner) {
  auto& cache = program_cache();
  std::vector<std::shared_ptr<const CompiledProgram>> dropped;  // released after the lock
  std::lock_guard lock(cache.mutex);
  for (auto it = cache.entries.begin(); it != cache.entries.end();) {
    if (it->second.owner == owner) {
      dropped.push_back(std::move(it->second.program));
      it = cache.entries.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t group_size_for(const Context& context) {
  std::size_t size = 256;
  for (const auto& d : context.devices()) {
    size = std::min<std::size_t>(size, floor_pow2(std::max<std::size_t>(1, d.params().max_total_local_size)));
  }
  return std::max<std::size_t>(size, 1);
}

std::shared_ptr<const CompiledProgram> cached_program(
    std::uint64_t owner, const Context& context, const std::string& signature,
    const std::function<std::string()>& build, const std::vector<std::string>& kernel_names,
    const ProgramOptions& options) {
  auto& cache = program_cache();
  const void* ctx = detail::impl_of(context).get();
  std::string key = fmt::format("{}\x1f{}\x1f", owner, ctx);
  key += signature;
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second.program;
  }
  // Compiled outside the lock: other kernels stay usable meanwhile.
  Program program(context, build(), options);
  auto compiled = std::make_shared<CompiledProgram>(CompiledProgram{program, {}, {}, {}});
  const std::size_t local = group_size_for(context);
  compiled->local_size.assign(context.num_devices(), local);
  for (const auto& n : kernel_names) {
    Kernel k = program.kernel(n);
    auto& resident = compiled->resident_groups[n];
    resident.assign(context.num_devices(), 1);
    for (std::size_t d = 0; d < context.num_devices(); ++d) {
      const std::size_t max_local = k.attributes(d).max_total_local_size;
      if (max_local != 0 && max_local < local) {
        raise_in<RuntimeError>(
            SKEIN_HERE, "skein kernel generator",
            "Simplify the expressions (fewer registers), or report this to Skein's developers.",
            "kernel '{}' can run at most {} work items per group on {}; the generated code "
            "needs {}",
            n, max_local, context.device(d).description(), local);
      }
      resident[d] = resident_groups_on(k, context.device(d), d, local);
    }
    compiled->kernels.emplace(n, std::move(k));
  }
  std::vector<std::shared_ptr<const CompiledProgram>> dropped;  // released after the lock
  std::lock_guard lock(cache.mutex);
  purge_unused_contexts(cache, dropped);
  auto [it, inserted] = cache.entries.emplace(key, CacheEntry{ctx, owner, compiled});
  return it->second.program;
}

// --- scratch -----------------------------------------------------------------------------------

Scratch::Scratch(const Queue& queue, std::size_t device_idx, std::size_t bytes)
    : buffer_(temporaries_pool(queue).allocate(device_idx, std::max<std::size_t>(bytes, 256))) {}

// --- groups of one launch that hand values to each other ---------------------------------------

Buffer group_counter(const Queue& queue, std::size_t device_idx) {
  auto& impl = *detail::impl_of(queue);
  std::lock_guard lock(impl.group_counters_mutex);
  if (impl.group_counters.size() <= device_idx) impl.group_counters.resize(device_idx + 1);
  Buffer& counter = impl.group_counters[device_idx];
  if (!counter.adapter()) {
    Buffer fresh = Buffer::allocate(queue.context(), device_idx, sizeof(std::uint32_t));
    // On the queue: its kernels come after the fill.
    queue.device_queue(device_idx).fill_zero(*fresh.adapter(), fresh.offset(), sizeof(std::uint32_t));
    counter = std::move(fresh);
  }
  return counter;
}

void drop_group_counter(const Queue& queue, std::size_t device_idx, const Buffer& counter) {
  auto& impl = *detail::impl_of(queue);
  std::lock_guard lock(impl.group_counters_mutex);
  if (device_idx < impl.group_counters.size() &&
      impl.group_counters[device_idx].adapter() == counter.adapter()) {
    impl.group_counters[device_idx] = Buffer();
  }
}

std::optional<std::string> opencl_device_fence_std(const DeviceParameters& params) {
  const auto& versions = params.opencl_c_versions;
  const auto has_version = [&](int major, int minor) {
    return std::find(versions.begin(), versions.end(), std::pair{major, minor}) != versions.end();
  };
  const auto has_feature = [&](std::string_view name) {
    return std::find(params.opencl_c_features.begin(), params.opencl_c_features.end(), name) !=
           params.opencl_c_features.end();
  };
  // OpenCL C 2.0 has them without conditions (a 3.0 device lists 2.0 only with all of it).
  if (has_version(2, 0)) return "CL2.0";
  if (has_version(3, 0) && has_feature("__opencl_c_atomic_order_acq_rel") &&
      has_feature("__opencl_c_atomic_scope_device")) {
    return "CL3.0";
  }
  return std::nullopt;
}

// --- launching ---------------------------------------------------------------------------------

void ArgPack::array(const Array& a) { add_buffer(a.data(), a.offset(), true, a.device_idx()); }

void ArgPack::buffer(const Buffer& b, std::uint64_t byte_offset) {
  add_buffer(b, byte_offset, false, b.device_idx());
}

void ArgPack::add_buffer(const Buffer& b, std::uint64_t byte_offset, bool array, std::size_t device) {
  args_.push_back(KernelArg{.kind = KernelArg::Kind::buffer,
                            .array = array,
                            .device = device,
                            .buffer = b.adapter().get(),
                            .offset = 0,
                            .buffer_device = b.device_idx(),
                            .context = b.context_id()});
  value_at_.resize(args_.size(), 0);
  value(std::uint64_t{b.offset() + byte_offset});
}

void ArgPack::bytes(std::span<const std::byte> v) {
  const std::size_t at = (bytes_.size() + 15) / 16 * 16;
  bytes_.resize(at + v.size());
  std::copy(v.begin(), v.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(at));
  args_.push_back(KernelArg{.kind = KernelArg::Kind::scalar, .size = v.size()});
  value_at_.resize(args_.size(), 0);
  value_at_.back() = at;
}

std::span<const KernelArg> ArgPack::args() const {
  // Pointers are set here, not when the bytes are added: bytes_ may have moved since.
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].kind == KernelArg::Kind::scalar) args_[i].value = bytes_.data() + value_at_[i];
  }
  return args_;
}

void launch(const Kernel& kernel, const Queue& queue, std::size_t device_idx, std::size_t groups,
            std::size_t local, const ArgPack& args) {
  launch_generated(kernel, queue, device_idx, groups, local, args.args());
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::uint64_t floor_pow2(std::uint64_t v) {
  std::uint64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

std::string array_param(const std::string& name) {
  return fmt::format("GLOBAL_MEM char* _skein_b_{0}, const uint64_t _skein_o_{0}", name);
}

std::string array_pointer(const std::string& name, const std::string& storage_type, bool is_const) {
  const char* c = is_const ? "const " : "";
  return fmt::format("GLOBAL_MEM {0}{1}* _skein_p_{2} = (GLOBAL_MEM {0}{1}*)(_skein_b_{2} + _skein_o_{2});",
                     c, storage_type, name);
}

}  // namespace skein::detail
