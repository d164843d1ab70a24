// SPDX-License-Identifier: BSD-3-Clause
#include "template_render.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace skein::detail::tmpl {

namespace {

// Calls of snippets, modules and defs nest at most this deep: a def may call itself (under an
// %if that ends it), and a recursion that does not end must fail, not exhaust the stack.
constexpr std::size_t kMaxCallDepth = 64;

std::string prefix_name(std::string_view name) {
  std::string out;
  for (char c : name) out += is_ident_char(c) ? c : '_';
  return out.empty() ? std::string("module") : out;
}

std::string_view kind_of(const RenderValue& v) {
  if (v.is_integer()) return "an integer";
  if (v.is_list()) return "a list";
  return "a string";
}

}  // namespace

std::string Renderer::finish(const std::string& main) {
  std::string out = std::move(modules_);
  out += main;
  return out;
}

std::string Renderer::render_template(std::string_view text, const Scope& scope,
                                      const std::string& name) {
  const ParsedTemplate parsed = parse_template(text, name, 1, calls_);
  DefTable defs;
  for (const DefNode& d : parsed.defs) {
    // A def that hid a global or a parameter would make the text mean something else than its
    // globals say; the names are the template's to choose.
    if (scope.find(d.name)) {
      fail_at(Where{name, d.line, calls_},
              fmt::format("def '{}' has the name of a global or parameter of the template", d.name),
              "Rename the def, or the global.");
    }
    defs.emplace(d.name, &d);
  }
  Scope frame = scope;
  frame.defs = &defs;
  std::string out;
  out.reserve(text.size());
  render_block(parsed.body, frame, name, out);
  return out;
}

std::string Renderer::call(const SnippetImpl& s, std::vector<std::string> args,
                           const std::string& caller, std::size_t line) {
  if (args.size() != s.arity) {
    fail_at(Where{caller, line, calls_},
            fmt::format("snippet '{}' takes {} argument{}, {} given", s.name, s.arity,
                        s.arity == 1 ? "" : "s", args.size()));
  }
  enter(caller, line);
  const std::string text = s.callable ? s.callable(std::span<const std::string>(args)) : s.text;
  const Scope scope{.param_names = s.callable ? std::span<const std::string>() : s.params,
                    .param_values = args,
                    .globals = &s.globals};
  std::string out = render_template(text, scope, "snippet '" + s.name + "'");
  calls_.pop_back();
  return out;
}

const std::string& Renderer::use(const ModuleImpl& m, const std::string& caller, std::size_t line) {
  if (auto it = prefixes_.find(&m); it != prefixes_.end()) return it->second;
  const std::string prefix = fmt::format("_mod_{}_{}_", prefix_name(m.name), counter_++);
  const std::string& stored = prefixes_.emplace(&m, prefix).first->second;
  std::vector<std::string> args{prefix};
  args.insert(args.end(), m.args.begin(), m.args.end());
  // Rendering the code first emits the dependencies it uses, so they land ahead of it.
  std::string code = call(*m.snippet, std::move(args), caller, line);
  if (!code.empty() && code.back() != '\n') code += '\n';
  modules_ += code;
  return stored;
}

void Renderer::render_block(const Block& block, const Scope& scope, const std::string& name,
                            std::string& out) {
  for (const Node& node : block) {
    if (const auto* text = std::get_if<TextNode>(&node.node)) {
      render_text(text->text, scope, name, text->line, out);
    } else if (const auto* loop = std::get_if<ForNode>(&node.node)) {
      render_for(*loop, scope, name, out);
    } else {
      render_if(std::get<IfNode>(node.node), scope, name, out);
    }
  }
}

void Renderer::render_for(const ForNode& node, const Scope& scope, const std::string& name,
                          std::string& out) {
  const Iteration it =
      iteration(*node.iterable, node.source, scope, Where{name, node.line, calls_});
  const auto body = [&](const RenderValue& item) {
    const Scope frame{.outer = &scope, .loop_name = node.var, .loop_value = &item};
    render_block(node.body, frame, name, out);
  };
  if (!it.is_range) {
    for (const RenderValue& item : *it.items) body(item);
    return;
  }
  for (std::int64_t v = it.start; it.step > 0 ? v < it.stop : v > it.stop;) {
    body(RenderValue(v));
    if (__builtin_add_overflow(v, it.step, &v)) break;  // past the end of the 64-bit range
  }
}

void Renderer::render_if(const IfNode& node, const Scope& scope, const std::string& name,
                         std::string& out) {
  for (const IfBranch& branch : node.branches) {
    if (!branch.condition || truthy(evaluate(*branch.condition, branch.source, scope,
                                             Where{name, branch.line, calls_}))) {
      render_block(branch.body, scope, name, out);
      return;
    }
  }
}

void Renderer::render_text(std::string_view text, const Scope& scope, const std::string& name,
                           std::size_t line, std::string& out) {
  std::size_t i = 0;
  std::size_t counted = 0;  // newlines are counted up to here, into `line`
  while (i < text.size()) {
    const std::size_t dollar = text.find('$', i);
    if (dollar == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, dollar - i));
    if (dollar + 1 < text.size() && text[dollar + 1] == '$') {
      out += '$';
      i = dollar + 2;
      continue;
    }
    if (dollar + 1 >= text.size() || text[dollar + 1] != '{') {
      out += '$';
      i = dollar + 1;
      continue;
    }
    line += static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(counted),
                                                text.begin() + static_cast<std::ptrdiff_t>(dollar),
                                                '\n'));
    counted = dollar;
    const std::size_t at = line;
    const std::size_t end = find_close(text, dollar + 2);
    if (end == std::string_view::npos) {
      fail_at(Where{name, at, calls_}, "unterminated '${' (no matching '}')",
              "Close the placeholder, or write '$$' for a literal '$'.");
    }
    out += expand(text.substr(dollar + 2, end - dollar - 2), scope, name, at);
    i = end + 1;
  }
}

std::string Renderer::expand(std::string_view body, const Scope& scope, const std::string& name,
                             std::size_t line) {
  const Where where{name, line, calls_};
  const std::string_view content = trim(body);
  std::size_t n = 0;
  while (n < content.size() && is_ident_char(content[n])) ++n;
  if (n > 0 && is_ident_start(content[0])) {
    // ${name} and ${name(args)}: a value, or a call of a snippet or def with text arguments.
    const std::string_view ident = content.substr(0, n);
    const std::string_view rest = trim(content.substr(n));
    const bool is_call =
        !rest.empty() && rest.front() == '(' && matching_paren(rest, 0) == rest.size() - 1;
    if (rest.empty() || is_call) {
      const std::string_view inner = is_call ? rest.substr(1, rest.size() - 2) : std::string_view();
      if (const auto found = scope.find(ident)) {
        return expand_name(*found, ident, is_call ? &inner : nullptr, body, scope, name, line);
      }
      if (!is_keyword(ident) && !is_function_name(ident)) {
        fail_unknown_name(where, ident, scope);
      }
    }
  }
  // Anything else is an expression: ${i + 1}, ${taps[k]}, ${len(taps)}.
  const ExprPtr expr =
      parse_expression(content, where, fmt::format("malformed placeholder '${{{}}}'", body));
  return insert(evaluate(*expr, content, scope, where), content, name, line);
}

std::string Renderer::expand_name(const Scope::Found& found, std::string_view ident,
                                  const std::string_view* call_args, std::string_view body,
                                  const Scope& scope, const std::string& name, std::size_t line) {
  const Where where{name, line, calls_};
  const auto args = [&] {
    return call_args ? arguments(*call_args, body, scope, name, line) : std::vector<std::string>();
  };
  if (found.def) return call_def(*found.def, *found.frame, args(), name, line);
  if (found.param) {
    if (call_args)
      fail_at(where, fmt::format("'{}' is a string, not a snippet: it cannot be called", ident));
    return *found.param;
  }
  const RenderValue& value = *found.value;
  if (!call_args) return insert(value, ident, name, line);
  if (value.is_snippet()) return call(*RenderAccess::snippet(value), args(), name, line);
  if (value.is_module()) {
    fail_at(where, fmt::format("'{}' is a module, not a snippet: it cannot be called", ident),
            fmt::format("${{{0}}} gives the module's prefix: call the function it defines as "
                        "${{{0}}}(...).",
                        ident));
  }
  fail_at(where,
          fmt::format("'{}' is {}, not a snippet: it cannot be called", ident, kind_of(value)));
}

std::string Renderer::insert(const RenderValue& value, std::string_view shown,
                             const std::string& name, std::size_t line) {
  if (value.is_list()) {
    fail_at(
        Where{name, line, calls_},
        fmt::format("'{}' is a list: it cannot be inserted as text", shown),
        fmt::format("Loop over it with '%for x in {0}:', or insert one item, ${{{0}[i]}}.", shown));
  }
  if (value.is_module()) return use(*RenderAccess::module(value), name, line);
  if (value.is_snippet()) return call(*RenderAccess::snippet(value), {}, name, line);
  return RenderAccess::text(value);
}

std::vector<std::string> Renderer::arguments(std::string_view inner, std::string_view body,
                                             const Scope& scope, const std::string& name,
                                             std::size_t line) {
  std::vector<std::string> args;
  for (std::string_view arg : split_args(inner)) {
    // Arguments may hold placeholders of their own, resolved where the call is written.
    const std::size_t arg_line =
        line + static_cast<std::size_t>(std::count(body.data(), arg.data(), '\n'));
    std::string text;
    render_text(arg, scope, name, arg_line, text);
    args.push_back(std::move(text));
  }
  return args;
}

std::string Renderer::call_def(const DefNode& def, const Scope& home, std::vector<std::string> args,
                               const std::string& name, std::size_t line) {
  if (args.size() != def.params.size()) {
    fail_at(Where{name, line, calls_},
            fmt::format("def '{}' takes {} argument{}, {} given", def.name, def.params.size(),
                        def.params.size() == 1 ? "" : "s", args.size()));
  }
  enter(name, line);
  // Lexical scoping: the body sees its parameters, then the names of the text that defines it.
  const Scope frame{.outer = &home, .param_names = def.params, .param_values = args};
  std::string out;
  render_block(def.body, frame, name, out);
  // The newline before </%def> ends the body's last line; the call's own line has one.
  if (!out.empty() && out.back() == '\n') out.pop_back();
  calls_.pop_back();
  return out;
}

void Renderer::enter(const std::string& caller, std::size_t line) {
  if (calls_.size() >= kMaxCallDepth) {
    fail_at(Where{caller, line, calls_},
            fmt::format("calls of snippets, modules and defs nested {} deep", kMaxCallDepth),
            "A def that calls itself must stop: make the call depend on an %if that ends it.");
  }
  calls_.push_back(where_short(caller, line));
}

}  // namespace skein::detail::tmpl
