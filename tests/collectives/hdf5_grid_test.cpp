// SPDX-License-Identifier: BSD-3-Clause
// HDF5 of GridArrays (File::write / File::read of a GridArray, hdf5_grid.cpp): a 2-D array with
// components and 3-D arrays, split unevenly and with members without points, written on one process
// grid and read on another; the file is checked with plain HDF5 calls (no Skein code) against a
// host reference, and the array read back is gathered and compared with the same reference.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <skein/grid_array.hpp>
#include <skein/grid_layout.hpp>
#include <skein/hdf5.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"

namespace {
namespace hdf5_grid_test {

using namespace skein;
using ::skein::test::Rig;
using ::skein::test::runtime_rig;
using ::skein::test::TempDir;
using ::skein::test::world_rank;

// The reference: element k of the global array (C order, components last). Exact in float64.
double reference(std::size_t k) { return static_cast<double>((k * 7919 + 13) % 100003) - 500.25; }

std::vector<double> reference_array(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = reference(k);
  return v;
}

// The dataset as plain HDF5 reads it on rank 0 (no Skein code): its dims and its values.
std::vector<double> read_plain(const std::string& path, const std::string& name, std::vector<hsize_t>& dims) {
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

struct Case {
  Shape shape;
  std::size_t components;
  std::vector<std::size_t> write_grid;  // 0: chosen
  std::vector<std::size_t> read_grid;   // the other grid
};

// write_grid and read_grid are completed to the members (0: chosen), so every rank count fits.
void write_then_read(Rig& s, const Case& c, const std::string& path) {
  GridOptions wo;
  wo.components = c.components;
  wo.grid = GridLayout::choose_grid(s.M(), c.shape, c.write_grid);
  wo.halo = {1};
  GridOptions ro = wo;
  ro.grid = GridLayout::choose_grid(s.M(), c.shape, c.read_grid);
  ro.halo = {};
  const GridLayout wl = GridLayout::over(*s.comm, c.shape, wo);
  const GridLayout rl = GridLayout::over(*s.comm, c.shape, ro);
  const std::vector<double> ref = reference_array(wl.size());

  GridArray a(*s.comm, wl, Dtype::float64);
  a.scatter(world_rank() == 0 ? ref : std::vector<double>{}, 0);
  {
    auto f = hdf5::File::create(*s.comm, path);
    f.write("fields/u", a, {.step = 3});
    f.close();
  }
  if (world_rank() == 0) {
    std::vector<hsize_t> dims;
    const std::vector<double> plain = read_plain(path, "fields/u", dims);
    const Shape global = wl.global_shape();
    EXPECT_EQ(std::vector<std::size_t>(dims.begin(), dims.end()), std::vector<std::size_t>(global.begin(), global.end()));
    EXPECT_EQ(plain, ref) << "the file's dataset differs from the reference";
  }
  GridArray b(*s.comm, rl, Dtype::float64);
  auto g = hdf5::File::open(*s.comm, path);
  g.read("fields/u", b);
  const std::vector<double> back = b.gather<double>(0);
  if (world_rank() == 0) {
    EXPECT_EQ(back, ref) << "read on grid " << rl.describe();
  }
  EXPECT_EQ(g.info("fields/u").step, std::optional<std::int64_t>(3));
  EXPECT_NE(g.info("fields/u").layout.find("grid"), std::string::npos);
}

TEST(GridHdf5, WriteOnOneGridReadOnAnother) {
  if (!hdf5::available()) GTEST_SKIP() << "built without HDF5";
  Rig s = runtime_rig();
  TempDir dir{"skein-hdf5-grid-test"};
  const std::size_t M = s.M();
  const std::vector<Case> cases = {
      // 2-D with 3 components: the members along one axis, then along the other.
      {{7, 5}, 3, {M, 0}, {0, M}},
      // 3-D, uneven: members along z, then along x.
      {{5, 4, 3}, 1, {M, 1, 0}, {1, 0, M}},
      // 3-D with 2 components and 2 planes along z: with 3 or 4 members along z some own no points.
      {{2, 9, 3}, 2, {M, 1, 1}, {0, 0, 0}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "case " << i);
    write_then_read(s, cases[i], dir.file("grid" + std::to_string(i) + ".h5"));
  }
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
  f.close();
}

}  // namespace hdf5_grid_test
}  // namespace
