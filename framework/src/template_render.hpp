// SPDX-License-Identifier: BSD-3-Clause
// The renderer: walks a parsed template with its scope, expanding placeholders, loops,
// conditions and calls of snippets, defs and modules; collects the modules' code, each once.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "template_expr.hpp"
#include "template_impl.hpp"
#include "template_parse.hpp"

namespace skein::detail::tmpl {

// One render: its state (module prefixes, the modules' code, the calls being rendered) lives
// here, on the caller's stack, so that renders on several threads share nothing.
class Renderer {
 public:
  // The modules' code, then `main`.
  std::string finish(const std::string& main);

  // Renders a template text (control lines, defs, placeholders) with `scope` (its parameters
  // and globals); `name` names it in messages.
  std::string render_template(std::string_view text, const Scope& scope, const std::string& name);

  // A snippet called with `args` from `caller`'s `line`.
  std::string call(const SnippetImpl& s, std::vector<std::string> args, const std::string& caller,
                   std::size_t line);

  // The module's prefix; its code is rendered (after its dependencies) on first use.
  const std::string& use(const ModuleImpl& m, const std::string& caller, std::size_t line);

 private:
  void render_block(const Block& block, const Scope& scope, const std::string& name,
                    std::string& out);
  void render_for(const ForNode& node, const Scope& scope, const std::string& name,
                  std::string& out);
  void render_if(const IfNode& node, const Scope& scope, const std::string& name, std::string& out);
  // Text without control lines: placeholders and $$.
  void render_text(std::string_view text, const Scope& scope, const std::string& name,
                   std::size_t line, std::string& out);
  std::string expand(std::string_view body, const Scope& scope, const std::string& name,
                     std::size_t line);
  std::string expand_name(const Scope::Found& found, std::string_view ident,
                          const std::string_view* call_args, std::string_view body,
                          const Scope& scope, const std::string& name, std::size_t line);
  // A value as text where a placeholder inserts it; `shown` names it in messages.
  std::string insert(const RenderValue& value, std::string_view shown, const std::string& name,
                     std::size_t line);
  // A call's arguments, rendered in the caller's scope.
  std::vector<std::string> arguments(std::string_view inner, std::string_view body,
                                     const Scope& scope, const std::string& name, std::size_t line);
  std::string call_def(const DefNode& def, const Scope& home, std::vector<std::string> args,
                       const std::string& name, std::size_t line);
  // Records a call (for messages) and refuses one nested too deep (a runaway recursion).
  void enter(const std::string& caller, std::size_t line);

  std::unordered_map<const ModuleImpl*, std::string> prefixes_;
  std::string modules_;
  std::size_t counter_ = 0;
  std::vector<std::string> calls_;  // where each snippet, def or module being rendered was used
};

}  // namespace skein::detail::tmpl
