// SPDX-License-Identifier: BSD-3-Clause
#include "skein/template.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "skein/detail/errors.hpp"

namespace skein {

namespace detail {

struct SnippetImpl {
  std::string name;
  std::vector<std::string> params;
  std::string text;           // used when there is no callable
  Snippet::Callable callable;
  std::size_t arity = 0;
  RenderGlobals globals;
};

struct ModuleImpl {
  std::string name;
  std::shared_ptr<const SnippetImpl> snippet;  // its first parameter receives the prefix
  std::vector<std::string> args;               // the other parameters, fixed at construction
};

struct RenderAccess {
  static const std::string& text(const RenderValue& v) { return v.text_; }
  static const std::shared_ptr<const SnippetImpl>& snippet(const RenderValue& v) {
    return v.snippet_;
  }
  static const std::shared_ptr<const ModuleImpl>& module(const RenderValue& v) { return v.module_; }
  static const std::shared_ptr<const SnippetImpl>& impl(const Snippet& s) { return s.impl_; }
  static const std::shared_ptr<const ModuleImpl>& impl(const Module& m) { return m.impl_; }
  static Snippet make_snippet(std::shared_ptr<const SnippetImpl> impl) {
    return Snippet(std::move(impl));
  }
  static Module make_module(std::shared_ptr<const ModuleImpl> impl) {
    return Module(std::move(impl));
  }
};

}  // namespace detail

namespace {

using detail::ModuleImpl;
using detail::RenderAccess;
using detail::SnippetImpl;

[[noreturn]] void fail(std::string message, std::string hint = {}) {
  detail::raise_in<RenderError>(SKEIN_HERE, "skein::render", std::move(hint), "{}", message);
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Index just past the quoted literal starting at `i`, or npos when it does not close.
std::size_t skip_quoted(std::string_view text, std::size_t i) {
  const char quote = text[i];
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Splits at commas outside brackets and quotes. Brackets are counted, not matched by kind:
// the text is C, and a mismatch will be reported by the compiler with better context.
std::vector<std::string_view> split_args(std::string_view text) {
  std::vector<std::string_view> args;
  if (trim(text).empty()) return args;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i = std::min(skip_quoted(text, i), text.size());
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      args.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
    ++i;
  }
  args.push_back(trim(text.substr(start)));
  return args;
}

std::string sanitize(std::string_view name) {
  std::string out;
  for (char c : name) out += is_ident_char(c) ? c : '_';
  return out.empty() ? std::string("module") : out;
}

// The names a template sees: its parameters (bound to argument strings), then its globals.
struct Scope {
  const RenderGlobals* globals = nullptr;
  std::span<const std::string> param_names;
  std::span<const std::string> param_values;

  struct Found {
    const std::string* param = nullptr;
    const RenderValue* value = nullptr;
  };
  std::optional<Found> find(std::string_view name) const {
    for (std::size_t i = 0; i < param_names.size(); ++i) {
      if (param_names[i] == name) return Found{.param = &param_values[i]};
    }
    if (globals) {
      if (auto it = globals->find(name); it != globals->end()) return Found{.value = &it->second};
    }
    return std::nullopt;
  }

  std::string known_names() const {
    std::vector<std::string> names(param_names.begin(), param_names.end());
    if (globals) {
      for (const auto& [k, v] : *globals) names.push_back(k);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) return "none";
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
};

class Renderer {
 public:
  std::string finish(std::string main) {
    std::string out = std::move(modules_);
    out += main;
    return out;
  }

  std::string render_text(std::string_view text, const Scope& scope, const std::string& name,
                          std::size_t base_line = 1) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
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
      const std::size_t line = base_line + static_cast<std::size_t>(
                                               std::count(text.begin(), text.begin() + dollar, '\n'));
      const std::size_t end = find_close(text, dollar + 2);
      if (end == std::string_view::npos) {
        fail(where(name, line) + "unterminated '${' (no matching '}')" + chain(),
             "Close the placeholder, or write '$$' for a literal '$'.");
      }
      out += expand(text.substr(dollar + 2, end - dollar - 2), scope, name, line);
      i = end + 1;
    }
    return out;
  }

  std::string call(const SnippetImpl& s, std::vector<std::string> args, const std::string& caller,
                   std::size_t line) {
    if (args.size() != s.arity) {
      fail(fmt::format("{}snippet '{}' takes {} argument{}, {} given{}", where(caller, line), s.name,
                       s.arity, s.arity == 1 ? "" : "s", args.size(), chain()));
    }
    calls_.push_back(where_short(caller, line));
    const std::string text = s.callable ? s.callable(std::span<const std::string>(args)) : s.text;
    const Scope scope{.globals = &s.globals,
                      .param_names = s.callable ? std::span<const std::string>() : s.params,
                      .param_values = args};
    std::string out = render_text(text, scope, "snippet '" + s.name + "'");
    calls_.pop_back();
    return out;
  }

  const std::string& use(const ModuleImpl& m, const std::string& caller, std::size_t line) {
    if (auto it = prefixes_.find(&m); it != prefixes_.end()) return it->second;
    const std::string prefix = fmt::format("_mod_{}_{}_", sanitize(m.name), counter_++);
    const std::string& stored = prefixes_.emplace(&m, prefix).first->second;
    std::vector<std::string> args{prefix};
    args.insert(args.end(), m.args.begin(), m.args.end());
    // Rendering the code first emits the dependencies it uses, so they land ahead of it.
    std::string code = call(*m.snippet, std::move(args), caller, line);
    if (!code.empty() && code.back() != '\n') code += '\n';
    modules_ += code;
    return stored;
  }

 private:
  static std::string where(const std::string& name, std::size_t line) {
    return fmt::format("{}:{}: ", name, line);
  }
  static std::string where_short(const std::string& name, std::size_t line) {
    return fmt::format("{}:{}", name, line);
  }
  std::string chain() const {
    std::string out;
    for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) out += ", called from " + *it;
    return out;
  }

  static std::size_t find_close(std::string_view text, std::size_t i) {
    int depth = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == '"' || c == '\'') {
        i = skip_quoted(text, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']') --depth;
      if (c == '}') {
        if (depth == 0) return i;
        --depth;
      }
      ++i;
    }
    return std::string_view::npos;
  }

  std::string expand(std::string_view body, const Scope& scope, const std::string& name,
                     std::size_t line) {
    const std::string_view content = trim(body);
    std::size_t n = 0;
    while (n < content.size() && is_ident_char(content[n])) ++n;
    if (n == 0 || !is_ident_start(content[0])) {
      fail(fmt::format("{}malformed placeholder '${{{}}}': expected a name or a call name(args){}",
                       where(name, line), body, chain()),
           "Write '$$' for a literal '$'.");
    }
    const std::string ident(content.substr(0, n));
    const std::string_view rest = trim(content.substr(n));
    const bool has_call = !rest.empty();
    if (has_call && (rest.front() != '(' || rest.back() != ')')) {
      fail(fmt::format("{}malformed placeholder '${{{}}}': expected a name or a call name(args){}",
                       where(name, line), body, chain()));
    }

    const auto found = scope.find(ident);
    if (!found) {
      fail(fmt::format("{}unknown name '{}'{}; known names: {}", where(name, line), ident, chain(),
                       scope.known_names()),
           "Bind it in the render globals (or the snippet's or module's own globals).");
    }
    const std::string* text = found->param ? found->param : nullptr;
    if (found->value && found->value->is_string()) text = &RenderAccess::text(*found->value);
    if (text) {
      if (has_call) {
        fail(fmt::format("{}'{}' is a string, not a snippet: it cannot be called{}",
                         where(name, line), ident, chain()));
      }
      return *text;
    }
    if (found->value->is_module()) {
      if (has_call) {
        fail(fmt::format("{}'{}' is a module, not a snippet: it cannot be called{}",
                         where(name, line), ident, chain()),
             fmt::format("${{{0}}} gives the module's prefix: call the function it defines as "
                         "${{{0}}}(...).",
                         ident));
      }
      return use(*RenderAccess::module(*found->value), name, line);
    }
    const SnippetImpl& snippet = *RenderAccess::snippet(*found->value);
    std::vector<std::string> args;
    if (has_call) {
      const std::string_view inner = rest.substr(1, rest.size() - 2);
      for (std::string_view arg : split_args(inner)) {
        // Arguments may hold placeholders of their own, resolved where the call is written.
        const std::size_t arg_line =
            line + static_cast<std::size_t>(std::count(body.data(), arg.data(), '\n'));
        args.push_back(render_text(arg, scope, name, arg_line));
      }
    }
    return call(snippet, std::move(args), name, line);
  }

  std::unordered_map<const ModuleImpl*, std::string> prefixes_;
  std::string modules_;
  std::size_t counter_ = 0;
  std::vector<std::string> calls_;  // where each snippet or module being rendered was used
};

}  // namespace

// ---- RenderValue ----

RenderValue::RenderValue(std::string text) : text_(std::move(text)) {}
RenderValue::RenderValue(const Snippet& snippet) : snippet_(RenderAccess::impl(snippet)) {}
RenderValue::RenderValue(const Module& module) : module_(RenderAccess::impl(module)) {}

bool RenderValue::is_string() const noexcept { return !snippet_ && !module_; }
bool RenderValue::is_snippet() const noexcept { return snippet_ != nullptr; }
bool RenderValue::is_module() const noexcept { return module_ != nullptr; }

std::string RenderValue::integer_text(std::int64_t value) {
  if (value >= 0) return std::to_string(value);
  // The literal 9223372036854775808 does not fit a signed type, so the minimum is spelled out.
  if (value == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807-1)";
  return fmt::format("({})", value);
}

std::string RenderValue::unsigned_text(std::uint64_t value) {
  // Past INT64_MAX an unsuffixed decimal literal has no C type.
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::to_string(value) + "u";
  }
  return std::to_string(value);
}

namespace {
template <class T>
std::string float_literal(T value, const char* suffix) {
  if (!std::isfinite(value)) {
    detail::raise_in(SKEIN_HERE, "skein::literal",
                     "Pass infinities and NaN as kernel arguments, or build them on the device.",
                     "{} has no C literal", value);
  }
  // fmt's shortest representation reads back as exactly the same value.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  text += suffix;
  return std::signbit(value) ? "(" + text + ")" : text;
}
}  // namespace

std::string literal(double value) { return float_literal(value, ""); }
std::string literal(float value) { return float_literal(value, "f"); }

// ---- Snippet ----

Snippet::Snippet(std::vector<std::string> params, std::string text, RenderGlobals globals,
                 std::string name) {
  for (const auto& p : params) {
    if (p.empty() || !is_ident_start(p[0]) ||
        !std::all_of(p.begin(), p.end(), [](char c) { return is_ident_char(c); })) {
      detail::raise_in<RenderError>(SKEIN_HERE, "skein::Snippet", {},
                                    "snippet '{}': parameter '{}' is not an identifier", name, p);
    }
  }
  auto impl = std::make_shared<SnippetImpl>();
  impl->arity = params.size();
  impl->name = std::move(name);
  impl->params = std::move(params);
  impl->text = std::move(text);
  impl->globals = std::move(globals);
  impl_ = std::move(impl);
}

Snippet Snippet::from_string(std::string text, RenderGlobals globals, std::string name) {
  return Snippet({}, std::move(text), std::move(globals), std::move(name));
}

Snippet Snippet::from_callable(std::size_t arity, Callable callable, RenderGlobals globals,
                               std::string name) {
  if (!callable) {
    detail::raise_in<RenderError>(SKEIN_HERE, "skein::Snippet::from_callable", {},
                                  "snippet '{}': empty callable", name);
  }
  auto impl = std::make_shared<SnippetImpl>();
  impl->name = std::move(name);
  impl->callable = std::move(callable);
  impl->arity = arity;
  impl->globals = std::move(globals);
  return Snippet(std::move(impl));
}

const std::string& Snippet::name() const noexcept { return impl_->name; }
std::size_t Snippet::arity() const noexcept { return impl_->arity; }

// ---- Module ----

Module::Module(std::string text, RenderGlobals globals, std::string name) {
  auto impl = std::make_shared<ModuleImpl>();
  impl->snippet = RenderAccess::impl(Snippet({"prefix"}, std::move(text), std::move(globals), name));
  impl->name = std::move(name);
  impl_ = std::move(impl);
}

Module Module::from_snippet(const Snippet& snippet, std::vector<std::string> args,
                            std::string name) {
  if (snippet.arity() != args.size() + 1) {
    detail::raise_in<RenderError>(
        SKEIN_HERE, "skein::Module::from_snippet",
        "The snippet's first parameter receives the prefix; the others are the fixed arguments.",
        "snippet '{}' takes {} arguments, so a module from it needs {} fixed arguments, {} given",
        snippet.name(), snippet.arity(), snippet.arity() == 0 ? 0 : snippet.arity() - 1,
        args.size());
  }
  auto impl = std::make_shared<ModuleImpl>();
  impl->name = name.empty() ? snippet.name() : std::move(name);
  impl->snippet = RenderAccess::impl(snippet);
  impl->args = std::move(args);
  return RenderAccess::make_module(std::move(impl));
}

Module Module::from_callable(std::function<std::string(std::string_view prefix)> callable,
                             RenderGlobals globals, std::string name) {
  if (!callable) {
    detail::raise_in<RenderError>(SKEIN_HERE, "skein::Module::from_callable", {},
                                  "module '{}': empty callable", name);
  }
  auto snippet = Snippet::from_callable(
      1, [c = std::move(callable)](std::span<const std::string> args) { return c(args[0]); },
      std::move(globals), name);
  auto impl = std::make_shared<ModuleImpl>();
  impl->name = std::move(name);
  impl->snippet = RenderAccess::impl(snippet);
  return RenderAccess::make_module(std::move(impl));
}

const std::string& Module::name() const noexcept { return impl_->name; }

// ---- render ----

std::string render(std::string_view text, const RenderGlobals& globals,
                   std::string_view template_name) {
  Renderer r;
  std::string main = r.render_text(text, Scope{.globals = &globals}, std::string(template_name));
  return r.finish(std::move(main));
}

std::string render(const Snippet& snippet, std::span<const std::string> args) {
  Renderer r;
  std::string main = r.call(*RenderAccess::impl(snippet),
                            std::vector<std::string>(args.begin(), args.end()), "<render>", 1);
  return r.finish(std::move(main));
}

}  // namespace skein
