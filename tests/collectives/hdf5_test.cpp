// SPDX-License-Identifier: BSD-3-Clause
// hdf5::File under mpirun (1..4 ranks) on PoCL devices, on both paths: MPI-IO (parallel HDF5)
// and through rank 0 (FileOptions::serial, what machines with a serial libhdf5 get).
//
// Every dataset holds values computed from the global element index (any bit pattern of the
// dtype, so floats include NaNs, infinities and signed zeros: compared as bytes, every bit must
// survive). Each rank computes what any row must hold without asking another rank, so a write
// on one layout is checked by a read on another (two devices per rank, uneven splits, empty
// blocks) and by plain serial HDF5 calls on rank 0 that share no code with Skein's reader.
// Files written by "another tool" (plain HDF5: {real, imag} compounds, big-endian types, a string
// dataset) are read too. Bad calls must raise the right typed error on every rank, and a good
// call must work afterwards (no rank left waiting).
//
// The cross-rank-count test (written on 4 ranks, read on 1, 2 and 3) and the h5py / h5dump checks
// run as separate ctest entries (hdf5.cross.* in tests/CMakeLists.txt): its two phases,
// HDF5CrossRanks.Write and .Read, are in this file and skip unless SKEIN_TEST_HDF5_DIR is set.
#include <skein/config.hpp>

#if SKEIN_HAS_HDF5
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <skein/dist_array.hpp>
#include <skein/hdf5.hpp>
#include <skein/records.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "dist_support.hpp"
#include "mpi_support.hpp"
#include "scoped_env.hpp"

namespace {
namespace hdf5_test {

using namespace skein;
using ::skein::test::another_layout_rig;
using ::skein::test::expect_error;
using ::skein::test::on_every_rank;
using ::skein::test::Rig;
using ::skein::test::runtime_rig;
using ::skein::test::suite_devices_or_none;
using ::skein::test::TempDir;
using ::skein::test::world_rank;
using ::skein::test::world_size;
namespace fs = std::filesystem;

// ---- values -------------------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t k, std::uint64_t salt) {
  std::uint64_t x = (k + 1) * 0x9E3779B97F4A7C15ull + salt * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 29);
}

// Element k of test array `salt`: any bit pattern of the dtype.
void put_element(Dtype dtype, std::uint64_t k, std::uint64_t salt, std::byte* out) {
  const std::uint64_t a = mix(k, salt), b = mix(k, salt + 7777);
  const std::size_t n = itemsize(dtype);
  if (n <= 8) {
    std::memcpy(out, &a, n);
  } else {
    std::memcpy(out, &a, 8);
    std::memcpy(out + 8, &b, 8);
  }
}

std::size_t row_elements(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Rows [begin, end) of the global array, row-major bytes.
std::vector<std::byte> host_rows(Dtype dtype, const Shape& shape, std::size_t begin,
                                 std::size_t end, std::uint64_t salt) {
  const std::size_t per_row = row_elements(shape), size = itemsize(dtype);
  std::vector<std::byte> out((end - begin) * per_row * size);
  for (std::size_t k = begin * per_row; k < end * per_row; ++k) {
    put_element(dtype, k, salt, out.data() + (k - begin * per_row) * size);
  }
  return out;
}

std::vector<std::byte> host_array(Dtype dtype, const Shape& shape, std::uint64_t salt) {
  if (shape.empty()) return host_rows(dtype, {1}, 0, 1, salt);
  return host_rows(dtype, shape, 0, shape[0], salt);
}

void expect_bytes(const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << ": first different byte at " << i << " of " << got.size();
      return;
    }
  }
}

// A distributed array holding test array `salt`, each rank filling its own rows.
DistArray filled(Communicator& comm, const Shape& shape, Dtype dtype, std::uint64_t salt,
                 RowSplit split = {}) {
  DistArray a(comm, shape, dtype, std::move(split));
  const RowRange mine = a.rank_rows();
  a.scatter_local(std::span<const std::byte>(host_rows(dtype, shape, mine.begin, mine.end, salt)));
  return a;
}

// Splits that differ from the even one: everything on the last member, weights 1, 2, ..., and
// counts with empty members.
std::vector<std::pair<std::string, RowSplit>> other_splits(std::size_t M, std::size_t rows) {
  std::vector<std::pair<std::string, RowSplit>> out;
  std::vector<std::size_t> last(M, 0);
  last.back() = rows;
  out.emplace_back("all rows on the last member", RowSplit::counts(last));
  std::vector<double> weights;
  for (std::size_t m = 0; m < M; ++m) weights.push_back(static_cast<double>(m + 1));
  out.emplace_back("weights 1, 2, ...", RowSplit::weights(weights));
  std::vector<std::size_t> gaps(M, 0);
  std::size_t left = rows;
  for (std::size_t m = 0; m < M && left > 0; m += 2) {
    gaps[m] = m + 2 >= M ? left : std::min(left, rows / ((M + 1) / 2) + 1);
    left -= gaps[m];
  }
  if (left > 0) gaps[0] += left;
  out.emplace_back("every other member empty", RowSplit::counts(gaps));
  return out;
}

// ---- the fixture: both paths ------------------------------------------------------------------

enum class Path { mpiio, rank0 };

class Hdf5Files : public testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (!hdf5::available()) GTEST_SKIP() << "no HDF5 in this build";
    if (GetParam() == Path::mpiio && !hdf5::parallel_available())
      GTEST_SKIP() << "HDF5 without MPI-IO";
    if (suite_devices_or_none().size() < static_cast<std::size_t>(world_size()))
      GTEST_SKIP() << "needs a device per rank";
    s_ = runtime_rig();
  }
  hdf5::FileOptions options(std::size_t max_bytes = std::size_t{256} << 20) const {
    hdf5::FileOptions o;
    o.serial = GetParam() == Path::rank0;
    o.max_bytes_per_call = max_bytes;
    return o;
  }
  Rig s_;
  TempDir dir_{"skein-hdf5-test"};
};

std::string path_name(const testing::TestParamInfo<Path>& info) {
  return info.param == Path::mpiio ? "MpiIo" : "ThroughRank0";
}

INSTANTIATE_TEST_SUITE_P(Paths, Hdf5Files, testing::Values(Path::mpiio, Path::rank0), path_name);

// Writes a filled array and checks the dataset three ways: read into `into` (another layout),
// read_host on every rank, and info().
void write_and_check(hdf5::File& f, DistArray& written, DistArray& into, const std::string& name,
                     std::uint64_t salt, const hdf5::WriteOptions& wo, const std::string& what) {
  f.write(name, written, wo);
  into.fill_zero();
  f.read(name, into);
  const auto want = host_array(written.dtype(), written.shape(), salt);
  expect_bytes(into.all_gather_bytes(), want, what + ": read into another layout");
  expect_bytes(f.read_host_bytes(name), want, what + ": read_host");
  const hdf5::DatasetInfo info = f.info(name);
  EXPECT_EQ(info.shape, written.shape()) << what;
  EXPECT_EQ(info.dtype, written.dtype()) << what;
  EXPECT_EQ(info.layout, written.layout().describe()) << what;
}

TEST_P(Hdf5Files, EveryDtypeRoundTripsBitForBit) {
  Rig other = another_layout_rig();
  const std::string path = dir_.file("dtypes.h5");
  hdf5::File f = hdf5::File::create(*s_.comm, path, options());
  EXPECT_EQ(f.parallel(), GetParam() == Path::mpiio);
  EXPECT_EQ(f.ranks(), world_size());
  EXPECT_EQ(f.rank(), world_rank());
  const std::vector<Shape> shapes = {{0}, {1}, {7}, {1001}, {13, 5}, {0, 4}, {3, 1}};
  std::uint64_t salt = 1;
  for (Dtype dtype : all_dtypes) {
    for (const Shape& shape : shapes) {
      const std::string name =
          fmt::format("{}/{}x{}", skein::name(dtype), shape[0], shape.size() > 1 ? shape[1] : 0);
      const std::string what = fmt::format("{} {}", skein::name(dtype), to_string(shape));
      DistArray a = filled(*s_.comm, shape, dtype, ++salt);
      const auto splits = other_splits(other.comm->size(), shape[0]);
      DistArray b(*other.comm, shape, dtype, splits[salt % splits.size()].second);
      write_and_check(f, a, b, name, salt, {}, what);
    }
  }
  EXPECT_EQ(f.datasets("float16").size(), shapes.size());
  EXPECT_EQ(f.datasets().size(), shapes.size() * std::size(all_dtypes));
  EXPECT_TRUE(f.exists("complex64/7x0"));
  EXPECT_FALSE(f.exists("complex64/8x0"));
  EXPECT_FALSE(f.exists("complex64"));  // a group, not a dataset
  f.close();
  EXPECT_FALSE(f.is_open());
  // Reopened read-only: still the same bytes.
  hdf5::File g = hdf5::File::open(*s_.comm, path, hdf5::Access::read_only, options());
  DistArray c(*s_.comm, {13, 5}, Dtype::bfloat16);
  g.read("bfloat16/13x5", c);
  const hdf5::DatasetInfo info = g.info("bfloat16/13x5");
  std::uint64_t want_salt =
      1 + 9 * shapes.size() + 5;  // bfloat16 is the 10th dtype, 13x5 the 5th shape
  expect_bytes(c.all_gather_bytes(), host_array(Dtype::bfloat16, {13, 5}, want_salt),
               "reopened bfloat16");
  EXPECT_EQ(info.dtype, Dtype::bfloat16);
}

TEST_P(Hdf5Files, OddShapesEmptyMembersAndOtherLayouts) {
  Rig other = another_layout_rig();
  hdf5::File f = hdf5::File::create(*s_.comm, dir_.file("odd.h5"), options());
  const std::size_t M = s_.comm->size(), M2 = other.comm->size();
  const std::vector<Shape> shapes = {{5, 7},  {3, 1}, {2, 9}, {M + 3, 3}, {M > 1 ? M - 1 : 1, 5},
                                     {101, 3}};
  std::uint64_t salt = 100;
  for (const Shape& shape : shapes) {
    for (const auto& [write_split_name, write_split] : other_splits(M, shape[0])) {
      for (const auto& [read_split_name, read_split] : other_splits(M2, shape[0])) {
        const std::string name = fmt::format("s{}", ++salt);
        const std::string what = fmt::format("{}: written with {}, read with {}", to_string(shape),
                                             write_split_name, read_split_name);
        DistArray a = filled(*s_.comm, shape, Dtype::float64, salt, write_split);
        DistArray b(*other.comm, shape, Dtype::float64, read_split);
        write_and_check(f, a, b, name, salt, {}, what);
      }
    }
  }
  // With a halo: only interior rows are written, and reading leaves the halo rows alone.
  DistArray h(*s_.comm, {11, 2}, Dtype::int32, RowSplit::even(), Halo{1, true});
  const RowRange mine = h.rank_rows();
  h.scatter_local(
      std::span<const std::byte>(host_rows(Dtype::int32, {11, 2}, mine.begin, mine.end, 7)));
  h.exchange_halos();
  f.write("halo", h);
  DistArray plain(*other.comm, {11, 2}, Dtype::int32);
  f.read("halo", plain);
  expect_bytes(plain.all_gather_bytes(), host_array(Dtype::int32, {11, 2}, 7),
               "halo rows are not written");
  DistArray back(*s_.comm, {11, 2}, Dtype::int32, RowSplit::even(), Halo{1, true});
  f.read("halo", back);
  for (std::size_t l = 0; l < back.local_size(); ++l) {
    const auto rows = back.local_rows(l);
    const auto all = back.local_with_halo(l).get<std::int32_t>();
    if (rows.empty() || all.size() < 4) continue;
    EXPECT_EQ(all[0], 0) << "top halo of local block " << l << " untouched by read";
    EXPECT_EQ(all[all.size() - 1], 0) << "bottom halo of local block " << l << " untouched by read";
  }
}

TEST_P(Hdf5Files, LargeArraysMoveInManyPieces) {
  Rig other = another_layout_rig();
  // A 4 MiB array in pieces of 100000 bytes: not a multiple of the 2 KiB rows, so each piece is
  // 48 rows and the last of each rank shorter.
  {
    hdf5::File f = hdf5::File::create(*s_.comm, dir_.file("large.h5"), options(100000));
    DistArray a = filled(*s_.comm, {2048, 256}, Dtype::float64, 11);
    DistArray b(*other.comm, {2048, 256}, Dtype::float64,
                other_splits(other.comm->size(), 2048)[1].second);
    write_and_check(f, a, b, "big", 11, {}, "4 MiB in 100000-byte pieces");
  }
  // Pieces smaller than a row: one row at a time.
  {
    hdf5::File f = hdf5::File::create(*s_.comm, dir_.file("rows.h5"), options(1000));
    DistArray a = filled(*s_.comm, {37, 300}, Dtype::float64, 12);
    DistArray b(*other.comm, {37, 300}, Dtype::float64);
    write_and_check(f, a, b, "rows", 12, {}, "pieces smaller than a row");
    // And a file written in large pieces read back in small ones.
  }
  hdf5::File f =
      hdf5::File::open(*s_.comm, dir_.file("large.h5"), hdf5::Access::read_only, options(3000));
  DistArray c(*s_.comm, {2048, 256}, Dtype::float64);
  f.read("big", c);
  expect_bytes(c.all_gather_bytes(), host_array(Dtype::float64, {2048, 256}, 11),
               "read back in 3000-byte pieces");
}

TEST_P(Hdf5Files, ChunkingAndCompressionRoundTrip) {
  Rig other = another_layout_rig();
  const std::string path = dir_.file("compressed.h5");
  hdf5::File f = hdf5::File::create(*s_.comm, path, options(50000));
  // Random bits (incompressible) with explicit chunks, shuffle off.
  hdf5::WriteOptions wo;
  wo.chunk_rows = 64;
  wo.compression = 6;
  wo.shuffle = false;
  DistArray a = filled(*s_.comm, {1000, 7}, Dtype::float32, 21);
  DistArray b(*other.comm, {1000, 7}, Dtype::float32,
              other_splits(other.comm->size(), 1000)[2].second);
  write_and_check(f, a, b, "random", 21, wo, "deflate 6, chunks of 64 rows");
  hdf5::DatasetInfo info = f.info("random");
  EXPECT_EQ(info.chunk_rows, 64u);
  EXPECT_EQ(info.compression, 6);
  // Chunks larger than the array are clamped; chunks without compression; odd sizes.
  for (std::size_t rows : {1u, 5u, 63u, 65u, 129u}) {
    hdf5::WriteOptions w2;
    w2.chunk_rows = 64;
    w2.compression = rows % 2 ? 1 : 0;
    DistArray x = filled(*s_.comm, {rows, 3}, Dtype::int64, 30 + rows);
    DistArray y(*other.comm, {rows, 3}, Dtype::int64);
    write_and_check(f, x, y, fmt::format("rows{}", rows), 30 + rows, w2,
                    fmt::format("{} rows in chunks of 64", rows));
    EXPECT_EQ(f.info(fmt::format("rows{}", rows)).chunk_rows, std::min<std::size_t>(rows, 64));
  }
  // Compound and custom float types in compressed datasets: parallel HDF5 needs collective
  // transfers for them, which a type conversion would break.
  for (Dtype dtype :
       {Dtype::complex64, Dtype::complex128, Dtype::float16, Dtype::bfloat16, Dtype::uint8}) {
    hdf5::WriteOptions w4;
    w4.chunk_rows = 5;
    w4.compression = 3;
    const std::string name = fmt::format("compressed-{}", skein::name(dtype));
    DistArray x = filled(*s_.comm, {37, 2}, dtype, 60 + static_cast<int>(dtype));
    DistArray y(*other.comm, {37, 2}, dtype, other_splits(other.comm->size(), 37)[1].second);
    write_and_check(f, x, y, name, 60 + static_cast<int>(dtype), w4, name);
    EXPECT_EQ(f.info(name).compression, 3) << name;
  }
  // Empty arrays stay contiguous (HDF5 has no chunks for them).
  DistArray e = filled(*s_.comm, {0, 3}, Dtype::float32, 40);
  DistArray e2(*other.comm, {0, 3}, Dtype::float32);
  write_and_check(f, e, e2, "empty", 40, wo, "empty with compression asked for");
  EXPECT_EQ(f.info("empty").chunk_rows, 0u);
  // Compressible data, default chunks (about 1 MiB): the file shrinks.
  const Shape big = {512, 512};  // 1 MiB of float32
  DistArray z(*s_.comm, big, Dtype::float32);
  z.fill_zero();
  hdf5::WriteOptions w3;
  w3.compression = 4;
  f.write("zeros", z, w3);
  info = f.info("zeros");
  EXPECT_GT(info.chunk_rows, 0u);
  EXPECT_EQ(info.compression, 4);
  const auto zeros = f.read_host<float>("zeros");
  EXPECT_EQ(zeros, std::vector<float>(512 * 512, 0.0f));
  f.close();
  if (world_rank() == 0) {
    // 1 MiB of zeros plus ~28 KiB of random floats (x3 for the copies above) fit in far less
    // than the 1 MiB uncompressed zeros alone.
    EXPECT_LT(fs::file_size(path), std::uintmax_t{400} << 10)
        << "compression did not shrink the file";
  }
}

TEST_P(Hdf5Files, AttributesOfFilesAndDatasets) {
  hdf5::File f = hdf5::File::create(*s_.comm, dir_.file("attrs.h5"), options());
  const hdf5::Attributes root = f.attributes();
  EXPECT_EQ(std::get<std::string>(root.at("skein_version")), SKEIN_VERSION_STRING);
  EXPECT_EQ(std::get<std::int64_t>(root.at("skein_format_version")), hdf5::format_version);
  hdf5::WriteOptions wo;
  wo.step = 42;
  wo.time = 0.125;
  wo.attributes = {{"units", std::string("kelvin")},
                   {"iterations", std::int64_t{-7}},
                   {"cfl", 0.3},
                   {"origin", std::vector<double>{1.5, -2.25, 1e300}},
                   {"periods", std::vector<std::int64_t>{3, 4}},
                   {"nothing", std::vector<std::int64_t>{}}};
  DistArray a = filled(*s_.comm, {9, 2}, Dtype::complex128, 5);
  f.write("fields/u", a, wo);
  const hdf5::DatasetInfo info = f.info("/fields/u");
  EXPECT_EQ(info.name, "fields/u");
  ASSERT_TRUE(info.step.has_value());
  EXPECT_EQ(*info.step, 42);
  ASSERT_TRUE(info.time.has_value());
  EXPECT_EQ(*info.time, 0.125);
  for (const auto& [k, v] : wo.attributes) {
    ASSERT_TRUE(info.attributes.count(k)) << k;
    EXPECT_EQ(info.attributes.at(k), v) << k;
  }
  EXPECT_EQ(std::get<std::string>(info.attributes.at("skein_dtype")), "complex128");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(info.attributes.at("skein_global_shape")),
            (std::vector<std::int64_t>{9, 2}));
  // skein_row_starts: the first row of every member, then the row count.
  std::vector<std::int64_t> starts;
  for (std::size_t m = 0; m < a.layout().members(); ++m)
    starts.push_back(static_cast<std::int64_t>(a.layout().member_rows(m).begin));
  starts.push_back(9);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(info.attributes.at("skein_row_starts")), starts);
  EXPECT_NE(info.describe().find("fields/u: complex128 (9, 2)"), std::string::npos)
      << info.describe();
  EXPECT_NE(info.describe().find("step 42"), std::string::npos) << info.describe();

  // set_attribute on the file and on a dataset, replacing, and odd values (NaN keeps its bits).
  const double nan = std::bit_cast<double>(std::uint64_t{0x7ff8dead00000001ull});
  f.set_attribute("/", "title", std::string("a test, with ünïcode"));
  f.set_attribute("fields/u", "when", nan);
  f.set_attribute("fields/u", "units", std::string("celsius"));
  f.set_attribute("fields", "group_note", std::int64_t{1} << 40);
  EXPECT_EQ(std::get<std::string>(*f.attribute("/", "title")), "a test, with ünïcode");
  EXPECT_EQ(std::bit_cast<std::uint64_t>(std::get<double>(*f.attribute("fields/u", "when"))),
            std::bit_cast<std::uint64_t>(nan));
  EXPECT_EQ(std::get<std::string>(*f.attribute("fields/u", "units")), "celsius");
  EXPECT_EQ(std::get<std::int64_t>(*f.attribute("fields", "group_note")), std::int64_t{1} << 40);
  EXPECT_FALSE(f.attribute("fields/u", "absent").has_value());
  EXPECT_EQ(hdf5::to_string(hdf5::AttributeValue(std::vector<std::int64_t>{1, 2})), "[1, 2]");
  EXPECT_EQ(hdf5::to_string(hdf5::AttributeValue(std::string("x"))), "\"x\"");
}

TEST_P(Hdf5Files, ReplicatedArraysAndHostData) {
  hdf5::File f = hdf5::File::create(*s_.comm, dir_.file("host.h5"), options(64));
  // A replicated array from rank 0's first device, read into every device of every rank.
  const auto values = host_array(Dtype::complex128, {3, 4}, 50);
  ReplicatedArray r(*s_.comm, {3, 4}, Dtype::complex128);
  r.set(std::span<const std::byte>(values));
  f.write("replicated", r);
  ReplicatedArray back(*s_.comm, {3, 4}, Dtype::complex128);
  f.read("replicated", back);
  for (std::size_t l = 0; l < back.local_size(); ++l) {
    expect_bytes(back.get_bytes(l), values, fmt::format("replicated array on local device {}", l));
  }
  // Host data from the last rank; scalars (0-D) and 1-D.
  const int last = world_size() - 1;
  const std::vector<std::int32_t> table = {1, -2, 3, -4, 5};
  f.write_host("table", world_rank() == last ? table : std::vector<std::int32_t>{}, std::nullopt,
               last);
  EXPECT_EQ(f.read_host<std::int32_t>("table"), table);
  EXPECT_EQ(f.info("table").shape, (Shape{5}));
  const std::vector<double> scalar = {2.5};
  f.write_host("dt", scalar, Shape{});
  EXPECT_EQ(f.info("dt").shape, Shape{});
  EXPECT_EQ(f.read_host<double>("dt"), scalar);
  const std::vector<std::uint16_t> none;
  f.write_host("none", none);
  EXPECT_TRUE(f.read_host<std::uint16_t>("none").empty());
  const auto matrix = host_array(Dtype::float16, {4, 3, 2}, 51);
  f.write_host("cube", std::span<const std::byte>(matrix), Shape{4, 3, 2}, Dtype::float16);
  expect_bytes(f.read_host_bytes("cube"), matrix, "3-D host data");
  expect_error<LogicError>([&] { (void)f.read_host<float>("table"); },
                           {"'table'", "int32", "float32"}, "read_host as the wrong type");
  expect_error<LogicError>(
      [&] { f.write_host("bad", std::span<const std::byte>(), Shape{2}, Dtype::int8); },
      {"rank 0", "0 bytes", "2"}, "host data of the wrong size (rank 0)");
  ReplicatedArray wrong(*s_.comm, {4, 3}, Dtype::complex128);
  expect_error<LogicError>([&] { f.read("replicated", wrong); }, {"(3, 4)", "(4, 3)"},
                           "replicated shape mismatch");
  // Record (struct) dtypes have no HDF5 type in Skein: refused on every rank, the file usable.
  const Dtype rec =
      register_dtype(StructType{{"x", Dtype::float32}, {"n", Dtype::int16}}, "h5_rec");
  const std::vector<std::byte> recs(2 * itemsize(rec), std::byte{1});
  expect_error<LogicError>(
      [&] { f.write_host("rec", std::span<const std::byte>(recs), Shape{2}, rec); },
      {"h5_rec", "record"}, "host data of a record dtype");
  EXPECT_EQ(f.read_host<std::int32_t>("table"), table);  // still usable
}

// Plain serial HDF5 on rank 0, sharing no code with Skein: reads what Skein wrote, and writes
// files as other tools would for Skein to read.
TEST_P(Hdf5Files, PlainHdf5ReadsSkeinsFilesAndSkeinReadsOthers) {
  const std::string path = dir_.file("plain.h5");
  {
    hdf5::File f = hdf5::File::create(*s_.comm, path, options());
    f.write("d", filled(*s_.comm, {6, 4}, Dtype::float64, 60));
    f.write("c", filled(*s_.comm, {5}, Dtype::complex64, 61));
    f.write("h", filled(*s_.comm, {8}, Dtype::float16, 62));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // In a lambda: an ASSERT leaves it, not the test, so rank 0 still reaches the barrier.
  if (world_rank() == 0)
    [&] {
      const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      ASSERT_GE(file, 0);
      // float64: as native doubles.
      hid_t d = H5Dopen2(file, "d", H5P_DEFAULT);
      std::vector<double> doubles(24);
      EXPECT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, doubles.data()), 0);
      const auto want_d = host_array(Dtype::float64, {6, 4}, 60);
      EXPECT_EQ(std::memcmp(doubles.data(), want_d.data(), want_d.size()), 0);
      H5Dclose(d);
      // complex64: a compound {r, i} of floats, read member by member.
      hid_t c = H5Dopen2(file, "c", H5P_DEFAULT);
      hid_t ct = H5Dget_type(c);
      EXPECT_EQ(H5Tget_class(ct), H5T_COMPOUND);
      EXPECT_EQ(H5Tget_nmembers(ct), 2);
      char* r_name = H5Tget_member_name(ct, 0);
      char* i_name = H5Tget_member_name(ct, 1);
      EXPECT_STREQ(r_name, "r");
      EXPECT_STREQ(i_name, "i");
      H5free_memory(r_name);
      H5free_memory(i_name);
      hid_t only_i = H5Tcreate(H5T_COMPOUND, sizeof(float));
      H5Tinsert(only_i, "i", 0, H5T_NATIVE_FLOAT);
      std::vector<float> imag(5);
      EXPECT_GE(H5Dread(c, only_i, H5S_ALL, H5S_ALL, H5P_DEFAULT, imag.data()), 0);
      const auto want_c = host_array(Dtype::complex64, {5}, 61);
      for (std::size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(std::memcmp(&imag[k], want_c.data() + 8 * k + 4, 4), 0) << "imaginary part " << k;
      }
      H5Tclose(only_i);
      H5Tclose(ct);
      H5Dclose(c);
      // float16: HDF5 converts it to float like any float type.
      hid_t h = H5Dopen2(file, "h", H5P_DEFAULT);
      std::vector<float> halves(8);
      EXPECT_GE(H5Dread(h, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, halves.data()), 0);
      const auto want_h = host_array(Dtype::float16, {8}, 62);
      for (std::size_t k = 0; k < 8; ++k) {
        std::uint16_t bits = 0;
        std::memcpy(&bits, want_h.data() + 2 * k, 2);
        const float want = static_cast<float>(float16::from_bits(bits));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(halves[k])) << k;
        } else {
          EXPECT_EQ(halves[k], want) << "float16 element " << k;
        }
      }
      H5Dclose(h);
      H5Fclose(file);

      // Another tool's file: {real, imag} big-endian doubles, big-endian int32, and a string.
      const hid_t other =
          H5Fcreate(dir_.file("other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      hsize_t n = 3;
      hid_t space = H5Screate_simple(1, &n, nullptr);
      hid_t be_complex = H5Tcreate(H5T_COMPOUND, 16);
      H5Tinsert(be_complex, "real", 0, H5T_IEEE_F64BE);
      H5Tinsert(be_complex, "imag", 8, H5T_IEEE_F64BE);
      hid_t mem_complex = H5Tcreate(H5T_COMPOUND, 16);
      H5Tinsert(mem_complex, "real", 0, H5T_NATIVE_DOUBLE);
      H5Tinsert(mem_complex, "imag", 8, H5T_NATIVE_DOUBLE);
      const std::complex<double> z[3] = {{1.5, -2}, {0, 3.25}, {-1e10, 1e-10}};
      hid_t dz = H5Dcreate2(other, "z", be_complex, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(dz, mem_complex, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
      H5Dclose(dz);
      const std::int32_t ints[3] = {-5, 70000, 2147483647};
      hid_t di =
          H5Dcreate2(other, "i", H5T_STD_I32BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(di, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints);
      H5Dclose(di);
      hid_t str = H5Tcopy(H5T_C_S1);
      H5Tset_size(str, 4);
      hid_t ds = H5Dcreate2(other, "s", str, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      H5Dwrite(ds, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, "abcdefghijkl");
      H5Dclose(ds);
      H5Tclose(str);
      H5Tclose(be_complex);
      H5Tclose(mem_complex);
      H5Sclose(space);
      H5Fclose(other);
    }();
  MPI_Barrier(MPI_COMM_WORLD);
  hdf5::File g =
      hdf5::File::open(*s_.comm, dir_.file("other.h5"), hdf5::Access::read_only, options());
  EXPECT_EQ(g.datasets(), (std::vector<std::string>{"i", "s", "z"}));
  EXPECT_EQ(g.info("z").dtype, Dtype::complex128);
  EXPECT_EQ(g.read_host<std::complex<double>>("z"),
            (std::vector<std::complex<double>>{{1.5, -2}, {0, 3.25}, {-1e10, 1e-10}}));
  DistArray zi(*s_.comm, {3}, Dtype::complex128, other_splits(s_.comm->size(), 3)[0].second);
  g.read("z", zi);
  EXPECT_EQ(zi.all_gather<std::complex<double>>(),
            (std::vector<std::complex<double>>{{1.5, -2}, {0, 3.25}, {-1e10, 1e-10}}));
  DistArray ii(*s_.comm, {3}, Dtype::int32);
  g.read("i", ii);
  EXPECT_EQ(ii.all_gather<std::int32_t>(), (std::vector<std::int32_t>{-5, 70000, 2147483647}));
  expect_error<LogicError>([&] { (void)g.info("s"); }, {"dataset 's'", "string", "no Skein dtype"},
                           "a string dataset");
  EXPECT_EQ(g.read_host<std::int32_t>("i").size(), 3u);  // still usable
}

// ---- checksums ----------------------------------------------------------------------------------

// Plain HDF5 (rank 0, the file closed by Skein): whether dataset `name` is chunked and carries the
// Fletcher32 filter, and where the chunk holding row `row` lies in the file (address, bytes).
struct PlainLayout {
  bool chunked = false;
  bool fletcher32 = false;
  haddr_t chunk_address = HADDR_UNDEF;
  hsize_t chunk_bytes = 0;
};

PlainLayout plain_layout(const std::string& path, const std::string& name, hsize_t row) {
  PlainLayout out;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  if (file < 0) return out;
  const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t dcpl = H5Dget_create_plist(d);
  out.chunked = H5Pget_layout(dcpl) == H5D_CHUNKED;
  unsigned flags = 0;
  std::size_t n = 0;
  H5E_auto2_t print = nullptr;  // "not in the pipeline" is an answer here, not an error to print
  void* print_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &print, &print_data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  out.fletcher32 = H5Pget_filter_by_id2(dcpl, H5Z_FILTER_FLETCHER32, &flags, &n, nullptr, 0,
                                        nullptr, nullptr) >= 0;
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, print, print_data);
  if (out.chunked) {
    const hid_t space = H5Dget_space(d);
    std::vector<hsize_t> at(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)), 0);
    at[0] = row;
    unsigned mask = 0;
    EXPECT_GE(H5Dget_chunk_info_by_coord(d, at.data(), &mask, &out.chunk_address, &out.chunk_bytes),
              0)
        << name;
    H5Sclose(space);
  }
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Fclose(file);
  return out;
}

// Flips the bits of one byte of `path` at `offset`.
void flip_byte(const std::string& path, std::uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5a));
  ASSERT_TRUE(f.good()) << "flipping byte " << offset << " of " << path;
}

TEST_P(Hdf5Files, ChecksumsAreOnByDefaultAndDamagedDataIsRefusedOnEveryRank) {
  const std::string path = dir_.file("checksums.h5");
  Rig other = another_layout_rig();
  const Shape shape = {48, 3};  // 6 chunks of 8 rows in "u": on 4 ranks only rank 3 reads the last
  hdf5::WriteOptions eight;
  eight.chunk_rows = 8;
  hdf5::WriteOptions contiguous;
  contiguous.checksum = false;
  {
    hdf5::File f = hdf5::File::create(*s_.comm, path, options(200));  // pieces of 8 rows
    f.write("u", filled(*s_.comm, shape, Dtype::float64, 80), eight);
    f.write("v", filled(*s_.comm, shape, Dtype::float64, 81));  // default: one chunk here
    f.write("deflated", filled(*s_.comm, shape, Dtype::float64, 82), {.compression = 5});
    f.write("plain", filled(*s_.comm, shape, Dtype::float64, 83), contiguous);
    const auto host = host_array(Dtype::int32, {100}, 84);
    f.write_host("host", std::span<const std::byte>(host), Shape{100}, Dtype::int32);
    const auto u = f.info("u"), v = f.info("v"), plain = f.info("plain");
    EXPECT_TRUE(u.checksum);
    EXPECT_EQ(u.chunk_rows, 8u);
    EXPECT_TRUE(v.checksum);
    EXPECT_EQ(v.chunk_rows, 48u);  // about 1 MiB per chunk, clamped to the rows
    EXPECT_TRUE(f.info("deflated").checksum);
    EXPECT_EQ(f.info("deflated").compression, 5);
    EXPECT_TRUE(f.info("host").checksum);
    EXPECT_FALSE(plain.checksum);
    EXPECT_EQ(plain.chunk_rows, 0u);
    EXPECT_NE(u.describe().find("fletcher32"), std::string::npos) << u.describe();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Plain HDF5 sees the filter (and no filter, contiguous, where it was turned off); then one
  // byte in the middle of a chunk of each checked dataset is changed.
  if (world_rank() == 0)
    [&] {
      for (const auto& [name, row] : std::vector<std::pair<std::string, hsize_t>>{
               {"u", 47}, {"v", 0}, {"deflated", 0}, {"host", 0}}) {
        const PlainLayout l = plain_layout(path, name, row);
        EXPECT_TRUE(l.chunked) << name;
        EXPECT_TRUE(l.fletcher32) << name;
        ASSERT_NE(l.chunk_address, HADDR_UNDEF) << name;
        ASSERT_GT(l.chunk_bytes, 8u) << name;
      }
      const PlainLayout plain = plain_layout(path, "plain", 0);
      EXPECT_FALSE(plain.chunked);
      EXPECT_FALSE(plain.fletcher32);
    }();
  MPI_Barrier(MPI_COMM_WORLD);

  // Undamaged: every dataset reads back as the host computes it, on another layout too.
  auto check_all = [&](const std::vector<std::string>& names, const std::string& what) {
    hdf5::File f = hdf5::File::open(*s_.comm, path, hdf5::Access::read_only, options(200));
    for (const auto& [name, salt] : std::vector<std::pair<std::string, std::uint64_t>>{
             {"u", 80}, {"v", 81}, {"deflated", 82}, {"plain", 83}}) {
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      DistArray b(*other.comm, shape, Dtype::float64,
                  other_splits(other.comm->size(), shape[0])[1].second);
      f.read(name, b);
      expect_bytes(b.all_gather_bytes(), host_array(Dtype::float64, shape, salt),
                   what + ": " + name);
    }
    if (std::find(names.begin(), names.end(), "host") != names.end()) {
      expect_bytes(f.read_host_bytes("host"), host_array(Dtype::int32, {100}, 84), what + ": host");
    }
  };
  check_all({"u", "v", "deflated", "plain", "host"}, "undamaged");

  if (world_rank() == 0)
    [&] {
      for (const auto& [name, row] : std::vector<std::pair<std::string, hsize_t>>{
               {"u", 47}, {"v", 0}, {"deflated", 0}, {"host", 0}}) {
        const PlainLayout l = plain_layout(path, name, row);
        ASSERT_NE(l.chunk_address, HADDR_UNDEF) << name;
        flip_byte(path, l.chunk_address + l.chunk_bytes / 2);
      }
    }();
  MPI_Barrier(MPI_COMM_WORLD);

  {
    hdf5::File f = hdf5::File::open(*s_.comm, path, hdf5::Access::read_only, options(200));
    const std::vector<std::string> words = {path, "Fletcher32 checksum failed",
                                            "changed or damaged"};
    auto with = [&](const std::string& name) {
      std::vector<std::string> w = words;
      w.push_back("dataset '" + name + "'");
      return w;
    };
    for (const std::string name : {"u", "v", "deflated"}) {
      DistArray a(*s_.comm, shape, Dtype::float64);
      expect_error<RuntimeError>([&] { f.read(name, a); }, with(name), "read damaged " + name);
      DistArray b(*other.comm, shape, Dtype::float64,
                  other_splits(other.comm->size(), shape[0])[2].second);
      expect_error<RuntimeError>([&] { f.read(name, b); }, with(name),
                                 "read damaged " + name + " (other layout)");
      expect_error<RuntimeError>([&] { (void)f.read_host_bytes(name); }, with(name),
                                 "read_host damaged " + name);
    }
    expect_error<RuntimeError>([&] { (void)f.read_host<std::int32_t>("host"); }, with("host"),
                               "read_host damaged host");
    // The rows of "u" before the damaged chunk are still good, and no rank was left waiting.
    const auto plain = f.read_host_bytes("plain");
    expect_bytes(plain, host_array(Dtype::float64, shape, 83),
                 "undamaged dataset after the errors");
  }
  check_all({"plain"}, "after the damage");
}

TEST_P(Hdf5Files, BadCallsRaiseTypedErrorsOnEveryRank) {
  const std::string path = dir_.file("errors.h5");
  Rig other = another_layout_rig();
  hdf5::File f = hdf5::File::create(*s_.comm, path, options());
  DistArray a = filled(*s_.comm, {10, 3}, Dtype::float64, 70);
  f.write("u", a);

  DistArray wrong_dtype(*s_.comm, {10, 3}, Dtype::float32);
  expect_error<LogicError>([&] { f.read("u", wrong_dtype); },
                           {"'u'", "float64 (10, 3)", "float32 (10, 3)"},
                           "read into the wrong dtype");
  DistArray wrong_shape(*other.comm, {10, 4}, Dtype::float64);
  expect_error<LogicError>([&] { f.read("u", wrong_shape); }, {"(10, 3)", "(10, 4)"},
                           "read into the wrong shape");
  expect_error<LogicError>([&] { f.read("nope", a); }, {"no dataset 'nope'", "its datasets: u"},
                           "missing dataset");
  expect_error<LogicError>([&] { f.write("u", a); }, {"'u'", "exists already", "overwrite"},
                           "existing dataset");
  hdf5::WriteOptions over;
  over.overwrite = true;
  over.step = 3;
  over.time = 0.75;
  DistArray a2 = filled(*s_.comm, {10, 3}, Dtype::float64, 71);
  f.write("u", a2, over);
  expect_bytes(f.read_host_bytes("u"), host_array(Dtype::float64, {10, 3}, 71),
               "overwritten dataset");
  EXPECT_EQ(f.info("u").step, 3);
  over.step.reset();  // the next overwrite has no step: the old one must go
  f.write("u", a, over);
  expect_bytes(f.read_host_bytes("u"), host_array(Dtype::float64, {10, 3}, 70),
               "overwritten again");
  EXPECT_FALSE(f.info("u").step.has_value());
  EXPECT_EQ(f.info("u").time, 0.75);
  DistArray a3 = filled(*s_.comm, {11, 3}, Dtype::float64, 72);
  expect_error<LogicError>([&] { f.write("u", a3, over); },
                           {"exists already", "(10, 3)", "(11, 3)"},
                           "overwrite with another shape");
  hdf5::WriteOptions bad;
  bad.compression = 12;
  expect_error<LogicError>([&] { f.write("v", a, bad); }, {"compression is 12"},
                           "bad compression level");
  hdf5::WriteOptions reserved;
  reserved.attributes["skein_mine"] = std::int64_t{1};
  expect_error<LogicError>([&] { f.write("v", a, reserved); }, {"skein_mine", "reserved"},
                           "reserved attribute");
  expect_error<LogicError>([&] { f.write("", a); }, {"empty"}, "empty name");
  if (world_size() > 1) {
    // Ranks that disagree raise before touching the file.
    const std::string name = world_rank() == 1 ? "b" : "a";
    expect_error<LogicError>([&] { f.write(name, a); }, {"different calls", "rank 0 called"},
                             "different names");
    expect_error<LogicError>([&] { f.set_attribute("/", "x", std::int64_t{world_rank()}); },
                             {"different calls"}, "different attribute values");
  }
  f.write("after", a);  // still usable on every rank
  EXPECT_TRUE(f.exists("after"));
  f.close();
  expect_error<LogicError>([&] { f.write("x", a); }, {"closed"}, "a closed file");

  hdf5::File ro = hdf5::File::open(*s_.comm, path, hdf5::Access::read_only, options());
  expect_error<LogicError>([&] { ro.write("x", a); }, {"read-only"}, "write to a read-only file");
  ro.close();

  expect_error<RuntimeError>(
      [&] {
        (void)hdf5::File::open(*s_.comm, dir_.file("absent.h5"), hdf5::Access::read_only,
                               options());
      },
      {"absent.h5", "does not exist"}, "open a missing file");
  if (world_rank() == 0) std::ofstream(dir_.file("text.h5")) << "not an HDF5 file\n";
  MPI_Barrier(MPI_COMM_WORLD);
  expect_error<RuntimeError>(
      [&] {
        (void)hdf5::File::open(*s_.comm, dir_.file("text.h5"), hdf5::Access::read_only, options());
      },
      {"text.h5", "H5Fopen"}, "open a file that is not HDF5");
  expect_error<RuntimeError>(
      [&] { (void)hdf5::File::create(*s_.comm, dir_.file("no/such/dir.h5"), options()); },
      {"no/such/dir.h5"}, "create in a missing directory");
  {
    test::ScopedEnv env("SKEIN_HDF5_SERIAL", "abc");
    expect_error<LogicError>(
        [&] { (void)hdf5::File::create(*s_.comm, dir_.file("env.h5"), options()); },
        {"SKEIN_HDF5_SERIAL='abc'"}, "bad SKEIN_HDF5_SERIAL");
  }
  hdf5::FileOptions zero = options();
  zero.max_bytes_per_call = 0;
  expect_error<LogicError>([&] { (void)hdf5::File::create(*s_.comm, dir_.file("zero.h5"), zero); },
                           {"max_bytes_per_call is 0"}, "zero piece size");
  // A good call after all of that.
  hdf5::File g = hdf5::File::open(*s_.comm, path, hdf5::Access::read_write, options());
  EXPECT_TRUE(g.exists("after"));
}

// SKEIN_HDF5_SERIAL=1 turns every file to the path through rank 0.
TEST(Hdf5Environment, SerialVariableForcesThePathThroughRank0) {
  if (!hdf5::available()) GTEST_SKIP() << "no HDF5 in this build";
  if (suite_devices_or_none().size() < static_cast<std::size_t>(world_size()))
    GTEST_SKIP() << "needs a device per rank";
  Rig s = runtime_rig();
  TempDir dir{"skein-hdf5-test"};
  test::ScopedEnv env("SKEIN_HDF5_SERIAL", "1");
  hdf5::File f = hdf5::File::create(*s.comm, dir.file("serial.h5"));
  EXPECT_FALSE(f.parallel());
  f.write("u", filled(*s.comm, {5, 5}, Dtype::uint8, 80));
  expect_bytes(f.read_host_bytes("u"), host_array(Dtype::uint8, {5, 5}, 80),
               "through rank 0 by the environment");
  EXPECT_NE(hdf5::library_description().find("HDF5 1."), std::string::npos)
      << hdf5::library_description();
}

// ---- written on 4 ranks, read on 1, 2 and 3 (driven by hdf5_cross_ranks.cmake) ----------------

// The values the h5py check (hdf5_check.py) computes too: small integers, exact in every dtype
// used (bfloat16 included, and float16 for h5py's reading of bfloat16).
double cross_value(std::size_t row, std::size_t col, int salt) {
  return static_cast<double>(
      static_cast<long long>((row * 31 + col * 7 + static_cast<std::size_t>(salt) * 13) % 251) -
      125);
}

std::vector<std::byte> cross_rows(Dtype dtype, const Shape& shape, std::size_t begin,
                                  std::size_t end, int salt) {
  const std::size_t cols = shape.size() > 1 ? shape[1] : 1;
  std::vector<std::byte> out((end - begin) * cols * itemsize(dtype));
  std::size_t k = 0;
  for (std::size_t r = begin; r < end; ++r) {
    for (std::size_t c = 0; c < cols; ++c, ++k) {
      const double v = cross_value(r, c, salt);
      visit_dtype(dtype, [&](auto t) {
        using T = decltype(t);
        T x{};
        if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
          x = T(static_cast<float>(v));
        } else if constexpr (std::is_same_v<T, std::complex<float>> ||
                             std::is_same_v<T, std::complex<double>>) {
          x = T(static_cast<typename T::value_type>(v),
                static_cast<typename T::value_type>(-2 * v));
        } else {
          x = static_cast<T>(v);
        }
        std::memcpy(out.data() + k * sizeof(T), &x, sizeof(T));
      });
    }
  }
  return out;
}

struct CrossDataset {
  const char* name;
  Dtype dtype;
  Shape shape;
  int salt;
  int compression;
  bool checksum = true;  // WriteOptions::checksum (empty datasets get none: HDF5 cannot chunk them)
};

const std::vector<CrossDataset>& cross_datasets() {
  static const std::vector<CrossDataset> all = {
      {"u", Dtype::float64, {37, 5}, 1, 0},   {"c", Dtype::complex64, {23}, 2, 0},
      {"z", Dtype::complex128, {6, 2}, 3, 0}, {"h", Dtype::float16, {11, 3}, 4, 0},
      {"b", Dtype::bfloat16, {9}, 5, 0},      {"i", Dtype::int16, {13, 2}, 6, 0},
      {"n", Dtype::uint64, {5}, 7, 0, false}, {"e", Dtype::float32, {0, 3}, 8, 0},
      {"one", Dtype::int8, {1}, 9, 0},        {"fields/p", Dtype::float32, {101, 3}, 10, 4},
  };
  return all;
}

const char* cross_dir() { return std::getenv("SKEIN_TEST_HDF5_DIR"); }

TEST(HDF5CrossRanks, Write) {
  if (!cross_dir()) GTEST_SKIP() << "run by the hdf5.cross.* tests (SKEIN_TEST_HDF5_DIR)";
  if (world_rank() == 0) fs::create_directories(cross_dir());
  MPI_Barrier(MPI_COMM_WORLD);
  Rig s = runtime_rig();
  for (bool serial : {false, true}) {
    hdf5::FileOptions o;
    o.serial = serial;
    o.max_bytes_per_call = 200;  // several pieces per rank even for these small arrays
    hdf5::File f = hdf5::File::create(
        *s.comm, fmt::format("{}/cross-{}.h5", cross_dir(), serial ? "rank0" : "mpiio"), o);
    for (const auto& d : cross_datasets()) {
      DistArray a(*s.comm, d.shape, d.dtype);
      const RowRange mine = a.rank_rows();
      a.scatter_local(
          std::span<const std::byte>(cross_rows(d.dtype, d.shape, mine.begin, mine.end, d.salt)));
      hdf5::WriteOptions wo;
      wo.step = 1000 + d.salt;
      wo.time = 0.5 * d.salt;
      wo.compression = d.compression;
      wo.checksum = d.checksum;
      wo.attributes["salt"] = std::int64_t{d.salt};
      wo.attributes["written_by_ranks"] = std::int64_t{world_size()};
      f.write(d.name, a, wo);
    }
    f.set_attribute("/", "purpose", std::string("cross-rank test"));
  }
}

TEST(HDF5CrossRanks, Read) {
  if (!cross_dir()) GTEST_SKIP() << "run by the hdf5.cross.* tests (SKEIN_TEST_HDF5_DIR)";
  Rig s = runtime_rig();
  Rig other = another_layout_rig();
  for (const char* file : {"mpiio", "rank0"}) {
    for (bool serial : {false, true}) {
      hdf5::FileOptions o;
      o.serial = serial;
      hdf5::File f = hdf5::File::open(*s.comm, fmt::format("{}/cross-{}.h5", cross_dir(), file),
                                      hdf5::Access::read_only, o);
      EXPECT_EQ(std::get<std::string>(*f.attribute("/", "purpose")), "cross-rank test");
      for (const auto& d : cross_datasets()) {
        const std::string what =
            fmt::format("{} in cross-{}.h5 read {} on {} ranks", d.name, file,
                        serial ? "through rank 0" : "with MPI-IO", world_size());
        const hdf5::DatasetInfo info = f.info(d.name);
        EXPECT_EQ(info.dtype, d.dtype) << what;
        EXPECT_EQ(info.shape, d.shape) << what;
        EXPECT_EQ(info.step, 1000 + d.salt) << what;
        EXPECT_EQ(info.time, 0.5 * d.salt) << what;
        EXPECT_EQ(std::get<std::int64_t>(info.attributes.at("written_by_ranks")), 4) << what;
        EXPECT_EQ(info.compression, d.compression) << what;
        EXPECT_EQ(info.checksum, d.checksum && shape_size(d.shape) > 0) << what;
        const auto want = cross_rows(d.dtype, d.shape, 0, d.shape[0], d.salt);
        DistArray a(*s.comm, d.shape, d.dtype);
        f.read(d.name, a);
        expect_bytes(a.all_gather_bytes(), want, what + " (Runtime placement)");
        DistArray b(*other.comm, d.shape, d.dtype,
                    other_splits(other.comm->size(), d.shape[0])[2].second);
        f.read(d.name, b);
        expect_bytes(b.all_gather_bytes(), want, what + " (two devices per rank, empty members)");
      }
    }
  }
}

}  // namespace hdf5_test
}  // namespace

#endif  // SKEIN_HAS_HDF5
