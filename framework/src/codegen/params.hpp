// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): a generated kernel's declared parameters
// ("T x, raw float32 y, ..."), the checks of its declaration, and the placeholder types a call
// binds.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skein/dtype.hpp"

namespace skein::detail::codegen {

struct ParamDecl {
  std::string name;
  std::string type;            // as written
  std::optional<Dtype> dtype;  // set for a concrete type, empty for a placeholder
  bool raw = false;
  bool output = false;
};

// Parses "T x, raw float32 y, ..." (see elementwise.hpp). `call` names the constructor in errors.
std::vector<ParamDecl> parse_params(std::string_view text, bool output, const std::string& call,
                                    const std::string& kernel);
void check_reserved(const std::vector<ParamDecl>& params,
                    std::span<const std::string_view> reserved, const std::string& call,
                    const std::string& kernel);

// Refuses a generated kernel's name that is not a C identifier, starts with `_skein`, or is the
// name of an OpenCL C built-in function (distance, abs_diff, dot, sin, ...: PoCL builds an entry
// point of that name under another name, which the launch then does not find).
void check_kernel_name(const std::string& kernel, const std::string& call);

// What the constructor of a generated kernel (ElementwiseKernel, StencilKernel) checks of its
// declaration: a usable kernel name, the inputs then at least one output, no reserved or taken
// name among them (`taken`: the kernel's own entry points), a non-empty operation (`example` in
// the hint). Returns the parameters, inputs first; `n_in` gets the number of inputs.
std::vector<ParamDecl> declare_kernel(std::string_view in_params, std::string_view out_params,
                                      const std::string& operation, const std::string& kernel,
                                      std::span<const std::string_view> reserved,
                                      std::span<const std::string> taken, const std::string& call,
                                      std::string_view example, std::size_t& n_in);
// "argument 'x' of kernel 'k'" for each parameter (for conversion errors).
std::vector<std::string> describe_arguments(const std::vector<ParamDecl>& params,
                                            const std::string& kernel);

// Placeholder name -> dtype, as bound by one call (kernel_operands.hpp's bind_types).
using Bindings = std::map<std::string, Dtype, std::less<>>;

// The dtype of a parameter under the bindings; LogicError when a placeholder is unbound.
Dtype param_dtype(const ParamDecl& p, const Bindings& b, const std::string& call,
                  const std::string& kernel);
// "typedef float T;\n" for each binding.
std::string placeholder_typedefs(const Bindings& b);

}  // namespace skein::detail::codegen
