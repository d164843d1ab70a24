// SPDX-License-Identifier: BSD-3-Clause
// Kernels through the C API: an elementwise kernel in PyCUDA's form, a stencil kernel over a
// periodic grid against the host's Laplacian, the interior and edges regions, and a stencil
// reduction per block combined with skein_all_reduce.
#include <vector>

#include "capi_grid_support.hpp"

namespace {
namespace capi_kernels_test {

using namespace skein::test::capi;

class CApiKernels : public CApi {};

skein_operand grid_operand(const skein_grid* g) {
  return skein_operand{.kind = SKEIN_OPERAND_GRID, .grid = g, .real_value = 0, .int_value = 0};
}

TEST_P(CApiKernels, ElementwiseInFortranOrder) {
  const GridSpec spec{.shape = {5, 7}, .order = SKEIN_ORDER_FORTRAN, .components = 2};
  skein_grid *x = nullptr, *y = nullptr;
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &x));
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &y));
  const std::vector<double> global = global_values(spec.shape, 2);
  const std::size_t nbytes = global.size() * sizeof(double);
  CAPI_OK(skein_grid_scatter(x, global.data(), s.rank == 0 ? nbytes : 0, 0));
  CAPI_OK(skein_grid_fill(y, 1.0));
  skein_kernel* k = nullptr;
  CAPI_OK(
      skein_kernel_create_elementwise("T x, T y, double a", "y[i] = a * x[i] + y[i]", "caxpy", &k));
  const skein_operand args[] = {
      grid_operand(x),
      grid_operand(y),
      {.kind = SKEIN_OPERAND_FLOAT64, .grid = nullptr, .real_value = 3, .int_value = 0}};
  CAPI_OK(skein_grid_elementwise(k, args, 3));
  // A compound assignment: y += 2 x.
  skein_kernel* add = nullptr;
  CAPI_OK(skein_kernel_create_elementwise("T x, T y, int b", "y[i] += b * x[i]", nullptr, &add));
  const skein_operand args2[] = {
      grid_operand(x),
      grid_operand(y),
      {.kind = SKEIN_OPERAND_INT32, .grid = nullptr, .real_value = 0, .int_value = 2}};
  CAPI_OK(skein_grid_elementwise(add, args2, 3));
  std::vector<double> got(s.rank == 0 ? global.size() : 0);
  CAPI_OK(skein_grid_gather(y, got.data(), s.rank == 0 ? nbytes : 0, 0));
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 5 * global[i] + 1);
  CAPI_OK(skein_kernel_destroy(k));
  CAPI_OK(skein_kernel_destroy(add));
  CAPI_OK(skein_grid_destroy(x));
  CAPI_OK(skein_grid_destroy(y));
}

TEST_P(CApiKernels, StencilAndStencilReduce) {
  GridSpec spec{.shape = {8, 6}, .order = SKEIN_ORDER_C, .halo = 1};
  skein_grid *u = nullptr, *v = nullptr, *w = nullptr;
  // u periodic along both axes; v and w without a halo.
  {
    skein_grid_options o;
    skein_grid_options_init(&o);
    const std::size_t halo[2] = {1, 1};
    const skein_boundary wrap[2] = {{SKEIN_BOUNDARY_PERIODIC, 0}, {SKEIN_BOUNDARY_PERIODIC, 0}};
    o.halo = halo;
    o.lower = wrap;
    o.upper = wrap;
    CAPI_OK(skein_grid_create(s.comm, s.queue, 2, spec.shape.data(), SKEIN_FLOAT64, &o, &u));
  }
  spec.halo = 0;
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &v));
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &w));
  const std::vector<double> global = global_values(spec.shape, 1);
  const std::size_t nbytes = global.size() * sizeof(double);
  CAPI_OK(skein_grid_scatter(u, global.data(), s.rank == 0 ? nbytes : 0, 0));
  CAPI_OK(skein_grid_exchange_halos(u));

  skein_kernel* lap = nullptr;
  CAPI_OK(skein_kernel_create_stencil("T u", "T v",
                                      "v = u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4 * u",
                                      "v * v", nullptr, nullptr, "lap", &lap));
  const skein_operand into_v[] = {grid_operand(u), grid_operand(v)};
  const skein_operand into_w[] = {grid_operand(u), grid_operand(w)};
  CAPI_OK(skein_grid_stencil(lap, into_v, 2, SKEIN_REGION_ALL));
  CAPI_OK(skein_grid_stencil(lap, into_w, 2, SKEIN_REGION_INTERIOR));
  CAPI_OK(skein_grid_stencil(lap, into_w, 2, SKEIN_REGION_EDGES));

  // The host's Laplacian with wrap-around, and the sum of its squares.
  const long long ny = 8, nx = 6;
  auto at = [&](long long i, long long j) { return global[((i + ny) % ny) * nx + (j + nx) % nx]; };
  std::vector<double> expected(global.size());
  double squares = 0;
  for (long long i = 0; i < ny; ++i) {
    for (long long j = 0; j < nx; ++j) {
      const double e = at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4 * at(i, j);
      expected[i * nx + j] = e;
      squares += e * e;
    }
  }
  std::vector<double> got(s.rank == 0 ? global.size() : 0);
  for (auto* g : {v, w}) {
    CAPI_OK(skein_grid_gather(g, got.data(), s.rank == 0 ? nbytes : 0, 0));
    if (s.rank == 0) {
      EXPECT_EQ(got, expected);
    }
  }

  // One partial per local block, combined across ranks by the caller.
  std::vector<skein_array*> partials(s.local, nullptr);
  const std::size_t one = 1;
  for (std::size_t l = 0; l < s.local; ++l) {
    CAPI_OK(skein_array_create(s.queue, l, SKEIN_FLOAT64, 1, &one, SKEIN_ORDER_C, &partials[l]));
  }
  // A grid of another shape among the operands: refused on every rank before any block is read.
  {
    GridSpec other = spec;
    other.shape = {spec.shape[0] + 1, spec.shape[1]};
    skein_grid* x = nullptr;
    ASSERT_NO_FATAL_FAILURE(make_grid(s, other, &x));
    const skein_operand mixed[2] = {into_w[0], {SKEIN_OPERAND_GRID, x, 0.0, 0}};
    CAPI_STATUS(
        SKEIN_ERROR_INVALID_ARGUMENT,
        skein_grid_stencil_reduce(lap, mixed, 2, SKEIN_REGION_ALL, partials.data(), s.local));
    EXPECT_NE(std::string(skein_last_error_message()).find("another layout"), std::string::npos)
        << skein_last_error_message();
    CAPI_OK(skein_grid_destroy(x));
  }
  CAPI_OK(skein_grid_stencil_reduce(lap, into_w, 2, SKEIN_REGION_ALL, partials.data(), s.local));
  CAPI_OK(skein_all_reduce(s.comm, s.queue, partials.data(), partials.data(), s.local, SKEIN_SUM));
  for (std::size_t l = 0; l < s.local; ++l) {
    double total = 0;
    CAPI_OK(skein_array_to_host(partials[l], &total, sizeof total));
    EXPECT_EQ(total, squares);
    CAPI_OK(skein_array_destroy(partials[l]));
  }
  CAPI_OK(skein_kernel_destroy(lap));
  for (auto* g : {u, v, w}) CAPI_OK(skein_grid_destroy(g));
}

INSTANTIATE_TEST_SUITE_P(Apis, CApiKernels, testing::ValuesIn(apis()), ApiName());

}  // namespace capi_kernels_test
}  // namespace
