// SPDX-License-Identifier: BSD-3-Clause
// Kernel templates: substitution, snippets, modules (emitted once, dependencies first), errors.
#include <gtest/gtest.h>

#include <skein/error.hpp>
#include <skein/template.hpp>
#include <string>

namespace skein {
namespace {
namespace template_test {

// The message of the RenderError `f` throws (fails the test when it throws nothing).
template <class F>
std::string render_error(F&& f) {
  try {
    f();
  } catch (const RenderError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no RenderError thrown";
  return {};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
    ++n;
  return n;
}

TEST(TemplateRender, SubstitutesStringsAndIntegers) {
  EXPECT_EQ(render("${T} x[${n}] = ${ m };", {{"T", "float"}, {"n", 16}, {"m", -3}}),
            "float x[16] = (-3);");
  EXPECT_EQ(render("plain text, no placeholders"), "plain text, no placeholders");
  EXPECT_EQ(render("${big}", {{"big", 18446744073709551615ull}}), "18446744073709551615u");
  EXPECT_EQ(render("a - ${n}", {{"n", std::int64_t(-9223372036854775807 - 1)}}),
            "a - (-9223372036854775807-1)");
}

TEST(TemplateRender, DollarEscapesAndLoneDollars) {
  EXPECT_EQ(render("$$ costs $5 and $${x}", {}), "$ costs $5 and ${x}");
  EXPECT_EQ(render("end$"), "end$");
}

TEST(TemplateRender, Literals) {
  EXPECT_EQ(literal(0.1), "0.1");
  EXPECT_EQ(literal(1.0), "1.0");
  EXPECT_EQ(literal(1e300), "1e+300");
  EXPECT_EQ(literal(-2.5), "(-2.5)");
  EXPECT_EQ(literal(0.1f), "0.1f");
  EXPECT_EQ(literal(3.0f), "3.0f");
  EXPECT_EQ(literal(-0.0f), "(-0.0f)");
  EXPECT_EQ(std::stod(literal(1.0 / 3.0)), 1.0 / 3.0);  // exact round trip
  EXPECT_THROW(literal(std::numeric_limits<double>::infinity()), LogicError);
  EXPECT_THROW(literal(std::numeric_limits<float>::quiet_NaN()), LogicError);
}

TEST(TemplateSnippet, ArgumentsSplitAtTopLevelCommas) {
  Snippet show({"a", "b", "c"}, "[${a}|${b}|${c}]");
  EXPECT_EQ(render("${show( f(x, y) , a[i, j],  {1, 2} )}", {{"show", show}}),
            "[f(x, y)|a[i, j]|{1, 2}]");
  EXPECT_EQ(render("${show(\"a,b\", ',', )}", {{"show", show}}), "[\"a,b\"|','|]");
  // Arguments are rendered where the call is written: placeholders in them see the caller's names.
  EXPECT_EQ(render("${show(${T}, ${n}, x)}", {{"show", show}, {"T", "int"}, {"n", 2}}),
            "[int|2|x]");
}

TEST(TemplateSnippet, ParametersShadowGlobalsAndScopeIsLexical) {
  Snippet s({"x"}, "${x} ${T}", {{"x", "global x"}, {"T", "double"}}, "s");
  // The caller's T (float) is not what the snippet sees: it has its own.
  EXPECT_EQ(render("${s(arg)}", {{"s", s}, {"T", "float"}}), "arg double");
}

TEST(TemplateSnippet, ZeroArgumentsAndCallables) {
  auto none = Snippet::from_string("nothing", {}, "none");
  EXPECT_EQ(render("${none} ${none()}", {{"none", none}}), "nothing nothing");
  auto sum = Snippet::from_callable(
      2, [](std::span<const std::string> a) { return "(" + a[0] + " + " + a[1] + ") * ${k}"; },
      {{"k", 3}}, "sum");
  EXPECT_EQ(sum.arity(), 2u);
  EXPECT_EQ(render("${sum(x, y)}", {{"sum", sum}}), "(x + y) * 3");
  EXPECT_EQ(render(sum, std::vector<std::string>{"p", "q"}), "(p + q) * 3");
}

TEST(TemplateModule, EmittedOnceBeforeTheMainTextWithItsPrefix) {
  Module sq("float ${prefix}(float x) { return x * x; }", {}, "square");
  const std::string out = render("a = ${sq}(b); c = ${sq}(d); e = ${twice(${sq})};",
                                 {{"sq", sq}, {"twice", Snippet({"f"}, "${f}(${f}(e))")}});
  EXPECT_EQ(out,
            "float _mod_square_0_(float x) { return x * x; }\n"
            "a = _mod_square_0_(b); c = _mod_square_0_(d); "
            "e = _mod_square_0_(_mod_square_0_(e));");
}

TEST(TemplateModule, DependenciesFirstEachOnce) {
  Module base("// base ${prefix}\n", {}, "base");
  Module left("// left ${prefix} uses ${base}\n", {{"base", base}}, "left");
  Module right("// right ${prefix} uses ${base}", {{"base", base}}, "right");
  Module top("// top ${prefix} uses ${left} ${right} ${base}\n",
             {{"left", left}, {"right", right}, {"base", base}}, "top");
  const std::string out = render("main ${top} ${left}", {{"top", top}, {"left", left}});
  EXPECT_EQ(count(out, "// base"), 1u);
  EXPECT_EQ(count(out, "// left"), 1u);
  EXPECT_EQ(count(out, "// right"), 1u);
  EXPECT_EQ(count(out, "// top"), 1u);
  EXPECT_LT(out.find("// base"), out.find("// left"));
  EXPECT_LT(out.find("// left"), out.find("// top"));
  EXPECT_LT(out.find("// right"), out.find("// top"));
  EXPECT_LT(out.find("// top"), out.find("main"));
  // Prefixes are numbered in order of first use: the same render always gives the same text.
  EXPECT_EQ(out,
            "// base _mod_base_2_\n"
            "// left _mod_left_1_ uses _mod_base_2_\n"
            "// right _mod_right_3_ uses _mod_base_2_\n"
            "// top _mod_top_0_ uses _mod_left_1_ _mod_right_3_ _mod_base_2_\n"
            "main _mod_top_0_ _mod_left_1_");
  EXPECT_EQ(out, render("main ${top} ${left}", {{"top", top}, {"left", left}}));
}

TEST(TemplateModule, DistinctObjectsGetDistinctPrefixes) {
  Module a("int ${prefix};", {}, "same name");
  Module b("int ${prefix};", {}, "same name");
  Module a_copy = a;
  EXPECT_TRUE(a == a_copy);
  EXPECT_FALSE(a == b);
  EXPECT_EQ(render("${a} ${b} ${c}", {{"a", a}, {"b", b}, {"c", a_copy}}),
            "int _mod_same_name_0_;\nint _mod_same_name_1_;\n"
            "_mod_same_name_0_ _mod_same_name_1_ _mod_same_name_0_");
}

TEST(TemplateModule, FromSnippetWithFixedArgumentsAndFromCallable) {
  Snippet scale({"prefix", "T", "k"}, "${T} ${prefix}(${T} x) { return x * ${k}; }", {}, "scale");
  Module by2 = Module::from_snippet(scale, {"float", "2"});
  Module by3 = Module::from_snippet(scale, {"double", "3"}, "scale3");
  EXPECT_EQ(by2.name(), "scale");
  EXPECT_EQ(render("${a}(x) + ${b}(y)", {{"a", by2}, {"b", by3}}),
            "float _mod_scale_0_(float x) { return x * 2; }\n"
            "double _mod_scale3_1_(double x) { return x * 3; }\n"
            "_mod_scale_0_(x) + _mod_scale3_1_(y)");
  const std::string e = render_error([&] { Module::from_snippet(scale, {"float"}); });
  EXPECT_NE(e.find("'scale' takes 3 arguments"), std::string::npos) << e;

  Module cb = Module::from_callable(
      [](std::string_view prefix) { return "#define " + std::string(prefix) + " ${v}"; },
      {{"v", 7}}, "constant");
  EXPECT_EQ(render("${c}", {{"c", cb}}), "#define _mod_constant_0_ 7\n_mod_constant_0_");
}

TEST(TemplateErrors, UnknownNameGivesTemplateLineAndKnownNames) {
  const std::string e = render_error([] {
    render("line one\nline two\n x = ${missing};", {{"b", 1}, {"a", "x"}}, "kernel.cl");
  });
  EXPECT_NE(e.find("kernel.cl:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'missing'"), std::string::npos) << e;
  EXPECT_NE(e.find("known names: a, b"), std::string::npos) << e;
}

TEST(TemplateErrors, ErrorsInsideSnippetsNameTheCallSite) {
  Snippet inner({"x"}, "\n${x} ${nope}", {}, "inner");
  const std::string e = render_error([&] {
    render("\n\n${inner(1)}", {{"inner", inner}}, "main.cu");
  });
  EXPECT_NE(e.find("snippet 'inner':2"), std::string::npos) << e;
  EXPECT_NE(e.find("called from main.cu:3"), std::string::npos) << e;
  EXPECT_NE(e.find("known names: x"), std::string::npos) << e;
}

TEST(TemplateErrors, WrongArgumentCount) {
  Snippet two({"a", "b"}, "${a}${b}", {}, "pair");
  std::string e = render_error([&] { render("${pair(1)}", {{"pair", two}}); });
  EXPECT_NE(e.find("snippet 'pair' takes 2 arguments, 1 given"), std::string::npos) << e;
  e = render_error([&] { render("${pair}", {{"pair", two}}); });
  EXPECT_NE(e.find("takes 2 arguments, 0 given"), std::string::npos) << e;
  e = render_error([&] { render("${pair(1, 2, (3, 4))}", {{"pair", two}}); });
  EXPECT_NE(e.find("takes 2 arguments, 3 given"), std::string::npos) << e;
}

TEST(TemplateErrors, UnterminatedAndMalformed) {
  std::string e = render_error([] { render("a\nb ${x(1, 2}\nc", {{"x", 1}}, "t"); });
  EXPECT_NE(e.find("t:2: unterminated"), std::string::npos) << e;
  e = render_error([] { render("${ 9lives }", {}); });
  EXPECT_NE(e.find("malformed placeholder"), std::string::npos) << e;
  e = render_error([] { render("${a b}", {{"a", 1}}); });
  EXPECT_NE(e.find("malformed placeholder"), std::string::npos) << e;
}

TEST(TemplateErrors, ValuesUsedTheWrongWay) {
  std::string e = render_error([] { render("${T(1)}", {{"T", "float"}}); });
  EXPECT_NE(e.find("'T' is a string"), std::string::npos) << e;
  Module m("int ${prefix};", {}, "m");
  e = render_error([&] { render("${m(1)}", {{"m", m}}); });
  EXPECT_NE(e.find("'m' is a module"), std::string::npos) << e;
  EXPECT_NE(e.find("${m}(...)"), std::string::npos) << e;
  EXPECT_THROW(Snippet({"not an identifier"}, ""), RenderError);
}

}  // namespace template_test
}  // namespace
}  // namespace skein
