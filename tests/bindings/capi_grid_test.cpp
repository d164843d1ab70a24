// SPDX-License-Identifier: BSD-3-Clause
// Grids through the C API in C and Fortran order, with components: scatter and gather, local
// blocks and their host copies, halo exchange (ghost cells against the host's neighbour values,
// periodic and constant boundaries), and the elementwise operations and reductions.
#include <cmath>
#include <vector>

#include "capi_grid_support.hpp"

namespace {
namespace capi_grid_test {

using namespace skein::test::capi;

class CApiGrids : public CApi {
 protected:
  // Checks every local block's points, and with a halo its ghost cells, against the global values.
  void check_blocks(skein_grid* grid, const GridSpec& spec, const std::vector<double>& global) {
    const std::size_t n = spec.shape.size(), C = spec.components;
    std::size_t count = 0;
    CAPI_OK(skein_grid_local_count(grid, &count));
    ASSERT_EQ(count, s.local);
    for (std::size_t l = 0; l < count; ++l) {
      Dims offset(n), extent(n);
      CAPI_OK(skein_grid_local_block(grid, l, spec.order, offset.data(), extent.data()));
      std::vector<double> block(points(extent) * C);
      CAPI_OK(skein_grid_local_to_host(grid, l, block.data(), block.size() * sizeof(double)));
      each_point(extent, [&](const Dims& y) {
        Dims x(n);
        for (std::size_t a = 0; a < n; ++a) x[a] = offset[a] + y[a];
        for (std::size_t c = 0; c < C; ++c) {
          ASSERT_EQ(block[flat(spec.order, extent, y, C, c)],
                    global[flat(spec.order, spec.shape, x, C, c)]);
        }
      });
      if (spec.halo == 0) continue;
      // The block with its halo as an array view, in the grid's order.
      skein_array* view = nullptr;
      CAPI_OK(skein_grid_local_array(grid, l, 1, &view));
      Dims framed(n);
      for (std::size_t a = 0; a < n; ++a) framed[a] = extent[a] + 2 * spec.halo;
      Dims view_shape(n + (C > 1 ? 1 : 0));
      CAPI_OK(skein_array_shape(view, spec.order, view_shape.data()));
      Dims expected_shape = framed;
      if (C > 1) {
        if (spec.order == SKEIN_ORDER_C)
          expected_shape.push_back(C);
        else
          expected_shape.insert(expected_shape.begin(), C);
      }
      EXPECT_EQ(view_shape, expected_shape);
      std::vector<double> with_halo(points(framed) * C);
      CAPI_OK(skein_array_to_host(view, with_halo.data(), with_halo.size() * sizeof(double)));
      CAPI_OK(skein_array_destroy(view));
      each_point(framed, [&](const Dims& y) {
        // The global point the cell mirrors: wrapped along the periodic axis 0, else -5 beyond
        // the domain.
        Dims x(n);
        bool constant = false;
        for (std::size_t a = 0; a < n; ++a) {
          const long long N = static_cast<long long>(spec.shape[a]);
          long long g =
              static_cast<long long>(offset[a] + y[a]) - static_cast<long long>(spec.halo);
          if (g < 0 || g >= N) {
            if (a == 0)
              g = (g + N) % N;
            else
              constant = true;
          }
          x[a] = static_cast<std::size_t>(g);
        }
        for (std::size_t c = 0; c < C; ++c) {
          const double expected = constant ? -5.0 : global[flat(spec.order, spec.shape, x, C, c)];
          ASSERT_EQ(with_halo[flat(spec.order, framed, y, C, c)], expected)
              << "block " << l << " cell " << testing::PrintToString(y) << " component " << c;
        }
      });
    }
  }
};

TEST_P(CApiGrids, ScatterGatherBlocksAndHalosInBothOrders) {
  const GridSpec specs[] = {
      {.shape = {13}, .order = SKEIN_ORDER_C, .components = 1, .halo = 1, .periodic_first = true},
      {.shape = {7, 6},
       .order = SKEIN_ORDER_FORTRAN,
       .components = 2,
       .halo = 1,
       .periodic_first = true},
      {.shape = {6, 5}, .order = SKEIN_ORDER_C, .components = 1, .halo = 1, .periodic_first = true},
      {.shape = {5, 4, 3},
       .order = SKEIN_ORDER_C,
       .components = 2,
       .halo = 1,
       .periodic_first = true},
      {.shape = {5, 4, 3},
       .order = SKEIN_ORDER_FORTRAN,
       .components = 1,
       .halo = 1,
       .periodic_first = true},
  };
  for (const GridSpec& spec : specs) {
    SCOPED_TRACE(testing::PrintToString(spec.shape) + (spec.order == SKEIN_ORDER_C ? " C" : " F") +
                 " components " + std::to_string(spec.components));
    skein_grid* grid = nullptr;
    ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &grid));
    const std::vector<double> global = global_values(spec.shape, spec.components);
    const std::size_t nbytes = global.size() * sizeof(double);
    CAPI_OK(skein_grid_scatter(grid, s.rank == 0 ? global.data() : nullptr, nbytes, 0));
    const int root = s.size - 1;
    std::vector<double> back(s.rank == root ? global.size() : 0);
    CAPI_OK(skein_grid_gather(grid, back.data(), s.rank == root ? nbytes : 0, root));
    if (s.rank == root) {
      EXPECT_EQ(back, global);
    }
    CAPI_OK(skein_grid_exchange_halos(grid));
    check_blocks(grid, spec, global);
    CAPI_OK(skein_grid_destroy(grid));
  }
}

TEST_P(CApiGrids, LocalFromHostAndExchangeMany) {
  // Two grids filled block by block from the host, their halos exchanged in one call.
  const GridSpec spec{.shape = {6, 7},
                      .order = SKEIN_ORDER_FORTRAN,
                      .components = 1,
                      .halo = 1,
                      .periodic_first = true};
  skein_grid* grids[2] = {nullptr, nullptr};
  const std::vector<double> global = global_values(spec.shape, 1);
  for (auto*& g : grids) {
    ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &g));
    for (std::size_t l = 0; l < s.local; ++l) {
      Dims offset(2), extent(2);
      CAPI_OK(skein_grid_local_block(g, l, spec.order, offset.data(), extent.data()));
      std::vector<double> block(points(extent));
      each_point(extent, [&](const Dims& y) {
        block[flat(spec.order, extent, y, 1, 0)] =
            global[flat(spec.order, spec.shape, {offset[0] + y[0], offset[1] + y[1]}, 1, 0)];
      });
      CAPI_OK(skein_grid_local_from_host(g, l, block.data(), block.size() * sizeof(double)));
    }
  }
  CAPI_OK(skein_grid_exchange_halos_many(grids, 2));
  for (auto* g : grids) {
    check_blocks(g, spec, global);
    CAPI_OK(skein_grid_destroy(g));
  }
}

TEST_P(CApiGrids, OperationsAndReductions) {
  const GridSpec spec{.shape = {9, 5}, .order = SKEIN_ORDER_C};
  skein_grid *x = nullptr, *y = nullptr, *out = nullptr;
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &x));
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &y));
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &out));
  const std::vector<double> global = global_values(spec.shape, 1);
  const std::size_t nbytes = global.size() * sizeof(double);
  CAPI_OK(skein_grid_scatter(x, global.data(), s.rank == 0 ? nbytes : 0, 0));
  CAPI_OK(skein_grid_fill(y, 2.0));
  CAPI_OK(skein_grid_axpy(3.0, x, y, out));
  std::vector<double> got(s.rank == 0 ? global.size() : 0);
  CAPI_OK(skein_grid_gather(out, got.data(), s.rank == 0 ? nbytes : 0, 0));
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 3 * global[i] + 2);
  CAPI_OK(skein_grid_scale(0.5, x, out));
  CAPI_OK(skein_grid_gather(out, got.data(), s.rank == 0 ? nbytes : 0, 0));
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 0.5 * global[i]);
  CAPI_OK(skein_grid_copy(x, out));
  CAPI_OK(skein_grid_gather(out, got.data(), s.rank == 0 ? nbytes : 0, 0));
  if (s.rank == 0) {
    EXPECT_EQ(got, global);
  }

  double sum = 0, squares = 0;
  for (double v : global) sum += v, squares += v * v;
  double r = 0;
  CAPI_OK(skein_grid_sum(x, &r));
  EXPECT_EQ(r, sum);
  CAPI_OK(skein_grid_min(x, &r));
  EXPECT_EQ(r, 1.0);
  CAPI_OK(skein_grid_max(x, &r));
  EXPECT_EQ(r, double(global.size()));
  CAPI_OK(skein_grid_dot(x, y, &r));
  EXPECT_EQ(r, 2 * sum);
  CAPI_OK(skein_grid_nrm2(x, &r));
  EXPECT_NEAR(r, std::sqrt(squares), 1e-12 * std::sqrt(squares));
  for (auto* g : {x, y, out}) CAPI_OK(skein_grid_destroy(g));
}

INSTANTIATE_TEST_SUITE_P(Apis, CApiGrids, testing::ValuesIn(apis()), ApiName());

}  // namespace capi_grid_test
}  // namespace
