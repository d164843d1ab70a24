// SPDX-License-Identifier: BSD-3-Clause
// CheckpointManager under mpirun (1..4 ranks) on PoCL devices, on both HDF5 paths. Real files in
// a scratch directory: complete checkpoints are listed and pruned to `keep`, markers carry the
// file's size and a SHA-256 that `sha256sum` confirms, a checkpoint restores into another layout
// with the bytes that were written, damaged checkpoints (bit flip, a changed value inside the data,
// truncation, missing file, garbage marker) are refused with a CheckpointError naming the file and
// what did not match (or skipped with OnCorrupt::fall_back), and writes abandoned at each stage
// (the after_stage hook throws, as a crash would stop them) leave the previous checkpoint as the
// newest complete one. The SIGKILL version of the last runs in
// tests/collectives/checkpoint_kill.cmake.
#include <skein/config.hpp>

#if SKEIN_HAS_HDF5
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <skein/checkpoint.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"
#include "scoped_env.hpp"
#include "skein/detail/checkpoint_stages.hpp"

namespace {
namespace checkpoint_test {

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

// Values of step `salt`: any bit pattern (so every bit must survive the round trip).
std::vector<std::byte> values(Dtype dtype, std::size_t elements, std::size_t first,
                              std::uint64_t salt) {
  std::vector<std::byte> out(elements * itemsize(dtype));
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t x =
        (first * itemsize(dtype) + i + 1) * 0x9E3779B97F4A7C15ull + salt * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    out[i] = static_cast<std::byte>(x >> 56);
  }
  return out;
}

const Shape kShape = {29, 3};
const Shape kTableShape = {4};

// Fills the arrays with step `step`'s values (each rank its own rows).
void fill(DistArray& u, const ReplicatedArray& table, std::uint64_t step) {
  const RowRange mine = u.rank_rows();
  u.scatter_local(std::span<const std::byte>(
      values(u.dtype(), mine.size() * kShape[1], mine.begin * kShape[1], step)));
  table.set(std::span<const std::byte>(values(table.dtype(), kTableShape[0], 0, 1000 + step)));
}

void expect_step(const DistArray& u, const ReplicatedArray& table, std::uint64_t step,
                 const std::string& what) {
  const auto got = u.all_gather_bytes();
  const auto want = values(u.dtype(), shape_size(kShape), 0, step);
  EXPECT_TRUE(got == want) << what << ": the distributed array does not hold step " << step
                           << "'s values";
  for (std::size_t l = 0; l < table.local_size(); ++l) {
    EXPECT_TRUE(table.get_bytes(l) == values(table.dtype(), kTableShape[0], 0, 1000 + step))
        << what << ": the replicated array on local device " << l << " does not hold step " << step
        << "'s values";
  }
}

// What `sha256sum` says: independent of Skein's SHA-256.
std::string sha256sum(const fs::path& file) {
  std::string out;
  if (FILE* p = popen(fmt::format("sha256sum '{}'", file.string()).c_str(), "r")) {
    char buffer[256] = {};
    if (std::fgets(buffer, sizeof buffer, p)) out = buffer;
    pclose(p);
  }
  return out.substr(0, out.find(' '));
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string data_file(std::int64_t step) { return fmt::format("checkpoint-{:010}.h5", step); }
std::string marker_file(std::int64_t step) { return fmt::format("checkpoint-{:010}.done", step); }

enum class Path { mpiio, rank0 };

class Checkpoints : public testing::TestWithParam<Path> {
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
  TempDir dir_{"skein-checkpoint-test"};
};

std::string path_name(const testing::TestParamInfo<Path>& info) {
  return info.param == Path::mpiio ? "MpiIo" : "ThroughRank0";
}

INSTANTIATE_TEST_SUITE_P(Paths, Checkpoints, testing::Values(Path::mpiio, Path::rank0), path_name);

TEST_P(Checkpoints, CompleteOnesAreListedPrunedAndRestoredIntoAnotherLayout) {
  const fs::path dir = dir_.sub("run");
  CheckpointManager m(*s_.comm, dir, options(2));
  EXPECT_EQ(m.directory(), dir);
  EXPECT_TRUE(m.list().empty());
  EXPECT_FALSE(m.latest_complete().has_value());
  DistArray u(*s_.comm, kShape, Dtype::float64, RowSplit::even(), Halo{1, false});
  ReplicatedArray table(*s_.comm, kTableShape, Dtype::complex64);
  const CheckpointArrays arrays = {{"u", u}, {"table", table}};
  EXPECT_FALSE(m.restore_latest(arrays).has_value());
  for (std::int64_t step = 1; step <= 5; ++step) {
    fill(u, table, static_cast<std::uint64_t>(step));
    const CheckpointInfo info = m.write(
        step, 0.25 * static_cast<double>(step), arrays,
        {{"label", std::string("step ") + std::to_string(step)}, {"seed", std::int64_t{7}}});
    EXPECT_EQ(info.step, step);
    EXPECT_EQ(info.time, 0.25 * static_cast<double>(step));
    EXPECT_EQ(info.file, dir / data_file(step));
    EXPECT_EQ(info.marker, dir / marker_file(step));
    EXPECT_EQ(info.ranks, world_size());
    EXPECT_EQ(info.arrays.at("u"), (CheckpointInfo::ArrayEntry{Dtype::float64, kShape, false}));
    EXPECT_EQ(info.arrays.at("table"),
              (CheckpointInfo::ArrayEntry{Dtype::complex64, kTableShape, true}));
    EXPECT_EQ(std::get<std::string>(info.attributes.at("label")), "step " + std::to_string(step));
    if (world_rank() == 0) {
      EXPECT_EQ(info.bytes, fs::file_size(info.file));
      EXPECT_EQ(info.sha256, sha256sum(info.file)) << "the marker's SHA-256 against sha256sum";
      const auto marker = nlohmann::json::parse(std::ifstream(info.marker));
      EXPECT_EQ(marker.at("step").get<std::int64_t>(), step);
      EXPECT_EQ(marker.at("sha256").get<std::string>(), info.sha256);
      EXPECT_EQ(marker.at("bytes").get<std::uint64_t>(), info.bytes);
      EXPECT_EQ(marker.at("file").get<std::string>(), data_file(step));
    }
  }
  const auto listed = m.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].step, 4);
  EXPECT_EQ(listed[1].step, 5);
  if (world_rank() == 0) {
    EXPECT_EQ(files_in(dir),
              (std::set<std::string>{data_file(4), marker_file(4), data_file(5), marker_file(5)}));
  }
  const auto latest = m.latest_complete();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 5);
  EXPECT_EQ(latest->time, 1.25);

  // Restored into another layout (two devices per rank, an uneven split), after scribbling.
  Rig other = another_layout_rig();
  std::vector<double> weights;
  for (std::size_t i = 0; i < other.comm->size(); ++i)
    weights.push_back(static_cast<double>(i % 3));
  weights.back() += 1;
  DistArray v(*other.comm, kShape, Dtype::float64, RowSplit::weights(weights));
  ReplicatedArray t2(*other.comm, kTableShape, Dtype::complex64);
  const CheckpointInfo restored = m.restore(*latest, {{"u", v}, {"table", t2}});
  EXPECT_EQ(restored.step, 5);
  EXPECT_EQ(std::get<std::string>(restored.attributes.at("label")), "step 5");
  EXPECT_EQ(std::get<std::int64_t>(restored.attributes.at("seed")), 7);
  EXPECT_EQ(restored.attributes.count("skein_checkpoint_step"), 0u)
      << "Skein's own attributes are not the user's";
  expect_step(v, t2, 5, "restored into another layout");
  // An older one, by its info from list(), and only some of its arrays.
  fill(u, table, 99);
  m.restore(listed[0], {{"u", u}});
  const auto got = u.all_gather_bytes();
  EXPECT_TRUE(got == values(Dtype::float64, shape_size(kShape), 0, 4)) << "restore of step 4";

  // keep 0 keeps everything.
  CheckpointManager all(*s_.comm, dir_.sub("all"), options(0));
  for (std::int64_t step : {3, 10, 7}) all.write(step, 0, arrays);
  const auto everything = all.list();
  ASSERT_EQ(everything.size(), 3u);
  EXPECT_EQ(everything[0].step, 3);
  EXPECT_EQ(everything[2].step, 10);
  EXPECT_EQ(all.latest_complete()->step, 10);
}

TEST_P(Checkpoints, DamagedCheckpointsAreRefusedWithAClearError) {
  const fs::path dir = dir_.sub("damaged");
  CheckpointManager m(*s_.comm, dir, options(5));
  DistArray u(*s_.comm, kShape, Dtype::float64);
  ReplicatedArray table(*s_.comm, kTableShape, Dtype::complex64);
  const CheckpointArrays arrays = {{"u", u}, {"table", table}};
  for (std::int64_t step = 1; step <= 2; ++step) {
    fill(u, table, static_cast<std::uint64_t>(step));
    m.write(step, 0, arrays);
  }
  const fs::path file2 = dir / data_file(2), marker2 = dir / marker_file(2);
  auto on_rank0 = [](auto&& f) {
    if (world_rank() == 0) f();
    MPI_Barrier(MPI_COMM_WORLD);
  };
  // Keep a pristine copy to put back between the cases.
  on_rank0([&] { fs::copy_file(file2, dir_.sub("pristine.h5")); });
  auto restore_file = [&] {
    on_rank0([&] {
      fs::copy_file(dir_.sub("pristine.h5"), file2, fs::copy_options::overwrite_existing);
    });
  };

  // One flipped bit in the middle.
  on_rank0([&] {
    std::fstream f(file2, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(fs::file_size(file2) / 2);
    f.seekg(middle);
    char c = 0;
    f.get(c);
    f.seekp(middle);
    f.put(static_cast<char>(c ^ 0x10));
  });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {data_file(2), "SHA-256", marker_file(2), "damaged"},
                                "a flipped bit");
  expect_error<CheckpointError>([&] { (void)m.verify(2); }, {data_file(2), "SHA-256"},
                                "verify a flipped bit");
  expect_error<CheckpointError>([&] { (void)m.restore_latest(arrays); }, {"SHA-256"},
                                "restore_latest refuses too");
  EXPECT_EQ(m.verify(1).step, 1);
  {
    CheckpointOptions o = options(5);
    o.on_corrupt = OnCorrupt::fall_back;
    CheckpointManager lenient(*s_.comm, dir, o);
    const auto latest = lenient.latest_complete();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->step, 1);
    fill(u, table, 50);
    const auto restored = lenient.restore_latest(arrays);
    ASSERT_TRUE(restored.has_value());
    expect_step(u, table, 1, "fall back to step 1");
  }
  restore_file();
  EXPECT_EQ(m.latest_complete()->step, 2);

  // One byte changed inside the stored values of "u" (its chunk, found with plain HDF5): the
  // marker's SHA-256 refuses it first, with the same message; restoring by an info taken before the
  // damage meets HDF5's Fletcher32 checksum of the chunk instead, which names the file and the
  // dataset.
  const CheckpointInfo before = m.verify(2);
  on_rank0([&] {
    const hid_t file = H5Fopen(file2.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t d = H5Dopen2(file, "u", H5P_DEFAULT);
    const hsize_t at[2] = {kShape[0] - 1, 0};
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t bytes = 0;
    EXPECT_GE(H5Dget_chunk_info_by_coord(d, at, &mask, &address, &bytes), 0) << "u is not chunked";
    H5Dclose(d);
    H5Fclose(file);
    ASSERT_NE(address, HADDR_UNDEF);
    std::fstream f(file2, std::ios::in | std::ios::out | std::ios::binary);
    const auto inside = static_cast<std::streamoff>(address + bytes / 2);
    f.seekg(inside);
    char c = 0;
    f.get(c);
    f.seekp(inside);
    f.put(static_cast<char>(c ^ 0x10));
  });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {data_file(2), "SHA-256", marker_file(2), "damaged"},
                                "a changed value");
  expect_error<CheckpointError>([&] { (void)m.restore_latest(arrays); }, {"SHA-256"},
                                "restore_latest, a changed value");
  expect_error<RuntimeError>([&] { (void)m.restore(before, arrays); },
                             {data_file(2), "dataset 'u'", "Fletcher32 checksum failed"},
                             "restore of a changed value");
  restore_file();
  EXPECT_EQ(m.latest_complete()->step, 2);

  // Truncated.
  on_rank0([&] { fs::resize_file(file2, fs::file_size(file2) - 100); });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {data_file(2), "bytes", "truncated"}, "truncated");
  // The file is gone while its marker stays.
  on_rank0([&] { fs::remove(file2); });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {data_file(2), "cannot be read", marker_file(2)}, "missing file");
  restore_file();
  // A marker that is not JSON, or not Skein's.
  on_rank0([&] { fs::copy_file(marker2, dir_.sub("pristine.done")); });
  on_rank0([&] { std::ofstream(marker2, std::ios::trunc) << "{ this is not json"; });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {marker_file(2), "not valid JSON"}, "garbage marker");
  on_rank0([&] { std::ofstream(marker2, std::ios::trunc) << "{\"step\": 2}"; });
  expect_error<CheckpointError>([&] { (void)m.latest_complete(); },
                                {marker_file(2), "not a Skein checkpoint marker"},
                                "foreign marker");
  EXPECT_EQ(m.list().size(), 1u) << "an unreadable marker is not listed as complete";
  // No marker: incomplete, so the one before is the newest complete checkpoint.
  on_rank0([&] { fs::remove(marker2); });
  EXPECT_EQ(m.latest_complete()->step, 1);
  expect_error<CheckpointError>([&] { (void)m.verify(2); }, {"no completion marker"},
                                "verify without marker");
  // Writing step 2 again makes it complete.
  fill(u, table, 2);
  m.write(2, 0, arrays);
  EXPECT_EQ(m.latest_complete()->step, 2);
  fill(u, table, 0);
  m.restore_latest(arrays);
  expect_step(u, table, 2, "rewritten step 2");
}

TEST_P(Checkpoints, AbandonedWritesLeaveThePreviousCheckpoint) {
  DistArray u(*s_.comm, kShape, Dtype::float64);
  ReplicatedArray table(*s_.comm, kTableShape, Dtype::complex64);
  const CheckpointArrays arrays = {{"u", u}, {"table", table}};
  for (CheckpointStage stage : {CheckpointStage::created, CheckpointStage::written,
                                CheckpointStage::renamed, CheckpointStage::marked}) {
    const std::string what = fmt::format("abandoned after stage '{}'", name(stage));
    const fs::path dir = dir_.sub(std::string(name(stage)));
    CheckpointOptions o = options(3);
    std::vector<std::string> seen;
    o.after_stage = [&](CheckpointStage s, std::int64_t step) {
      seen.push_back(std::string(name(s)));
      if (s == stage && step == 2)
        throw std::runtime_error("simulated crash at " + std::string(name(s)));
    };
    CheckpointManager m(*s_.comm, dir, o);
    fill(u, table, 1);
    m.write(1, 0.5, arrays);
    if (world_rank() == 0) {
      EXPECT_EQ(seen, (std::vector<std::string>{"created", "written", "renamed", "marked"}))
          << "stages on rank 0";
    }
    fill(u, table, 2);
    expect_error<std::runtime_error>([&] { m.write(2, 1.0, arrays); }, {"simulated crash"}, what);
    const auto latest = m.latest_complete();
    ASSERT_TRUE(latest.has_value()) << what;
    EXPECT_EQ(latest->step, stage == CheckpointStage::marked ? 2 : 1) << what;
    fill(u, table, 77);
    m.restore(*latest, arrays);
    expect_step(u, table, static_cast<std::uint64_t>(latest->step), what);
    if (world_rank() == 0) {
      const auto files = files_in(dir);
      const bool temp = files.count(fmt::format(".checkpoint-{:010}.h5.tmp", 2)) > 0;
      EXPECT_EQ(temp, stage == CheckpointStage::created || stage == CheckpointStage::written)
          << what;
      EXPECT_EQ(files.count(data_file(2)) > 0,
                stage == CheckpointStage::renamed || stage == CheckpointStage::marked)
          << what;
      EXPECT_EQ(files.count(marker_file(2)) > 0, stage == CheckpointStage::marked) << what;
    }
    // The next write cleans up what the abandoned one left.
    o.after_stage = nullptr;
    CheckpointManager again(*s_.comm, dir, o);
    fill(u, table, 3);
    again.write(3, 1.5, arrays);
    if (world_rank() == 0) {
      for (const auto& f : files_in(dir)) {
        EXPECT_EQ(f.find(".tmp"), std::string::npos) << what << ": left " << f;
        if (stage != CheckpointStage::marked) {
          EXPECT_NE(f, data_file(2)) << what << ": left the unmarked file";
        }
      }
    }
  }
}

// The observer of the stages that the kill-and-restart tests use (checkpoint_main.cpp --kill):
// every rank sees the stages it takes part in, with its rank, the step and the directory, and an
// observer that throws on one rank (here the last) abandons the write on every rank.
TEST_P(Checkpoints, StageObserverSeesEveryRanksStages) {
  struct Seen {
    std::string stage;
    std::int64_t step;
    int rank;
    std::string directory;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> seen;
  const int thrower = world_size() - 1;
  struct Uninstall {
    ~Uninstall() { detail::set_checkpoint_stage_observer({}); }
  } uninstall;
  const auto previous =
      detail::set_checkpoint_stage_observer([&](const detail::CheckpointStageEvent& e) {
        seen.push_back({std::string(name(e.stage)), e.step, e.rank, e.directory});
        if (e.step == 2 && e.stage == CheckpointStage::created && e.rank == thrower) {
          throw std::runtime_error("simulated crash of the last rank");
        }
      });
  EXPECT_FALSE(static_cast<bool>(previous)) << "an observer was left installed";
  const fs::path dir = dir_.sub("observed");
  CheckpointManager m(*s_.comm, dir, options(2));
  DistArray u(*s_.comm, kShape, Dtype::float64);
  ReplicatedArray table(*s_.comm, kTableShape, Dtype::complex64);
  fill(u, table, 1);
  m.write(1, 0.5, {{"u", u}, {"table", table}});
  const int me = world_rank();
  std::vector<Seen> want{{"created", 1, me, dir.string()}, {"written", 1, me, dir.string()}};
  if (me == 0) {
    want.push_back({"renamed", 1, 0, dir.string()});
    want.push_back({"marked", 1, 0, dir.string()});
  }
  EXPECT_TRUE(seen == want) << "rank " << me << " saw " << seen.size() << " stage(s), expected "
                            << want.size();
  seen.clear();
  if (me == thrower) {
    expect_error<std::runtime_error>(
        [&] {
          m.write(2, 1.0, {{"u", u}});
        },
        {"simulated crash"}, "the thrower");
  } else {
    expect_error<RuntimeError>(
        [&] {
          m.write(2, 1.0, {{"u", u}});
        },
        {"simulated crash", fmt::format("rank {}", thrower)}, "the other ranks");
  }
  EXPECT_EQ(seen.size(), 1u) << "stages after the abandoned one";
  detail::set_checkpoint_stage_observer({});
  EXPECT_EQ(m.latest_complete()->step, 1);
}

TEST_P(Checkpoints, BadCallsRaiseTypedErrors) {
  const fs::path dir = dir_.sub("bad");
  CheckpointManager m(*s_.comm, dir, options(2));
  DistArray u(*s_.comm, kShape, Dtype::float64);
  ReplicatedArray table(*s_.comm, kTableShape, Dtype::complex64);
  fill(u, table, 1);
  const CheckpointInfo info = m.write(1, 0, {{"u", u}, {"table", table}});
  DistArray v(*s_.comm, kShape, Dtype::float64);
  expect_error<LogicError>(
      [&] {
        m.restore(info, {{"v", v}});
      },
      {"no array 'v'", "it has: table, u"}, "unknown array");
  DistArray wrong(*s_.comm, {30, 3}, Dtype::float64);
  expect_error<LogicError>(
      [&] {
        m.restore(info, {{"u", wrong}});
      },
      {"(29, 3)", "(30, 3)"}, "wrong shape");
  expect_error<LogicError>(
      [&] {
        m.write(-1, 0, {{"u", u}});
      },
      {"step -1 is negative"}, "negative step");
  expect_error<LogicError>(
      [&] {
        m.write(2, 0, {{"u", u}}, {{"skein_step", std::int64_t{1}}});
      },
      {"skein_step", "reserved"}, "reserved attribute");
  expect_error<LogicError>(
      [&] {
        m.write(2, 0, {{"/u", u}});
      },
      {"'/u'"}, "name with a leading slash");
  expect_error<CheckpointError>([&] { (void)m.verify(99); }, {"step 99", "no completion marker"},
                                "verify a missing step");
  if (world_size() > 1) {
    expect_error<LogicError>(
        [&] {
          m.write(world_rank() == 1 ? 3 : 2, 0, {{"u", u}});
        },
        {"different calls"}, "ranks disagree on the step");
  }
  if (world_rank() == 0) std::ofstream(dir_.sub("a-file")) << "x";
  MPI_Barrier(MPI_COMM_WORLD);
  expect_error<RuntimeError>(
      [&] { (void)CheckpointManager(*s_.comm, dir_.sub("a-file"), options(1)); },
      {"a-file", "cannot be created"}, "a file where the directory should be");
  // Still usable.
  EXPECT_EQ(m.write(2, 0, {{"u", u}}).step, 2);
  EXPECT_EQ(m.latest_complete()->step, 2);
}

}  // namespace checkpoint_test
}  // namespace

#endif  // SKEIN_HAS_HDF5
