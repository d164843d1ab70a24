// SPDX-License-Identifier: BSD-3-Clause
#include "template_lex.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "skein/detail/errors.hpp"

namespace skein::detail::tmpl {

std::string call_chain(const std::vector<std::string>& calls) {
  // A runaway recursion is 64 calls deep: its innermost few say where it loops.
  constexpr std::size_t kShown = 8;
  std::string out;
  std::size_t shown = 0;
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if (shown++ == kShown) {
      out += fmt::format(", ... ({} more calls)", calls.size() - kShown);
      break;
    }
    out += ", called from " + *it;
  }
  return out;
}

void fail_at(const Where& where, std::string_view message, std::string_view hint,
             std::string_view tail) {
  detail::raise_in<RenderError>(SKEIN_HERE, "skein::render", hint, "{}:{}: {}{}{}", where.name,
                                where.line, message, call_chain(where.calls), tail);
}

bool is_identifier(std::string_view s) {
  return !s.empty() && is_ident_start(s[0]) && std::all_of(s.begin(), s.end(), is_ident_char);
}

bool is_keyword(std::string_view s) {
  static constexpr std::array<std::string_view, 10> kKeywords{
      "and", "or", "not", "in", "is", "if", "else", "True", "False", "None"};
  return std::find(kKeywords.begin(), kKeywords.end(), s) != kKeywords.end();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

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

// Brackets are counted, not matched by kind: the text is C, and a mismatch will be reported by
// the compiler with better context.
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

std::size_t find_close(std::string_view text, std::size_t i) {
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

std::size_t matching_paren(std::string_view text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i = skip_quoted(text, i);
      if (i == std::string_view::npos) return i;
      continue;
    }
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0) return i;
    ++i;
  }
  return std::string_view::npos;
}

std::string where_short(const std::string& name, std::size_t line) {
  return fmt::format("{}:{}", name, line);
}

}  // namespace skein::detail::tmpl
