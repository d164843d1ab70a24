// SPDX-License-Identifier: BSD-3-Clause
// Arrays: creation, host round trips of every dtype, views, reshape, device copies, per-device
// views, and the error paths.
#include <gtest/gtest.h>
#include "skein/detail/impl_access.hpp"

#include <skein/skein.hpp>

#include "backends.hpp"
#include "sanitizers.hpp"

namespace skein::test {
namespace {
namespace array_test {

class Arrays : public BackendTest {};

template <class T>
void round_trip(const Queue& queue, const Shape& shape, std::uint32_t seed) {
  const auto host = random_values<T>(shape_size(shape), seed);
  auto a = Array::from_host(queue, host, shape);
  EXPECT_EQ(a.shape(), shape);
  EXPECT_EQ(a.dtype(), dtype_of<T>);
  EXPECT_EQ(a.size(), host.size());
  EXPECT_EQ(a.nbytes(), host.size() * sizeof(T));
  EXPECT_TRUE(a.is_contiguous());
  const auto back = a.template get<T>();
  ASSERT_EQ(back.size(), host.size());
  if (!host.empty()) {
    EXPECT_EQ(std::memcmp(back.data(), host.data(), host.size() * sizeof(T)), 0);
  }
}

TEST_P(Arrays, RoundTripEveryDtypeAndShape) {
  auto ctx = context();
  Queue queue(ctx);
  std::uint32_t seed = 100;
  for (const Shape& shape : {Shape{0}, Shape{1}, Shape{17}, Shape{3, 5}, Shape{1, 1}, Shape{0, 9},
                             Shape{257, 129}, Shape{2, 3, 5}, Shape{1 << 20}}) {
    SCOPED_TRACE(to_string(shape));
    for (Dtype dtype : all_dtypes) {
      // Under the sanitizers the MiB shape for the first dtype only (support/sanitizers.hpp):
      // every dtype's own code runs on the smaller shapes, and the others' MiB round trips were
      // AddressSanitizer's checks on up to 16 MiB of host data each.
      if (kUnderSanitizers && shape_size(shape) == (1u << 20) && dtype != all_dtypes[0]) continue;
      SCOPED_TRACE(name(dtype));
      visit_dtype(dtype, [&](auto v) { round_trip<decltype(v)>(queue, shape, seed++); });
    }
  }
}

TEST_P(Arrays, StridesAreNumPys) {
  auto ctx = context();
  Queue queue(ctx);
  auto a = Array::empty(queue, {4, 5, 6}, Dtype::float64);
  EXPECT_EQ(a.strides(), (Strides{5 * 6 * 8, 6 * 8, 8}));
  EXPECT_EQ(a.ndim(), 3u);
  EXPECT_EQ(a.itemsize(), 8u);
}

TEST_P(Arrays, ZerosOverwritesWhatWasThere) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1001}, std::size_t{65537}}) {
    // Poison a buffer, then make a zeros array over it through an allocator that returns it.
    auto poisoned = Buffer::allocate(ctx, 0, n * 4);
    poisoned.set(queue, std::span<const std::byte>(std::vector<std::byte>(n * 4, std::byte{0xff})));
    auto z = Array::zeros(queue, {n}, Dtype::int32, std::nullopt,
                          [&](std::size_t, std::size_t) { return poisoned; });
    EXPECT_EQ(z.get<std::int32_t>(), std::vector<std::int32_t>(n, 0));
  }
}

TEST_P(Arrays, SlicesViewsAndReshapes) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t rows = 37, cols = 11;
  std::vector<std::int32_t> host(rows * cols);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::int32_t>(i * 3 + 1);
  auto a = Array::from_host(queue, host, {rows, cols});

  auto s = a.slice(5, 9);
  EXPECT_EQ(s.shape(), (Shape{4, cols}));
  EXPECT_EQ(s.offset(), 5 * cols * 4);
  EXPECT_EQ(s.get<std::int32_t>(),
            std::vector<std::int32_t>(host.begin() + 5 * cols, host.begin() + 9 * cols));
  EXPECT_EQ(a.slice(3, 3).size(), 0u);
  EXPECT_TRUE(a.slice(3, 3).get<std::int32_t>().empty());

  // Every other column of rows 2..: a strided view, gathered on get.
  auto v = a.view(2 * cols, {rows - 2, (cols + 1) / 2}, {cols * 4, 8});
  EXPECT_FALSE(v.is_contiguous());
  std::vector<std::int32_t> expected;
  for (std::size_t r = 2; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; c += 2) expected.push_back(host[r * cols + c]);
  }
  EXPECT_EQ(v.get<std::int32_t>(), expected);

  // A transposed view.
  auto t = a.view(0, {cols, rows}, {4, cols * 4});
  std::vector<std::int32_t> transposed;
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t r = 0; r < rows; ++r) transposed.push_back(host[r * cols + c]);
  }
  EXPECT_EQ(t.get<std::int32_t>(), transposed);

  auto flat = a.reshape({rows * cols});
  EXPECT_EQ(flat.get<std::int32_t>(), host);
  EXPECT_THROW(a.reshape({rows, cols + 1}), LogicError);
  EXPECT_THROW(t.reshape({rows * cols}), LogicError);
  EXPECT_THROW(a.slice(10, 9), LogicError);
  EXPECT_THROW(a.slice(0, rows + 1), LogicError);
  EXPECT_THROW(a.view(1, {rows, cols}), LogicError);  // runs past the buffer
  // Setting a strided view writes its elements (the copy kernel scatters a transposed view).
  auto negated = transposed;
  for (auto& x : negated) x = -x;
  t.set(negated);
  EXPECT_EQ(t.get<std::int32_t>(), negated);
  std::vector<std::int32_t> all_negated(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) all_negated[i] = -host[i];
  EXPECT_EQ(a.get<std::int32_t>(), all_negated);  // the view covers every element of a
  t.set(transposed);

  // Writing a slice changes only its rows.
  std::vector<std::int32_t> patch(2 * cols, -7);
  a.slice(30, 32).set(patch);
  auto updated = host;
  std::fill(updated.begin() + 30 * cols, updated.begin() + 32 * cols, -7);
  EXPECT_EQ(a.get<std::int32_t>(), updated);
}

TEST_P(Arrays, DeviceCopiesAndTypeChecks) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = random_reals<double>(999, 8);
  auto a = Array::from_host(queue, host);
  auto b = Array::empty(queue, {999}, Dtype::float64);
  b.set(a);
  EXPECT_EQ(b.get<double>(), host);
  auto wrong_shape = Array::empty(queue, {998}, Dtype::float64);
  EXPECT_THROW(wrong_shape.set(a), LogicError);
  auto wrong_type = Array::empty(queue, {999}, Dtype::float32);
  EXPECT_THROW(wrong_type.set(a), LogicError);
  try {
    (void)a.get<float>();
    FAIL();
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  std::vector<double> short_host(10);
  EXPECT_THROW(a.set(short_host), LogicError);
  EXPECT_THROW(Array::empty(queue, {4}, Dtype::int8, 3), LogicError);
}

TEST_P(Arrays, PerDeviceArraysAndViews) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 4);
  auto ctx = context(ndev);
  Queue queue(ctx);
  std::vector<Array> parts;
  for (std::size_t d = 0; d < ndev; ++d) {
    const auto host = random_reals<float>(1000 + d, static_cast<std::uint32_t>(d));
    parts.push_back(Array::from_host(queue, host, {}, d));
    EXPECT_EQ(parts.back().device_idx(), d);
    EXPECT_EQ(parts.back().get<float>(), host);
  }
  // Copy device 1's array to device 0 through Array::set.
  auto copy = Array::empty(queue, parts[1].shape(), Dtype::float32, 0);
  copy.set(parts[1]);
  EXPECT_EQ(copy.get<float>(), parts[1].get<float>());
  // A view used from another device, where the backend allows it.
  if (detail::impl_of(ctx)) {
    try {
      auto seen_from_1 = parts[0].single_device_view(1);
      EXPECT_EQ(seen_from_1.device_idx(), 1u);
      EXPECT_EQ(seen_from_1.get<float>(), parts[0].get<float>());
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("peer"), std::string::npos) << e.what();
    }
  }
  Queue only_first(ctx, {0});
  auto a = Array::empty(only_first, {4}, Dtype::float32);
  EXPECT_THROW(a.single_device_view(1), LogicError);
}

SKEIN_INSTANTIATE_BACKENDS(Arrays);

}  // namespace array_test
}  // namespace
}  // namespace skein::test
