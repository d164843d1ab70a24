// SPDX-License-Identifier: BSD-3-Clause
// The rewrite of OpenCL kernels' global pointer parameters into an allocation and a byte offset
// (skein/detail/opencl/kernel_offsets.hpp says why). A small scanner of OpenCL C: comments,
// literals and preprocessor lines are skipped, kernels are found by their keyword, and a
// parameter list is taken only when every parameter in it is read with certainty; anything else
// stays as written.
#include "skein/detail/opencl/kernel_offsets.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace skein::detail::opencl {

namespace {

constexpr std::string_view kBase = "_skein_base_";
constexpr std::string_view kOffset = "_skein_off_";

// --- tokens ------------------------------------------------------------------------------------

struct Token {
  enum class Kind : std::uint8_t { word, punct, directive, other };
  Kind kind;
  std::size_t begin, end;  // in the source
};

bool word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool word_char(char c) { return word_start(c) || digit(c); }

// The end of a comment starting at `i` (at "//" or "/*"); a line comment ends before its newline.
std::size_t comment_end(std::string_view s, std::size_t i) {
  if (s[i + 1] == '*') {
    const std::size_t e = s.find("*/", i + 2);
    return e == std::string_view::npos ? s.size() : e + 2;
  }
  while (i < s.size() && !(s[i] == '\n' && s[i - 1] != '\\')) ++i;
  return i;
}

bool comment_at(std::string_view s, std::size_t i) {
  return s[i] == '/' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '*');
}

// A preprocessor line from its '#' to its end (continued lines and comments included).
std::size_t directive_end(std::string_view s, std::size_t i) {
  while (i < s.size()) {
    if (comment_at(s, i)) {
      i = comment_end(s, i);
    } else if (s[i] == '\n') {
      if (s[i - 1] != '\\' && !(s[i - 1] == '\r' && i >= 2 && s[i - 2] == '\\')) return i;
      ++i;
    } else {
      ++i;
    }
  }
  return i;
}

std::size_t literal_end(std::string_view s, std::size_t i) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
  return std::min(i + 1, s.size());
}

std::size_t number_end(std::string_view s, std::size_t i) {
  while (i < s.size()) {
    const char c = s[i];
    const bool sign = (c == '+' || c == '-') &&
                      (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P');
    if (!word_char(c) && c != '.' && !sign) break;
    ++i;
  }
  return i;
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  bool line_start = true;  // only blanks (and comments) since the last newline
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' ||
               (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n')) {
      ++i;
    } else if (comment_at(s, i)) {
      i = comment_end(s, i);
    } else if (c == '#' && line_start) {
      const std::size_t e = directive_end(s, i);
      out.push_back({Token::Kind::directive, i, e});
      i = e;
    } else {
      line_start = false;
      std::size_t e = i + 1;
      Token::Kind kind = Token::Kind::punct;
      if (word_start(c)) {
        while (e < s.size() && word_char(s[e])) ++e;
        kind = Token::Kind::word;
      } else if (digit(c) || (c == '.' && e < s.size() && digit(s[e]))) {
        e = number_end(s, i);
        kind = Token::Kind::other;
      } else if (c == '"' || c == '\'') {
        e = literal_end(s, i);
        kind = Token::Kind::other;
      }
      out.push_back({kind, i, e});
      i = e;
    }
  }
  return out;
}

// --- macros the source defines -----------------------------------------------------------------

struct Macro {
  bool function_like = false;
  std::string body;  // empty for #undef
};

std::map<std::string, Macro, std::less<>> source_macros(std::string_view s,
                                                        const std::vector<Token>& tokens) {
  std::map<std::string, Macro, std::less<>> macros;
  for (const auto& t : tokens) {
    if (t.kind != Token::Kind::directive) continue;
    const std::string_view line = s.substr(t.begin + 1, t.end - t.begin - 1);
    const auto words = tokenize(line);
    if (words.size() < 2 || words[0].kind != Token::Kind::word ||
        words[1].kind != Token::Kind::word) {
      continue;
    }
    const std::string_view what = line.substr(words[0].begin, words[0].end - words[0].begin);
    if (what != "define" && what != "undef") continue;
    Macro m;
    m.function_like = what == "define" && words[1].end < line.size() && line[words[1].end] == '(';
    if (what == "define") m.body = std::string(line.substr(words[1].end));
    macros[std::string(line.substr(words[1].begin, words[1].end - words[1].begin))] = std::move(m);
  }
  return macros;
}

// --- the vocabulary ----------------------------------------------------------------------------

enum class Space : std::uint8_t { none, global, local, other };

class Vocabulary {
 public:
  Vocabulary(std::string_view source, const std::vector<Token>& tokens, bool prelude)
      : macros_(source_macros(source, tokens)), prelude_(prelude) {}

  bool is_kernel(std::string_view w) const {
    return w == "__kernel" || w == "kernel" || prelude_word(w, "KERNEL");
  }
  Space space(std::string_view w) const {
    if (w == "__global" || w == "global" || prelude_word(w, "GLOBAL_MEM")) return Space::global;
    if (w == "__local" || w == "local" || prelude_word(w, "LOCAL_MEM") ||
        prelude_word(w, "LOCAL_MEM_DYNAMIC") || prelude_word(w, "LOCAL_MEM_ARG")) {
      return Space::local;
    }
    if (w == "__constant" || w == "constant" || w == "__private" || w == "private" ||
        prelude_word(w, "CONSTANT_MEM") || prelude_word(w, "CONSTANT_MEM_ARG")) {
      return Space::other;
    }
    return Space::none;
  }
  // What may stand between a pointer's '*' and its name.
  bool pointer_qualifier(std::string_view w) const {
    return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict" ||
           w == "__restrict__" || prelude_word(w, "RESTRICT");
  }
  bool is_macro(std::string_view w) const { return macros_.contains(w); }
  bool is_dynamic_local(std::string_view w) const {
    return prelude_word(w, "LOCAL_MEM_DYNAMIC_PARAM");
  }
  // Whether a word of a parameter declaration is one token of it after preprocessing: not a macro
  // of the source's, or one that expands to words and '*' alone, none of them an address space
  // (the count and kinds of the parameters cannot change).
  bool plain(std::string_view w, int depth = 0) const {
    const auto it = macros_.find(w);
    if (it == macros_.end()) return true;
    if (it->second.function_like || depth > 8) return false;
    const std::string_view body = it->second.body;
    for (const auto& t : tokenize(body)) {
      const std::string_view text = body.substr(t.begin, t.end - t.begin);
      if (t.kind == Token::Kind::word) {
        if (space(text) != Space::none || is_kernel(text) || !plain(text, depth + 1)) return false;
      } else if (text != "*") {
        return false;
      }
    }
    return true;
  }

 private:
  // A prelude macro counts as what the prelude defines it to be, unless the source redefines it.
  bool prelude_word(std::string_view w, std::string_view name) const {
    return prelude_ && w == name && !macros_.contains(name);
  }

  std::map<std::string, Macro, std::less<>> macros_;
  bool prelude_;
};

// --- kernels -----------------------------------------------------------------------------------

// A global pointer parameter to rewrite: `<prefix> * <qualifiers> <name>`.
struct View {
  std::size_t name_begin, name_end;
  std::string name, prefix, qualifiers;
};

// One kernel definition or prototype.
struct Site {
  std::string name;
  bool understood = true;
  std::vector<ParamRole> roles;
  std::vector<View> views;
  std::optional<std::size_t> body;  // just after the `{` of a definition
};

class Parser {
 public:
  Parser(std::string_view source, bool prelude)
      : s_(source), tokens_(tokenize(source)), vocabulary_(source, tokens_, prelude) {}

  std::vector<Site> sites() {
    std::vector<Site> out;
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (is_word(i) && vocabulary_.is_kernel(text(i))) {
        if (auto site = kernel(i)) out.push_back(std::move(*site));
      }
    }
    return out;
  }

 private:
  std::string_view text(std::size_t i) const {
    return s_.substr(tokens_[i].begin, tokens_[i].end - tokens_[i].begin);
  }
  bool is_word(std::size_t i) const {
    return i < tokens_.size() && tokens_[i].kind == Token::Kind::word;
  }
  bool is_punct(std::size_t i, char c) const {
    return i < tokens_.size() && tokens_[i].kind == Token::Kind::punct && s_[tokens_[i].begin] == c;
  }
  // The token after the parenthesis group opening at `i`, or kNone when it never closes.
  static constexpr std::size_t kNone = std::string_view::npos;
  std::size_t after_group(std::size_t i) const {
    int depth = 0;
    for (; i < tokens_.size(); ++i) {
      if (is_punct(i, '(')) ++depth;
      if (is_punct(i, ')') && --depth == 0) return i + 1;
    }
    return kNone;
  }
  // Skips `__attribute__((...))` groups from `i`.
  std::size_t skip_attributes(std::size_t i) const {
    while (is_word(i) && text(i) == "__attribute__" && is_punct(i + 1, '(')) i = after_group(i + 1);
    return i;
  }

  // The kernel whose keyword is token `k`: `void`, its name, its parameters, then `{` or `;`.
  std::optional<Site> kernel(std::size_t k) const {
    std::size_t i = skip_attributes(k + 1);
    if (!is_word(i) || text(i) != "void") return std::nullopt;
    i = skip_attributes(i + 1);
    if (!is_word(i) || !is_punct(i + 1, '(')) return std::nullopt;
    Site site;
    site.name = std::string(text(i));
    site.understood = !vocabulary_.is_macro(site.name);  // its name after preprocessing is unknown
    const std::size_t open = i + 1, after = after_group(open);
    if (after == kNone) return std::nullopt;
    const std::size_t close = after - 1;
    const std::size_t end = skip_attributes(after);
    if (is_punct(end, '{')) {
      site.body = tokens_[end].end;
    } else if (!is_punct(end, ';')) {
      site.understood = false;
    }
    // The parameters, split at the list's own commas.
    std::vector<std::pair<std::size_t, std::size_t>> params;  // token ranges
    std::size_t from = open + 1;
    int depth = 0;
    for (std::size_t t = open + 1; t <= close; ++t) {
      if (tokens_[t].kind == Token::Kind::directive) site.understood = false;
      if (is_punct(t, '(')) ++depth;
      if (is_punct(t, ')')) --depth;
      if (t == close || (depth == 0 && is_punct(t, ','))) {
        params.emplace_back(from, t);
        from = t + 1;
      }
    }
    // `()` or `(void)`: no parameters.
    const auto [first, last] = params[0];
    const bool none =
        params.size() == 1 && (first == last || (last == first + 1 && text(first) == "void"));
    for (std::size_t p = 0; !none && site.understood && p < params.size(); ++p) {
      site.understood = parameter(params[p].first, params[p].second, p + 1 == params.size(), site);
    }
    return site;
  }

  // Tokens [b, e) of one parameter, the last when `last`; false when it is not read with
  // certainty.
  bool parameter(std::size_t b, std::size_t e, bool last, Site& site) const {
    // LOCAL_MEM_DYNAMIC_PARAM(type, name) after the last parameter adds a `__local` one.
    bool dynamic_local = false;
    for (std::size_t t = b; t < e; ++t) {
      if (is_word(t) && vocabulary_.is_dynamic_local(text(t)) && is_punct(t + 1, '(') &&
          after_group(t + 1) == e && last) {
        dynamic_local = true;
        e = t;
        break;
      }
    }
    if (e < b + 2) return false;  // a type and a name at least: one word may be a macro of several
    std::size_t stars = 0, star = e;
    Space space = Space::none;
    for (std::size_t t = b; t < e; ++t) {
      if (is_punct(t, '*')) {
        ++stars;
        star = t;
      } else if (!is_word(t) || !vocabulary_.plain(text(t))) {
        return false;
      } else if (const Space s = vocabulary_.space(text(t)); s != Space::none) {
        if (space != Space::none) return false;
        space = s;
      }
    }
    const std::size_t name = e - 1;
    if (!is_word(name) || vocabulary_.space(text(name)) != Space::none ||
        vocabulary_.pointer_qualifier(text(name))) {
      return false;
    }
    if (space == Space::local) {
      if (stars != 1) return false;
      site.roles.push_back(ParamRole::local);
    } else if (space == Space::global && stars == 1 && !text(name).starts_with("_skein_")) {
      View view{tokens_[name].begin, tokens_[name].end, std::string(text(name)), {}, {}};
      for (std::size_t t = b; t < star; ++t) view.prefix += std::string(text(t)) + " ";
      for (std::size_t t = star + 1; t < name; ++t) {
        if (!vocabulary_.pointer_qualifier(text(t))) return false;
        view.qualifiers += std::string(text(t)) + " ";
      }
      site.views.push_back(std::move(view));
      site.roles.push_back(ParamRole::view);
    } else {
      site.roles.push_back(ParamRole::value);
    }
    if (dynamic_local) site.roles.push_back(ParamRole::local);
    return true;
  }

  std::string_view s_;
  std::vector<Token> tokens_;
  Vocabulary vocabulary_;
};

// The edits of one site: each view's name becomes the allocation and the offset, and the body
// starts by defining the name, on the line of its `{`.
using Edit = std::tuple<std::size_t, std::size_t, std::string>;  // at, bytes erased, inserted

void add_edits(const Site& site, std::vector<Edit>& edits) {
  std::string prologue;
  for (const auto& v : site.views) {
    edits.emplace_back(v.name_begin, v.name_end - v.name_begin,
                       std::string(kBase) + v.name + ", ulong " + std::string(kOffset) + v.name);
    prologue += " " + v.prefix + "* " + v.qualifiers + v.name + " = (" + v.prefix +
                "*)((__global char*)" + std::string(kBase) + v.name + " + " + std::string(kOffset) +
                v.name + ");";
  }
  if (site.body) edits.emplace_back(*site.body, 0, std::move(prologue));
}

}  // namespace

std::optional<RewrittenSource> rewrite_view_offsets(std::string_view source, bool prelude) {
  const auto sites = Parser(source, prelude).sites();
  // A kernel defined more than once (under #if, or declared before) is rewritten only when every
  // occurrence reads the same: the one compiled is not known here.
  std::map<std::string, std::optional<std::vector<ParamRole>>> kernels;
  for (const auto& site : sites) {
    const std::optional<std::vector<ParamRole>> roles =
        site.understood ? std::optional(site.roles) : std::nullopt;
    const auto [it, inserted] = kernels.emplace(site.name, roles);
    if (!inserted && it->second != roles) it->second.reset();
  }
  RewrittenSource out;
  std::vector<Edit> edits;
  for (const auto& site : sites) {
    const auto& roles = kernels.at(site.name);
    if (!roles || site.views.empty()) continue;
    out.kernels[site.name] = *roles;
    add_edits(site, edits);
  }
  if (edits.empty()) return std::nullopt;
  std::sort(edits.begin(), edits.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::size_t from = 0;  // what of the source is copied so far
  for (const auto& [at, erase, insert] : edits) {
    out.source.append(source.substr(from, at - from)).append(insert);
    from = at + erase;
  }
  out.source.append(source.substr(from));
  return out;
}

KernelSlots slots_from_roles(std::span<const ParamRole> roles) {
  KernelSlots slots;
  for (const ParamRole role : roles) {
    if (role == ParamRole::local) {
      slots.locals.push_back(slots.parameters++);
    } else {
      slots.args.push_back({slots.parameters, role == ParamRole::view});
      slots.parameters += role == ParamRole::view ? 2 : 1;
    }
  }
  return slots;
}

KernelSlots slots_from_arg_info(std::span<const std::string> names, std::span<const char> local) {
  KernelSlots slots;
  const auto n = static_cast<std::uint32_t>(names.size());
  slots.parameters = n;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (local[i]) {
      slots.locals.push_back(i);
      continue;
    }
    const std::string& name = names[i];
    const bool view = name.starts_with(kBase) && i + 1 < n && !local[i + 1] &&
                      names[i + 1] == std::string(kOffset) + name.substr(kBase.size());
    slots.args.push_back({i, view});
    if (view) ++i;
  }
  return slots;
}

}  // namespace skein::detail::opencl
