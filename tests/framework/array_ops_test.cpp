// SPDX-License-Identifier: BSD-3-Clause
// pygpu's array operations (skein/array_ops.hpp and Array's views): Fortran order and the
// contiguity flags, transpose, copies in an order, concatenate, stack, take, transfer between
// contexts, may_share_memory, and reductions along any axes of n-d arrays. Every device result is
// compared with a reference computed on the host from the host data, element by element.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include <complex>
#include <functional>
#include <numeric>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace array_ops_test {

class ArrayOps : public BackendTest {};

// Distinct, exactly representable values.
std::vector<std::int32_t> numbered(std::size_t n, std::int32_t base = 0) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = base + static_cast<std::int32_t>((i * 37) % 1009) - 300;
  return v;
}

// Multi-index of flat index `flat` (C order) in `shape`.
std::vector<std::size_t> unravel(std::size_t flat, const Shape& shape) {
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

std::size_t ravel(const std::vector<std::size_t>& idx, const Shape& shape) {
  std::size_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// The C-ordered elements of the host array `h` (C order, `shape`) with its axes permuted.
template <class T>
std::vector<T> host_transpose(const std::vector<T>& h, const Shape& shape,
                              const std::vector<std::size_t>& axes) {
  Shape out_shape(axes.size());
  for (std::size_t k = 0; k < axes.size(); ++k) out_shape[k] = shape[axes[k]];
  std::vector<T> out(h.size());
  for (std::size_t f = 0; f < out.size(); ++f) {
    const auto oi = unravel(f, out_shape);
    std::vector<std::size_t> ii(shape.size());
    for (std::size_t k = 0; k < axes.size(); ++k) ii[axes[k]] = oi[k];
    out[f] = h[ravel(ii, shape)];
  }
  return out;
}

TEST_P(ArrayOps, FortranOrderAndFlags) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape shape{3, 5, 7};
  const auto host = numbered(shape_size(shape));
  auto c = Array::from_host(queue, host, shape);
  EXPECT_TRUE(c.is_c_contiguous());
  EXPECT_FALSE(c.is_f_contiguous());

  auto f = Array::empty(queue, shape, Dtype::int32, Order::F);
  EXPECT_EQ(f.strides(), (Strides{4, 3 * 4, 3 * 5 * 4}));
  EXPECT_EQ(fortran_strides(shape, 4), f.strides());
  EXPECT_TRUE(f.is_f_contiguous());
  EXPECT_FALSE(f.is_c_contiguous());
  EXPECT_FALSE(f.is_contiguous());

  // asfortranarray: same values, column-major bytes in the buffer.
  auto af = asfortranarray(queue, c);
  EXPECT_TRUE(af.is_f_contiguous());
  EXPECT_EQ(af.get<std::int32_t>(), host);
  const auto bytes =
      Array(queue, af.data(), {af.size()}, Dtype::int32, {}, af.offset()).get<std::int32_t>();
  std::vector<std::int32_t> column_major(host.size());
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      for (std::size_t k = 0; k < 7; ++k)
        column_major[i + 3 * (j + 5 * k)] = host[(i * 5 + j) * 7 + k];
  EXPECT_EQ(bytes, column_major);
  // ... and back; arrays already in the order asked for are returned as they are.
  auto back = ascontiguousarray(queue, af);
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(back.get<std::int32_t>(), host);
  EXPECT_EQ(asfortranarray(queue, af).data().adapter(), af.data().adapter());
  EXPECT_EQ(ascontiguousarray(queue, c).data().adapter(), c.data().adapter());
  // The Fortran array is the transpose of the C array of the reversed shape.
  EXPECT_TRUE(af.transpose().is_c_contiguous());
  EXPECT_EQ(copy(queue, af, Order::C).get<std::int32_t>(), host);

  auto z = Array::zeros(queue, {4, 9}, Dtype::float64, Order::F);
  EXPECT_TRUE(z.is_f_contiguous());
  EXPECT_EQ(z.get<double>(), std::vector<double>(36, 0.0));

  // NumPy's flags: size-1 dimensions do not count; 1-D and empty arrays are both.
  auto v = Array::from_host(queue, numbered(11));
  EXPECT_TRUE(v.is_c_contiguous() && v.is_f_contiguous());
  auto col = c.view(0, {3, 1}, {5 * 7 * 4, 999 * 4});
  EXPECT_TRUE(col.is_f_contiguous() == false && col.is_c_contiguous() == false);
  auto one = c.view(8, {1, 7}, {12345 * 4, 4});
  EXPECT_TRUE(one.is_c_contiguous());
  EXPECT_TRUE(one.transpose().is_f_contiguous());
  EXPECT_FALSE(one.is_contiguous());  // not exactly C strides
  auto empty = Array::empty(queue, {0, 4}, Dtype::int32, Order::F);
  EXPECT_TRUE(empty.is_c_contiguous() && empty.is_f_contiguous());
  EXPECT_EQ(copy(queue, empty).size(), 0u);
  // A strided view: neither.
  auto every_other = c.view(0, {3, 5, 4}, {140, 28, 8});
  EXPECT_FALSE(every_other.is_c_contiguous() || every_other.is_f_contiguous());
  // Copies of a view at an offset, in both orders.
  auto sl = c.slice(1, 3);
  const std::vector<std::int32_t> sl_host(host.begin() + 35, host.end());
  EXPECT_EQ(copy(queue, sl, Order::F).get<std::int32_t>(), sl_host);
  EXPECT_EQ(asfortranarray(queue, sl).get<std::int32_t>(), sl_host);
}

TEST_P(ArrayOps, TransposeAndPermute) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape shape{4, 5, 3};
  const auto host = numbered(shape_size(shape), 7);
  auto a = Array::from_host(queue, host, shape);
  auto t = a.transpose();
  EXPECT_EQ(t.shape(), (Shape{3, 5, 4}));
  EXPECT_EQ(t.strides(), (Strides{4, 12, 60}));
  EXPECT_EQ(t.get<std::int32_t>(), host_transpose(host, shape, {2, 1, 0}));
  EXPECT_TRUE(may_share_memory(a, t));
  for (const std::vector<std::size_t>& axes :
       {std::vector<std::size_t>{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}, {0, 2, 1}}) {
    auto p = a.transpose(axes);
    EXPECT_EQ(p.get<std::int32_t>(), host_transpose(host, shape, axes));
    // Elementwise kernels read the view: a C-ordered copy, and 2 * p.
    EXPECT_EQ(ascontiguousarray(queue, p).get<std::int32_t>(), host_transpose(host, shape, axes));
    auto twice = scale(queue, 2, p).get<std::int32_t>();
    auto ref = host_transpose(host, shape, axes);
    for (auto& x : ref) x *= 2;
    EXPECT_EQ(twice, ref);
  }
  // A view at an offset, transposed twice.
  auto s = a.slice(1, 3);  // shape {2, 5, 3}
  const std::vector<std::int32_t> s_host(host.begin() + 15, host.begin() + 45);
  EXPECT_EQ(s.transpose({2, 0, 1}).get<std::int32_t>(),
            host_transpose(s_host, {2, 5, 3}, {2, 0, 1}));
  EXPECT_EQ(s.transpose().transpose().get<std::int32_t>(), s_host);
  // 1-D and empty arrays.
  auto v = Array::from_host(queue, numbered(1));
  EXPECT_EQ(v.transpose().get<std::int32_t>(), numbered(1));
  EXPECT_EQ(Array::empty(queue, {0, 3}, Dtype::float32).transpose().shape(), (Shape{3, 0}));

  expect_logic_error(
      [&] {
        (void)a.transpose({0, 1});
      },
      {"Array::transpose", "permutation", "(4, 5, 3)"});
  expect_logic_error([&] { (void)a.transpose({0, 1, 1}); }, {"permutation"});
  expect_logic_error([&] { (void)a.transpose({0, 1, 3}); }, {"permutation"});
}

TEST_P(ArrayOps, Concatenate) {
  auto ctx = context();
  Queue queue(ctx);
  const auto ha = numbered(2 * 3 * 5, 1), hb = numbered(2 * 3 * 5 * 4, 2);
  auto a = Array::from_host(queue, ha, {2, 3, 5});
  auto big = Array::from_host(queue, hb, {8, 3, 5});
  auto b = big.slice(3, 7);                                      // offset view, {4, 3, 5}
  auto e = Array::empty(queue, {0, 3, 5}, Dtype::int32);         // empty piece
  auto bt = Array::from_host(queue, ha, {5, 3, 2}).transpose();  // strided {2, 3, 5}
  const std::vector<std::int32_t> hbs(hb.begin() + 45, hb.begin() + 105);
  const auto hbt = host_transpose(ha, {5, 3, 2}, {2, 1, 0});

  // Host reference along `axis` for pieces given as C-ordered host vectors with shapes.
  auto reference = [](const std::vector<std::pair<std::vector<std::int32_t>, Shape>>& parts,
                      std::size_t axis) {
    Shape shape = parts[0].second;
    shape[axis] = 0;
    for (const auto& p : parts) shape[axis] += p.second[axis];
    std::vector<std::int32_t> out(shape_size(shape));
    std::size_t start = 0;
    for (const auto& [h, s] : parts) {
      for (std::size_t f = 0; f < h.size(); ++f) {
        auto idx = unravel(f, s);
        idx[axis] += start;
        out[ravel(idx, shape)] = h[f];
      }
      start += s[axis];
    }
    return out;
  };
  auto r0 = concatenate(queue, {a, b, e, bt});
  EXPECT_EQ(r0.shape(), (Shape{8, 3, 5}));
  EXPECT_EQ(r0.get<std::int32_t>(),
            reference({{ha, {2, 3, 5}}, {hbs, {4, 3, 5}}, {{}, {0, 3, 5}}, {hbt, {2, 3, 5}}}, 0));
  auto c1 = Array::from_host(queue, numbered(2 * 1 * 5, 3), {2, 1, 5});
  auto r1 = concatenate(queue, {a, c1, bt}, 1);
  EXPECT_EQ(r1.shape(), (Shape{2, 7, 5}));
  EXPECT_EQ(r1.get<std::int32_t>(),
            reference({{ha, {2, 3, 5}}, {numbered(10, 3), {2, 1, 5}}, {hbt, {2, 3, 5}}}, 1));
  auto c2 = Array::from_host(queue, numbered(2 * 3 * 7, 4), {2, 3, 7});
  auto r2 = concatenate(queue, {c2, a}, 2);
  EXPECT_EQ(r2.get<std::int32_t>(), reference({{numbered(42, 4), {2, 3, 7}}, {ha, {2, 3, 5}}}, 2));
  // One array, one element.
  auto one = Array::from_host(queue, std::vector<double>{2.5});
  EXPECT_EQ(concatenate(queue, {one}).get<double>(), std::vector<double>{2.5});
  EXPECT_EQ(concatenate(queue, {one, one}).get<double>(), (std::vector<double>{2.5, 2.5}));

  expect_logic_error([&] { concatenate(queue, {}); }, {"skein::concatenate", "no arrays"});
  expect_logic_error([&] { concatenate(queue, {a, c1}); }, {"differ on axis 1", "(2, 1, 5)"});
  expect_logic_error([&] { concatenate(queue, {a, a}, 3); }, {"axis 3"});
  expect_logic_error(
      [&] {
        concatenate(queue, {a, Array::empty(queue, {2, 3, 5}, Dtype::float32)});
      },
      {"dtype float32", "astype"});
  expect_logic_error(
      [&] {
        concatenate(queue, {a, Array::empty(queue, {2, 15}, Dtype::int32)});
      },
      {"array 1 has shape (2, 15)"});
  Queue other(Context::from_devices(devices()[0]));
  auto foreign = Array::from_host(other, ha, {2, 3, 5});
  expect_logic_error([&] { concatenate(queue, {a, foreign}); }, {"another context", "transfer()"});
}

TEST_P(ArrayOps, Stack) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape shape{3, 4};
  const auto h0 = numbered(12, 0), h1 = numbered(12, 5);
  auto a0 = Array::from_host(queue, h0, shape);
  auto a1t =
      Array::from_host(queue, host_transpose(h1, shape, {1, 0}), {4, 3}).transpose();  // strided
  for (std::size_t axis = 0; axis <= 2; ++axis) {
    SCOPED_TRACE(axis);
    auto r = stack(queue, {a0, a1t, a0}, axis);
    Shape rs = shape;
    rs.insert(rs.begin() + static_cast<std::ptrdiff_t>(axis), 3);
    EXPECT_EQ(r.shape(), rs);
    std::vector<std::int32_t> ref(36);
    for (std::size_t f = 0; f < ref.size(); ++f) {
      auto idx = unravel(f, rs);
      const std::size_t which = idx[axis];
      idx.erase(idx.begin() + static_cast<std::ptrdiff_t>(axis));
      ref[f] = (which == 1 ? h1 : h0)[ravel(idx, shape)];
    }
    EXPECT_EQ(r.get<std::int32_t>(), ref);
  }
  auto e = Array::empty(queue, {0}, Dtype::int32);
  EXPECT_EQ(stack(queue, {e, e}, 1).shape(), (Shape{0, 2}));
  expect_logic_error([&] { stack(queue, {a0, a0}, 3); }, {"skein::stack", "axis 3"});
  expect_logic_error([&] { stack(queue, {a0, a0.slice(0, 2)}); }, {"array 1 has shape (2, 4)"});
  expect_logic_error([&] { stack(queue, {}); }, {"no arrays"});
}

TEST_P(ArrayOps, SplitsAndStackVariants) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = numbered(7 * 6, 4);
  auto a = Array::from_host(queue, host, {7, 6});
  // Host reference: rows / columns [b, e) of the (7, 6) host array, C order.
  auto block = [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    std::vector<std::int32_t> out;
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t c = c0; c < c1; ++c) out.push_back(host[r * 6 + c]);
    return out;
  };
  auto cols = split(a, 3, 1);  // views, no copy
  ASSERT_EQ(cols.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(cols[k].shape(), (Shape{7, 2}));
    EXPECT_TRUE(may_share_memory(a, cols[k]));
    EXPECT_EQ(cols[k].get<std::int32_t>(), block(0, 7, 2 * k, 2 * k + 2));
  }
  auto rows = array_split(a, 3);  // 7 = 3 + 2 + 2
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].get<std::int32_t>(), block(0, 3, 0, 6));
  EXPECT_EQ(rows[1].get<std::int32_t>(), block(3, 5, 0, 6));
  EXPECT_EQ(rows[2].get<std::int32_t>(), block(5, 7, 0, 6));
  EXPECT_EQ(array_split(a, 9).back().shape(), (Shape{0, 6}));  // more sections than rows
  auto at = split(a, std::vector<std::size_t>{2, 5, 3, 40});
  ASSERT_EQ(at.size(), 5u);
  EXPECT_EQ(at[0].get<std::int32_t>(), block(0, 2, 0, 6));
  EXPECT_EQ(at[1].get<std::int32_t>(), block(2, 5, 0, 6));
  EXPECT_EQ(at[2].size(), 0u);                              // 3 < 5: empty
  EXPECT_EQ(at[3].get<std::int32_t>(), block(3, 7, 0, 6));  // from 3 to the end (40 -> 7)
  EXPECT_EQ(at[4].size(), 0u);
  // The parts join back to the whole.
  EXPECT_EQ(concatenate(queue, rows).get<std::int32_t>(), host);
  EXPECT_EQ(hstack(queue, cols).get<std::int32_t>(), host);
  expect_logic_error([&] { split(a, 4); },
                     {"skein::split", "does not split into 4 equal sections", "array_split"});
  expect_logic_error([&] { split(a, 2, 2); }, {"axis 2"});
  expect_logic_error([&] { array_split(a, 0); }, {"0 sections"});

  // vstack / hstack / dstack of 1-D and 2-D arrays (one a strided column view).
  auto v1 = Array::from_host(queue, numbered(6, 1));
  auto v2 = Array::from_host(queue, numbered(6, 2));
  const auto h1 = numbered(6, 1), h2 = numbered(6, 2);
  std::vector<std::int32_t> both(h1);
  both.insert(both.end(), h2.begin(), h2.end());
  auto vs = vstack(queue, {v1, v2, a.slice(0, 1)});
  EXPECT_EQ(vs.shape(), (Shape{3, 6}));
  auto vref = both;
  vref.insert(vref.end(), host.begin(), host.begin() + 6);
  EXPECT_EQ(vs.get<std::int32_t>(), vref);
  EXPECT_EQ(hstack(queue, {v1, v2}).get<std::int32_t>(), both);
  auto ds = dstack(queue, {v1, v2});
  EXPECT_EQ(ds.shape(), (Shape{1, 6, 2}));
  std::vector<std::int32_t> dref;
  for (std::size_t i = 0; i < 6; ++i) {
    dref.push_back(h1[i]);
    dref.push_back(h2[i]);
  }
  EXPECT_EQ(ds.get<std::int32_t>(), dref);
  auto d2 = dstack(queue, {cols[0], cols[2]});  // (7, 2) strided views -> (7, 2, 2)
  EXPECT_EQ(d2.shape(), (Shape{7, 2, 2}));
  std::vector<std::int32_t> d2ref;
  for (std::size_t r = 0; r < 7; ++r)
    for (std::size_t c = 0; c < 2; ++c) {
      d2ref.push_back(host[r * 6 + c]);
      d2ref.push_back(host[r * 6 + 4 + c]);
    }
  EXPECT_EQ(d2.get<std::int32_t>(), d2ref);
  expect_logic_error([&] { dstack(queue, {a, cols[0]}); }, {"differ on axis 1"});
}

TEST_P(ArrayOps, Take) {
  auto ctx = context();
  Queue queue(ctx);
  // pygpu's take1: 1-D indices along axis 0 of a 2-D array, negative ones from the end.
  const Shape shape{7, 3};
  const auto host = numbered(21, 9);
  auto a = Array::from_host(queue, host, shape);
  const std::vector<std::int32_t> idx{6, 0, -1, 3, -7, 3};
  auto r = take(queue, a, Array::from_host(queue, idx));
  EXPECT_EQ(r.shape(), (Shape{6, 3}));
  std::vector<std::int32_t> ref;
  for (auto j : idx) {
    const std::size_t row = static_cast<std::size_t>(j < 0 ? j + 7 : j);
    ref.insert(ref.end(), host.begin() + 3 * row, host.begin() + 3 * row + 3);
  }
  EXPECT_EQ(r.get<std::int32_t>(), ref);

  // Out of range: raise names the index; wrap and clip as NumPy.
  const std::vector<std::int64_t> wild{-9, 7, 15, -1, 0, 2};
  auto wi = Array::from_host(queue, wild);
  expect_logic_error([&] { take(queue, a, wi); }, {"skein::take", "indices[0] = -9 is out of range",
                                                   "size 7", "TakeMode::wrap"});
  expect_logic_error(
      [&] {
        take(queue, a, Array::from_host(queue, std::vector<std::int64_t>{0, 6, -7, 7, 9}, {5}));
      },
      {"indices[3] = 7 is out of range"});
  expect_logic_error(
      [&] {
        take(queue, a, Array::from_host(queue, std::vector<std::int32_t>{0, 1, 2, -8}, {2, 2}));
      },
      {"indices[1, 1] = -8 is out of range"});
  for (TakeMode mode : {TakeMode::wrap, TakeMode::clip}) {
    std::vector<std::int32_t> expect;
    for (auto j : wild) {
      std::int64_t row =
          mode == TakeMode::wrap ? ((j % 7) + 7) % 7 : std::clamp<std::int64_t>(j, 0, 6);
      expect.insert(expect.end(), host.begin() + 3 * row, host.begin() + 3 * row + 3);
    }
    EXPECT_EQ(take(queue, a, wi, 0, mode).get<std::int32_t>(), expect);
  }
  // Unsigned indices past the end.
  const std::vector<std::uint32_t> uidx{8, 1, 4000000000u};
  std::vector<std::int32_t> uwrap, uclip;
  for (auto j : uidx) {
    const std::size_t w = j % 7, c = std::min<std::size_t>(j, 6);
    uwrap.insert(uwrap.end(), host.begin() + 3 * w, host.begin() + 3 * w + 3);
    uclip.insert(uclip.end(), host.begin() + 3 * c, host.begin() + 3 * c + 3);
  }
  auto ui = Array::from_host(queue, uidx);
  EXPECT_EQ(take(queue, a, ui, 0, TakeMode::wrap).get<std::int32_t>(), uwrap);
  EXPECT_EQ(take(queue, a, ui, 0, TakeMode::clip).get<std::int32_t>(), uclip);
  expect_logic_error([&] { take(queue, a, ui); }, {"indices[0] = 8 is out of range"});

  // Along axis 1 of a transposed (strided) 3-D view, with 2-D indices; 16-byte complex elements.
  const Shape s3{3, 5, 2};  // the parent; the view is (2, 5, 3)
  std::vector<std::complex<double>> hc(shape_size(s3));
  for (std::size_t i = 0; i < hc.size(); ++i)
    hc[i] = {static_cast<double>(i), -0.5 * static_cast<double>(i)};
  auto v = Array::from_host(queue, hc, s3).transpose();
  const auto hv = host_transpose(hc, s3, {2, 1, 0});
  const std::vector<std::int16_t> i2{4, 0, -2, 1};  // shape (2, 2)
  auto r3 = take(queue, v, Array::from_host(queue, i2, {2, 2}), 1, TakeMode::wrap);
  EXPECT_EQ(r3.shape(), (Shape{2, 2, 2, 3}));
  std::vector<std::complex<double>> ref3;
  for (std::size_t o = 0; o < 2; ++o)
    for (auto j : i2)
      for (std::size_t k = 0; k < 3; ++k)
        ref3.push_back(hv[(o * 5 + static_cast<std::size_t>(j < 0 ? j + 5 : j)) * 3 + k]);
  EXPECT_EQ(r3.get<std::complex<double>>(), ref3);
  // The last axis of float16 data from a view at an offset.
  std::vector<float16> hh(24);
  for (std::size_t i = 0; i < hh.size(); ++i) hh[i] = float16(static_cast<float>(i) * 0.25f);
  auto h2 = Array::from_host(queue, hh, {6, 4}).slice(2, 5);
  auto rh = take(queue, h2, Array::from_host(queue, std::vector<std::uint8_t>{3, 3, 0}), 1,
                 TakeMode::clip)
                .get<float16>();
  ASSERT_EQ(rh.size(), 9u);
  for (std::size_t rr = 0; rr < 3; ++rr) {
    const std::size_t cols[] = {3, 3, 0};
    for (std::size_t t = 0; t < 3; ++t)
      EXPECT_EQ(static_cast<float>(rh[rr * 3 + t]), static_cast<float>(hh[(rr + 2) * 4 + cols[t]]));
  }
  // Edge cases: no indices; one element; an empty axis.
  EXPECT_EQ(take(queue, a, Array::empty(queue, {0}, Dtype::int64)).shape(), (Shape{0, 3}));
  auto single = Array::from_host(queue, std::vector<float>{4.5f});
  EXPECT_EQ(take(queue, single, Array::from_host(queue, std::vector<std::int32_t>{0, -1, 0}))
                .get<float>(),
            (std::vector<float>{4.5f, 4.5f, 4.5f}));
  auto hollow = Array::empty(queue, {0, 3}, Dtype::float32);
  expect_logic_error(
      [&] {
        take(queue, hollow, Array::from_host(queue, std::vector<std::int32_t>{0}), 0,
             TakeMode::clip);
      },
      {"which is empty"});
  // Bad input.
  expect_logic_error([&] { take(queue, a, Array::from_host(queue, std::vector<float>{1.0f})); },
                     {"dtype float32", "integer"});
  expect_logic_error([&] { take(queue, a, wi, 2); }, {"axis 2", "(7, 3)"});
  Queue other(Context::from_devices(devices()[0]));
  expect_logic_error([&] { take(queue, a, Array::from_host(other, idx)); },
                     {"index array belongs to another context"});
}

TEST_P(ArrayOps, TransferBetweenContexts) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = numbered(6 * 7, 11);
  auto a = Array::from_host(queue, host, {6, 7});
  // Another context over the same device (and over another device, where there is one).
  std::vector<Context> others{Context::from_devices(devices()[0])};
  if (devices().size() > 1) others.push_back(Context::from_devices(devices()[1]));
  for (const Context& oc : others) {
    Queue oq(oc);
    auto b = transfer(a, oq);
    EXPECT_TRUE(b.data().context() == oc);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.get<std::int32_t>(), host);
    // A strided view at an offset arrives C-ordered.
    auto t = transfer(a.slice(1, 5).transpose(), oq);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.get<std::int32_t>(),
              host_transpose(std::vector<std::int32_t>(host.begin() + 7, host.begin() + 35), {4, 7},
                             {1, 0}));
    // And back.
    EXPECT_EQ(transfer(b, queue).get<std::int32_t>(), host);
    EXPECT_FALSE(may_share_memory(a, b));
  }
  // Within the context: a copy, not a view.
  auto same = transfer(a.transpose(), queue);
  EXPECT_FALSE(may_share_memory(a, same));
  EXPECT_EQ(same.get<std::int32_t>(), host_transpose(host, {6, 7}, {1, 0}));
  EXPECT_EQ(transfer(Array::empty(queue, {0}, Dtype::int8), Queue(others[0])).size(), 0u);
  expect_logic_error([&] { transfer(a, queue, 7); }, {"device 7 is not in the queue"});
}

TEST_P(ArrayOps, TransferToAnotherDeviceOfTheContext) {
  SKEIN_NEED_DEVICES(2);
  auto ctx = context(2);
  Queue queue(ctx);
  const auto host = numbered(33, 2);
  auto a = Array::from_host(queue, host, {3, 11});
  auto b = transfer(a.transpose(), queue, 1);
  EXPECT_EQ(b.device_idx(), 1u);
  EXPECT_EQ(b.get<std::int32_t>(), host_transpose(host, {3, 11}, {1, 0}));
  Queue only1(ctx, std::vector<std::size_t>{1});
  auto c = transfer(a.transpose(), only1);  // the source's device is not in the destination queue
  EXPECT_EQ(c.device_idx(), 1u);
  EXPECT_EQ(c.get<std::int32_t>(), host_transpose(host, {3, 11}, {1, 0}));
}

TEST_P(ArrayOps, MayShareMemory) {
  auto ctx = context();
  Queue queue(ctx);
  auto a = Array::from_host(queue, numbered(40), {8, 5});
  auto b = Array::from_host(queue, numbered(40), {8, 5});
  EXPECT_TRUE(may_share_memory(a, a));
  EXPECT_FALSE(may_share_memory(a, b));
  EXPECT_TRUE(may_share_memory(a, a.slice(3, 4)));
  EXPECT_FALSE(may_share_memory(a.slice(0, 3), a.slice(3, 8)));
  EXPECT_TRUE(may_share_memory(a.slice(0, 4), a.slice(3, 8)));
  EXPECT_TRUE(may_share_memory(a.transpose(), a.slice(7, 8)));
  EXPECT_FALSE(may_share_memory(a.slice(2, 2), a));  // empty
  // A column and the next one interleave: the byte ranges overlap, so "may" (as NumPy's).
  EXPECT_TRUE(may_share_memory(a.view(0, {8}, {20}), a.view(1, {8}, {20})));
  EXPECT_FALSE(may_share_memory(a.view(0, {4}, {20}), a.view(20, {4}, {20})));
  // Two arrays over sub-regions of one buffer.
  auto buf = Buffer::allocate(ctx, 0, 1024);
  Array lo(queue, buf.get_sub_region(0, 512), {128}, Dtype::float32);
  Array hi(queue, buf.get_sub_region(512, 512), {128}, Dtype::float32);
  Array mid(queue, buf.get_sub_region(256, 512), {128}, Dtype::float32);
  EXPECT_FALSE(may_share_memory(lo, hi));
  EXPECT_TRUE(may_share_memory(lo, mid));
  EXPECT_TRUE(may_share_memory(mid, hi));
}

// --- reductions along axes --------------------------------------------------------------------

// Reduces the C-ordered host array over the axes flagged in `red` with `op` from `init`.
template <class T, class Op>
std::vector<T> host_reduce(const std::vector<T>& h, const Shape& shape,
                           const std::vector<bool>& red, T init, Op op) {
  Shape out_shape;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (!red[d]) out_shape.push_back(shape[d]);
  std::vector<T> out(shape_size(out_shape), init);
  for (std::size_t f = 0; f < h.size(); ++f) {
    const auto idx = unravel(f, shape);
    std::vector<std::size_t> oi;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (!red[d]) oi.push_back(idx[d]);
    auto& o = out[ravel(oi, out_shape)];
    o = op(o, h[f]);
  }
  return out;
}

std::vector<bool> flags(std::size_t ndim, const std::vector<std::size_t>& axes) {
  std::vector<bool> red(ndim, false);
  for (auto a : axes) red[a] = true;
  return red;
}

TEST_P(ArrayOps, ReductionsAlongAnyAxes) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape shape{3, 4, 5, 6};
  const auto hi = numbered(shape_size(shape), 3);
  std::vector<std::int64_t> h64(hi.begin(), hi.end());
  auto ai = Array::from_host(queue, hi, shape);
  const std::vector<std::vector<std::size_t>> sets{
      {0}, {1}, {2}, {3}, {0, 2}, {3, 1}, {0, 1, 2}, {1, 2, 3}, {0, 3}, {0, 1, 2, 3}};
  for (const auto& axes : sets) {
    SCOPED_TRACE(fmt::format("axes ({})", fmt::join(axes, ", ")));
    const auto red = flags(4, axes);
    ReductionArgs args;
    if (axes.size() == 1)
      args.axis = axes[0];
    else
      args.axes = axes;
    auto s = sum(queue, ai, args);
    Shape kept;
    for (std::size_t d = 0; d < 4; ++d)
      if (!red[d]) kept.push_back(shape[d]);
    EXPECT_EQ(s.shape(), kept.empty() ? Shape{1} : kept);
    EXPECT_EQ(s.get<std::int64_t>(), host_reduce<std::int64_t>(h64, shape, red, 0, std::plus<>()));
  }
  // min, max and dot (small integers in floating point: exact sums) on two sets of axes.
  std::vector<float> hf(hi.begin(), hi.end());
  std::vector<double> hd(hi.begin(), hi.end()), sq(hi.size());
  for (std::size_t i = 0; i < hd.size(); ++i) sq[i] = hd[i] * hd[i];
  auto af = Array::from_host(queue, hf, shape);
  auto ad = Array::from_host(queue, hd, shape);
  for (const std::vector<std::size_t>& axes : {std::vector<std::size_t>{1}, {0, 2}}) {
    SCOPED_TRACE(fmt::format("axes ({})", fmt::join(axes, ", ")));
    const auto red = flags(4, axes);
    EXPECT_EQ(min(queue, ai, {.axes = axes}).get<std::int32_t>(),
              host_reduce<std::int32_t>(hi, shape, red, 1 << 30,
                                        [](auto x, auto y) { return std::min(x, y); }));
    EXPECT_EQ(
        max(queue, af, {.axes = axes}).get<float>(),
        host_reduce<float>(hf, shape, red, -1e30f, [](auto x, auto y) { return std::max(x, y); }));
    EXPECT_EQ(dot(queue, ad, ad, {.axes = axes}).get<double>(),
              host_reduce<double>(sq, shape, red, 0.0, std::plus<>()));
  }
  // The same on a permuted view at an offset (strided inputs).
  auto view = ai.slice(1, 3).transpose({2, 0, 3, 1});  // shape (5, 2, 6, 4)
  const std::vector<std::int32_t> sl(hi.begin() + 120, hi.begin() + 360);
  const auto hv = host_transpose(sl, {2, 4, 5, 6}, {2, 0, 3, 1});
  const std::vector<std::int64_t> hv64(hv.begin(), hv.end());
  for (const auto& axes : sets) {
    SCOPED_TRACE(fmt::format("view, axes ({})", fmt::join(axes, ", ")));
    EXPECT_EQ(sum(queue, view, {.axes = axes}).get<std::int64_t>(),
              host_reduce<std::int64_t>(hv64, {5, 2, 6, 4}, flags(4, axes), 0, std::plus<>()));
  }
  // 2-D: axes {k} equals axis k; 1-D along axis 0 is the whole sum.
  auto m = Array::from_host(queue, hi, {18, 20});
  for (std::size_t k : {0u, 1u}) {
    EXPECT_EQ(sum(queue, m, {.axes = {k}}).get<std::int64_t>(),
              host_reduce<std::int64_t>(h64, {18, 20}, flags(2, {k}), 0, std::plus<>()));
  }
  EXPECT_EQ(sum(queue, m, {.axes = {1, 0}}).get<std::int64_t>(),
            std::vector<std::int64_t>{std::accumulate(h64.begin(), h64.end(), std::int64_t{0})});
  EXPECT_EQ(sum(queue, Array::from_host(queue, hi), {.axis = 0}).get<std::int64_t>(),
            std::vector<std::int64_t>{std::accumulate(h64.begin(), h64.end(), std::int64_t{0})});
}

TEST_P(ArrayOps, AxisReductionPathsAndEdges) {
  auto ctx = context();
  Queue queue(ctx);
  // Long reductions with few outputs (a group per output) and short ones with many (a thread each).
  for (const Shape& shape :
       {Shape{3, 1001, 5}, Shape{257, 3, 2}, Shape{1, 1, 1}, Shape{2, 4097, 1}}) {
    SCOPED_TRACE(to_string(shape));
    const auto h = numbered(shape_size(shape), 1);
    const std::vector<std::int64_t> h64(h.begin(), h.end());
    auto a = Array::from_host(queue, h, shape);
    for (const std::vector<std::size_t>& axes : {std::vector<std::size_t>{1}, {0, 2}, {0}, {2}}) {
      EXPECT_EQ(sum(queue, a, {.axes = axes}).get<std::int64_t>(),
                host_reduce<std::int64_t>(h64, shape, flags(3, axes), 0, std::plus<>()));
    }
  }
  // Empty: reduced axis of size 0 gives the identity (sum) or an error (min); no outputs: empty.
  auto e = Array::empty(queue, {3, 0, 4}, Dtype::int32);
  EXPECT_EQ(sum(queue, e, {.axis = 1}).get<std::int64_t>(), std::vector<std::int64_t>(12, 0));
  EXPECT_EQ(sum(queue, e, {.axes = {0, 2}}).shape(), (Shape{0}));
  expect_logic_error([&] { min(queue, e, {.axis = 1}); },
                     {"skein::min", "along axes (1)", "(3, 0, 4)"});
  // Into a given output; a custom kernel whose raw input is indexed by the flat index i.
  auto x = Array::from_host(queue, numbered(60), {3, 4, 5});
  auto w = Array::from_host(queue, numbered(60, 2));
  ReductionKernel weighted("int32 x, raw int32 w", "int64 y", "(int64_t)x * w[i]", "a + b", "0",
                           {.name = "weighted"});
  auto out = Array::empty(queue, {4}, Dtype::int64);
  weighted(queue, {x, w}, {.out = out, .axes = {2, 0}});
  const auto hx = numbered(60), hw = numbered(60, 2);
  std::vector<std::int64_t> prod(60);
  for (std::size_t i = 0; i < 60; ++i) prod[i] = std::int64_t{hx[i]} * hw[i];
  EXPECT_EQ(out.get<std::int64_t>(),
            host_reduce<std::int64_t>(prod, {3, 4, 5}, flags(3, {0, 2}), 0, std::plus<>()));
  // Broadcast inputs: (3, 1, 5) x (4, 1) -> (3, 4, 5).
  auto p = Array::from_host(queue, std::vector<double>(hx.begin(), hx.begin() + 15), {3, 1, 5});
  auto q = Array::from_host(queue, std::vector<double>{1, 2, 3, 4}, {4, 1});
  std::vector<double> pq(60);
  for (std::size_t f = 0; f < 60; ++f) {
    const auto idx = unravel(f, {3, 4, 5});
    pq[f] = static_cast<double>(hx[idx[0] * 5 + idx[2]]) * static_cast<double>(idx[1] + 1);
  }
  EXPECT_EQ(dot(queue, p, q, {.axes = {1}}).get<double>(),
            host_reduce<double>(pq, {3, 4, 5}, flags(3, {1}), 0.0, std::plus<>()));
  // Bad axes.
  expect_logic_error([&] { sum(queue, x, {.axis = 3}); },
                     {"axis 3", "(3, 4, 5)", "below the number of dimensions"});
  expect_logic_error([&] { sum(queue, x, {.axes = {0, 0}}); }, {"axis 0 appears twice"});
  expect_logic_error([&] { sum(queue, x, {.axis = 0, .axes = {1}}); }, {"either axis or axes"});
  expect_logic_error([&] { sum(queue, x, {.deterministic = true, .axes = {1}}); },
                     {"deterministic"});
  expect_logic_error(
      [&] { sum(queue, x, {.out = Array::empty(queue, {4}, Dtype::int64), .axes = {1}}); },
      {"output"});
}

SKEIN_INSTANTIATE_BACKENDS(ArrayOps);

}  // namespace array_ops_test
}  // namespace
}  // namespace skein::test
