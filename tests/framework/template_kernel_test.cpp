// SPDX-License-Identifier: BSD-3-Clause
// A templated kernel with %for, %if and <%def>s with and without arguments
// (docs/examples/templated_kernel.tmpl, which docs/kernels.md quotes): rendered, compiled and run
// on every backend for three element types, and compared with the same stencil and polynomial
// computed on the host.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <skein/skein.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace template_kernel_test {

class TemplatedKernel : public BackendTest {};

std::string kernel_template() {
  const std::string path = std::string(SKEIN_DOCS_EXAMPLES_DIR) + "/templated_kernel.tmpl";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The stencil's weights (centred: offsets -2..2; the zero one is skipped by the template's %if)
// and the polynomial's coefficients, highest power first: p(a) = 2a^2 - a + 3.
const std::vector<int> kTaps{1, 0, -2, 3, 1};
const std::vector<int> kPoly{2, -1, 3};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
    ++n;
  return n;
}

// The host's result in double (exact for the small integers), and the same sums over the terms'
// magnitudes, which bound the device's rounding.
struct Reference {
  std::vector<double> value, magnitude;
};

template <class T>
Reference reference(const std::vector<T>& x) {
  const auto n = static_cast<std::ptrdiff_t>(x.size());
  const auto radius = static_cast<std::ptrdiff_t>(kTaps.size() / 2);
  Reference ref;
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    double acc = 0, acc_mag = 0;
    for (std::size_t k = 0; k < kTaps.size(); ++k) {
      const std::ptrdiff_t j =
          std::clamp<std::ptrdiff_t>(i + static_cast<std::ptrdiff_t>(k) - radius, 0, n - 1);
      const double term = kTaps[k] * static_cast<double>(x[static_cast<std::size_t>(j)]);
      acc += term;
      acc_mag += std::abs(term);
    }
    double p = 0, p_mag = 0;
    for (int c : kPoly) {
      p = p * acc + c;
      p_mag = p_mag * acc_mag + std::abs(c);
    }
    ref.value.push_back(p);
    ref.magnitude.push_back(p_mag);
  }
  return ref;
}

// Values in [-1, 1] for floating types, integers in [-20, 20] (the polynomial stays in int32).
template <class T>
std::vector<T> inputs(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> out(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> dist(-20, 20);
    for (auto& v : out) v = static_cast<T>(dist(gen));
  } else {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (auto& v : out) v = static_cast<T>(dist(gen));
  }
  return out;
}

template <class T>
void check(const Context& ctx, Queue& queue, const std::string& source, Dtype dtype,
           double tolerance) {
  const std::string type = ctype(dtype);
  SCOPED_TRACE(type);
  ProgramOptions options;
  options.name = "templated_kernel.tmpl";
  const RenderGlobals globals{
      {"name", "templated_smooth"}, {"ctype", type}, {"taps", kTaps}, {"poly", kPoly}};
  // What was rendered: one block per non-zero tap (the def with arguments, called from the loop
  // under an %if), one Horner step per coefficient, the accumulator the dtype's %if chose, and
  // nothing of the template's own syntax.
  const std::string text = render(source, globals, options.name);
  EXPECT_EQ(count(text, "acc += "), 4u) << text;
  EXPECT_EQ(count(text, "const int j = i + (-2);"), 1u) << text;
  EXPECT_EQ(count(text, "const int j = i + (-1);"), 0u) << text;
  EXPECT_EQ(count(text, "p = p * acc + "), 3u) << text;
  const std::string acc_type = dtype == Dtype::int32 ? "int64_t" : type;
  EXPECT_EQ(count(text, "    " + acc_type + " acc = 0;\n"), 1u) << text;
  EXPECT_EQ(text.find_first_of("%$"), std::string::npos) << text;
  EXPECT_EQ(text.find("##"), std::string::npos) << text;

  Program program = Program::from_template(ctx, source, globals, options);
  auto kernel = program.kernel("templated_smooth");
  std::uint32_t seed = 1;
  // Sizes smaller than the stencil clamp on both sides at once.
  for (std::size_t n : {1u, 2u, 5u, 1000u}) {
    SCOPED_TRACE(n);
    const auto x = inputs<T>(n, seed++);
    const Reference ref = reference(x);
    auto dx = Array::from_host(queue, x);
    auto dy = Array::empty(queue, {n}, dtype);
    kernel.prepare(queue, n)(dy, dx, static_cast<std::int32_t>(n));
    const auto y = dy.get<T>();
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        ASSERT_EQ(y[i], static_cast<T>(ref.value[i])) << i;
      } else {
        ASSERT_NEAR(y[i], ref.value[i], tolerance * (1 + ref.magnitude[i])) << i;
      }
    }
  }
}

TEST_P(TemplatedKernel, StencilAndPolynomialMatchTheHost) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string source = kernel_template();
  // About 16 roundings of the magnitudes (5 in the sum, through p' and Horner's 3 steps).
  check<float>(ctx, queue, source, Dtype::float32, 1e-5);
  check<double>(ctx, queue, source, Dtype::float64, 1e-14);
  check<std::int32_t>(ctx, queue, source, Dtype::int32, 0);
}

TEST_P(TemplatedKernel, ATemplateMistakeNamesItsLineBeforeCompiling) {
  auto ctx = context();
  std::string source = kernel_template();
  // A misspelt global on the %for line is reported at that line of the template (counted here
  // from the file), with the names that are known there.
  const std::string loop = "%for k in range(len(taps)):";
  const std::size_t at = source.find(loop);
  ASSERT_NE(at, std::string::npos);
  const auto line =
      1 + std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  source.replace(source.find(loop), loop.size(), "%for k in range(len(tapz)):");
  ProgramOptions options;
  options.name = "templated_kernel.tmpl";
  try {
    Program::from_template(ctx, source,
                           {{"name", "k"}, {"ctype", "float"}, {"taps", kTaps}, {"poly", kPoly}},
                           options);
    ADD_FAILURE() << "no RenderError";
  } catch (const RenderError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt::format("templated_kernel.tmpl:{}: unknown name 'tapz'", line)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("known names: ctype, name, poly, tap, taps, wide_t"), std::string::npos)
        << what;
  }
}

SKEIN_INSTANTIATE_BACKENDS(TemplatedKernel);

}  // namespace template_kernel_test
}  // namespace
}  // namespace skein::test
