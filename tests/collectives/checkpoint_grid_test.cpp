// SPDX-License-Identifier: BSD-3-Clause
// CheckpointManager with GridArrays (checkpoint_grid.cpp) under mpirun (1..4 ranks) on PoCL
// devices, on both HDF5 paths: arrays of 2 and 3 dimensions (with a components axis, uneven
// splits, members without points, halos) checkpointed on one process grid and restored onto
// another (another grid over the same members, and over another number of members), every point's
// bytes compared with a host reference of any bit pattern; the newest complete checkpoint wins
// (an abandoned write leaves the one before it); the marker says kind "grid" and the global shape;
// a grid checkpoint restores into a DistArray of its shape; a target of another shape, number of
// components or dtype raises LogicError on every rank and reads nothing.
#include <skein/config.hpp>

#if SKEIN_HAS_HDF5
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <skein/checkpoint.hpp>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace checkpoint_grid_test {

using namespace skein;
using ::skein::test::another_layout_rig;
using ::skein::test::expect_error;
using ::skein::test::Rig;
using ::skein::test::runtime_rig;
using ::skein::test::suite_devices_or_none;
using ::skein::test::TempDir;
using ::skein::test::world_rank;
using ::skein::test::world_size;
namespace fs = std::filesystem;

// The bytes of element k of step `salt`: any bit pattern (NaNs, infinities, denormals included),
// so that every bit must survive the round trip. splitmix64.
std::uint64_t point_bits(std::size_t k, std::uint64_t salt) {
  std::uint64_t z =
      static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ull + salt * 0xD1B54A32D192ED03ull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The whole global array of `points` elements of `dtype`, C order, on the host.
std::vector<std::byte> reference_bytes(std::size_t points, Dtype dtype, std::uint64_t salt) {
  const std::size_t item = itemsize(dtype);
  std::vector<std::byte> out(points * item);
  for (std::size_t k = 0; k < points; ++k) {
    const std::uint64_t bits = point_bits(k, salt);
    std::memcpy(out.data() + k * item, &bits, item);  // little-endian: the low bytes
  }
  return out;
}

// Every point of `got` (gathered on rank 0) against the reference; the first differing ones named.
void expect_points(const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                   Dtype dtype, const std::string& what) {
  if (world_rank() != 0) return;
  ASSERT_EQ(got.size(), want.size()) << what;
  const std::size_t item = itemsize(dtype);
  std::size_t bad = 0;
  for (std::size_t k = 0; k < want.size() / item; ++k) {
    if (std::memcmp(got.data() + k * item, want.data() + k * item, item) != 0 && ++bad <= 3) {
      ADD_FAILURE() << what << ": point " << k << " differs from the reference";
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": points that differ";
}

GridLayout layout_on(Communicator& comm, const Shape& shape, std::size_t components,
                     const std::vector<std::size_t>& grid, std::size_t halo) {
  GridOptions o;
  o.components = components;
  o.grid = GridLayout::choose_grid(comm.size(), shape, grid);
  if (halo > 0) o.halo = {halo};
  return GridLayout::over(comm, shape, o);
}

void scatter_step(const GridArray& a, std::uint64_t salt) {
  const std::vector<std::byte> ref = reference_bytes(a.size(), a.dtype(), salt);
  a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
}

enum class Path { mpiio, rank0 };

class GridCheckpoints : public testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (GetParam() == Path::mpiio && !hdf5::parallel_available())
      GTEST_SKIP() << "HDF5 without MPI-IO";
    if (suite_devices_or_none().size() < static_cast<std::size_t>(world_size()))
      GTEST_SKIP() << "needs a device per rank";
    s_ = runtime_rig();
  }
  CheckpointOptions options(std::size_t keep) const {
    CheckpointOptions o;
    o.keep = keep;
    o.file.serial = GetParam() == Path::rank0;
    o.file.max_bytes_per_call = 100;  // several pieces even for these small arrays
    return o;
  }
  Rig s_;
  TempDir dir_{"skein-checkpoint-grid-test"};
};

std::string grid_path_name(const testing::TestParamInfo<Path>& info) {
  return info.param == Path::mpiio ? "MpiIo" : "ThroughRank0";
}

INSTANTIATE_TEST_SUITE_P(Paths, GridCheckpoints, testing::Values(Path::mpiio, Path::rank0),
                         grid_path_name);

struct GridCase {
  Shape shape;
  std::size_t components;
  Dtype dtype;
  std::vector<std::size_t> write_grid;  // 0: chosen; completed to the members
  std::vector<std::size_t> read_grid;
};

const std::vector<GridCase>& grid_cases() {
  static const std::vector<GridCase> cases = {
      // 3-D float64, uneven: members along z, then along x.
      {{5, 4, 3}, 1, Dtype::float64, {0, 1, 1}, {1, 1, 0}},
      // 2-D int32 with 3 components: along rows, then along columns.
      {{7, 5}, 3, Dtype::int32, {0, 1}, {1, 0}},
      // 3-D float32 with 2 components, 2 planes along z: with 3 or 4 members along z some own no
      // points; read on the grid chosen automatically.
      {{2, 9, 3}, 2, Dtype::float32, {0, 1, 1}, {0, 0, 0}},
  };
  return cases;
}

TEST_P(GridCheckpoints, SavedOnOneGridRestoredOnAnother) {
  const auto& cases = grid_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const GridCase& c = cases[i];
    const std::string what = fmt::format("case {}", i);
    const fs::path dir = dir_.sub(fmt::format("case{}", i));
    const GridLayout wl = layout_on(*s_.comm, c.shape, c.components, c.write_grid, 1);
    const GridLayout rl = layout_on(*s_.comm, c.shape, c.components, c.read_grid, 0);
    GridArray a(*s_.comm, wl, c.dtype);
    CheckpointOptions o = options(2);
    o.after_stage = [](CheckpointStage stage, std::int64_t step) {
      if (step == 3 && stage == CheckpointStage::written)
        throw std::runtime_error("simulated crash");
    };
    CheckpointManager m(*s_.comm, dir, o);
    scatter_step(a, 1);
    const CheckpointInfo first = m.write(1, 0.5, {{"u", a}});
    scatter_step(a, 2);
    m.write(2, 1.0, {{"u", a}}, {{"note", std::string("two")}});
    scatter_step(a, 3);
    expect_error<std::runtime_error>(
        [&] {
          m.write(3, 1.5, {{"u", a}});
        },
        {"simulated crash"}, what);

    // The newest complete one (step 2) onto the other grid, every point.
    GridArray b(*s_.comm, rl, c.dtype);
    const auto restored = m.restore_latest({{"u", b}});
    ASSERT_TRUE(restored.has_value()) << what;
    EXPECT_EQ(restored->step, 2) << what;
    EXPECT_EQ(restored->attributes.at("note"), hdf5::AttributeValue(std::string("two"))) << what;
    expect_points(b.gather_bytes(0), reference_bytes(wl.size(), c.dtype, 2), c.dtype,
                  what + ", step 2 on " + rl.describe());
    // An older one by its info, onto the grid that wrote it.
    GridArray back(*s_.comm, wl, c.dtype);
    m.restore(first, {{"u", back}});
    expect_points(back.gather_bytes(0), reference_bytes(wl.size(), c.dtype, 1), c.dtype,
                  what + ", step 1");

    // The marker: kind grid, the global shape with the components; no temporary left but step 3's.
    const auto listed = m.list();
    ASSERT_EQ(listed.size(), 2u) << what;
    EXPECT_TRUE(listed.back().arrays.at("u").grid) << what;
    EXPECT_EQ(listed.back().arrays.at("u").shape, wl.global_shape()) << what;
    if (world_rank() == 0) {
      std::ifstream in(dir / "checkpoint-0000000002.done");
      const nlohmann::json j = nlohmann::json::parse(in);
      EXPECT_EQ(j.at("arrays").at("u").at("kind"), "grid") << what;
      EXPECT_EQ(j.at("arrays").at("u").at("shape").get<Shape>(), wl.global_shape()) << what;
      EXPECT_EQ(j.at("arrays").at("u").at("dtype"), std::string(name(c.dtype))) << what;
    }
  }
}

TEST_P(GridCheckpoints, RestoredOnAnotherNumberOfMembers) {
  const fs::path dir = dir_.sub("members");
  const Shape shape = {6, 8, 7};
  const GridLayout wl = layout_on(*s_.comm, shape, 1, {0, 0, 0}, 1);
  GridArray a(*s_.comm, wl, Dtype::float64);
  scatter_step(a, 9);
  const Shape plane = {13, 7};  // 2-D, for a DistArray (row blocks) too
  const GridLayout pl = layout_on(*s_.comm, plane, 1, {1, 0}, 1);
  GridArray w(*s_.comm, pl, Dtype::float64);
  scatter_step(w, 10);
  {
    CheckpointManager m(*s_.comm, dir, options(2));
    m.write(4, 2.0, {{"u", a}, {"w", w}});
  }
  // Two devices per rank over the MPI backend: 2 x ranks members where the runtime has 4 devices
  // over all ranks (another count on 1, 3 and 4 ranks).
  Rig other = another_layout_rig();
  const GridLayout rl = layout_on(*other.comm, shape, 1, {1, 0, 0}, 1);
  GridArray b(*other.comm, rl, Dtype::float64);
  GridArray w2(*other.comm, layout_on(*other.comm, plane, 1, {0, 1}, 0), Dtype::float64);
  CheckpointManager m(*other.comm, dir, options(2));
  const auto restored = m.restore_latest({{"u", b}, {"w", w2}});
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->step, 4);
  EXPECT_EQ(restored->ranks, world_size());
  expect_points(b.gather_bytes(0), reference_bytes(wl.size(), Dtype::float64, 9), Dtype::float64,
                fmt::format("written on {} member(s) as {}, read on {} as {}", s_.M(),
                            wl.describe(), other.M(), rl.describe()));
  expect_points(w2.gather_bytes(0), reference_bytes(pl.size(), Dtype::float64, 10), Dtype::float64,
                "2-D, read on " + w2.layout().describe());
  // The 2-D grid array into a DistArray (row blocks) of its global shape.
  DistArray rows(*other.comm, plane, Dtype::float64);
  m.restore(*restored, {{"w", rows}});
  expect_points(rows.gather_bytes(0), reference_bytes(pl.size(), Dtype::float64, 10),
                Dtype::float64, "into a DistArray");
}

TEST_P(GridCheckpoints, AnotherShapeOrDtypeIsRefusedOnEveryRank) {
  const fs::path dir = dir_.sub("bad");
  CheckpointManager m(*s_.comm, dir, options(2));
  GridArray a(*s_.comm, layout_on(*s_.comm, {4, 3, 2}, 1, {0, 0, 0}, 1), Dtype::float64);
  scatter_step(a, 5);
  const CheckpointInfo info = m.write(1, 0, {{"u", a}});
  GridArray shape(*s_.comm, layout_on(*s_.comm, {4, 2, 3}, 1, {0, 0, 0}, 0), Dtype::float64);
  expect_error<LogicError>(
      [&] {
        m.restore(info, {{"u", shape}});
      },
      {"(4, 3, 2)", "(4, 2, 3)", "'u'"}, "another shape");
  GridArray components(*s_.comm, layout_on(*s_.comm, {4, 3}, 3, {0, 0}, 0), Dtype::float64);
  expect_error<LogicError>(
      [&] {
        m.restore(info, {{"u", components}});
      },
      {"(4, 3, 2)", "(4, 3, 3)", "grid array"}, "3 components where 2 points were written");
  GridArray dtype(*s_.comm, layout_on(*s_.comm, {4, 3, 2}, 1, {0, 0, 0}, 0), Dtype::float32);
  expect_error<LogicError>(
      [&] {
        m.restore(info, {{"u", dtype}});
      },
      {"float64", "float32"}, "another dtype");
  expect_error<LogicError>([&] { m.restore(info, {{"v", a}}); }, {"no array 'v'"}, "another name");
  // Nothing was read into the refused targets: still zeros.
  const std::vector<std::byte> zeros = dtype.gather_bytes(0);
  if (world_rank() == 0) {
    for (std::byte x : zeros) {
      ASSERT_EQ(x, std::byte{0}) << "a refused restore wrote into its target";
    }
  }
}

}  // namespace checkpoint_grid_test
}  // namespace

#endif  // SKEIN_HAS_HDF5
