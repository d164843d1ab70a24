// SPDX-License-Identifier: BSD-3-Clause
// A template's text parsed into its structure: text with placeholders, %for and %if blocks, and
// the <%def> blocks defined at its top level (skein/template.hpp documents the syntax).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "template_expr.hpp"
#include "template_lex.hpp"

namespace skein::detail::tmpl {

struct Node;
using Block = std::vector<Node>;

// Text with placeholders (no control lines), starting at `line` of the template.
struct TextNode {
  std::string_view text;
  std::size_t line = 0;
};

struct ForNode {
  std::string var;
  ExprPtr iterable;
  std::string_view source;  // the iterable's text, for messages
  std::size_t line = 0;
  Block body;
};

struct IfBranch {
  ExprPtr condition;  // null for %else
  std::string_view source;
  std::size_t line = 0;
  Block body;
};

struct IfNode {
  std::vector<IfBranch> branches;
};

struct Node {
  std::variant<TextNode, ForNode, IfNode> node;
};

struct DefNode {
  std::string name;
  std::vector<std::string> params;
  std::size_t line = 0;
  Block body;
};

struct ParsedTemplate {
  Block body;
  std::vector<DefNode> defs;  // the <%def>s of the top level, in order
};

// Parses `text`, whose first line is line `first_line` of the template `name`. The text must
// outlive the result (text nodes point into it). Throws RenderError for a malformed control line,
// block or def, and an unterminated placeholder.
ParsedTemplate parse_template(std::string_view text, const std::string& name,
                              std::size_t first_line, const std::vector<std::string>& calls);

}  // namespace skein::detail::tmpl
