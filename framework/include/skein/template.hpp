// SPDX-License-Identifier: BSD-3-Clause
// Kernel source templates: one source for both backends, with reusable snippets and modules.
//
// A template is plain source text with placeholders:
//   ${name}            the value bound to `name`: a string is inserted as is; a Module inserts its
//                      unique prefix (and its code is emitted once, ahead of the main text); a
//                      snippet without parameters inserts its rendered text
//   ${name(a, b)}      a Snippet called with arguments: the argument text is split at top-level
//                      commas (parentheses, brackets, braces and quotes nest), trimmed, and rendered
//                      in the caller's scope (so `${s(${mod}, x[i])}` works); inside the snippet
//                      each parameter is a string
//   $$                 a literal '$'
// A '$' followed by anything else is copied as is.
//
// Scoping is lexical: a snippet or a module sees its own globals and its parameters, not the
// caller's globals. Whatever it needs (types, other modules) goes into its own globals.
//
// Modules are identified by object identity: copies of a Module share it, so one module used many
// times (directly or through other modules) is emitted once per render, after its dependencies.
// Prefixes are numbered in order of first use within a render, so rendering the same template
// with the same globals always gives the same text (a stable key for compiled-binary caches).
//
// Threads: RenderValue, Snippet and Module never change once made, and render() keeps its state on
// its own stack, so they may be shared and rendered from any number of threads at once; the
// callables given to from_callable() are then called from those threads, possibly at once.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "skein/export.hpp"

namespace skein {

class Snippet;
class Module;

namespace detail {
struct SnippetImpl;
struct ModuleImpl;
struct RenderAccess;
}  // namespace detail

// What a placeholder can be bound to: a string, a Snippet or a Module.
class SKEIN_EXPORT RenderValue {
 public:
  RenderValue(std::string text);
  RenderValue(std::string_view text) : RenderValue(std::string(text)) {}
  RenderValue(const char* text) : RenderValue(std::string(text)) {}
  // Integers render as C decimal literals; negative ones in parentheses so that `x-${n}` stays a
  // subtraction. Booleans are excluded: a `const char*` silently converting to bool is a trap.
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  RenderValue(T value)
      : RenderValue(std::is_signed_v<T> ? integer_text(static_cast<std::int64_t>(value))
                                        : unsigned_text(static_cast<std::uint64_t>(value))) {}
  RenderValue(const Snippet& snippet);
  RenderValue(const Module& module);

  bool is_string() const noexcept;
  bool is_snippet() const noexcept;
  bool is_module() const noexcept;

 private:
  friend struct detail::RenderAccess;
  static std::string integer_text(std::int64_t value);
  static std::string unsigned_text(std::uint64_t value);

  std::string text_;
  std::shared_ptr<const detail::SnippetImpl> snippet_;
  std::shared_ptr<const detail::ModuleImpl> module_;
};

// Names visible to a template.
using RenderGlobals = std::map<std::string, RenderValue, std::less<>>;

// A C literal of the exact value: the shortest decimal that reads back as the same number,
// with an 'f' suffix for float, in parentheses when negative. Throws LogicError for infinities
// and NaN (C has no portable literal for them).
SKEIN_EXPORT std::string literal(double value);
SKEIN_EXPORT std::string literal(float value);

// A reusable parameterised piece of source, expanded where it is called.
class SKEIN_EXPORT Snippet {
 public:
  // Builds the text from the argument strings (as many as the snippet's arity); the result is
  // then rendered as a template with the snippet's globals.
  using Callable = std::function<std::string(std::span<const std::string> args)>;

  // `text` is a template in which each name of `params` is bound to the call's argument.
  Snippet(std::vector<std::string> params, std::string text, RenderGlobals globals = {},
          std::string name = "snippet");
  // A snippet without parameters.
  static Snippet from_string(std::string text, RenderGlobals globals = {},
                             std::string name = "snippet");
  static Snippet from_callable(std::size_t arity, Callable callable, RenderGlobals globals = {},
                               std::string name = "snippet");

  const std::string& name() const noexcept;
  std::size_t arity() const noexcept;

 private:
  friend struct detail::RenderAccess;
  explicit Snippet(std::shared_ptr<const detail::SnippetImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::SnippetImpl> impl_;
};

// Source rendered once at the top level under a unique prefix; where it is used, the prefix is
// inserted. Its code names everything it defines after the prefix, e.g.
//   Module("WITHIN_KERNEL INLINE float ${prefix}(float x) { return x * x; }", {}, "square")
// is used in a kernel as `${square}(v)`.
class SKEIN_EXPORT Module {
 public:
  // `text` is a template in which `prefix` is bound to the module's prefix.
  explicit Module(std::string text, RenderGlobals globals = {}, std::string name = "module");
  // The snippet's first parameter receives the prefix, the others `args`, fixed now: a family
  // of modules from one snippet. Throws RenderError when the counts do not match.
  static Module from_snippet(const Snippet& snippet, std::vector<std::string> args = {},
                             std::string name = {});
  // The callable gets the prefix and returns a template rendered with `globals`.
  static Module from_callable(std::function<std::string(std::string_view prefix)> callable,
                              RenderGlobals globals = {}, std::string name = "module");

  const std::string& name() const noexcept;

  // Same object (copies share identity): the same module within a render.
  friend bool operator==(const Module& a, const Module& b) noexcept { return a.impl_ == b.impl_; }

 private:
  friend struct detail::RenderAccess;
  explicit Module(std::shared_ptr<const detail::ModuleImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::ModuleImpl> impl_;
};

// Renders `text` with `globals`: the code of every module used (dependencies first, each once),
// then the main text. `template_name` names the source in error messages. Throws RenderError
// for an unknown name (with the line and the names known there), a malformed or unterminated
// placeholder, a wrong argument count, or a value used the wrong way.
SKEIN_EXPORT std::string render(std::string_view text, const RenderGlobals& globals = {},
                                std::string_view template_name = "<source>");

// Renders a snippet called with `args` as the main text (for sources built as snippets).
SKEIN_EXPORT std::string render(const Snippet& snippet, std::span<const std::string> args = {});

}  // namespace skein
