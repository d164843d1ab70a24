// SPDX-License-Identifier: BSD-3-Clause
// Templates' values, snippets and modules, and render(); the parser, the expressions and the
// renderer are in template_parse.cpp, template_expr.cpp and template_render.cpp.
#include "skein/template.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "skein/detail/errors.hpp"
#include "template_impl.hpp"
#include "template_lex.hpp"
#include "template_render.hpp"

namespace skein {

using detail::ModuleImpl;
using detail::RenderAccess;
using detail::SnippetImpl;

// ---- RenderValue ----

RenderValue::RenderValue(std::string text) : text_(std::move(text)) {}
RenderValue::RenderValue(const Snippet& snippet) : snippet_(RenderAccess::impl(snippet)) {}
RenderValue::RenderValue(const Module& module) : module_(RenderAccess::impl(module)) {}
RenderValue::RenderValue(RenderList items)
    : list_(std::make_shared<const RenderList>(std::move(items))) {}

void RenderValue::set_integer(std::int64_t value) {
  text_ = integer_text(value);
  integer_ = value;
}

void RenderValue::set_unsigned(std::uint64_t value) {
  text_ = unsigned_text(value);
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    integer_ = static_cast<std::int64_t>(value);
  }
}

bool RenderValue::is_string() const noexcept { return !snippet_ && !module_ && !list_; }
bool RenderValue::is_integer() const noexcept { return integer_.has_value(); }
bool RenderValue::is_list() const noexcept { return list_ != nullptr; }
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
    if (!detail::tmpl::is_identifier(p)) {
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
  impl->snippet =
      RenderAccess::impl(Snippet({"prefix"}, std::move(text), std::move(globals), name));
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
  if (name.empty()) {
    impl->name = snippet.name();
  } else {
    impl->name = std::move(name);
  }
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
  detail::tmpl::Renderer r;
  std::string main =
      r.render_template(text, detail::tmpl::Scope{.globals = &globals}, std::string(template_name));
  return r.finish(main);
}

std::string render(const Snippet& snippet, std::span<const std::string> args) {
  detail::tmpl::Renderer r;
  std::string main = r.call(*RenderAccess::impl(snippet),
                            std::vector<std::string>(args.begin(), args.end()), "<render>", 1);
  return r.finish(main);
}

}  // namespace skein
