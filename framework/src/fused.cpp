// SPDX-License-Identifier: BSD-3-Clause
// FusedKernel (skein/fused.hpp): an elementwise update and a reduction of what it computed, as a
// ReductionKernel whose map function runs the update and stores the new values.
#include "skein/fused.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/params.hpp"
#include "codegen/types.hpp"
#include "skein/detail/errors.hpp"

namespace skein {

namespace {

constexpr std::string_view kDst = "_skein_dst";

// The C type of a parameter's value in generated code: a placeholder's typedef, else the compute
// type of its dtype.
std::string value_type(const detail::codegen::ParamDecl& p) {
  return p.dtype ? detail::codegen::compute_ctype(*p.dtype) : p.type;
}

bool storable(Dtype d) { return detail::codegen::compute_dtype(d) == d; }

// The reduction's parameter list: raw where the parameter is (or `raw` is true for all).
std::string decl_text(const std::vector<detail::codegen::ParamDecl>& params, bool raw) {
  std::vector<std::string> parts;
  for (const auto& p : params)
    parts.push_back(fmt::format("{}{} {}", raw || p.raw ? "raw " : "", p.type, p.name));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The map function: the operation on local copies of the element's values, the new values stored,
// then the reduced value.
std::string update_function(const std::string& fn,
                            const std::vector<detail::codegen::ParamDecl>& in,
                            const std::vector<detail::codegen::ParamDecl>& upd,
                            const std::string& operation, const std::string& map_expr) {
  std::vector<std::string> decl{"const VSIZE_T i", "const VSIZE_T n"};
  for (const auto& p : in) {
    // A raw input is the array itself (a pointer to its element 0), as in an ElementwiseKernel.
    if (p.raw) {
      decl.push_back(fmt::format("GLOBAL_MEM const {}* {}", value_type(p), p.name));
    } else {
      decl.push_back(fmt::format("const {} {}", value_type(p), p.name));
    }
  }
  for (const auto& p : upd) decl.push_back(fmt::format("{} {}", value_type(p), p.name));
  for (const auto& p : upd)
    decl.push_back(fmt::format("GLOBAL_MEM const {} {}{}", value_type(p) + "*", p.name, kDst));
  std::string src =
      fmt::format("WITHIN_KERNEL INLINE reduce_t {}({})\n{{\n    /* operation */\n    {};\n", fn,
                  fmt::join(decl, ", "), operation);
  // The arrays are writable: the const of the reduction's pointers is only its own promise.
  for (const auto& p : upd) {
    src += fmt::format("    ((GLOBAL_MEM {0}*){1}{2})[i] = {1};\n", value_type(p), p.name, kDst);
  }
  src += fmt::format("    /* map */\n    reduce_t _skein_m = {};\n    return _skein_m;\n}}\n",
                     map_expr);
  return src;
}

void require_text(const std::string& text, const char* what, const std::string& kernel) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    detail::raise_in(SKEIN_HERE, "FusedKernel",
                     "Give the operation and the map, reduce and identity expressions.",
                     "kernel '{}': the {} is empty", kernel, what);
  }
}

}  // namespace

struct FusedKernel::Impl {
  Impl(ReductionKernel r, std::size_t inputs, std::size_t updates,
       std::vector<detail::codegen::ParamDecl> params)
      : reduction(std::move(r)), inputs(inputs), updates(updates), params(std::move(params)) {}
  ReductionKernel reduction;
  std::size_t inputs = 0, updates = 0;
  std::vector<detail::codegen::ParamDecl> params;  // in_params, then update_params
};

FusedKernel::FusedKernel(std::string_view in_params, std::string_view update_params,
                         const std::string& operation, std::string_view out_param,
                         const std::string& map_expr, std::string reduce_expr, std::string identity,
                         FusedOptions options) {
  const std::string call = "FusedKernel";
  const std::string& k = options.name;
  detail::codegen::check_kernel_name(k, call);
  auto in = detail::codegen::parse_params(in_params, false, call, k);
  auto upd = detail::codegen::parse_params(update_params, false, call, k);
  if (upd.empty()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Declare the arrays the operation updates, e.g. \"T x, T r\".",
                     "kernel '{}': no updated arrays (a plain ReductionKernel does without)", k);
  }
  std::vector<detail::codegen::ParamDecl> all = in;
  all.insert(all.end(), upd.begin(), upd.end());
  for (const auto& p : upd) {
    if (p.raw) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Drop `raw` from the updated parameters: they are updated element by element "
          "(inputs may be raw).",
          "kernel '{}': updated parameter '{}' is raw", k, p.name);
    }
  }
  for (const auto& p : all) {
    if (p.name.size() >= kDst.size() && p.name.ends_with(kDst)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Rename it: names ending in _skein_dst are the generated code's.",
                       "kernel '{}': parameter name '{}' is reserved", k, p.name);
    }
  }
  for (const auto& p : upd) {
    if (p.dtype && !storable(*p.dtype)) {
      detail::raise_in(
          SKEIN_HERE, call, "Update arrays of float32 or another type computed as stored.",
          "kernel '{}': updated parameter '{}' is {}", k, p.name, skein::name(*p.dtype));
    }
  }
  require_text(operation, "operation", k);
  require_text(map_expr, "map expression", k);
  const std::string fn = k + "_fused_update";
  std::vector<std::string> args{"i", "n"};
  for (const auto& p : all) args.push_back(p.name);
  for (const auto& p : upd) args.push_back(p.name + std::string(kDst));
  ReductionOptions ro;
  ro.post_map = std::move(options.post_map);
  ro.reduce_type = options.reduce_type;
  ro.reduce_struct = std::move(options.reduce_struct);
  ro.preamble = options.preamble + "\n" + update_function(fn, in, upd, operation, map_expr);
  ro.globals = std::move(options.globals);
  ro.name = k;
  // The reduction checks the rest (names, output, expressions) with its own messages.
  std::vector<detail::codegen::ParamDecl> dst = upd;
  for (auto& p : dst) p.name += kDst;
  const std::string params = decl_text(all, false) + ", " + decl_text(dst, true);
  ReductionKernel reduction(params, out_param, fmt::format("{}({})", fn, fmt::join(args, ", ")),
                            std::move(reduce_expr), std::move(identity), std::move(ro));
  impl_ = std::make_shared<const Impl>(std::move(reduction), in.size(), upd.size(), std::move(all));
}

const ReductionKernel& FusedKernel::reduction() const { return impl_->reduction; }
std::size_t FusedKernel::input_count() const { return impl_->inputs; }
std::size_t FusedKernel::update_count() const { return impl_->updates; }
bool FusedKernel::input_is_raw(std::size_t j) const {
  return j < impl_->inputs && impl_->params[j].raw;
}
const std::string& FusedKernel::name() const { return impl_->reduction.name(); }

void detail::check_fused_operands(const FusedKernel& kernel, std::span<const Operand> operands,
                                  const char* call) {
  const std::size_t ni = kernel.input_count(), nu = kernel.update_count();
  const std::string& k = kernel.name();
  if (operands.size() != ni + nu) {
    raise_in(SKEIN_HERE, call, "Pass the inputs' operands, then the updated arrays.",
             "kernel '{}' takes {} input(s) and {} updated array(s); {} operands were given", k, ni,
             nu, operands.size());
  }
  const Operand& first = operands[ni];
  for (std::size_t j = ni; j < ni + nu; ++j) {
    const Operand& o = operands[j];
    if (!o.is_array()) {
      raise_in(SKEIN_HERE, call, "Pass an Array for each updated parameter.",
               "kernel '{}': updated operand {} is the scalar {}", k, j - ni, o.to_string());
    }
    const Array& a = o.array();
    if (!a.is_contiguous() || !storable(a.dtype())) {
      raise_in(SKEIN_HERE, call,
               "Update contiguous arrays of a type computed as stored (not float16/bfloat16).",
               "kernel '{}': updated operand {} is a {} {}", k, j - ni,
               a.is_contiguous() ? "contiguous" : "strided", skein::name(a.dtype()));
    }
    if (a.shape() != first.array().shape()) {
      raise_in(SKEIN_HERE, call, "Give every updated array one shape.",
               "kernel '{}': updated operand {} has shape {}, the first {}", k, j - ni,
               fmt::join(a.shape(), "x"), fmt::join(first.array().shape(), "x"));
    }
  }
  const Shape& target = first.array().shape();
  for (std::size_t j = 0; j < ni; ++j) {
    if (!operands[j].is_array() || kernel.input_is_raw(j)) continue;  // raw: seen whole
    const Shape& s = operands[j].array().shape();
    bool fits = s.size() <= target.size();
    for (std::size_t d = 0; fits && d < s.size(); ++d) {
      const auto t = target[target.size() - s.size() + d];
      fits = s[d] == t || s[d] == 1;
    }
    if (!fits) {
      raise_in(SKEIN_HERE, call, "Pass inputs that broadcast to the updated arrays' shape.",
               "kernel '{}': input {} has shape {}, the updated arrays {}", k, j, fmt::join(s, "x"),
               fmt::join(target, "x"));
    }
  }
}

std::vector<Operand> FusedKernel::reduction_operands(std::span<const Operand> operands) const {
  detail::check_fused_operands(*this, operands, "FusedKernel");
  std::vector<Operand> out(operands.begin(), operands.end());
  for (std::size_t j = impl_->inputs; j < operands.size(); ++j) out.push_back(operands[j]);
  return out;
}

Array FusedKernel::operator()(const Queue& queue, std::span<const Operand> operands,
                              const FusedArgs& args) const {
  const std::vector<Operand> ops = reduction_operands(operands);
  ReductionArgs ra;
  ra.out = args.out;
  ra.deterministic = args.deterministic;
  return impl_->reduction(queue, ops, ra);
}

}  // namespace skein
