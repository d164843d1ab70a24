// SPDX-License-Identifier: BSD-3-Clause
// Kernel templates' control flow: %for over ranges and lists, %if / %elif / %else, <%def> blocks
// with arguments, expressions, the list and integer values, and an error naming the template and
// line for every kind of mistake. (template_test.cpp covers substitution, snippets and modules.)
#include <gtest/gtest.h>

#include <skein/error.hpp>
#include <skein/template.hpp>
#include <string>
#include <thread>
#include <vector>

namespace skein {
namespace {
namespace template_control_test {

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

// Renders `text` as "t.cl" and expects a RenderError whose message holds every one of `parts`.
void expect_error(const std::string& text, const RenderGlobals& globals,
                  std::initializer_list<std::string> parts) {
  const std::string e = render_error([&] { render(text, globals, "t.cl"); });
  for (const std::string& part : parts) {
    EXPECT_NE(e.find(part), std::string::npos)
        << "missing '" << part << "' in: " << e << "\ntemplate:\n"
        << text;
  }
}

TEST(TemplateFor, RangesWithPythonsMeaning) {
  const auto loop = [](const std::string& range) {
    return render("[\n%for i in " + range + ":\n${i},\n%endfor\n]");
  };
  EXPECT_EQ(loop("range(3)"), "[\n0,\n1,\n2,\n]");
  EXPECT_EQ(loop("range(2, 5)"), "[\n2,\n3,\n4,\n]");
  EXPECT_EQ(loop("range(5, 0, -2)"), "[\n5,\n3,\n1,\n]");
  EXPECT_EQ(loop("range(1, 8, 3)"), "[\n1,\n4,\n7,\n]");
  // Negative loop values render as integers always do: in parentheses.
  EXPECT_EQ(loop("range(-2, 1)"), "[\n(-2),\n(-1),\n0,\n]");
  // Empty ranges run the body no time, whichever the step's sign.
  EXPECT_EQ(loop("range(0)"), "[\n]");
  EXPECT_EQ(loop("range(-4)"), "[\n]");
  EXPECT_EQ(loop("range(3, 3)"), "[\n]");
  EXPECT_EQ(loop("range(0, 5, -1)"), "[\n]");
  EXPECT_EQ(loop("range(5, 0)"), "[\n]");
  // Bounds and steps are expressions; a range near the end of 64 bits stops there.
  EXPECT_EQ(render("%for i in range(n - 1, n + 1):\n${i * 2} \n%endfor\n", {{"n", 10}}),
            "18 \n20 \n");
  EXPECT_EQ(
      render("%for i in range(9223372036854775806, 9223372036854775807, 5):\n${i}\n%endfor\n"),
      "9223372036854775806\n");
}

TEST(TemplateFor, ControlLinesGiveNoOutputAndIndentationIsFree) {
  // Each control line, its indentation and its newline, is consumed; text lines stay as written.
  const std::string text =
      "KERNEL void k()\n"
      "{\n"
      "    %for i in range(2):\n"
      "    x[${i}] = 0;\n"
      "        %endfor\n"
      "}\n";
  EXPECT_EQ(render(text), "KERNEL void k()\n{\n    x[0] = 0;\n    x[1] = 0;\n}\n");
  // '% for' with blanks after the '%', CRLF line ends, and a last line without a newline.
  EXPECT_EQ(render("% for i in range(2) :\r\n${i}\r\n%  endfor\r\nend"), "0\r\n1\r\nend");
  EXPECT_EQ(render("%for i in range(2):\n${i}\n%endfor"), "0\n1\n");
}

TEST(TemplateFor, ListsOfStringsIntegersSnippetsModulesAndLists) {
  EXPECT_EQ(render("%for t in types:\n${t} v_${t};\n%endfor\n",
                   {{"types", RenderList{"float", "double"}}}),
            "float v_float;\ndouble v_double;\n");
  EXPECT_EQ(
      render("%for c in coeffs:\n+ ${c}\n%endfor\n", {{"coeffs", std::vector<int>{3, -1, 0}}}),
      "+ 3\n+ (-1)\n+ 0\n");
  // Snippet items are called with arguments or inserted without; module items give their prefix
  // and their code once, however often the loop uses them.
  Snippet add({"a", "b"}, "(${a} + ${b})", {}, "add");
  Snippet mul({"a", "b"}, "(${a} * ${b})", {}, "mul");
  EXPECT_EQ(render("%for op in ops:\ny = ${op(x, ${k})};\n%endfor\n",
                   {{"ops", RenderList{add, mul}}, {"k", 2}}),
            "y = (x + 2);\ny = (x * 2);\n");
  Module sq("float ${prefix}(float v) { return v * v; }", {}, "sq");
  EXPECT_EQ(render("%for f in fs:\n${f}(x);\n%endfor\n", {{"fs", RenderList{sq, sq}}}),
            "float _mod_sq_0_(float v) { return v * v; }\n_mod_sq_0_(x);\n_mod_sq_0_(x);\n");
  // Lists of lists, and an empty list.
  const RenderValue rows = RenderList{RenderList{1, 2}, RenderList{}, RenderList{3}};
  EXPECT_EQ(render("%for row in rows:\n{\n%for v in row:\n${v},\n%endfor\n}\n%endfor\n",
                   {{"rows", rows}}),
            "{\n1,\n2,\n}\n{\n}\n{\n3,\n}\n");
  EXPECT_EQ(render("a\n%for x in xs:\n${x}\n%endfor\nb", {{"xs", RenderList{}}}), "a\nb");
}

TEST(TemplateFor, NestedLoopsAndScopes) {
  EXPECT_EQ(render("%for i in range(2):\n%for j in range(i, 3):\n${i}${j} \n%endfor\n%endfor\n"),
            "00 \n01 \n02 \n11 \n12 \n");
  // A loop variable hides a global of the same name inside the loop only.
  EXPECT_EQ(render("${i}\n%for i in range(2):\n${i}\n%endfor\n${i}\n", {{"i", "g"}}),
            "g\n0\n1\ng\n");
  // A loop over an item of a list, indexed by the outer loop.
  EXPECT_EQ(render("%for r in range(len(m)):\n%for v in m[r]:\n${v + r * 10} \n%endfor\n%endfor\n",
                   {{"m", RenderList{RenderList{1, 2}, RenderList{3}}}}),
            "1 \n2 \n13 \n");
}

TEST(TemplateIf, EveryBranch) {
  const std::string text =
      "%if n == 0:\nzero\n%elif n == 1:\none\n%elif n < 0:\nnegative\n%else:\nmany ${n}\n%endif\n";
  EXPECT_EQ(render(text, {{"n", 0}}), "zero\n");
  EXPECT_EQ(render(text, {{"n", 1}}), "one\n");
  EXPECT_EQ(render(text, {{"n", -5}}), "negative\n");
  EXPECT_EQ(render(text, {{"n", 7}}), "many 7\n");
  // Without %else, a false condition gives nothing; branches nest in loops and in each other.
  EXPECT_EQ(render("a\n%if 0:\nb\n%endif\nc"), "a\nc");
  EXPECT_EQ(render("%for i in range(4):\n%if i % 2 == 0:\n%if i == 0:\nfirst\n%else:\neven ${i}\n"
                   "%endif\n%else:\nodd ${i}\n%endif\n%endfor\n"),
            "first\nodd 1\neven 2\nodd 3\n");
  // String comparisons choose code by type.
  const std::string by_type = "%if T == \"double\":\nfma(a, b, c)\n%else:\na * b + c\n%endif\n";
  EXPECT_EQ(render(by_type, {{"T", "double"}}), "fma(a, b, c)\n");
  EXPECT_EQ(render(by_type, {{"T", "float"}}), "a * b + c\n");
}

TEST(TemplateIf, TruthIsPythons) {
  const auto truth = [](const RenderValue& v) {
    return render("%if v:\ntrue\n%else:\nfalse\n%endif\n", {{"v", v}});
  };
  EXPECT_EQ(truth(0), "false\n");
  EXPECT_EQ(truth(-1), "true\n");
  EXPECT_EQ(truth(""), "false\n");
  EXPECT_EQ(truth("0"), "true\n");  // a non-empty string, as in Python
  EXPECT_EQ(truth(RenderList{}), "false\n");
  EXPECT_EQ(truth(RenderList{0}), "true\n");
  EXPECT_EQ(truth(Snippet::from_string("")), "true\n");
  EXPECT_EQ(truth(Module("int ${prefix};")), "true\n");  // tested, not used: no code emitted
}

TEST(TemplateExpressions, ArithmeticComparisonsAndFunctions) {
  const RenderGlobals g{{"n", 7},
                        {"m", -3},
                        {"xs", std::vector<int>{4, 5, 6}},
                        {"T", "float"},
                        {"empty", RenderList{}},
                        {"s", "(-12)"}};
  const auto eval = [&](const std::string& expr) { return render("${" + expr + "}", g); };
  EXPECT_EQ(eval("n + m * 2"), "1");
  EXPECT_EQ(eval("(n + m) * 2"), "8");
  EXPECT_EQ(eval("-n"), "(-7)");
  EXPECT_EQ(eval("+n - -m"), "4");
  // Floor division and modulo round toward minus infinity, as Python's do.
  EXPECT_EQ(eval("n // 2"), "3");
  EXPECT_EQ(eval("-7 // 2"), "(-4)");
  EXPECT_EQ(eval("7 // -2"), "(-4)");
  EXPECT_EQ(eval("-7 % 2"), "1");
  EXPECT_EQ(eval("7 % -2"), "(-1)");
  EXPECT_EQ(eval("n % 7"), "0");
  // Comparisons give 1 or 0, chain as in Python, and compare strings too.
  EXPECT_EQ(eval("n > m"), "1");
  EXPECT_EQ(eval("n <= m"), "0");
  EXPECT_EQ(eval("m < 0 < n"), "1");
  EXPECT_EQ(eval("m < n < 0"), "0");
  EXPECT_EQ(eval("1 == 1 != 2"), "1");
  EXPECT_EQ(eval("T == 'float'"), "1");
  EXPECT_EQ(eval("T != \"float\""), "0");
  EXPECT_EQ(eval("'abc' < 'abd'"), "1");
  // and / or give an operand, as Python's do; not gives 1 or 0; True and False are 1 and 0.
  EXPECT_EQ(eval("0 or T"), "float");
  EXPECT_EQ(eval("n and T"), "float");
  EXPECT_EQ(eval("'' and T"), "");
  EXPECT_EQ(eval("not n"), "0");
  EXPECT_EQ(eval("not empty"), "1");
  EXPECT_EQ(eval("not n == 7 or True"), "1");
  EXPECT_EQ(eval("True + True"), "2");
  // Lists: len(), items (negative indices from the end); strings: len(), int().
  EXPECT_EQ(eval("len(xs)"), "3");
  EXPECT_EQ(eval("xs[0] + xs[-1]"), "10");
  EXPECT_EQ(eval("xs[len(xs) - 2]"), "5");
  EXPECT_EQ(eval("len(empty)"), "0");
  EXPECT_EQ(eval("len(T)"), "5");
  EXPECT_EQ(eval("int(s) * 2"), "(-24)");
  EXPECT_EQ(eval("int(' 42 ') + int('-1') + int(n)"), "48");
  // String literals and their escapes.
  EXPECT_EQ(eval("'it\\'s'"), "it's");
  EXPECT_EQ(eval("\"a\\\\b\\tc\\nd\""), "a\\b\tc\nd");
  // A placeholder spanning lines holds one expression.
  EXPECT_EQ(render("x = ${n +\n  1};", g), "x = 8;");
  // 64-bit integers: the extremes and unsigned values that fit.
  EXPECT_EQ(render("${a - 1}", {{"a", std::int64_t(-9223372036854775807)}}),
            "(-9223372036854775807-1)");
  EXPECT_EQ(render("${a + 1}", {{"a", std::uint64_t(41)}}), "42");
}

TEST(TemplateDefs, ArgumentsLoopsAndLexicalScope) {
  // Called from a loop with arguments rendered in the caller's scope (the loop variable, an
  // expression); the body uses the template's globals and control flow.
  const std::string text =
      "<%def name=\"term(k, w)\">\n"
      "%if w == \"0\":\n"
      "    /* tap ${k} is zero */\n"
      "%else:\n"
      "    acc += ${w} * x[i + ${k}] * ${scale};\n"
      "%endif\n"
      "</%def>\n"
      "%for k in range(len(taps)):\n"
      "${term(${k - 1}, ${taps[k]})}\n"
      "%endfor\n";
  EXPECT_EQ(render(text, {{"taps", std::vector<int>{2, 0, -1}}, {"scale", "s"}}),
            "    acc += 2 * x[i + (-1)] * s;\n"
            "    /* tap 0 is zero */\n"
            "    acc += (-1) * x[i + 1] * s;\n");
  // Zero parameters: ${f} or ${f()}. A one-line def. Called before it is defined, and from another
  // def; the body's last newline is dropped, so a call fits inside a line.
  const std::string defs =
      "T v = ${sq(${one})} + ${sq(b)};\n"
      "<%def name=\"sq(x)\">((${x}) * (${x}))</%def>\n"
      "<%def name=\"one()\">\n"
      "${unit}\n"
      "</%def>\n"
      "<%def name=\"twice(y)\">\n"
      "${sq(${y})} + ${sq(${y})}\n"
      "</%def>\n"
      "${twice(z)}; ${one()}\n";
  EXPECT_EQ(render(defs, {{"unit", "1.0f"}}),
            "T v = ((1.0f) * (1.0f)) + ((b) * (b));\n((z) * (z)) + ((z) * (z)); 1.0f\n");
  // A def sees its parameters and the template's names, not the caller's loop variable.
  expect_error("<%def name=\"f()\">\n${i}\n</%def>\n%for i in range(2):\n${f()}\n%endfor\n", {},
               {"t.cl:2: unknown name 'i'", "called from t.cl:5", "known names: f"});
  // Defs in a snippet's text work the same, under the snippet's name.
  Snippet s({"n"},
            "<%def name=\"g(a)\">[${a}]</%def>\n%for i in range(int(n)):\n${g(${i})}\n%endfor\n",
            {}, "s");
  EXPECT_EQ(render("${s(3)}", {{"s", s}}), "[0]\n[1]\n[2]\n");
  // A def's parameter hides a global inside it; a def may not hide one itself.
  EXPECT_EQ(render("<%def name=\"f(T)\">${T}</%def>\n${f(int)} ${T}", {{"T", "float"}}),
            "int float");
}

TEST(TemplateDefs, RecursionEndsOrIsRefused) {
  // A def may call itself under an %if that ends the recursion: an unrolled binary tree sum.
  const std::string tree =
      "<%def name=\"sum(lo, n)\">\n"
      "%if int(n) == 1:\n"
      "x[${lo}]\n"
      "%else:\n"
      "(${sum(${lo}, ${int(n) // 2})} + ${sum(${int(lo) + int(n) // 2}, ${int(n) - int(n) // "
      "2})})\n"
      "%endif\n"
      "</%def>\n"
      "${sum(0, 5)}";
  EXPECT_EQ(render(tree), "((x[0] + x[1]) + (x[2] + (x[3] + x[4])))");
  // One that does not end is refused at a fixed depth (64), naming where it recursed.
  expect_error("\n<%def name=\"f(n)\">\n${f(${int(n) + 1})}\n</%def>\n${f(0)}\n", {},
               {"t.cl:3: calls of snippets, modules and defs nested 64 deep", "called from t.cl:3",
                "more calls", "an %if that ends it"});
}

TEST(TemplateSyntax, EscapesCommentsAndPercentInText) {
  // '%%' at the start of a line writes one '%'; '##' lines are comments; '%' and '##' elsewhere in
  // a line, '<%' inside a line, and '$$' are text.
  EXPECT_EQ(render("%%x\n  %% y\n%%%z\n## a comment\n   ## another\nr = a % b; // ## ok\n"
                   "printf(\"<%d>\", v); $${n}\n"),
            "%x\n  % y\n%%z\nr = a % b; // ## ok\nprintf(\"<%d>\", v); ${n}\n");
  // The C preprocessor's lines are text, as are backslash-newlines (unlike Mako, which joins them).
  EXPECT_EQ(render("#define A(x) \\\n  ((x) + 1)\n#if ${n}\n#endif\n", {{"n", 1}}),
            "#define A(x) \\\n  ((x) + 1)\n#if 1\n#endif\n");
}

TEST(TemplateValues, IntegersListsAndTheirKinds) {
  const RenderValue i = 5, u = 7u, big = 18446744073709551615ull, s = "x", l = std::vector<int>{1};
  EXPECT_TRUE(i.is_integer());
  EXPECT_TRUE(i.is_string());  // inserted as text, as before lists existed
  EXPECT_TRUE(u.is_integer());
  EXPECT_FALSE(big.is_integer());  // above INT64_MAX: kept as its text
  EXPECT_EQ(render("${b}", {{"b", big}}), "18446744073709551615u");
  EXPECT_FALSE(s.is_integer());
  EXPECT_TRUE(l.is_list());
  EXPECT_FALSE(l.is_string());
  const RenderValue strings = std::vector<std::string>{"a", "b"};
  EXPECT_EQ(render("${xs[1]}${len(xs)}", {{"xs", strings}}), "b2");
}

TEST(TemplateRender, SameTextFromEveryThreadAtOnce) {
  const std::string text =
      "<%def name=\"f(a)\">${m}(${a})</%def>\n%for i in range(50):\n%if i % 3:\n${f(${i})};\n"
      "%endif\n%endfor\n";
  const RenderGlobals g{{"m", Module("int ${prefix}(int v) { return v; }", {}, "id")}};
  const std::string expected = render(text, g);
  EXPECT_EQ(expected.find("int _mod_id_0_(int v) { return v; }\n_mod_id_0_(1);\n_mod_id_0_(2);\n"
                          "_mod_id_0_(4);\n"),
            0u);
  std::vector<std::string> outputs(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < outputs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) outputs[t] = render(text, g);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& out : outputs) EXPECT_EQ(out, expected);
}

TEST(TemplateErrors, BlocksNameTheLineThatOpenedOrClosedThem) {
  expect_error("a\n%for i in range(2):\nx\n", {}, {"t.cl:2: '%for' is never closed", "'%endfor'"});
  expect_error("%if 1:\n%for i in range(2):\n%endfor\n", {}, {"t.cl:1: '%if' is never closed"});
  expect_error("\n\n<%def name=\"f()\">\nx\n", {},
               {"t.cl:3: '<%def>' is never closed", "'</%def>'"});
  expect_error("a\nb\n%endfor\n", {}, {"t.cl:3: '%endfor' without '%for'"});
  expect_error("%endif\n", {}, {"t.cl:1: '%endif' without '%if'"});
  expect_error("x\n%else:\n", {}, {"t.cl:2: '%else' without '%if'"});
  expect_error("x\n%elif 1:\n", {}, {"t.cl:2: '%elif' without '%if'"});
  expect_error("</%def>\n", {}, {"t.cl:1: '</%def>' without '<%def>'"});
  expect_error("%for i in range(2):\n%if i:\n%endfor\n%endif\n", {},
               {"t.cl:3: '%endfor' while the '%if' of line 2 is open", "'%endif' first"});
  expect_error("<%def name=\"f()\">\n%for i in range(2):\n</%def>\n", {},
               {"t.cl:3: '</%def>' while the '%for' of line 2 is open"});
  expect_error("%if 1:\n%else:\n%else:\n%endif\n", {},
               {"t.cl:3: '%else' after the '%else' of line 2"});
  expect_error("%if 1:\n%else:\n%elif 0:\n%endif\n", {},
               {"t.cl:3: '%elif' after the '%else' of line 2"});
}

TEST(TemplateErrors, MalformedControlLines) {
  expect_error("\n%for i in range(3)\n%endfor\n", {},
               {"t.cl:2: '%for' line does not end with ':'"});
  expect_error("%if 1\n%endif\n", {}, {"t.cl:1: '%if' line does not end with ':'"});
  expect_error("%if 1:\n%elif 2\n%endif\n", {}, {"t.cl:2: '%elif' line does not end with ':'"});
  expect_error("%if 1:\n%else\n%endif\n", {}, {"t.cl:2: '%else' is written '%else:'"});
  expect_error("%for i in range(2):\n%endfor i\n", {}, {"t.cl:2: text after '%endfor'"});
  expect_error("%for i, x in xs:\n%endfor\n", {}, {"t.cl:1: '%for' takes one loop variable"});
  expect_error("%for 1 in xs:\n%endfor\n", {}, {"t.cl:1: malformed '%for 1 in xs:'"});
  expect_error("%for i of xs:\n%endfor\n", {}, {"t.cl:1: malformed '%for i of xs:'"});
  expect_error("a\n%while 1:\n", {}, {"t.cl:2: unknown control line '%while 1:'", "'%%'"});
  expect_error("% x = 1\n", {}, {"t.cl:1: unknown control line '%x = 1'"});
  expect_error("%\n", {}, {"t.cl:1: unknown control line '%'"});
}

TEST(TemplateErrors, BadExpressions) {
  const RenderGlobals g{{"n", 3}, {"T", "float"}, {"xs", std::vector<int>{1, 2}}};
  expect_error("\n%if n / 2:\n%endif\n", g, {"t.cl:2: bad expression 'n / 2' in '%if'", "'//'"});
  expect_error("%if n ** 2:\n%endif\n", g, {"t.cl:1:", "'**' is not supported"});
  expect_error("%if T.size:\n%endif\n", g, {"t.cl:1:", "no attributes"});
  expect_error("%if 1.5 > n:\n%endif\n", g, {"t.cl:1:", "'1.5' is not a decimal integer"});
  expect_error("%if ${n}:\n%endif\n", g, {"t.cl:1:", "write n, not ${n}"});
  expect_error("%if n && 1:\n%endif\n", g, {"t.cl:1:", "Write and, or, not"});
  expect_error("%if n = 1:\n%endif\n", g, {"t.cl:1:", "'=='"});
  expect_error("%if 'abc:\n%endif\n", g, {"t.cl:1:", "a string is not closed"});
  expect_error("%if 'a\\q':\n%endif\n", g, {"t.cl:1:", "unknown escape"});
  expect_error("%if :\n%endif\n", g, {"t.cl:1:", "the expression is empty"});
  expect_error("%if (n:\n%endif\n", g, {"t.cl:1:", "expected ')'"});
  expect_error("%if n +:\n%endif\n", g, {"t.cl:1:", "ends too early"});
  expect_error("%if n in xs:\n%endif\n", g, {"t.cl:1:", "'in' is not supported"});
  expect_error("%if (1, 2):\n%endif\n", g, {"t.cl:1:", "tuples are not supported"});
  expect_error("%if 99999999999999999999:\n%endif\n", g, {"t.cl:1:", "does not fit 64 bits"});
  expect_error("%for i in xs[0](1):\n%endfor\n", g,
               {"t.cl:1:", "only a function's name is called"});
  // In placeholders the same mistakes are a malformed placeholder, on the placeholder's line.
  expect_error("a\nb = ${n / 2};\n", g, {"t.cl:2: malformed placeholder '${n / 2}'", "'//'"});
  expect_error("a\nb = ${n +\n};\n", g, {"t.cl:2: malformed placeholder", "ends too early"});
}

TEST(TemplateErrors, ValuesUsedTheWrongWay) {
  const RenderGlobals g{{"n", 3},
                        {"T", "float"},
                        {"xs", std::vector<int>{1, 2}},
                        {"s", Snippet({"a"}, "${a}", {}, "s")}};
  expect_error("\n%if nope > 1:\n%endif\n", g,
               {"t.cl:2: unknown name 'nope'", "known names: T, n, s, xs"});
  expect_error("\n\n${xs}\n", g,
               {"t.cl:3: 'xs' is a list: it cannot be inserted as text", "${xs[i]}"});
  expect_error("${xs[0:1]}\n", g, {"t.cl:1: malformed placeholder", "':'"});
  expect_error("%for x in T:\n%endfor\n", g,
               {"t.cl:1:", "'%for' goes over range(...) or a list, not the string \"float\""});
  expect_error("%for x in n:\n%endfor\n", g, {"t.cl:1:", "not the integer 3"});
  expect_error(
      "%if T == 3:\n%endif\n", g,
      {"t.cl:1:",
       "'==' compares two integers or two strings, not the string \"float\" and the integer 3",
       "int(x)"});
  expect_error("%if T < xs:\n%endif\n", g,
               {"t.cl:1:", "not the string \"float\" and a list of 2 items"});
  expect_error("${T + 1}", g, {"t.cl:1:", "'+' takes integers, not the string \"float\""});
  expect_error("${n // 0}", g, {"t.cl:1:", "'//' by zero"});
  expect_error("${n % 0}", g, {"t.cl:1:", "'%' by zero"});
  expect_error("${9223372036854775807 + n}", g, {"t.cl:1:", "'+' overflows 64-bit integers"});
  expect_error("${-9223372036854775807 - 2}", g, {"t.cl:1:", "'-' overflows"});
  expect_error("${xs[2]}", g, {"t.cl:1:", "index 2 is out of range for a list of 2 items"});
  expect_error("${xs[-3]}", g, {"t.cl:1:", "index -3 is out of range"});
  expect_error("${T[0]}", g, {"t.cl:1:", "only lists are indexed, not the string \"float\""});
  expect_error("${xs['a']}", g, {"t.cl:1:", "an index takes integers"});
  expect_error("${len(n)}", g, {"t.cl:1:", "len() takes a list or a string, not the integer 3"});
  expect_error("${len(xs, xs)}", g, {"t.cl:1:", "len() takes 1 argument, 2 given"});
  expect_error("${int(T)}", g,
               {"t.cl:1:", "int() reads a decimal integer (12, -3 or (-3)), not \"float\""});
  expect_error("${int(xs)}", g, {"t.cl:1:", "int() takes an integer or a string, not a list"});
  expect_error("${len}", g, {"t.cl:1:", "'len' is a function"});
  expect_error("${max(1, 2)}", g, {"t.cl:1: unknown name 'max'"});
  expect_error("${n + max(1, 2)}", g, {"t.cl:1:", "unknown function 'max'"});
  expect_error("${len(range(3))}", g,
               {"t.cl:1:", "range() goes only in '%for NAME in range(...):'"});
  expect_error("%for i in range(1, 2, 3, 4):\n%endfor\n", g,
               {"t.cl:1:", "range() takes 1 to 3 arguments, 4 given"});
  expect_error("%for i in range(0, 3, 0):\n%endfor\n", g, {"t.cl:1:", "range()'s step is 0"});
  expect_error("%for i in range(T):\n%endfor\n", g, {"t.cl:1:", "range() takes integers"});
  expect_error(
      "${n + s(1)}", g,
      {"t.cl:1:", "'s' is the snippet 's': expressions call len(), int() and range() only"});
  expect_error("${n(1)}", g, {"t.cl:1: 'n' is an integer, not a snippet: it cannot be called"});
  expect_error("${xs(1)}", g, {"t.cl:1: 'xs' is a list, not a snippet"});
}

TEST(TemplateErrors, DefMistakes) {
  const std::string f = "<%def name=\"f(a, b)\">\n${a}${b}\n</%def>\n";
  expect_error(f + "\n${f(1)}", {}, {"t.cl:5: def 'f' takes 2 arguments, 1 given"});
  expect_error(f + "${f}", {}, {"t.cl:4: def 'f' takes 2 arguments, 0 given"});
  expect_error(f + "${f(1, 2) + 1}", {}, {"t.cl:4:", "'f' is a def"});
  expect_error(f + "%if f:\n%endif\n", {}, {"t.cl:4:", "'f' is a def: insert it as ${f(...)}"});
  expect_error("a\n" + f + f, {}, {"t.cl:5: def 'f' is defined twice (lines 2 and 5)"});
  expect_error("\n" + f, {{"f", "global"}},
               {"t.cl:2: def 'f' has the name of a global or parameter"});
  expect_error("%if 1:\n<%def name=\"g()\">\n</%def>\n%endif\n", {},
               {"t.cl:2: a <%def> inside a block", "the '%if' of line 1"});
  expect_error("<%def name=\"g()\">\n<%def name=\"h()\">\n</%def>\n</%def>\n", {},
               {"t.cl:2: a <%def> inside a block", "the '<%def>' of line 1"});
  expect_error("x <%def name=\"g()\">\n", {}, {"t.cl:1: a <%def> tag inside a line of text"});
  expect_error("x\ny </%def>\n", {}, {"t.cl:2: a <%def> tag inside a line of text"});
  expect_error("<%def name=\"g()\"> x\n</%def>\n", {}, {"t.cl:1: text after a <%def> tag"});
  expect_error("<%def name=\"g()\">\n</%def> x\n", {}, {"t.cl:2: text after '</%def>'"});
  expect_error("<%def name=\"g()\"\n", {}, {"t.cl:1: the <%def> tag is not closed"});
  expect_error("<%def nam=\"g()\">\n</%def>\n", {},
               {"t.cl:1: malformed <%def", "no other attribute"});
  expect_error("<%def name=\"g()\" buffered=\"True\">\n</%def>\n", {}, {"t.cl:1: malformed <%def"});
  expect_error("<%def name=\"g\">\n</%def>\n", {}, {"t.cl:1: malformed def signature 'g'", "f()"});
  expect_error("<%def name=\"g(a=1)\">\n</%def>\n", {},
               {"t.cl:1: def 'g': default values are not supported"});
  expect_error("<%def name=\"g(a, 2)\">\n</%def>\n", {},
               {"t.cl:1: def 'g': parameter '2' is not a name"});
  expect_error("<%def name=\"g(a, a)\">\n</%def>\n", {},
               {"t.cl:1: def 'g': parameter 'a' is named twice"});
  expect_error("\n<% x = 1 %>\n", {}, {"t.cl:2: '<%' is not supported", "globals"});
  expect_error("<%include file=\"a\"/>\n", {}, {"t.cl:1: '<%include' is not supported"});
}

TEST(TemplateErrors, InsideSnippetsModulesAndDefsNameTheirOwnLineAndTheCalls) {
  Snippet inner({"n"}, "a\n%for i in range(n):\n%endfor\n", {}, "inner");
  expect_error(
      "\n${inner(2)}", {{"inner", inner}},
      {"snippet 'inner':2:", "range() takes integers, not the string \"2\"", "called from t.cl:2"});
  Module m("int ${prefix};\n%if missing:\n%endif\n", {}, "m");
  expect_error(
      "x\ny\n${m}", {{"m", m}},
      {"snippet 'm':2: unknown name 'missing'", "called from t.cl:3", "known names: prefix"});
  // Inside a def: the template's line in the def's body, then each call.
  expect_error(
      "<%def name=\"f()\">\nok\n${g()}\n</%def>\n<%def name=\"g()\">\n${1 // "
      "0}\n</%def>\n\n${f()}\n",
      {}, {"t.cl:6:", "'//' by zero", "called from t.cl:3, called from t.cl:9"});
}

}  // namespace template_control_test
}  // namespace
}  // namespace skein
