// SPDX-License-Identifier: BSD-3-Clause
// The template engine's shared pieces: where in a template something is (for error messages),
// and the character-level scanning that the parser, the expressions and the renderer share.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace skein::detail::tmpl {

// A place in a template: its name, a line (from 1), and the calls that led there, outermost
// first ("main.cl:12"), for error messages.
struct Where {
  const std::string& name;
  std::size_t line;
  const std::vector<std::string>& calls;
};

// ", called from b.cl:3, called from a.cl:12": the calls from the innermost out. A deep chain
// keeps its innermost calls and says how many more there were.
std::string call_chain(const std::vector<std::string>& calls);

// Throws RenderError "NAME:LINE: MESSAGE, called from ...TAIL" with `hint` as what to do.
[[noreturn]] void fail_at(const Where& where, std::string_view message, std::string_view hint = {},
                          std::string_view tail = {});

inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_identifier(std::string_view s);
// Python's keywords that expressions use or refuse: not usable as names of variables or params.
bool is_keyword(std::string_view s);

std::string_view trim(std::string_view s);

// Index just past the quoted literal starting at `i`, or npos when it does not close.
std::size_t skip_quoted(std::string_view text, std::size_t i);

// Splits at commas outside brackets and quotes (the arguments of a snippet or def call).
std::vector<std::string_view> split_args(std::string_view text);

// The index of the '}' that closes a placeholder whose content starts at `i`, or npos.
std::size_t find_close(std::string_view text, std::size_t i);

// The index of the ')' matching the '(' at `open` (quotes skipped), or npos.
std::size_t matching_paren(std::string_view text, std::size_t open);

// "'NAME'" and "name:line" as messages write them.
std::string where_short(const std::string& name, std::size_t line);

}  // namespace skein::detail::tmpl
