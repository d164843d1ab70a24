// SPDX-License-Identifier: BSD-3-Clause
// A raw Program kernel on the blocks of a DistArray with halo rows (issue 36), under mpirun on
// 1..4 ranks: the interiors (local_arrays()) and the blocks with their halos (local_arrays(true),
// and LocalBlock::interior / with_halo one device at a time) as kernel arguments, at row widths
// whose interiors start at no address the device aligns sub-buffers to (11 and 37 float64, 1).
// Each rank checks its own blocks, halo rows included, against host values computed from the
// global row and column, so no rank needs another's data.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cstdint>
#include <skein/dist_array.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace dist_kernel_views_test {

using namespace skein;
using ::skein::test::Placement;
using ::skein::test::placement_name;
using ::skein::test::world_rank;

class DistKernelViews : public ::skein::test::PlacementTest {};

INSTANTIATE_TEST_SUITE_P(Layouts, DistKernelViews,
                         testing::Values(Placement::runtime, Placement::two_per_rank),
                         placement_name);

// Exact in float64.
double value(std::size_t row, std::size_t col) {
  return static_cast<double>((row * 131 + col * 7) % 4099);
}

// out's interior from in's block with one halo row above and below: interior row r is in's row
// r + 1. A kernel written against plain pointers, as a user would.
constexpr const char* kSource = R"(
KERNEL void smooth(GLOBAL_MEM double* out, GLOBAL_MEM const double* in, unsigned int rows,
                   unsigned int cols)
{
    const unsigned int k = get_global_id(0);
    if (k < rows * cols) out[k] = in[k] + 2.0 * in[k + cols] + 4.0 * in[k + 2 * cols];
}
)";

constexpr double kSentinel = -1.5;

// Every element of `out`'s local blocks: the smoothed rows of the periodic global array inside,
// the sentinel in the halo rows.
void check_blocks(const DistArray& out, std::size_t rows, std::size_t cols,
                  const std::string& what) {
  for (std::size_t l = 0; l < out.local_size(); ++l) {
    const RowRange mine = out.local_rows(l);
    const auto got = out.local_with_halo(l).get<double>();
    EXPECT_EQ(got.size(), (mine.size() + 2) * cols) << what;
    if (got.size() != (mine.size() + 2) * cols) continue;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::size_t r = i / cols, c = i % cols;
      double want = kSentinel;
      if (r >= 1 && r <= mine.size()) {
        const std::size_t g = mine.begin + r - 1;
        want = value((g + rows - 1) % rows, c) + 2.0 * value(g, c) + 4.0 * value((g + 1) % rows, c);
      }
      if (got[i] != want) {
        ADD_FAILURE() << what << ": local device " << l << ", element " << i << " (block row " << r
                      << "): " << got[i] << ", want " << want;
        break;
      }
    }
  }
}

TEST_P(DistKernelViews, RawKernelsOnInteriorsAndBlocksWithHalos) {
  const std::size_t M = s_.M();
  for (std::size_t cols : {11u, 37u, 1u}) {
    const std::size_t rows = 3 * M + 2;
    const std::string what = fmt::format("{} x {} float64", rows, cols);
    const Halo halo{1, true};
    DistArray in(*s_.comm, {rows, cols}, Dtype::float64, RowSplit::even(), halo);
    DistArray out(*s_.comm, {rows, cols}, Dtype::float64, RowSplit::even(), halo);
    DistArray again(*s_.comm, {rows, cols}, Dtype::float64, RowSplit::even(), halo);
    std::vector<double> global;
    if (world_rank() == 0) {
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) global.push_back(value(r, c));
      }
    }
    in.scatter(global, 0);
    in.exchange_halos();
    for (std::size_t l = 0; l < out.local_size(); ++l) {
      const std::vector<double> fill(out.local_with_halo(l).size(), kSentinel);
      out.local_with_halo(l).set(fill);
      again.local_with_halo(l).set(fill);
    }
    const Program program(in.queue().context(), kSource, {.name = "dist_kernel_views"});
    const Kernel smooth = program.kernel("smooth");
    // All local blocks in one launch: local_arrays() as the kernel arguments.
    MultiDevice<WorkSize> sizes;
    MultiDevice<std::uint32_t> counts;
    in.for_each_local([&](const LocalBlock& b) {
      sizes.set(b.device_idx, WorkSize((b.rows.size() * cols + 63) / 64 * 64));
      counts.set(b.device_idx, static_cast<std::uint32_t>(b.rows.size()));
    });
    const auto width = static_cast<std::uint32_t>(cols);
    smooth.prepare(in.queue(), sizes, LaunchSizes(64))(out.local_arrays(), in.local_arrays(true),
                                                       counts, width);
    // One block at a time: LocalBlock's views.
    for (std::size_t l = 0; l < in.local_size(); ++l) {
      const LocalBlock& b = in.block(l);
      const std::size_t device[] = {b.device_idx};
      smooth.prepare(in.queue(), sizes, LaunchSizes(64))
          .on_devices(device, again.block(l).interior, b.with_halo,
                      static_cast<std::uint32_t>(b.rows.size()), width);
    }
    in.queue().synchronize();
    check_blocks(out, rows, cols, what + ", local_arrays()");
    check_blocks(again, rows, cols, what + ", block(l)");
    EXPECT_EQ(out.gather<double>(0).size(), world_rank() == 0 ? rows * cols : 0u) << what;
  }
}

}  // namespace dist_kernel_views_test
}  // namespace
