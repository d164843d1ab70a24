// SPDX-License-Identifier: BSD-3-Clause
// Kernel source templates: one source for both backends, with control flow, reusable snippets
// and modules. The syntax follows Mako's (the template language of grunnur, Skein's ancestor) in
// the part a kernel writer needs; docs/kernels.md shows a grunnur kernel carried over.
//
// Placeholders, anywhere in the text:
//   ${name}            the value bound to `name`: a string is inserted as is, an integer as a C
//                      literal (negative ones in parentheses, so that `x-${n}` stays a
//                      subtraction); a Module inserts its unique prefix (and its code is emitted
//                      once, ahead of the main text); a snippet or def without parameters inserts
//                      its rendered text; a list is an error (loop over it, or insert an item)
//   ${name(a, b)}      a Snippet or a def called with arguments: the argument text is split at
//                      top-level commas (parentheses, brackets, braces and quotes nest), trimmed,
//                      and rendered in the caller's scope (so `${s(${mod}, x[i])}` works); inside,
//                      each parameter is a string
//   ${expression}      anything else is an expression (below), inserted as ${name} inserts a value:
//                      `${i + 1}`, `${taps[k]}`, `${len(taps)}`
//   $$                 a literal '$'
// A '$' followed by anything else is copied as is. A placeholder may span lines.
//
// Control lines: a line whose first character other than spaces and tabs is '%'. The line, its
// newline included, gives no output.
//   %for NAME in range(stop):        also range(start, stop) and range(start, stop, step), with
//   ...                              Python's meaning (an empty range runs the body no time), or
//   %endfor                          `%for NAME in EXPR:` where EXPR is a list: NAME is bound to
//                                    each item in turn (an integer for range) inside the body
//   %if EXPR:                        the first branch whose EXPR is true is rendered; %elif and
//   %elif EXPR:                      %else are optional. Loops and conditions nest.
//   %else:
//   %endif
//   %% at the start of a line (after blanks) writes one '%'; a line whose first characters other
//   than blanks are ## is a comment and gives no output.
// Everything else is text: '%', '##' and '<%' inside a line (`a % b`, `printf("<%d>")`), '#'
// lines, and a backslash at the end of a line (kept: it is C's line continuation, where Mako
// would join the lines).
//
// Defs: named blocks with parameters (Mako's <%def>), at the top level of a text:
//   <%def name="f(a, b)">            the tag on a line of its own, then the body's lines, then
//   ...                              </%def> on a line of its own; or a whole def on one line:
//   </%def>                          <%def name="sq(x)">((${x}) * (${x}))</%def>
// A def is called as a snippet is, ${f(x, y)} (${f} or ${f()} without parameters), from anywhere
// in the text that defines it: before its definition, from other defs, from itself. Its body sees
// its parameters (strings), then the text's own names (its defs, and its parameters and globals),
// not the caller's loop variables. It gives its body rendered, less the body's last newline. A def
// may not take the name of one of the text's globals or parameters. Calls of snippets, modules and
// defs nest at most 64 deep, so that a recursion must end (a def may call itself under an %if).
//
// Expressions (control lines and ${...}), a small part of Python's:
//   literals      decimal integers, strings ('...' or "...", with the escapes \\ \' \" \n \t),
//                 True and False (1 and 0)
//   names         a loop variable, a parameter (a string), a def's or template's global
//   x[i]          an item of a list (a negative i counts from the end)
//   len(x)        the number of items of a list, or of characters of a string
//   int(x)        an integer, or a string holding one as Skein renders them (12, -3, (-3)): a
//                 def's parameters are strings, so `int(n) - 1` does arithmetic on one
//   + - * // %    on integers; // and % round toward minus infinity as in Python; unary - and +
//   == != < <= > >=   between two integers or two strings (never one of each: convert with int()),
//                 chained as in Python (a < b < c); they give 1 or 0
//   not, and, or  Python's: `a or b` is a when a is true, else b
//   ( )           grouping
// Integers are 64-bit signed: an overflow is an error. A value is false when it is 0, an empty
// string or an empty list, true otherwise. Anything else (floats, '/', '**', attributes, other
// functions, Python blocks `<% %>`, other Mako tags) is a RenderError.
//
// Errors are RenderErrors that say where first, `TEMPLATE:LINE: ` (the template_name given to
// render(), or "snippet 'NAME'" for a snippet's or module's text; lines count from 1), list the
// calls that led there (", called from main.cl:12") and say what to do; an unknown name lists the
// names known there. A line that starts with '<%' or '</%' other than a def's tags is refused.
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
#include <optional>
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

class RenderValue;

// A list of values: what `%for x in xs:` goes over, `len(xs)` counts and `xs[i]` picks from.
// Items may be any values (strings, integers, snippets, modules, lists).
using RenderList = std::vector<RenderValue>;

// What a name in a template can be bound to: a string, an integer, a list, a Snippet or a Module.
class SKEIN_EXPORT RenderValue {
 public:
  RenderValue(std::string text);
  RenderValue(std::string_view text) : RenderValue(std::string(text)) {}
  RenderValue(const char* text) : RenderValue(std::string(text)) {}
  // Integers render as C decimal literals; negative ones in parentheses so that `x-${n}` stays a
  // subtraction. Booleans are excluded: a `const char*` silently converting to bool is a trap.
  // Templates compute with them as 64-bit signed integers; an unsigned value above INT64_MAX is
  // kept as its text (with a 'u' suffix) and is a string to expressions.
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char>)
  RenderValue(T value) {
    if constexpr (std::is_signed_v<T>) {
      set_integer(static_cast<std::int64_t>(value));
    } else {
      set_unsigned(static_cast<std::uint64_t>(value));
    }
  }
  RenderValue(const Snippet& snippet);
  RenderValue(const Module& module);
  RenderValue(RenderList items);
  // A list from a vector of anything a RenderValue is made from: std::vector<int>{1, 2, 3}.
  template <class T>
    requires(!std::same_as<T, RenderValue> && std::convertible_to<const T&, RenderValue>)
  RenderValue(const std::vector<T>& items) : RenderValue(RenderList(items.begin(), items.end())) {}

  // Inserted as text: a string or an integer.
  bool is_string() const noexcept;
  bool is_integer() const noexcept;
  bool is_list() const noexcept;
  bool is_snippet() const noexcept;
  bool is_module() const noexcept;

 private:
  friend struct detail::RenderAccess;
  static std::string integer_text(std::int64_t value);
  static std::string unsigned_text(std::uint64_t value);
  void set_integer(std::int64_t value);
  void set_unsigned(std::uint64_t value);

  std::string text_;
  std::optional<std::int64_t> integer_;
  std::shared_ptr<const detail::SnippetImpl> snippet_;
  std::shared_ptr<const detail::ModuleImpl> module_;
  std::shared_ptr<const RenderList> list_;
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
// placeholder or control block, a bad expression, a wrong argument count, or a value used the
// wrong way.
SKEIN_EXPORT std::string render(std::string_view text, const RenderGlobals& globals = {},
                                std::string_view template_name = "<source>");

// Renders a snippet called with `args` as the main text (for sources built as snippets).
SKEIN_EXPORT std::string render(const Snippet& snippet, std::span<const std::string> args = {});

}  // namespace skein
