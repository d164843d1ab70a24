// SPDX-License-Identifier: BSD-3-Clause
// The complex function modules, run on every backend and compared with std::complex on the host.
#include <gtest/gtest.h>

#include <complex>
#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace functions_test {

class Functions : public BackendTest {};

template <class R>
void check_functions(const Context& ctx, Dtype real, Dtype cplx, double tol) {
  using C = std::complex<R>;
  Queue queue(ctx);
  RenderGlobals g{{"C", ctype(cplx)},
                  {"R", ctype(real)},
                  {"mul", functions::mul({cplx, real})},
                  {"mulcc", functions::mul({cplx, cplx})},
                  {"add", functions::add({cplx, real})},
                  {"div", functions::div(cplx, cplx)},
                  {"conj", functions::conj(cplx)},
                  {"exp", functions::exp(cplx)},
                  {"pow", functions::pow(cplx, real)},
                  {"polar", functions::polar(real)},
                  {"polar_unit", functions::polar_unit(real)},
                  {"norm", functions::norm(cplx)},
                  {"cast", functions::cast(real, cplx)}};
  auto program = Program::from_template(ctx, R"(
KERNEL void f(GLOBAL_MEM ${C}* out, GLOBAL_MEM const ${C}* a, GLOBAL_MEM const ${C}* b,
              GLOBAL_MEM const ${R}* r, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    out[i * 10 + 0] = ${mul}(a[i], r[i]);
    out[i * 10 + 1] = ${mulcc}(a[i], b[i]);
    out[i * 10 + 2] = ${add}(a[i], r[i]);
    out[i * 10 + 3] = ${div}(a[i], b[i]);
    out[i * 10 + 4] = ${conj}(a[i]);
    out[i * 10 + 5] = ${exp}(a[i]);
    out[i * 10 + 6] = ${pow}(b[i], r[i]);
    out[i * 10 + 7] = ${polar}(r[i], a[i].re);
    out[i * 10 + 8] = ${polar_unit}(r[i]);
    out[i * 10 + 9] = ${cast}(${norm}(a[i]));
}
)",
                                        g, {.name = "functions"});
  const std::size_t n = 37;
  std::vector<C> a(n), b(n);
  const auto ra = random_reals<R>(2 * n, 3), rb = random_reals<R>(2 * n, 4);
  auto r = random_reals<R>(n, 5);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = C(ra[2 * i] / 400, ra[2 * i + 1] / 400);  // |a| small enough for exp
    b[i] = C(rb[2 * i] / 100 + (rb[2 * i] >= 0 ? 1 : -1), rb[2 * i + 1] / 100);
    r[i] = r[i] / 300;
  }
  auto da = Array::from_host(queue, a), db = Array::from_host(queue, b),
       dr = Array::from_host(queue, r);
  auto out = Array::empty(queue, {n * 10}, cplx);
  program.kernel("f")(queue, n, std::nullopt, out, da, db, dr, std::int32_t(n));
  const auto got = out.get<C>();
  for (std::size_t i = 0; i < n; ++i) {
    using D = std::complex<double>;
    const D ai(a[i]), bi(b[i]);
    const double ri = r[i];
    const D expected[10] = {ai * ri,
                            ai * bi,
                            ai + ri,
                            ai / bi,
                            std::conj(ai),
                            std::exp(ai),
                            std::pow(bi, ri),
                            std::polar(ri, ai.real()),
                            std::polar(1.0, ri),
                            D(std::norm(ai), 0)};
    for (int k = 0; k < 10; ++k) {
      const D v(got[i * 10 + k]);
      EXPECT_LE(std::abs(v - expected[k]), tol * (1 + std::abs(expected[k])))
          << "function " << k << " element " << i << ": " << v << " vs " << expected[k];
    }
  }
}

TEST_P(Functions, ComplexFloat) {
  check_functions<float>(context(), Dtype::float32, Dtype::complex64, 2e-6);
}

TEST_P(Functions, ComplexDouble) {
  auto ctx = context();
  if (!ctx.devices().front().params().supports_float64) GTEST_SKIP() << "no float64";
  check_functions<double>(ctx, Dtype::float64, Dtype::complex128, 1e-13);
}

TEST_P(Functions, ConstantArraysOnCudaAndALoudErrorElsewhere) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string source = R"(
KERNEL void use(GLOBAL_MEM float* out)
{
    const int i = get_global_id(0);
    out[i] = coeffs[i] * 2.0f;
}
)";
  ProgramOptions options{.constant_arrays = {{"coeffs", {5, Dtype::float32}}}};
  if (GetParam().api != ApiId::cuda) {
    EXPECT_THROW(Program(ctx, source, options), LogicError);
    return;
  }
  Program program(ctx, source, options);
  const std::vector<float> host{1, 2, 3, 4, 5};
  program.set_constant_array(queue, "coeffs", std::span<const float>(host));
  auto out = Array::empty(queue, {5}, Dtype::float32);
  program.kernel("use")(queue, 5, std::nullopt, out);
  EXPECT_EQ(out.get<float>(), (std::vector<float>{2, 4, 6, 8, 10}));
  // From a device array.
  auto device_values = Array::from_host(queue, std::vector<float>{10, 20, 30, 40, 50});
  program.set_constant_array(queue, "coeffs", device_values);
  program.kernel("use")(queue, 5, std::nullopt, out);
  EXPECT_EQ(out.get<float>(), (std::vector<float>{20, 40, 60, 80, 100}));
  EXPECT_THROW(program.set_constant_array(queue, "coeffs", std::span<const float>(host).first(4)),
               LogicError);
  EXPECT_THROW(program.set_constant_array(queue, "nope", std::span<const float>(host)), LogicError);
}

SKEIN_INSTANTIATE_BACKENDS(Functions);

}  // namespace functions_test
}  // namespace
}  // namespace skein::test
