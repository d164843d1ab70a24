// SPDX-License-Identifier: BSD-3-Clause
// skein_kernel_create_*: elementwise and stencil kernels from C. The C elementwise kernel takes one
// parameter list and an operation on element i, as PyCUDA's ("y[i] = a * x[i] + y[i]"); the C++
// ElementwiseKernel takes inputs and outputs apart and names elements without [i]. So every
// parameter becomes an input, each parameter the operation assigns (NAME[i] = ..., or a compound
// assignment) also an output of its own (skein_out_NAME, given the same grid at the call), and
// NAME[i] becomes NAME: reads of an assigned parameter see its value before the kernel ran.
#include <algorithm>
#include <cctype>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "errors.hpp"
#include "handles.hpp"

namespace skein::capi {

namespace {

struct Param {
  std::string text;  // as declared, e.g. "T x" or "raw float64 p"
  std::string name;
  std::string type;  // the declaration without the name
  bool raw = false;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\n\r") - b + 1);
}

std::vector<Param> parse_params(const std::string& params) {
  std::vector<Param> out;
  std::size_t start = 0;
  while (start <= params.size()) {
    const std::size_t comma = std::min(params.find(',', start), params.size());
    const std::string text = trim(params.substr(start, comma - start));
    start = comma + 1;
    if (text.empty()) {
      if (comma == params.size() && out.empty()) break;
      invalid("params \"" + params + "\" has an empty parameter",
              "Pass comma-separated `TYPE NAME` declarations, e.g. \"T x, T y, double a\".");
    }
    std::size_t end = text.size();
    std::size_t begin = end;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(text[begin - 1])) != 0 ||
                         text[begin - 1] == '_')) {
      --begin;
    }
    const std::string type = trim(text.substr(0, begin));
    if (begin == end || type.empty()) {
      invalid(fmt::format("params \"{}\": \"{}\" is not `TYPE NAME`", params, text),
              "Declare each parameter with a type and a name, e.g. \"T x\" or \"double a\".");
    }
    out.push_back(Param{text, text.substr(begin), type, type.rfind("raw", 0) == 0});
    if (comma == params.size()) break;
  }
  return out;
}

// The end of the statement that starts at `from`: the next ';' outside parentheses, or the end.
std::size_t statement_end(const std::string& op, std::size_t from) {
  int depth = 0;
  for (std::size_t k = from; k < op.size(); ++k) {
    if (op[k] == '(' || op[k] == '[' || op[k] == '{') ++depth;
    if (op[k] == ')' || op[k] == ']' || op[k] == '}') --depth;
    if (op[k] == ';' && depth <= 0) return k;
  }
  return op.size();
}

// Rewrites the assignments to `name`[i] as assignments to its output; true when there was one.
bool rewrite_writes(std::string& op, const std::string& name) {
  const std::regex write("\\b" + name + "\\s*\\[\\s*i\\s*\\]\\s*(<<|>>|[-+*/%&|^])?=(?!=)");
  bool any = false;
  std::smatch m;
  std::size_t pos = 0;
  while (true) {
    const std::string rest = op.substr(pos);
    if (!std::regex_search(rest, m, write)) break;
    any = true;
    const std::size_t at = pos + static_cast<std::size_t>(m.position(0));
    const std::size_t after = at + static_cast<std::size_t>(m.length(0));
    const std::string compound = m[1].matched ? m[1].str() : "";
    const std::size_t end = statement_end(op, after);
    std::string replacement = "skein_out_" + name + " = ";
    if (compound.empty()) {
      replacement += op.substr(after, end - after);
    } else {
      replacement += fmt::format("{} {} ({})", name, compound, op.substr(after, end - after));
    }
    op.replace(at, end - at, replacement);
    pos = at + replacement.size();
  }
  return any;
}

struct Translated {
  std::string in_params, out_params, operation;
  std::vector<std::size_t> written;
  std::size_t params = 0;
};

Translated translate(const std::string& params, std::string operation) {
  const std::vector<Param> list = parse_params(params);
  Translated t;
  t.params = list.size();
  t.in_params = params;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const Param& p = list[k];
    if (p.raw) continue;
    if (rewrite_writes(operation, p.name)) {
      t.written.push_back(k);
      t.out_params += (t.out_params.empty() ? "" : ", ") + p.type + " skein_out_" + p.name;
    }
    operation =
        std::regex_replace(operation, std::regex("\\b" + p.name + "\\s*\\[\\s*i\\s*\\]"), p.name);
  }
  if (t.written.empty()) {
    invalid("the operation assigns none of the parameters (\"" + params + "\")",
            "Assign at least one parameter's element i, e.g. \"y[i] = a * x[i] + y[i]\".");
  }
  t.operation = std::move(operation);
  return t;
}

std::string text(const char* value, const char* parameter) {
  require(value, parameter);
  return value;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_kernel_create_elementwise(const char* params, const char* operation,
                                             const char* name, skein_kernel** kernel) {
  return guard("skein_kernel_create_elementwise", [&] {
    require(kernel, "kernel");
    const Translated t = translate(text(params, "params"), text(operation, "operation"));
    skein::ElementwiseOptions options;
    if (name != nullptr) options.name = name;
    auto made = std::make_unique<skein_kernel>();
    made->elementwise.emplace(t.in_params, t.out_params, t.operation, options);
    made->written = t.written;
    made->params = t.params;
    *kernel = made.release();
  });
}

skein_status skein_kernel_create_stencil(const char* in_params, const char* out_params,
                                         const char* operation, const char* map, const char* reduce,
                                         const char* identity, const char* name,
                                         skein_kernel** kernel) {
  return guard("skein_kernel_create_stencil", [&] {
    require(kernel, "kernel");
    skein::StencilOptions options;
    if (name != nullptr) options.name = name;
    if (map != nullptr) {
      skein::StencilReduction reduction{.map = map};
      if (reduce != nullptr) reduction.reduce = reduce;
      if (identity != nullptr) reduction.identity = identity;
      options.reduction = reduction;
    }
    auto made = std::make_unique<skein_kernel>();
    made->stencil.emplace(text(in_params, "in_params"), text(out_params, "out_params"),
                          text(operation, "operation"), options);
    *kernel = made.release();
  });
}

skein_status skein_kernel_destroy(skein_kernel* kernel) {
  return guard("skein_kernel_destroy", [&] { delete kernel; });
}

}  // extern "C"
