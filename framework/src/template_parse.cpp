// SPDX-License-Identifier: BSD-3-Clause
// The template parser: reads a text line by line into text nodes, %for / %if blocks and the
// top-level <%def>s, with the line of each for messages.
#include "template_parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace skein::detail::tmpl {

namespace {

enum class Opened { top, for_block, if_block, def_block };

struct Open {
  Opened kind = Opened::top;
  std::size_t line = 0;
};

// The control line (or </%def>) that ends a block: "elif", "else", "endif", "endfor" or "/def".
struct Closer {
  std::string keyword;
  std::string_view rest;  // what follows the keyword (an %elif's condition and colon)
  std::size_t line = 0;
};

std::string_view opener_name(Opened kind) {
  switch (kind) {
    case Opened::for_block: return "'%for'";
    case Opened::if_block: return "'%if'";
    case Opened::def_block: return "'<%def>'";
    case Opened::top: break;
  }
  return "template";
}

std::string_view closer_name(Opened kind) {
  switch (kind) {
    case Opened::for_block: return "'%endfor'";
    case Opened::if_block: return "'%endif'";
    case Opened::def_block: return "'</%def>'";
    case Opened::top: break;
  }
  return "the end of the text";
}

// The block that a closing line belongs to.
Opened opened_by(std::string_view keyword) {
  if (keyword == "endfor") return Opened::for_block;
  if (keyword == "/def") return Opened::def_block;
  return Opened::if_block;
}

bool starts_tag(std::string_view s, std::string_view tag) {
  return s.starts_with(tag) && (s.size() == tag.size() || !is_ident_char(s[tag.size()]));
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& name, std::size_t first_line,
         const std::vector<std::string>& calls)
      : text_(text), name_(name), calls_(calls), line_(first_line) {}

  ParsedTemplate parse() {
    ParsedTemplate out;
    defs_ = &out.defs;
    parse_lines(out.body, Open{});
    return out;
  }

 private:
  Where at(std::size_t line) const { return Where{name_, line, calls_}; }

  void advance_to(std::size_t end) {
    line_ += static_cast<std::size_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                                 text_.begin() + static_cast<std::ptrdiff_t>(end),
                                                 '\n'));
    pos_ = end;
  }

  // Reads lines into `block` until the line that ends `open` (returned), or the end of the text.
  std::optional<Closer> parse_lines(Block& block, const Open& open) {
    while (pos_ < text_.size()) {
      const std::size_t start = pos_, line = line_;
      const std::size_t eol = text_.find('\n', start);
      const std::size_t next = eol == std::string_view::npos ? text_.size() : eol + 1;
      std::size_t first = start;
      while (first < next && is_blank(text_[first])) ++first;
      const std::string_view rest = text_.substr(first, next - first);
      if (rest.starts_with("%%")) {
        // Mako's escape: the indentation, one '%', then the rest of the line as text.
        append_text(block, start, first, line);
        block.push_back(Node{TextNode{"%", line}});
        const std::size_t end = scan_text_line(first + 2);
        append_text(block, first + 2, end, line);
        advance_to(end);
      } else if (rest.starts_with("%")) {
        advance_to(next);
        if (auto closer = control_line(block, open, trim(rest.substr(1)), line)) return closer;
      } else if (rest.starts_with("##")) {
        advance_to(next);
      } else if (starts_tag(rest, "<%def")) {
        advance_to(next);
        parse_def(trim(rest), line, open);
      } else if (rest.starts_with("</%def>")) {
        advance_to(next);
        if (trim(rest) != "</%def>") {
          fail_at(at(line), "text after '</%def>'", "Put '</%def>' on a line of its own.");
        }
        if (open.kind == Opened::def_block) return Closer{.keyword = "/def", .line = line};
        misplaced("/def", open, line);
      } else if (rest.starts_with("<%") || rest.starts_with("</%")) {
        const std::string_view tag = trim(rest);
        fail_at(at(line),
                fmt::format("'{}' is not supported", tag.substr(0, tag.find_first_of(" \t\r\n>"))),
                "Skein's templates have <%def> blocks and %for / %if lines; compute other values "
                "in C++ and pass them as globals.");
      } else {
        const std::size_t end = scan_text_line(start);
        append_text(block, start, end, line);
        advance_to(end);
      }
    }
    if (open.kind != Opened::top) {
      fail_at(at(open.line), fmt::format("{} is never closed", opener_name(open.kind)),
              fmt::format("End it with {}.", closer_name(open.kind)));
    }
    return std::nullopt;
  }

  // Appends text [begin, end) to the block, joining it to the text node before when adjacent.
  void append_text(Block& block, std::size_t begin, std::size_t end, std::size_t line) {
    if (begin == end) return;
    if (!block.empty()) {
      if (auto* last = std::get_if<TextNode>(&block.back().node);
          last && last->text.data() + last->text.size() == text_.data() + begin) {
        last->text = std::string_view(last->text.data(), last->text.size() + (end - begin));
        return;
      }
    }
    block.push_back(Node{TextNode{text_.substr(begin, end - begin), line}});
  }

  // The index past the text line starting at `i` (past its newline), stepping over placeholders,
  // which may span lines.
  std::size_t scan_text_line(std::size_t i) {
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '\n') return i + 1;
      if (c == '$' && i + 1 < text_.size() && text_[i + 1] == '$') {
        i += 2;
        continue;
      }
      if (c == '$' && i + 1 < text_.size() && text_[i + 1] == '{') {
        const std::size_t close = find_close(text_, i + 2);
        if (close == std::string_view::npos) {
          fail_at(at(line_at(i)), "unterminated '${' (no matching '}')",
                  "Close the placeholder, or write '$$' for a literal '$'.");
        }
        i = close + 1;
        continue;
      }
      if (c == '<' &&
          (starts_tag(text_.substr(i), "<%def") || text_.substr(i).starts_with("</%def>"))) {
        fail_at(at(line_at(i)), "a <%def> tag inside a line of text",
                "Put '<%def name=\"f(a)\">' and '</%def>' on lines of their own, or the whole def "
                "on one line.");
      }
      ++i;
    }
    return i;
  }

  std::size_t line_at(std::size_t i) const {
    return line_ + static_cast<std::size_t>(
                       std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                  text_.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
  }

  // A '%' line: opens a block (parsed here), or ends the enclosing one (returned).
  std::optional<Closer> control_line(Block& block, const Open& open, std::string_view content,
                                     std::size_t line) {
    std::size_t n = 0;
    while (n < content.size() && is_ident_char(content[n])) ++n;
    const std::string_view keyword = content.substr(0, n);
    const std::string_view rest = trim(content.substr(n));
    if (keyword == "for") {
      parse_for(block, rest, line);
      return std::nullopt;
    }
    if (keyword == "if") {
      parse_if(block, rest, line);
      return std::nullopt;
    }
    if (keyword == "endfor" || keyword == "endif" || keyword == "else" || keyword == "elif") {
      if ((keyword == "endfor" || keyword == "endif") && !rest.empty()) {
        fail_at(at(line), fmt::format("text after '%{}'", keyword),
                fmt::format("'%{}' stands alone on its line.", keyword));
      }
      if (keyword == "else" && rest != ":") {
        fail_at(at(line), "'%else' is written '%else:'");
      }
      if (open.kind == opened_by(keyword) && open.kind != Opened::top) {
        return Closer{.keyword = std::string(keyword), .rest = rest, .line = line};
      }
      misplaced(keyword, open, line);
    }
    fail_at(at(line),
            fmt::format("unknown control line '%{}'",
                        content.substr(0, std::min<std::size_t>(content.size(), 20))),
            "Control lines are %for, %endfor, %if, %elif, %else and %endif; a line that starts "
            "with '%%' writes one '%', and '##' starts a comment line.");
  }

  [[noreturn]] void misplaced(std::string_view keyword, const Open& open, std::size_t line) {
    const std::string what = keyword == "/def" ? "'</%def>'" : fmt::format("'%{}'", keyword);
    if (open.kind == Opened::top) {
      fail_at(at(line), fmt::format("{} without {}", what, opener_name(opened_by(keyword))),
              "Open the block first, or remove the line.");
    }
    fail_at(
        at(line),
        fmt::format("{} while the {} of line {} is open", what, opener_name(open.kind), open.line),
        fmt::format("End that block with {} first.", closer_name(open.kind)));
  }

  ExprPtr condition(std::string_view rest, std::size_t line, std::string_view keyword,
                    std::string_view& source) {
    if (!rest.ends_with(':')) {
      fail_at(at(line), fmt::format("'%{}' line does not end with ':'", keyword),
              fmt::format("Write '%{} EXPRESSION:'.", keyword));
    }
    source = trim(rest.substr(0, rest.size() - 1));
    return parse_expression(source, at(line),
                            fmt::format("bad expression '{}' in '%{}'", source, keyword));
  }

  void parse_for(Block& block, std::string_view rest, std::size_t line) {
    if (!rest.ends_with(':')) {
      fail_at(at(line), "'%for' line does not end with ':'", "Write '%for NAME in EXPRESSION:'.");
    }
    const std::string_view header = trim(rest.substr(0, rest.size() - 1));
    std::size_t n = 0;
    while (n < header.size() && is_ident_char(header[n])) ++n;
    const std::string_view var = header.substr(0, n);
    const std::string_view after = trim(header.substr(n));
    if (after.starts_with(",")) {
      fail_at(at(line), "'%for' takes one loop variable",
              "Loop over range(len(xs)) and take the item as xs[i].");
    }
    if (!is_identifier(var) || is_keyword(var) || !after.starts_with("in") ||
        (after.size() > 2 && !is_space(after[2]))) {
      fail_at(at(line), fmt::format("malformed '%for {}:'", header),
              "Write '%for NAME in range(n):' or '%for NAME in LIST:'.");
    }
    ForNode node{.var = std::string(var), .source = trim(after.substr(2)), .line = line};
    node.iterable = parse_expression(node.source, at(line),
                                     fmt::format("bad expression '{}' in '%for'", node.source));
    parse_lines(node.body, Open{Opened::for_block, line});
    block.push_back(Node{std::move(node)});
  }

  void parse_if(Block& block, std::string_view rest, std::size_t line) {
    IfNode node;
    IfBranch first{.line = line};
    first.condition = condition(rest, line, "if", first.source);
    std::optional<Closer> closer = parse_lines(first.body, Open{Opened::if_block, line});
    node.branches.push_back(std::move(first));
    std::size_t else_line = 0;
    while (closer->keyword != "endif") {
      if (else_line != 0) {
        fail_at(at(closer->line),
                fmt::format("'%{}' after the '%else' of line {}", closer->keyword, else_line),
                "'%else' is the last branch of an '%if'.");
      }
      IfBranch branch{.line = closer->line};
      if (closer->keyword == "else") {
        else_line = closer->line;
      } else {
        branch.condition = condition(closer->rest, closer->line, "elif", branch.source);
      }
      closer = parse_lines(branch.body, Open{Opened::if_block, line});
      node.branches.push_back(std::move(branch));
    }
    block.push_back(Node{std::move(node)});
  }

  void parse_def(std::string_view tag_line, std::size_t line, const Open& open) {
    if (open.kind != Opened::top) {
      fail_at(
          at(line), "a <%def> inside a block",
          fmt::format("Defs go at the top level of a template: move it out of the {} of line {}.",
                      opener_name(open.kind), open.line));
    }
    const std::size_t gt = tag_end(tag_line, line);
    DefNode def{.line = line};
    signature(tag_line.substr(5, gt - 5), line, def);
    const std::string_view after = tag_line.substr(gt + 1);
    if (trim(after).empty()) {
      parse_lines(def.body, Open{Opened::def_block, line});
    } else if (after.ends_with("</%def>")) {
      def.body.push_back(Node{TextNode{after.substr(0, after.size() - 7), line}});
    } else {
      fail_at(at(line), "text after a <%def> tag",
              "Put the def's body on the lines after the tag and '</%def>' on a line of its own, "
              "or the whole def on one line.");
    }
    for (const DefNode& d : *defs_) {
      if (d.name == def.name) {
        fail_at(at(line),
                fmt::format("def '{}' is defined twice (lines {} and {})", def.name, d.line, line),
                "Give one of them another name.");
      }
    }
    defs_->push_back(std::move(def));
  }

  // The index of the '>' that ends the <%def ...> tag (quotes skipped).
  std::size_t tag_end(std::string_view tag_line, std::size_t line) const {
    for (std::size_t i = 5; i < tag_line.size();) {
      if (tag_line[i] == '"' || tag_line[i] == '\'') {
        i = skip_quoted(tag_line, i);
        if (i == std::string_view::npos) break;
        continue;
      }
      if (tag_line[i] == '>') return i;
      ++i;
    }
    fail_at(at(line), "the <%def> tag is not closed with '>'", "Write <%def name=\"f(a, b)\">.");
  }

  // Reads ` name="f(a, b)"` into the def's name and parameters.
  void signature(std::string_view attributes, std::size_t line, DefNode& def) const {
    std::string_view a = trim(attributes);
    const auto malformed = [&] {
      fail_at(at(line), fmt::format("malformed <%def{}>", attributes),
              "A def's tag is <%def name=\"f(a, b)\">, with no other attribute.");
    };
    if (!a.starts_with("name")) malformed();
    a = trim(a.substr(4));
    if (!a.starts_with("=")) malformed();
    a = trim(a.substr(1));
    if (a.empty() || (a[0] != '"' && a[0] != '\'')) malformed();
    const std::size_t close = a.find(a[0], 1);
    if (close == std::string_view::npos || !trim(a.substr(close + 1)).empty()) malformed();
    const std::string_view value = trim(a.substr(1, close - 1));
    const std::size_t open = value.find('(');
    def.name = std::string(trim(value.substr(0, open)));
    if (open == std::string_view::npos || !value.ends_with(')') || !is_identifier(def.name) ||
        is_keyword(def.name)) {
      fail_at(at(line), fmt::format("malformed def signature '{}'", value),
              "Write name=\"f(a, b)\", or name=\"f()\" for a def without parameters.");
    }
    for (std::string_view p : split_args(value.substr(open + 1, value.size() - open - 2))) {
      if (p.find('=') != std::string_view::npos) {
        fail_at(at(line),
                fmt::format("def '{}': default values are not supported ('{}')", def.name, p),
                "Pass every argument at each call.");
      }
      if (!is_identifier(p) || is_keyword(p)) {
        fail_at(at(line), fmt::format("def '{}': parameter '{}' is not a name", def.name, p));
      }
      if (std::find(def.params.begin(), def.params.end(), p) != def.params.end()) {
        fail_at(at(line), fmt::format("def '{}': parameter '{}' is named twice", def.name, p));
      }
      def.params.emplace_back(p);
    }
  }

  std::string_view text_;
  const std::string& name_;
  const std::vector<std::string>& calls_;
  std::size_t pos_ = 0;
  std::size_t line_;
  std::vector<DefNode>* defs_ = nullptr;
};

}  // namespace

ParsedTemplate parse_template(std::string_view text, const std::string& name,
                              std::size_t first_line, const std::vector<std::string>& calls) {
  return Parser(text, name, first_line, calls).parse();
}

}  // namespace skein::detail::tmpl
