// SPDX-License-Identifier: BSD-3-Clause
// HDF5 of GridArrays (File::write / File::read of a GridArray, hdf5_grid.cpp), on both paths to the
// file (MPI-IO: every rank its own blocks as hyperslabs; through rank 0): arrays of 2 and 3
// dimensions, with a components axis, float64 / float32 / int32 / int16, split unevenly and with
// members without points, written on one process grid and read on another (also 2 x 2 x 1 over 4
// members read as 3 x 1 x 1 over 3), in pieces smaller than a block, with and without chunks,
// checksums and compression. The file is checked with plain HDF5 calls (no Skein code) against a
// host reference, and the array read back is gathered and compared with the same reference. On
// the MPI-IO path every rank stages only its own blocks' bytes on its host (io's internal counter);
// through rank 0, rank 0 stages all of them. A damaged chunk read by some ranks raises on all.
// GridHdf5Cross writes files on 4 ranks that other rank counts read back and h5py checks
// (hdf5_grid_check.py; ctest hdf5.grid.*).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <skein/detail/hdf5_staging.hpp>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/hdf5.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "checks.hpp"
#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace hdf5_grid_test {

using namespace skein;
using ::skein::test::expect_error;
using ::skein::test::Rig;
using ::skein::test::runtime_rig;
using ::skein::test::suite_devices_or_none;
using ::skein::test::TempDir;
using ::skein::test::world_rank;
using ::skein::test::world_size;

// The reference: element k of the global array (C order, components last) of a dataset `salt`.
// Integers from -10005 to 10005 (exact in int16 and up), plus a quarter in floats (exact in
// float32).
double reference(std::size_t k, std::size_t salt, Dtype dtype) {
  const double whole = static_cast<double>((k * 7919 + 13 + salt * 101) % 20011) - 10005.0;
  return is_floating(dtype) ? whole + 0.25 : whole;
}

template <class T>
void put(std::vector<std::byte>& out, std::size_t k, double v) {
  const T x = static_cast<T>(v);
  std::memcpy(out.data() + k * sizeof(T), &x, sizeof(T));
}

// The whole global array as `dtype`'s bytes.
std::vector<std::byte> reference_bytes(std::size_t n, std::size_t salt, Dtype dtype) {
  std::vector<std::byte> out(n * itemsize(dtype));
  for (std::size_t k = 0; k < n; ++k) {
    const double v = reference(k, salt, dtype);
    switch (dtype) {
      case Dtype::float64: put<double>(out, k, v); break;
      case Dtype::float32: put<float>(out, k, v); break;
      case Dtype::int32: put<std::int32_t>(out, k, v); break;
      case Dtype::int16: put<std::int16_t>(out, k, v); break;
      default: ADD_FAILURE() << "no reference for " << name(dtype); break;
    }
  }
  return out;
}

// The dataset as plain HDF5 reads it on this rank (no Skein code), converted to float64 by HDF5.
std::vector<double> read_plain(const std::string& path, const std::string& name,
                               std::vector<hsize_t>& dims) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0);
  const hid_t space = H5Dget_space(dataset);
  dims.assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)), 0);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  std::size_t n = 1;
  for (hsize_t d : dims) n *= d;
  std::vector<double> values(n);
  EXPECT_GE(H5Dread(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Sclose(space);
  H5Dclose(dataset);
  H5Fclose(file);
  return values;
}

// On rank 0 of the world: the file's dataset holds the reference, in the global shape.
void expect_file_holds(const std::string& path, const std::string& name, const GridLayout& layout,
                       std::size_t salt, Dtype dtype) {
  if (world_rank() != 0) return;
  std::vector<hsize_t> dims;
  const std::vector<double> plain = read_plain(path, name, dims);
  const Shape global = layout.global_shape();
  EXPECT_EQ(std::vector<std::size_t>(dims.begin(), dims.end()),
            std::vector<std::size_t>(global.begin(), global.end()));
  std::vector<double> want(layout.size());
  for (std::size_t k = 0; k < want.size(); ++k) want[k] = reference(k, salt, dtype);
  EXPECT_EQ(plain, want) << "the file's dataset differs from the reference (" << name << ", "
                         << skein::name(dtype) << ")";
}

// Every element of `b` (gathered on the communicator's rank 0) against the reference.
void expect_array_holds(const GridArray& b, std::size_t salt, const std::string& what) {
  const std::vector<std::byte> back = b.gather_bytes(0);
  if (b.rank() != 0) return;
  const std::vector<std::byte> want = reference_bytes(b.size(), salt, b.dtype());
  EXPECT_TRUE(back == want) << what << ": the array read back differs from the reference";
}

GridLayout layout_on(Communicator& comm, const Shape& shape, std::size_t components,
                     const std::vector<std::size_t>& grid, std::size_t halo) {
  GridOptions o;
  o.components = components;
  o.grid = GridLayout::choose_grid(comm.size(), shape, grid);
  if (halo > 0) o.halo = {halo};
  return GridLayout::over(comm, shape, o);
}

enum class Path { mpiio, rank0 };

std::string path_name(const testing::TestParamInfo<Path>& info) {
  return info.param == Path::mpiio ? "MpiIo" : "ThroughRank0";
}

class GridHdf5Paths : public testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (!hdf5::available()) GTEST_SKIP() << "built without HDF5";
    if (GetParam() == Path::mpiio && !hdf5::parallel_available())
      GTEST_SKIP() << "HDF5 without MPI-IO";
    if (suite_devices_or_none().size() < static_cast<std::size_t>(world_size()))
      GTEST_SKIP() << "needs a device per rank";
  }
  hdf5::FileOptions file_options(std::size_t max_bytes) const {
    hdf5::FileOptions o;
    o.serial = GetParam() == Path::rank0;
    if (max_bytes > 0) o.max_bytes_per_call = max_bytes;
    return o;
  }
  TempDir dir_{"skein-hdf5-grid-test"};
};

INSTANTIATE_TEST_SUITE_P(Paths, GridHdf5Paths, testing::Values(Path::mpiio, Path::rank0),
                         path_name);

struct Case {
  Shape shape;
  std::size_t components;
  Dtype dtype;
  std::vector<std::size_t> write_grid;  // 0: chosen; completed to the members
  std::vector<std::size_t> read_grid;
  hdf5::WriteOptions options;
  std::size_t max_bytes = 0;  // FileOptions::max_bytes_per_call; 0: the default
};

TEST_P(GridHdf5Paths, WriteOnOneGridReadOnAnother) {
  Rig s = runtime_rig();
  const std::size_t M = s.M();
  hdf5::WriteOptions compressed;
  compressed.compression = 4;
  hdf5::WriteOptions plain;
  plain.checksum = false;
  hdf5::WriteOptions row_chunks;
  row_chunks.chunk_rows = 1;
  const std::vector<Case> cases = {
      // 2-D with 3 components: the members along one axis, then along the other; pieces of 40
      // bytes (one plane of a block is 15 to 105 bytes: several pieces per block, at least one
      // plane).
      {{7, 5}, 3, Dtype::float64, {M, 0}, {0, M}, {}, 40},
      // 3-D, uneven: members along z, then along x; compressed.
      {{5, 4, 3}, 1, Dtype::float32, {M, 1, 0}, {1, 0, M}, compressed, 0},
      // 3-D with 2 components and 2 planes along z: with 3 or 4 members along z some own no points;
      // contiguous, without a checksum.
      {{2, 9, 3}, 2, Dtype::int32, {M, 1, 1}, {0, 0, 0}, plain, 0},
      // Chunks of one row shared by the blocks of several members; pieces of one plane.
      {{6, 7, 5}, 1, Dtype::int16, {0, 0, 0}, {1, M, 1}, row_chunks, 1},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(testing::Message() << "case " << i);
    const std::string path = dir_.file("grid" + std::to_string(i) + ".h5");
    const GridLayout wl = layout_on(*s.comm, c.shape, c.components, c.write_grid, 1);
    const GridLayout rl = layout_on(*s.comm, c.shape, c.components, c.read_grid, 0);
    GridArray a(*s.comm, wl, c.dtype);
    const std::vector<std::byte> ref = reference_bytes(wl.size(), i, c.dtype);
    a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
    {
      auto f = hdf5::File::create(*s.comm, path, file_options(c.max_bytes));
      EXPECT_EQ(f.parallel(), GetParam() == Path::mpiio);
      hdf5::WriteOptions o = c.options;
      o.step = 3;
      f.write("fields/u", a, o);
      f.close();
    }
    expect_file_holds(path, "fields/u", wl, i, c.dtype);
    GridArray b(*s.comm, rl, c.dtype);
    auto g = hdf5::File::open(*s.comm, path, hdf5::Access::read_only, file_options(c.max_bytes));
    g.read("fields/u", b);
    expect_array_holds(b, i, "read on grid " + rl.describe());
    const hdf5::DatasetInfo info = g.info("fields/u");
    EXPECT_EQ(info.step, std::optional<std::int64_t>(3));
    EXPECT_EQ(info.layout, wl.describe());
    EXPECT_EQ(info.compression, c.options.compression);
    EXPECT_EQ(info.checksum, c.options.checksum);
  }
}

// A communicator of `members` members over the first min(ranks, members) ranks of the world: rank
// r takes members / ranks of the suite's devices (one more for the first members % ranks), after
// the ones the ranks before it took (modulo their count), over the MPI backend (ranks may share
// devices). The other ranks get no communicator (comm is null) and sit the test out.
struct MembersRig {
  MembersRig(std::size_t members) {
    const auto devices = suite_devices_or_none();
    const std::size_t ranks =
        std::min<std::size_t>(static_cast<std::size_t>(world_size()), members);
    const auto r = static_cast<std::size_t>(world_rank());
    MPI_Comm_split(MPI_COMM_WORLD, r < ranks ? 0 : MPI_UNDEFINED, world_rank(), &mpi);
    if (r >= ranks) return;
    std::size_t first = 0;
    for (std::size_t q = 0; q < r; ++q) first += members / ranks + (q < members % ranks ? 1 : 0);
    const std::size_t count = members / ranks + (r < members % ranks ? 1 : 0);
    std::vector<Device> mine;
    for (std::size_t i = 0; i < count; ++i) mine.push_back(devices[(first + i) % devices.size()]);
    const Context context = Context::from_devices(std::span<const Device>(mine));
    std::vector<std::size_t> idx(count);
    for (std::size_t i = 0; i < count; ++i) idx[i] = i;
    comm = std::make_unique<Communicator>(mpi, context, idx, CollectiveBackend::mpi);
  }
  ~MembersRig() {
    comm.reset();
    if (mpi != MPI_COMM_NULL) MPI_Comm_free(&mpi);
  }
  MembersRig(const MembersRig&) = delete;
  MembersRig& operator=(const MembersRig&) = delete;

  MPI_Comm mpi = MPI_COMM_NULL;
  std::unique_ptr<Communicator> comm;
};

// The restart: written over a 2 x 2 x 1 grid of 4 members, read over 3 x 1 x 1 of 3 members
// (on 3 ranks where there are that many; the fourth sits out), with members without points in the
// writer (one point along y over 2 positions) or in the reader (2 planes over 3 positions).
TEST_P(GridHdf5Paths, FourMembersToThree) {
  // The most members a rank gets (of 4 over min(ranks, 4) ranks) must be on distinct devices.
  const std::size_t ranks = std::min<std::size_t>(static_cast<std::size_t>(world_size()), 4);
  if (suite_devices_or_none().size() < (4 + ranks - 1) / ranks)
    GTEST_SKIP() << "needs more devices per rank";
  const std::vector<Case> cases = {
      {{6, 5, 4}, 2, Dtype::float64, {2, 2, 1}, {3, 1, 1}, {}, 0},
      {{2, 5, 4}, 1, Dtype::float32, {2, 2, 1}, {3, 1, 1}, {}, 48},
      {{3, 1, 4}, 3, Dtype::int32, {2, 2, 1}, {3, 1, 1}, {}, 0},
  };
  const std::string path = dir_.file("four-to-three.h5");
  {
    MembersRig four(4);
    auto f = hdf5::File::create(*four.comm, path, file_options(0));
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const GridLayout wl = layout_on(*four.comm, c.shape, c.components, c.write_grid, 1);
      ASSERT_EQ(wl.grid(), c.write_grid);
      GridArray a(*four.comm, wl, c.dtype);
      const std::vector<std::byte> ref = reference_bytes(wl.size(), 10 + i, c.dtype);
      a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
      f.write("u" + std::to_string(i), a, {.step = 7});
    }
    f.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MembersRig three(3);
  if (three.comm) {
    auto g = hdf5::File::open(*three.comm, path, hdf5::Access::read_only,
                              file_options(cases[1].max_bytes));
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      SCOPED_TRACE(testing::Message() << "case " << i);
      const GridLayout rl = layout_on(*three.comm, c.shape, c.components, c.read_grid, 1);
      ASSERT_EQ(rl.grid(), c.read_grid);
      expect_file_holds(path, "u" + std::to_string(i), rl, 10 + i, c.dtype);
      GridArray b(*three.comm, rl, c.dtype);
      g.read("u" + std::to_string(i), b);
      expect_array_holds(b, 10 + i, "read on 3 x 1 x 1");
    }
    g.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// This rank's members' points, in bytes.
std::uint64_t own_bytes(const GridArray& a) {
  std::uint64_t n = 0;
  for (const auto& b : a.blocks())
    n += b.block.points() * a.layout().components() * itemsize(a.dtype());
  return n;
}

// What each rank stages on its host: on the MPI-IO path its own blocks only, rank 0 included, so
// the blocks did not travel through rank 0 (in Skein: MPI-IO's own aggregation is not counted);
// through rank 0, rank 0 stages every block.
TEST_P(GridHdf5Paths, EachRankStagesItsOwnBlocks) {
  Rig s = runtime_rig();
  const GridLayout layout = layout_on(*s.comm, {9, 6, 5}, 2, {}, 1);
  GridArray a(*s.comm, layout, Dtype::float64);
  const std::vector<std::byte> ref = reference_bytes(layout.size(), 20, Dtype::float64);
  a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
  const std::uint64_t mine = own_bytes(a);
  const std::uint64_t expected = GetParam() == Path::rank0 && world_rank() == 0 ? a.nbytes() : mine;
  auto f = hdf5::File::create(*s.comm, dir_.file("staged.h5"), file_options(0));
  const std::uint64_t before_write = detail::hdf5_staged_bytes();
  f.write("u", a);
  EXPECT_EQ(detail::hdf5_staged_bytes() - before_write, expected)
      << "bytes staged by rank " << world_rank() << " writing (its own blocks: " << mine << ")";
  GridArray b(*s.comm, layout, Dtype::float64);
  const std::uint64_t before_read = detail::hdf5_staged_bytes();
  f.read("u", b);
  EXPECT_EQ(detail::hdf5_staged_bytes() - before_read, expected)
      << "bytes staged by rank " << world_rank() << " reading (its own blocks: " << mine << ")";
  f.close();
  expect_array_holds(b, 20, "read back");
}

// On rank 0, with plain HDF5: flips one byte in the middle of the chunk of `name` that holds row
// `row` (its Fletcher32 checksum then fails on every read of that chunk).
void damage_chunk(const std::string& path, const std::string& name, hsize_t row) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  std::vector<hsize_t> at(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)), 0);
  at[0] = row;
  unsigned mask = 0;
  haddr_t address = HADDR_UNDEF;
  hsize_t bytes = 0;
  EXPECT_GE(H5Dget_chunk_info_by_coord(d, at.data(), &mask, &address, &bytes), 0) << name;
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(file);
  ASSERT_NE(address, HADDR_UNDEF) << name;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto offset = static_cast<std::streamoff>(address + bytes / 2);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
  ASSERT_TRUE(f.good()) << "flipping a byte of " << path;
}

// A damaged chunk, which only the ranks whose blocks hold its rows read: every rank raises the
// checksum's RuntimeError (none is left waiting), and the file's other dataset still reads back.
TEST_P(GridHdf5Paths, DamagedChunkRaisesOnEveryRank) {
  Rig s = runtime_rig();
  const std::string path = dir_.file("damaged.h5");
  const GridLayout layout = layout_on(*s.comm, {8, 6, 5}, 2, {}, 1);
  hdf5::WriteOptions two_rows;
  two_rows.chunk_rows = 2;
  {
    auto f = hdf5::File::create(*s.comm, path, file_options(0));
    for (std::size_t salt : {40, 41}) {
      GridArray a(*s.comm, layout, Dtype::float64);
      const std::vector<std::byte> ref = reference_bytes(layout.size(), salt, Dtype::float64);
      a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
      f.write(salt == 40 ? "u" : "good", a, two_rows);
    }
    f.close();
  }
  if (world_rank() == 0) damage_chunk(path, "u", 7);
  MPI_Barrier(MPI_COMM_WORLD);
  auto g = hdf5::File::open(*s.comm, path, hdf5::Access::read_only, file_options(0));
  GridArray b(*s.comm, layout_on(*s.comm, {8, 6, 5}, 2, {0, 0, 1}, 0), Dtype::float64);
  expect_error<RuntimeError>([&] { g.read("u", b); },
                             {path, "Fletcher32 checksum failed", "dataset 'u'"},
                             "read of the damaged dataset");
  g.read("good", b);
  expect_array_holds(b, 41, "the undamaged dataset after the error");
  g.close();
}

TEST(GridHdf5, ReadRefusesAnotherShape) {
  if (!hdf5::available()) GTEST_SKIP() << "built without HDF5";
  Rig s = runtime_rig();
  TempDir dir{"skein-hdf5-grid-test"};
  GridArray a(*s.comm, GridLayout::over(*s.comm, {4, 3, 2}), Dtype::float64);
  auto f = hdf5::File::create(*s.comm, dir.file("shape.h5"));
  f.write("u", a);
  GridArray b(*s.comm, GridLayout::over(*s.comm, {4, 2, 3}), Dtype::float64);
  EXPECT_THROW(f.read("u", b), LogicError);
  GridArray c(*s.comm, GridLayout::over(*s.comm, {4, 3, 2}), Dtype::float32);
  EXPECT_THROW(f.read("u", c), LogicError);
  f.close();
}

// ---- files for other rank counts and for h5py (ctest hdf5.grid.*) ----------------------------

struct CrossDataset {
  std::string name;
  Shape shape;
  std::size_t components;
  Dtype dtype;
  std::size_t salt;
};

// hdf5_grid_check.py holds the same list and the same reference.
const std::vector<CrossDataset>& cross_datasets() {
  static const std::vector<CrossDataset> all = {
      {"u", {6, 5, 4}, 1, Dtype::float64, 31},
      {"v", {7, 5}, 3, Dtype::float32, 32},
      {"n", {3, 1, 4}, 2, Dtype::int32, 33},  // one point along y over 2 positions: empty members
  };
  return all;
}

const char* cross_dir() { return std::getenv("SKEIN_TEST_HDF5_DIR"); }

std::string cross_file(bool serial) {
  return std::string(cross_dir()) + (serial ? "/grid-rank0.h5" : "/grid-mpiio.h5");
}

TEST(GridHdf5Cross, Write) {
  if (!cross_dir()) GTEST_SKIP() << "run by the hdf5.grid.* tests (SKEIN_TEST_HDF5_DIR)";
  if (world_rank() == 0) std::filesystem::create_directories(cross_dir());
  MPI_Barrier(MPI_COMM_WORLD);
  Rig s = runtime_rig();
  for (bool serial : {false, true}) {
    if (!serial && !hdf5::parallel_available()) continue;
    hdf5::FileOptions o;
    o.serial = serial;
    o.max_bytes_per_call = 64;  // several pieces per block
    auto f = hdf5::File::create(*s.comm, cross_file(serial), o);
    for (const auto& d : cross_datasets()) {
      const std::vector<std::size_t> grid =
          d.shape.size() == 3 ? std::vector<std::size_t>{2, 2, 1} : std::vector<std::size_t>{2, 0};
      GridArray a(*s.comm, layout_on(*s.comm, d.shape, d.components, grid, 1), d.dtype);
      const std::vector<std::byte> ref = reference_bytes(a.size(), d.salt, d.dtype);
      a.scatter(std::span<const std::byte>(world_rank() == 0 ? ref : std::vector<std::byte>{}), 0);
      f.write(d.name, a, {.step = static_cast<std::int64_t>(d.salt)});
    }
    f.close();
  }
}

TEST(GridHdf5Cross, Read) {
  if (!cross_dir()) GTEST_SKIP() << "run by the hdf5.grid.* tests (SKEIN_TEST_HDF5_DIR)";
  Rig s = runtime_rig();
  for (bool serial : {false, true}) {
    if (!serial && !hdf5::parallel_available()) continue;
    hdf5::FileOptions o;
    o.serial = serial;
    auto f = hdf5::File::open(*s.comm, cross_file(serial), hdf5::Access::read_only, o);
    for (const auto& d : cross_datasets()) {
      SCOPED_TRACE(d.name);
      // Another grid than the writer's: every member along the last axis.
      std::vector<std::size_t> grid(d.shape.size(), 1);
      grid.back() = 0;
      GridArray b(*s.comm, layout_on(*s.comm, d.shape, d.components, grid, 0), d.dtype);
      f.read(d.name, b);
      expect_array_holds(
          b, d.salt, cross_file(serial) + " read on " + std::to_string(world_size()) + " ranks");
    }
    f.close();
  }
}

}  // namespace hdf5_grid_test
}  // namespace
