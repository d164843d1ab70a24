// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files and checkpoints through the C API: a grid written, read back into a grid of another
// process grid and compared with the host's values; an attribute; a checkpoint written, the grid
// overwritten, and the newest checkpoint restored.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "capi_grid_support.hpp"

namespace {
namespace capi_io_test {

using namespace skein::test::capi;

class CApiIo : public CApi {
 protected:
  void SetUp() override {
    CApi::SetUp();
    if (!skein_has_hdf5()) GTEST_SKIP() << "this build has no HDF5";
    // Rank 0's temporary directory, for every rank.
    char name[256] = {};
    if (s.rank == 0) {
      char pattern[] = "/tmp/skein-capi-io-XXXXXX";
      if (mkdtemp(pattern) != nullptr) std::snprintf(name, sizeof name, "%s", pattern);
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    dir_ = name;
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (s.rank == 0 && !dir_.empty()) std::filesystem::remove_all(dir_);
    CApi::TearDown();
  }
  std::string dir_;
};

TEST_P(CApiIo, Hdf5ReadBackIntoAnotherProcessGrid) {
  const std::size_t M = s.members;
  GridSpec spec{
      .shape = {4 * M, 5}, .order = SKEIN_ORDER_FORTRAN, .components = 2, .process_grid = {M, 1}};
  skein_grid *x = nullptr, *y = nullptr;
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &x));
  spec.process_grid = {1, M};
  spec.shape = {4 * M, 5};
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &y));
  std::size_t grid[2] = {};
  CAPI_OK(skein_grid_process_grid(y, SKEIN_ORDER_FORTRAN, grid));
  EXPECT_EQ(grid[0], 1u);
  EXPECT_EQ(grid[1], M);
  const std::vector<double> global = global_values(spec.shape, 2);
  const std::size_t nbytes = global.size() * sizeof(double);
  CAPI_OK(skein_grid_scatter(x, global.data(), s.rank == 0 ? nbytes : 0, 0));

  const std::string path = dir_ + "/fields.h5";
  skein_hdf5_file* file = nullptr;
  CAPI_OK(skein_hdf5_create(s.comm, path.c_str(), &file));
  CAPI_OK(skein_hdf5_write_grid(file, "x", x));
  CAPI_OK(skein_hdf5_set_attribute(file, "/", "time", 0.25));
  CAPI_OK(skein_hdf5_close(file));

  CAPI_OK(skein_hdf5_open(s.comm, path.c_str(), 0, &file));
  CAPI_OK(skein_hdf5_read_grid(file, "x", y));
  double t = 0;
  CAPI_OK(skein_hdf5_get_attribute(file, "/", "time", &t));
  EXPECT_EQ(t, 0.25);
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_hdf5_get_attribute(file, "/", "missing", &t));
  CAPI_OK(skein_hdf5_close(file));
  std::vector<double> got(s.rank == 0 ? global.size() : 0);
  CAPI_OK(skein_grid_gather(y, got.data(), s.rank == 0 ? nbytes : 0, 0));
  if (s.rank == 0) {
    EXPECT_EQ(got, global);
  }
  CAPI_OK(skein_grid_destroy(x));
  CAPI_OK(skein_grid_destroy(y));
}

TEST_P(CApiIo, CheckpointWriteAndRestoreLatest) {
  const GridSpec spec{.shape = {6, 5}, .order = SKEIN_ORDER_C, .components = 1, .halo = 1};
  skein_grid* x = nullptr;
  ASSERT_NO_FATAL_FAILURE(make_grid(s, spec, &x));
  const std::vector<double> global = global_values(spec.shape, 1);
  const std::size_t nbytes = global.size() * sizeof(double);
  CAPI_OK(skein_grid_scatter(x, global.data(), s.rank == 0 ? nbytes : 0, 0));
  skein_checkpoint* ck = nullptr;
  CAPI_OK(skein_checkpoint_create(s.comm, (dir_ + "/ck").c_str(), 2, &ck));
  const char* names[] = {"x"};
  const skein_grid* grids[] = {x};
  int restored = -1;
  int64_t step = -1;
  double time = -1;
  CAPI_OK(skein_checkpoint_restore_latest(ck, names, grids, 1, &restored, &step, &time));
  EXPECT_EQ(restored, 0);
  CAPI_OK(skein_checkpoint_write(ck, 3, 0.5, names, grids, 1));
  CAPI_OK(skein_grid_fill(x, 0.0));
  CAPI_OK(skein_checkpoint_restore_latest(ck, names, grids, 1, &restored, &step, &time));
  EXPECT_EQ(restored, 1);
  EXPECT_EQ(step, 3);
  EXPECT_EQ(time, 0.5);
  std::vector<double> got(s.rank == 0 ? global.size() : 0);
  CAPI_OK(skein_grid_gather(x, got.data(), s.rank == 0 ? nbytes : 0, 0));
  if (s.rank == 0) {
    EXPECT_EQ(got, global);
  }
  CAPI_OK(skein_checkpoint_destroy(ck));
  CAPI_OK(skein_grid_destroy(x));
}

INSTANTIATE_TEST_SUITE_P(Apis, CApiIo, testing::ValuesIn(apis()), ApiName());

}  // namespace capi_io_test
}  // namespace
