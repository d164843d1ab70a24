// SPDX-License-Identifier: BSD-3-Clause
// The names a template sees (Scope), and the small expression language of its control lines and
// placeholders: parsed once per render of a text, evaluated to RenderValues
// (skein/template.hpp documents the language).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skein/template.hpp"
#include "template_lex.hpp"

namespace skein::detail::tmpl {

struct DefNode;
using DefTable = std::map<std::string, const DefNode*, std::less<>>;

// The names visible at a point of a template, innermost first. Each frame binds a loop variable,
// or parameters (a snippet's, a module's or a def's, bound to argument strings), and a text's
// frame also its defs and globals; `outer` is the frame around it (for a loop, the scope of the
// loop; for a def's body, the frame of the text that defines it: scoping is lexical).
struct Scope {
  const Scope* outer = nullptr;
  std::string_view loop_name;
  const RenderValue* loop_value = nullptr;
  std::span<const std::string> param_names;
  std::span<const std::string> param_values;
  const DefTable* defs = nullptr;
  const RenderGlobals* globals = nullptr;

  struct Found {
    const std::string* param = nullptr;
    const RenderValue* value = nullptr;
    const DefNode* def = nullptr;
    const Scope* frame = nullptr;  // where it was found: a def's body is rendered in that frame
  };
  std::optional<Found> find(std::string_view name) const;
  // "a, b, c" (sorted), or "none".
  std::string known_names() const;
};

// Throws the RenderError for a name that `scope` does not know, listing the names it knows.
[[noreturn]] void fail_unknown_name(const Where& where, std::string_view name, const Scope& scope);

struct Expr {
  enum class Kind {
    integer,
    string,
    name,
    negate,
    plus,
    arith,
    compare,
    logic_and,
    logic_or,
    logic_not,
    call,
    index
  };
  Kind kind = Kind::integer;
  std::int64_t integer = 0;
  std::string text;              // a string literal, a name, a function's name, an operator
  std::vector<std::string> ops;  // a comparison's operators, between its operands
  std::vector<std::shared_ptr<const Expr>> operands;
};
using ExprPtr = std::shared_ptr<const Expr>;

// Parses `source`; a syntax error is a RenderError at `where` that starts with `what` ("bad
// expression '...' in %if", "malformed placeholder '${...}'").
ExprPtr parse_expression(std::string_view source, const Where& where, std::string_view what);

// The value of an expression; `source` is its text, for messages.
RenderValue evaluate(const Expr& expr, std::string_view source, const Scope& scope,
                     const Where& where);

// What a %for goes over: range(...) or a list.
struct Iteration {
  bool is_range = false;
  std::int64_t start = 0, stop = 0, step = 1;
  std::shared_ptr<const RenderList> items;
};
Iteration iteration(const Expr& expr, std::string_view source, const Scope& scope,
                    const Where& where);

// len, int, range: the functions expressions call (when no name of the template hides them).
bool is_function_name(std::string_view name);

// Python's truth: 0, "" and an empty list are false.
bool truthy(const RenderValue& value);

// "the string \"float\"", "the integer 3", "a list of 2 items", "the snippet 'f'", ...
std::string describe(const RenderValue& value);

}  // namespace skein::detail::tmpl
