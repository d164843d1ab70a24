// SPDX-License-Identifier: BSD-3-Clause
// Strided and pitched copies (issue 14, item 3): Array::set / get / fill_zero on non-contiguous
// views, skein::copy_rect between views on one device and across devices, Array::empty_pitched,
// checked against host references that gather and scatter the views' elements independently
// (bytes outside the views must stay as they were); and the bad input that raises LogicError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <skein/skein.hpp>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace copy_rect_test {

class CopyRect : public BackendTest {};

// "equal", or where two vectors first differ (gtest prints only their first elements).
template <class T>
std::string compare(const std::vector<T>& got, const std::vector<T>& expected) {
  if (got.size() != expected.size()) {
    return "sizes " + std::to_string(got.size()) + " and " + std::to_string(expected.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0) {
      return "first difference at element " + std::to_string(i) + " of " +
             std::to_string(got.size());
    }
  }
  return "equal";
}

// The elements of a view (element offset, shape, byte strides) of a C-ordered host array, in C
// order.
template <class T>
std::vector<T> gather(const std::vector<T>& base, std::size_t offset, const Shape& shape,
                      const Strides& strides) {
  std::vector<T> out;
  const std::size_t n = shape_size(shape);
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t flat = 0; flat < n; ++flat) {
    std::size_t at = offset;
    for (std::size_t d = 0; d < shape.size(); ++d) at += index[d] * strides[d] / sizeof(T);
    out.push_back(base.at(at));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// Writes `values` (C order) into the view's elements of a host array.
template <class T>
void scatter(std::vector<T>& base, std::size_t offset, const Shape& shape, const Strides& strides,
             const std::vector<T>& values) {
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t flat = 0; flat < values.size(); ++flat) {
    std::size_t at = offset;
    for (std::size_t d = 0; d < shape.size(); ++d) at += index[d] * strides[d] / sizeof(T);
    base.at(at) = values[flat];
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// A view of `parent`, with strides in elements of the parent's C order.
struct ViewSpec {
  std::size_t offset;  // elements
  Shape shape;
  std::vector<std::size_t> steps;  // per dimension, in elements of the parent
};

template <class T>
Strides bytes_of(const std::vector<std::size_t>& steps) {
  Strides s;
  for (std::size_t k : steps) s.push_back(k * sizeof(T));
  return s;
}

// get, then set, of each view of a parent of `parent_shape`, against the host reference.
template <class T>
void get_and_set_views(const Queue& queue, const Shape& parent_shape,
                       const std::vector<ViewSpec>& views, std::uint32_t seed = 100) {
  auto host = random_values<T>(shape_size(parent_shape), seed);
  const Array parent = Array::from_host(queue, host, parent_shape);
  for (const ViewSpec& v : views) {
    SCOPED_TRACE(::testing::Message() << "offset " << v.offset << " shape " << to_string(v.shape)
                                      << " steps " << to_string(v.steps));
    const Strides strides = bytes_of<T>(v.steps);
    const Array view = parent.view(v.offset, v.shape, strides);
    EXPECT_EQ(compare(view.template get<T>(), gather(host, v.offset, v.shape, strides)), "equal");
    const auto values = random_values<T>(shape_size(v.shape), ++seed);
    view.set(values);
    scatter(host, v.offset, v.shape, strides, values);
    // The view's elements changed, nothing else.
    EXPECT_EQ(compare(parent.template get<T>(), host), "equal");
    // Asynchronous, through a page-locked host buffer.
    if (!values.empty()) {
      const HostBuffer pinned = HostBuffer::allocate(queue.context(), values.size() * sizeof(T));
      view.get(pinned.as<T>(), Sync::async);
      queue.synchronize();
      const std::span<T> back = pinned.template as<T>();
      EXPECT_EQ(compare(std::vector<T>(back.begin(), back.end()), values), "equal");
    }
  }
}

TEST_P(CopyRect, HostTransfersOfTwoAndThreeDimensionalSubBlocks) {
  auto ctx = context();
  Queue queue(ctx);
  // 2-D: rows of 29 floats; sub-blocks at non-zero offsets (row pitch > width), a single column
  // (rows one element wide), every other column, a block of whole rows, one row.
  get_and_set_views<float>(queue, {23, 29},
                           {{3 * 29 + 5, {11, 17}, {29, 1}},
                            {7, {23, 1}, {29, 1}},
                            {29 + 1, {9, 13}, {2 * 29, 2}},
                            {4 * 29, {6, 29}, {29, 1}},
                            {20 * 29 + 3, {1, 25}, {29, 1}},
                            {0, {23, 28}, {29, 1}}});
  // Odd pitches: rows of 7 bytes, and of 13 int16 (26 bytes), sub-blocks off the rows' start.
  get_and_set_views<std::uint8_t>(queue, {19, 7}, {{2 * 7 + 1, {15, 5}, {7, 1}}}, 200);
  get_and_set_views<std::int16_t>(queue, {9, 13}, {{13 + 3, {7, 9}, {13, 1}}}, 300);
  // 3-D: a (4, 5, 6) block of an (8, 9, 10) array at (2, 3, 1); slices of whole rows (merged to
  // 2-D); a block stepping over slices and rows; every other element of every other row (rows one
  // element wide, copied as a 3-D rectangle).
  get_and_set_views<double>(queue, {8, 9, 10},
                            {{2 * 90 + 3 * 10 + 1, {4, 5, 6}, {90, 10, 1}},
                             {90 + 10, {5, 7, 10}, {90, 10, 1}},
                             {3, {4, 3, 6}, {180, 30, 1}},
                             {5, {4, 5}, {20, 2}}});
}

TEST_P(CopyRect, ViewsThatAreNotRectanglesGoThroughTheCopyKernel) {
  auto ctx = context();
  Queue queue(ctx);
  // A 4-D block (no merge possible), a transposed view, and a broadcast-free permuted 3-D view.
  get_and_set_views<std::int32_t>(queue, {4, 5, 6, 7},
                                  {{210 + 35 + 7 + 1, {2, 3, 4, 5}, {210, 42, 7, 1}},
                                   {0, {7, 120}, {1, 7}},
                                   {8, {3, 5, 4}, {42, 7, 210}}},
                                  400);
}

TEST_P(CopyRect, EmptyAndOneElementViews) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = random_values<std::int32_t>(6 * 8, 9);
  auto a = Array::from_host(queue, host, {6, 8});
  auto empty = a.view(9, {0, 3}, {32, 4});
  EXPECT_TRUE(empty.get<std::int32_t>().empty());
  empty.set(std::vector<std::int32_t>{});
  empty.fill_zero();
  copy_rect(queue, empty, a.view(1, {0, 3}, {32, 4}), Sync::blocking);
  auto one = a.view(3 * 8 + 5, {1, 1}, {64, 8});
  EXPECT_EQ(one.get<std::int32_t>(), std::vector<std::int32_t>{host[29]});
  one.set(std::vector<std::int32_t>{-5});
  auto expected = host;
  expected[29] = -5;
  EXPECT_EQ(a.get<std::int32_t>(), expected);
  auto b = Array::zeros(queue, {6, 8}, Dtype::int32);
  copy_rect(queue, b.view(47, {1, 1}, {4, 4}), one, Sync::blocking);
  std::vector<std::int32_t> b_expected(48, 0);
  b_expected[47] = -5;
  EXPECT_EQ(b.get<std::int32_t>(), b_expected);
  EXPECT_EQ(a.get<std::int32_t>(), expected);
}

// copy_rect from view `s` of `src_host` into view `d` of `dst_host`, checked on the host.
template <class T>
void device_copy(const Queue& queue, std::size_t dst_dev, std::size_t src_dev,
                 const Shape& dst_shape, const ViewSpec& d, const Shape& src_shape,
                 const ViewSpec& s, std::uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "dst " << to_string(d.shape) << " steps " << to_string(d.steps) << " src steps "
               << to_string(s.steps) << " devices " << src_dev << " -> " << dst_dev);
  const auto src_host = random_values<T>(shape_size(src_shape), seed);
  auto dst_host = random_values<T>(shape_size(dst_shape), seed + 1);
  const Array src = Array::from_host(queue, src_host, src_shape, src_dev);
  const Array dst = Array::from_host(queue, dst_host, dst_shape, dst_dev);
  copy_rect(queue, dst.view(d.offset, d.shape, bytes_of<T>(d.steps)),
            src.view(s.offset, s.shape, bytes_of<T>(s.steps)));
  scatter(dst_host, d.offset, d.shape, bytes_of<T>(d.steps),
          gather(src_host, s.offset, s.shape, bytes_of<T>(s.steps)));
  EXPECT_EQ(compare(dst.get<T>(), dst_host), "equal");
  EXPECT_EQ(compare(src.get<T>(), src_host), "equal");
}

TEST_P(CopyRect, DeviceToDeviceOnOneDevice) {
  auto ctx = context();
  Queue queue(ctx);
  // 2-D between different pitches and offsets, into and out of a contiguous block.
  device_copy<float>(queue, 0, 0, {20, 31}, {2 * 31 + 3, {9, 14}, {31, 1}}, {15, 17},
                     {17 + 1, {9, 14}, {17, 1}}, 10);
  device_copy<float>(queue, 0, 0, {9, 14}, {0, {9, 14}, {14, 1}}, {15, 17},
                     {17 + 2, {9, 14}, {17, 1}}, 12);
  device_copy<std::uint8_t>(queue, 0, 0, {5, 11}, {3, {4, 7}, {11, 1}}, {7, 9},
                            {10, {4, 7}, {9, 1}}, 14);
  // 3-D blocks, and one-element rows (a column into every third element of rows).
  device_copy<double>(queue, 0, 0, {6, 7, 8}, {56 + 8 + 1, {3, 4, 5}, {56, 8, 1}}, {5, 5, 5},
                      {1, {3, 4, 5}, {25, 5, 1}}, 16);
  device_copy<std::int32_t>(queue, 0, 0, {10, 12}, {1, {10, 4}, {12, 3}}, {40, 3},
                            {2, {10, 4}, {12, 3}}, 18);
  // Not a rectangle (a 4-D block): the copy kernel.
  device_copy<std::int32_t>(queue, 0, 0, {3, 4, 5, 6}, {0, {2, 2, 2, 2}, {120, 30, 6, 1}},
                            {2, 3, 4, 5}, {1, {2, 2, 2, 2}, {60, 20, 5, 1}}, 20);

  // Two views of one allocation that do not overlap: the top-left block into the bottom-right.
  const auto host = random_values<std::int32_t>(12 * 10, 22);
  auto a = Array::from_host(queue, host, {12, 10});
  auto top = a.view(0, {5, 4}, {40, 4});
  auto bottom = a.view(7 * 10 + 6, {5, 4}, {40, 4});
  copy_rect(queue, bottom, top);
  auto expected = host;
  scatter(expected, 76, {5, 4}, {40, 4}, gather(host, 0, {5, 4}, {40, 4}));
  EXPECT_EQ(a.get<std::int32_t>(), expected);
  // Array::set is copy_rect on the array's queue; every other row of one into another's columns.
  auto c = Array::zeros(queue, {4, 6}, Dtype::int32);
  c.view(0, {4, 5}, {24, 4}).set(a.view(10, {4, 5}, {80, 8}));
  std::vector<std::int32_t> c_expected(24, 0);
  scatter(c_expected, 0, {4, 5}, {24, 4}, gather(expected, 10, {4, 5}, {80, 8}));
  EXPECT_EQ(c.get<std::int32_t>(), c_expected);
}

TEST_P(CopyRect, DeviceToDeviceAcrossDevicesOfAContext) {
  SKEIN_NEED_DEVICES(2);
  const std::size_t ndev = std::min<std::size_t>(devices().size(), 3);
  auto ctx = context(ndev);
  Queue queue(ctx);
  for (std::size_t s = 0; s < ndev; ++s) {
    const std::size_t d = (s + 1) % ndev;
    device_copy<float>(queue, d, s, {20, 31}, {2 * 31 + 3, {9, 14}, {31, 1}}, {15, 17},
                       {17 + 1, {9, 14}, {17, 1}}, 30 + static_cast<std::uint32_t>(s));
    device_copy<double>(queue, d, s, {6, 7, 8}, {56 + 8 + 1, {3, 4, 5}, {56, 8, 1}}, {5, 5, 5},
                        {1, {3, 4, 5}, {25, 5, 1}}, 40 + static_cast<std::uint32_t>(s));
  }
  // Not rectangles: through contiguous copies and the copy kernel on each side.
  device_copy<std::int32_t>(queue, 0, 1, {3, 4, 5, 6}, {0, {2, 2, 2, 2}, {120, 30, 6, 1}},
                            {2, 3, 4, 5}, {1, {2, 2, 2, 2}, {60, 20, 5, 1}}, 50);
}

TEST_P(CopyRect, FillZeroOnViews) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = random_values<std::int32_t>(9 * 11, 60);
  auto a = Array::from_host(queue, host, {9, 11});
  auto expected = host;
  // A sub-block (the fill kernel), a transposed view of whole rows (dense: one memset).
  a.view(2 * 11 + 3, {5, 6}, {44, 4}).fill_zero();
  scatter(expected, 25, {5, 6}, {44, 4}, std::vector<std::int32_t>(30, 0));
  EXPECT_EQ(a.get<std::int32_t>(), expected);
  a.view(8 * 11, {11, 1}, {4, 44}).fill_zero();  // the last row, as a column
  std::fill(expected.begin() + 88, expected.end(), 0);
  EXPECT_EQ(a.get<std::int32_t>(), expected);
  a.view(0, {11, 2}, {4, 44}).transpose().fill_zero();  // rows 0 and 1, transposed twice
  std::fill(expected.begin(), expected.begin() + 22, 0);
  EXPECT_EQ(a.get<std::int32_t>(), expected);
}

TEST_P(CopyRect, PitchedAllocations) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t align = ctx.devices().front().params().base_address_align;
  for (const Shape& shape : {Shape{5, 33}, Shape{3, 4, 7}, Shape{17}, Shape{1, 1}, Shape{0, 6}}) {
    SCOPED_TRACE(to_string(shape));
    auto p = Array::empty_pitched(queue, shape, Dtype::float32);
    EXPECT_EQ(p.shape(), shape);
    ASSERT_EQ(p.strides().size(), shape.size());
    EXPECT_EQ(p.strides().back(), 4u);
    if (shape.size() >= 2 && shape_size(shape) > 0) {
      const std::size_t pitch = p.strides()[shape.size() - 2];
      EXPECT_GE(pitch, shape.back() * 4);
      if (GetParam().api == ApiId::opencl) {
        EXPECT_EQ(pitch % align, 0u);
      }
      if (shape.size() == 3) {
        EXPECT_EQ(p.strides()[0], pitch * shape[1]);
      }
      EXPECT_GE(p.data().size(), pitch * shape_size(shape) / shape.back());
    }
    const auto host = random_reals<float>(shape_size(shape), 70);
    p.set(host);
    EXPECT_EQ(p.get<float>(), host);
    auto dense = Array::empty(queue, shape, Dtype::float32);
    copy_rect(queue, dense, p);
    EXPECT_EQ(dense.get<float>(), host);
    auto back = Array::empty_pitched(queue, shape, Dtype::float32);
    back.set(dense);
    EXPECT_EQ(back.get<float>(), host);
  }
  // A sub-block of a pitched array into another pitched array of the block's shape.
  auto big = Array::empty_pitched(queue, {12, 50}, Dtype::int16);
  std::vector<std::int16_t> host(12 * 50);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::int16_t>(i * 7 - 300);
  big.set(host);
  auto block = Array::empty_pitched(queue, {6, 21}, Dtype::int16);
  block.set(big.view(big.strides()[0] / 2 * 3 + 4, {6, 21}, big.strides()));
  EXPECT_EQ(block.get<std::int16_t>(), gather(host, 3 * 50 + 4, {6, 21}, {100, 2}));
}

TEST_P(CopyRect, BadInputRaisesLogicErrors) {
  auto ctx = context();
  Queue queue(ctx);
  auto a = Array::zeros(queue, {8, 10}, Dtype::float32);
  auto view = a.view(11, {3, 4}, {40, 4});
  // A host span of the wrong size, of the wrong type.
  EXPECT_THROW(view.set(std::vector<float>(11)), LogicError);
  std::vector<float> big(13);
  EXPECT_THROW(view.get(std::span<float>(big)), LogicError);
  EXPECT_THROW(view.set(std::vector<double>(12)), LogicError);
  // Different shapes and dtypes.
  auto other = Array::zeros(queue, {8, 10}, Dtype::float32);
  EXPECT_THROW(copy_rect(queue, view, other.view(0, {4, 3}, {40, 4})), LogicError);
  auto doubles = Array::zeros(queue, {3, 4}, Dtype::float64);
  EXPECT_THROW(copy_rect(queue, view, doubles), LogicError);
  EXPECT_THROW(view.set(doubles), LogicError);
  // A region past the end of the allocation.
  EXPECT_THROW(a.view(7 * 10 + 8, {2, 4}, {40, 4}), LogicError);
  EXPECT_THROW(a.view(0, {3, 4}, {400, 4}), LogicError);
  // Overlapping views of one allocation.
  try {
    copy_rect(queue, a.view(1, {3, 4}, {40, 4}), view);
    ADD_FAILURE() << "overlapping views must be refused";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  // Views, and a queue, of another context.
  auto ctx2 = context();
  Queue queue2(ctx2);
  auto foreign = Array::zeros(queue2, {3, 4}, Dtype::float32);
  EXPECT_THROW(copy_rect(queue, view, foreign), LogicError);
  EXPECT_THROW(copy_rect(queue2, view, foreign), LogicError);
  EXPECT_THROW(view.set(foreign), LogicError);
  // The device must be in the queue.
  EXPECT_THROW(Array::empty_pitched(queue, {4, 4}, Dtype::float32, 7), LogicError);
  // Nothing was written by the refused calls.
  EXPECT_EQ(a.get<float>(), std::vector<float>(80, 0.0f));
}

SKEIN_INSTANTIATE_BACKENDS(CopyRect);

}  // namespace copy_rect_test
}  // namespace
}  // namespace skein::test
