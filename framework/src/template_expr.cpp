// SPDX-License-Identifier: BSD-3-Clause
// Template expressions: a tokenizer and recursive-descent parser for the small part of Python that
// control lines and placeholders take, and its evaluation over RenderValues.
#include "template_expr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "template_impl.hpp"

namespace skein::detail::tmpl {

// ---- Scope ----

std::optional<Scope::Found> Scope::find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->outer) {
    if (s->loop_value && s->loop_name == name) return Found{.value = s->loop_value, .frame = s};
    for (std::size_t i = 0; i < s->param_names.size(); ++i) {
      if (s->param_names[i] == name) return Found{.param = &s->param_values[i], .frame = s};
    }
    if (s->defs) {
      if (auto it = s->defs->find(name); it != s->defs->end()) {
        return Found{.def = it->second, .frame = s};
      }
    }
    if (s->globals) {
      if (auto it = s->globals->find(name); it != s->globals->end()) {
        return Found{.value = &it->second, .frame = s};
      }
    }
  }
  return std::nullopt;
}

std::string Scope::known_names() const {
  std::vector<std::string> names;
  for (const Scope* s = this; s; s = s->outer) {
    if (s->loop_value) names.emplace_back(s->loop_name);
    names.insert(names.end(), s->param_names.begin(), s->param_names.end());
    if (s->defs) {
      for (const auto& entry : *s->defs) names.push_back(entry.first);
    }
    if (s->globals) {
      for (const auto& entry : *s->globals) names.push_back(entry.first);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.empty()) return "none";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void fail_unknown_name(const Where& where, std::string_view name, const Scope& scope) {
  fail_at(where, fmt::format("unknown name '{}'", name),
          "Bind it in the render globals (or the snippet's or module's own globals).",
          "; known names: " + scope.known_names());
}

// ---- values ----

namespace {

constexpr std::array<std::string_view, 3> kFunctions{"len", "int", "range"};

bool is_function(std::string_view name) {
  return std::find(kFunctions.begin(), kFunctions.end(), name) != kFunctions.end();
}

bool is_text(const RenderValue& v) {
  return v.is_string() && !RenderAccess::integer(v).has_value();
}

}  // namespace

bool is_function_name(std::string_view name) { return is_function(name); }

bool truthy(const RenderValue& value) {
  if (const auto& i = RenderAccess::integer(value)) return *i != 0;
  if (const auto& list = RenderAccess::list(value)) return !list->empty();
  if (is_text(value)) return !RenderAccess::text(value).empty();
  return true;  // a snippet or a module, as any Python object
}

std::string describe(const RenderValue& value) {
  if (const auto& i = RenderAccess::integer(value)) return fmt::format("the integer {}", *i);
  if (const auto& list = RenderAccess::list(value)) {
    return fmt::format("a list of {} item{}", list->size(), list->size() == 1 ? "" : "s");
  }
  if (const auto& s = RenderAccess::snippet(value)) return fmt::format("the snippet '{}'", s->name);
  if (const auto& m = RenderAccess::module(value)) return fmt::format("the module '{}'", m->name);
  const std::string& text = RenderAccess::text(value);
  if (text.size() > 40) return fmt::format("the string \"{}...\"", text.substr(0, 37));
  return fmt::format("the string \"{}\"", text);
}

// ---- parsing ----

namespace {

struct Token {
  enum class Kind { end, integer, string, name, op };
  Kind kind = Kind::end;
  std::string text;  // a name, an operator, a string literal's value
  std::int64_t value = 0;
};

class ExprParser {
 public:
  ExprParser(std::string_view source, const Where& where, std::string_view what)
      : source_(source), where_(where), what_(what) {}

  ExprPtr parse() {
    next();
    ExprPtr e = parse_or();
    if (token_.kind != Token::Kind::end) error(fmt::format("unexpected {}", shown()));
    return e;
  }

 private:
  [[noreturn]] void error(std::string_view detail, std::string_view hint = {}) {
    fail_at(where_, fmt::format("{}: {}", what_, detail), hint);
  }

  std::string shown() const {
    switch (token_.kind) {
      case Token::Kind::end: return "end of the expression";
      case Token::Kind::string: return fmt::format("string \"{}\"", token_.text);
      case Token::Kind::integer: return fmt::format("number {}", token_.value);
      default: return fmt::format("'{}'", token_.text);
    }
  }

  bool at_op(std::string_view op) const {
    return token_.kind == Token::Kind::op && token_.text == op;
  }
  bool at_name(std::string_view name) const {
    return token_.kind == Token::Kind::name && token_.text == name;
  }
  void expect_op(std::string_view op) {
    if (!at_op(op)) error(fmt::format("expected '{}', found {}", op, shown()));
    next();
  }

  void next() {
    while (pos_ < source_.size() && is_space(source_[pos_])) ++pos_;
    token_ = Token{};
    if (pos_ >= source_.size()) return;
    const char c = source_[pos_];
    if (is_digit(c)) return read_number();
    if (c == '"' || c == '\'') return read_string();
    if (is_ident_start(c)) {
      const std::size_t start = pos_;
      while (pos_ < source_.size() && is_ident_char(source_[pos_])) ++pos_;
      token_ = Token{.kind = Token::Kind::name,
                     .text = std::string(source_.substr(start, pos_ - start))};
      return;
    }
    read_operator();
  }

  void read_number() {
    const std::size_t start = pos_;
    std::int64_t v = 0;
    bool overflow = false;
    while (pos_ < source_.size() && is_digit(source_[pos_])) {
      overflow = overflow || __builtin_mul_overflow(v, 10, &v) ||
                 __builtin_add_overflow(v, source_[pos_] - '0', &v);
      ++pos_;
    }
    if (pos_ < source_.size() && (is_ident_char(source_[pos_]) || source_[pos_] == '.')) {
      while (pos_ < source_.size() && (is_ident_char(source_[pos_]) || source_[pos_] == '.'))
        ++pos_;
      error(fmt::format("'{}' is not a decimal integer", source_.substr(start, pos_ - start)),
            "Expressions have decimal integers only: pass other numbers as strings "
            "(skein::literal).");
    }
    if (overflow) {
      error(
          fmt::format("the integer {} does not fit 64 bits", source_.substr(start, pos_ - start)));
    }
    token_ = Token{.kind = Token::Kind::integer, .value = v};
  }

  void read_string() {
    const char quote = source_[pos_++];
    std::string value;
    while (pos_ < source_.size() && source_[pos_] != quote) {
      char c = source_[pos_++];
      if (c == '\\' && pos_ < source_.size()) {
        const char e = source_[pos_++];
        switch (e) {
          case '\\':
          case '\'':
          case '"': c = e; break;
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          default:
            error(fmt::format("unknown escape '\\{}' in a string", e),
                  "Strings take \\\\, \\', \\\", \\n and \\t.");
        }
      }
      value += c;
    }
    if (pos_ >= source_.size()) error("a string is not closed");
    ++pos_;
    token_ = Token{.kind = Token::Kind::string, .text = std::move(value)};
  }

  void read_operator() {
    static constexpr std::array<std::string_view, 5> kTwo{"//", "==", "!=", "<=", ">="};
    const std::string_view rest = source_.substr(pos_);
    for (std::string_view op : kTwo) {
      if (rest.starts_with(op)) {
        pos_ += 2;
        token_ = Token{.kind = Token::Kind::op, .text = std::string(op)};
        return;
      }
    }
    const char c = source_[pos_];
    if (rest.starts_with("**")) error("'**' is not supported", "Multiply, or compute it in C++.");
    if (std::string_view("()[],+-*%<>").find(c) != std::string_view::npos) {
      ++pos_;
      token_ = Token{.kind = Token::Kind::op, .text = std::string(1, c)};
      return;
    }
    std::string hint;
    switch (c) {
      case '/': hint = "Integer division is '//'."; break;
      case '.': hint = "Expressions have no attributes and no floating-point numbers."; break;
      case '$': hint = "Expressions name values directly: write n, not ${n}."; break;
      case '&':
      case '|':
      case '!': hint = "Write and, or, not."; break;
      case '=': hint = "Comparison is '=='; templates do not assign."; break;
      default: break;
    }
    error(fmt::format("'{}' is not part of template expressions", c), hint);
  }

  static ExprPtr node(Expr::Kind kind, std::vector<ExprPtr> operands, std::string text = {}) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->operands = std::move(operands);
    e->text = std::move(text);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      next();
      left = node(Expr::Kind::logic_or, {left, parse_and()});
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      next();
      left = node(Expr::Kind::logic_and, {left, parse_not()});
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!at_name("not")) return parse_compare();
    next();
    return node(Expr::Kind::logic_not, {parse_not()});
  }

  ExprPtr parse_compare() {
    static constexpr std::array<std::string_view, 6> kCompare{"==", "!=", "<", "<=", ">", ">="};
    ExprPtr first = parse_sum();
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::compare;
    e->operands.push_back(first);
    while (token_.kind == Token::Kind::op &&
           std::find(kCompare.begin(), kCompare.end(), token_.text) != kCompare.end()) {
      e->ops.push_back(token_.text);
      next();
      e->operands.push_back(parse_sum());
    }
    if (at_name("in") || at_name("is")) {
      error(fmt::format("'{}' is not supported in expressions", token_.text),
            "Compare with == and !=, joined by or.");
    }
    if (e->ops.empty()) return first;
    return e;
  }

  ExprPtr parse_sum() {
    ExprPtr left = parse_term();
    while (at_op("+") || at_op("-")) {
      std::string op = token_.text;
      next();
      left = node(Expr::Kind::arith, {left, parse_term()}, std::move(op));
    }
    return left;
  }

  ExprPtr parse_term() {
    ExprPtr left = parse_unary();
    while (at_op("*") || at_op("//") || at_op("%")) {
      std::string op = token_.text;
      next();
      left = node(Expr::Kind::arith, {left, parse_unary()}, std::move(op));
    }
    return left;
  }

  ExprPtr parse_unary() {
    if (at_op("-") || at_op("+")) {
      const bool negate = at_op("-");
      next();
      return node(negate ? Expr::Kind::negate : Expr::Kind::plus, {parse_unary()});
    }
    return parse_postfix();
  }

  ExprPtr parse_postfix() {
    ExprPtr e = parse_primary();
    while (at_op("[") || at_op("(")) {
      if (at_op("[")) {
        next();
        ExprPtr index = parse_or();
        expect_op("]");
        e = node(Expr::Kind::index, {e, index});
        continue;
      }
      if (e->kind != Expr::Kind::name) error("only a function's name is called: len(x), int(x)");
      next();
      std::vector<ExprPtr> args;
      if (!at_op(")")) {
        args.push_back(parse_or());
        while (at_op(",")) {
          next();
          args.push_back(parse_or());
        }
      }
      expect_op(")");
      e = node(Expr::Kind::call, std::move(args), e->text);
    }
    return e;
  }

  ExprPtr parse_primary() {
    auto e = std::make_shared<Expr>();
    switch (token_.kind) {
      case Token::Kind::integer:
        e->kind = Expr::Kind::integer;
        e->integer = token_.value;
        break;
      case Token::Kind::string:
        e->kind = Expr::Kind::string;
        e->text = token_.text;
        break;
      case Token::Kind::name:
        if (token_.text == "True" || token_.text == "False") {
          e->kind = Expr::Kind::integer;
          e->integer = token_.text == "True" ? 1 : 0;
        } else if (is_keyword(token_.text)) {
          error(fmt::format("unexpected {}", shown()));
        } else {
          e->kind = Expr::Kind::name;
          e->text = token_.text;
        }
        break;
      case Token::Kind::op:
        if (!at_op("(")) error(fmt::format("unexpected {}", shown()));
        next();
        {
          ExprPtr inner = parse_or();
          if (at_op(",")) error("tuples are not supported");
          if (!at_op(")")) error(fmt::format("expected ')', found {}", shown()));
          next();
          return inner;
        }
      case Token::Kind::end: error("the expression ends too early");
    }
    next();
    return e;
  }

  std::string_view source_;
  const Where& where_;
  std::string_view what_;
  std::size_t pos_ = 0;
  Token token_;
};

}  // namespace

ExprPtr parse_expression(std::string_view source, const Where& where, std::string_view what) {
  if (trim(source).empty()) fail_at(where, fmt::format("{}: the expression is empty", what));
  return ExprParser(source, where, what).parse();
}

// ---- evaluation ----

namespace {

class Evaluator {
 public:
  Evaluator(std::string_view source, const Scope& scope, const Where& where)
      : source_(source), scope_(scope), where_(where) {}

  RenderValue eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::integer: return RenderValue(e.integer);
      case Expr::Kind::string: return RenderValue(e.text);
      case Expr::Kind::name: return lookup(e.text);
      case Expr::Kind::plus: return RenderValue(integer_of(eval(*e.operands[0]), "unary '+'"));
      case Expr::Kind::negate: {
        const std::int64_t v = integer_of(eval(*e.operands[0]), "unary '-'");
        std::int64_t out = 0;
        if (__builtin_sub_overflow(std::int64_t{0}, v, &out)) overflow("-");
        return RenderValue(out);
      }
      case Expr::Kind::arith: return arith(e);
      case Expr::Kind::compare: return compare(e);
      case Expr::Kind::logic_and: {
        RenderValue left = eval(*e.operands[0]);
        return truthy(left) ? eval(*e.operands[1]) : left;
      }
      case Expr::Kind::logic_or: {
        RenderValue left = eval(*e.operands[0]);
        return truthy(left) ? left : eval(*e.operands[1]);
      }
      case Expr::Kind::logic_not:
        return RenderValue(std::int64_t{truthy(eval(*e.operands[0])) ? 0 : 1});
      case Expr::Kind::call: return call(e);
      case Expr::Kind::index: return index(e);
    }
    error("unknown expression");
  }

  // The arguments of range(...) in a %for.
  Iteration range(const Expr& e) {
    if (e.operands.empty() || e.operands.size() > 3) {
      error(fmt::format("range() takes 1 to 3 arguments, {} given", e.operands.size()));
    }
    std::array<std::int64_t, 3> v{};
    for (std::size_t i = 0; i < e.operands.size(); ++i) {
      v[i] = integer_of(eval(*e.operands[i]), "range()");
    }
    Iteration it{.is_range = true};
    if (e.operands.size() == 1) {
      it.stop = v[0];
    } else {
      it.start = v[0];
      it.stop = v[1];
      if (e.operands.size() == 3) it.step = v[2];
    }
    if (it.step == 0) error("range()'s step is 0", "Give a positive or a negative step.");
    return it;
  }

  [[noreturn]] void error(std::string_view message, std::string_view hint = {}) {
    fail_at(where_, fmt::format("in '{}': {}", trim(source_), message), hint);
  }

 private:
  RenderValue lookup(const std::string& name) {
    const auto found = scope_.find(name);
    if (!found) {
      if (is_function(name)) error(fmt::format("'{}' is a function: call it, {}(x)", name, name));
      fail_unknown_name(where_, name, scope_);
    }
    if (found->param) return RenderValue(*found->param);
    if (found->def) {
      error(
          fmt::format("'{}' is a def: insert it as ${{{}(...)}}, outside expressions", name, name));
    }
    return *found->value;
  }

  std::int64_t integer_of(const RenderValue& v, std::string_view what) {
    if (const auto& i = RenderAccess::integer(v)) return *i;
    error(fmt::format("{} takes integers, not {}", what, describe(v)),
          is_text(v) ? "int(x) reads an integer from a string such as a def's parameter." : "");
  }

  [[noreturn]] void overflow(std::string_view op) {
    error(fmt::format("'{}' overflows 64-bit integers", op));
  }

  RenderValue arith(const Expr& e) {
    const std::string what = fmt::format("'{}'", e.text);
    const std::int64_t a = integer_of(eval(*e.operands[0]), what);
    const std::int64_t b = integer_of(eval(*e.operands[1]), what);
    std::int64_t r = 0;
    if (e.text == "+") {
      if (__builtin_add_overflow(a, b, &r)) overflow(e.text);
    } else if (e.text == "-") {
      if (__builtin_sub_overflow(a, b, &r)) overflow(e.text);
    } else if (e.text == "*") {
      if (__builtin_mul_overflow(a, b, &r)) overflow(e.text);
    } else {
      if (b == 0) error(fmt::format("'{}' by zero", e.text));
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) overflow(e.text);
      // Python's floor division and modulo: the remainder takes the divisor's sign.
      std::int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        q -= 1;
        m += b;
      }
      r = e.text == "//" ? q : m;
    }
    return RenderValue(r);
  }

  bool compare_pair(const RenderValue& a, const std::string& op, const RenderValue& b) {
    int order = 0;
    const auto& ia = RenderAccess::integer(a);
    const auto& ib = RenderAccess::integer(b);
    if (ia && ib) {
      order = *ia < *ib ? -1 : (*ia > *ib ? 1 : 0);
    } else if (is_text(a) && is_text(b)) {
      const int c = RenderAccess::text(a).compare(RenderAccess::text(b));
      order = c < 0 ? -1 : (c > 0 ? 1 : 0);
    } else {
      error(fmt::format("'{}' compares two integers or two strings, not {} and {}", op, describe(a),
                        describe(b)),
            (ia || ib) ? "int(x) reads an integer from a string such as a def's parameter." : "");
    }
    if (op == "==") return order == 0;
    if (op == "!=") return order != 0;
    if (op == "<") return order < 0;
    if (op == "<=") return order <= 0;
    if (op == ">") return order > 0;
    return order >= 0;
  }

  // Python's chained comparison: a < b < c is a < b and b < c, each operand evaluated once.
  RenderValue compare(const Expr& e) {
    RenderValue left = eval(*e.operands[0]);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
      RenderValue right = eval(*e.operands[i + 1]);
      if (!compare_pair(left, e.ops[i], right)) return RenderValue(std::int64_t{0});
      left = std::move(right);
    }
    return RenderValue(std::int64_t{1});
  }

  RenderValue call(const Expr& e) {
    if (const auto found = scope_.find(e.text)) {
      const std::string what = found->param ? "a parameter"
                               : found->def ? "a def"
                                            : describe(*found->value);
      error(fmt::format("'{}' is {}: expressions call len(), int() and range() only", e.text, what),
            fmt::format("A snippet or a def is inserted as ${{{}(...)}}, outside expressions.",
                        e.text));
    }
    if (e.text == "range") {
      error("range() goes only in '%for NAME in range(...):'",
            "len(range(n)) is n: write the number.");
    }
    if (!is_function(e.text)) {
      error(fmt::format("unknown function '{}'", e.text),
            "Expressions call len(), int() and range(): compute anything else in C++.");
    }
    if (e.operands.size() != 1) {
      error(fmt::format("{}() takes 1 argument, {} given", e.text, e.operands.size()));
    }
    RenderValue v = eval(*e.operands[0]);
    if (e.text == "len") {
      if (const auto& list = RenderAccess::list(v)) return RenderValue(list->size());
      if (is_text(v)) return RenderValue(RenderAccess::text(v).size());
      error(fmt::format("len() takes a list or a string, not {}", describe(v)));
    }
    if (RenderAccess::integer(v)) return v;
    if (is_text(v)) return RenderValue(parse_int(RenderAccess::text(v)));
    error(fmt::format("int() takes an integer or a string, not {}", describe(v)));
  }

  // A decimal integer as Skein renders them: 12, -3 or (-3), blanks around allowed.
  std::int64_t parse_int(std::string_view text) {
    std::string_view s = trim(text);
    if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = trim(s.substr(1, s.size() - 2));
    const bool negative = !s.empty() && s.front() == '-';
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    std::int64_t v = 0;
    bool ok = !s.empty();
    for (char c : s) {
      ok = ok && is_digit(c) && !__builtin_mul_overflow(v, 10, &v) &&
           !__builtin_sub_overflow(v, c - '0', &v);  // negative, so that INT64_MIN reads
    }
    if (ok && !negative && __builtin_sub_overflow(std::int64_t{0}, v, &v)) ok = false;
    if (!ok) {
      error(fmt::format("int() reads a decimal integer (12, -3 or (-3)), not \"{}\"", text));
    }
    return v;
  }

  RenderValue index(const Expr& e) {
    const RenderValue container = eval(*e.operands[0]);
    const auto& list = RenderAccess::list(container);
    if (!list) {
      error(fmt::format("only lists are indexed, not {}", describe(container)));
    }
    std::int64_t i = integer_of(eval(*e.operands[1]), "an index");
    const auto n = static_cast<std::int64_t>(list->size());
    if (i < -n || i >= n) {
      error(
          fmt::format("index {} is out of range for a list of {} item{}", i, n, n == 1 ? "" : "s"));
    }
    if (i < 0) i += n;
    return (*list)[static_cast<std::size_t>(i)];
  }

  std::string_view source_;
  const Scope& scope_;
  const Where& where_;
};

}  // namespace

RenderValue evaluate(const Expr& expr, std::string_view source, const Scope& scope,
                     const Where& where) {
  return Evaluator(source, scope, where).eval(expr);
}

Iteration iteration(const Expr& expr, std::string_view source, const Scope& scope,
                    const Where& where) {
  Evaluator evaluator(source, scope, where);
  if (expr.kind == Expr::Kind::call && expr.text == "range" && !scope.find("range")) {
    return evaluator.range(expr);
  }
  RenderValue v = evaluator.eval(expr);
  if (const auto& list = RenderAccess::list(v)) return Iteration{.items = list};
  evaluator.error(fmt::format("'%for' goes over range(...) or a list, not {}", describe(v)));
}

}  // namespace skein::detail::tmpl
