// SPDX-License-Identifier: BSD-3-Clause
// pygpu's shape calls (skein/array.hpp, skein/array_ops.hpp): reshape of views in C and F order (a
// view when the strides allow one, else a copy), the array flags (aligned, writeable, owndata and
// NumPy's combinations), atleast_1d/2d/3d and hsplit/vsplit/dsplit. Values are compared with
// references computed on the host from the host data and the views' definitions; whether a reshape
// must be a view is decided on the host by brute force (an affine map from the new indices to the
// elements' byte addresses exists), independently of Skein's rule.
#include <gtest/gtest.h>

#include <skein/skein.hpp>

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace array_shapes_test {

class ArrayShapes : public BackendTest {};

std::vector<std::int32_t> numbered(std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i * 7 + 3);
  return v;
}

// The multi-index of position `flat` in `shape`, C order (the last index fastest) or F order.
std::vector<std::size_t> unravel(std::size_t flat, const Shape& shape, bool fortran) {
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t d = fortran ? k : shape.size() - 1 - k;
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

std::size_t ravel(const std::vector<std::size_t>& idx, const Shape& shape, bool fortran) {
  std::size_t flat = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t d = fortran ? shape.size() - 1 - k : k;
    flat = flat * shape[d] + idx[d];
  }
  return flat;
}

// A view described on the host: element offset and element strides into a C-ordered base.
struct HostView {
  Shape shape;
  std::vector<std::size_t> strides;  // in elements
  std::size_t offset = 0;

  std::size_t element(const std::vector<std::size_t>& idx) const {
    std::size_t e = offset;
    for (std::size_t d = 0; d < shape.size(); ++d) e += idx[d] * strides[d];
    return e;
  }
  // The base positions of the view's elements, read in C or F order.
  std::vector<std::size_t> positions(bool fortran) const {
    std::vector<std::size_t> out(shape_size(shape));
    for (std::size_t f = 0; f < out.size(); ++f) out[f] = element(unravel(f, shape, fortran));
    return out;
  }
};

// The base positions of reshape(view, shape, order)'s elements, listed in C order: the view's
// elements read in `order` and placed in `order` (NumPy's semantics).
std::vector<std::size_t> reshaped_positions(const HostView& v, const Shape& shape, bool fortran) {
  const auto read = v.positions(fortran);
  std::vector<std::size_t> out(read.size());
  for (std::size_t c = 0; c < out.size(); ++c)
    out[c] = read[ravel(unravel(c, shape, false), shape, fortran)];
  return out;
}

// Whether some element strides s (>= 0) map each index i of `shape` to the element at
// positions[ravel_C(i)] as offset + sum(i_k s_k): then a view exists.
bool affine(const std::vector<std::size_t>& positions, const Shape& shape) {
  if (positions.empty()) return true;
  const auto origin = static_cast<long long>(positions[0]);
  std::vector<long long> s(shape.size(), 0);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 2) continue;
    std::vector<std::size_t> unit(shape.size(), 0);
    unit[k] = 1;
    s[k] = static_cast<long long>(positions[ravel(unit, shape, false)]) - origin;
    if (s[k] < 0) return false;
  }
  for (std::size_t c = 0; c < positions.size(); ++c) {
    const auto idx = unravel(c, shape, false);
    long long e = origin;
    for (std::size_t k = 0; k < shape.size(); ++k) e += static_cast<long long>(idx[k]) * s[k];
    if (e != static_cast<long long>(positions[c])) return false;
  }
  return true;
}

// The device view that `hv` describes over the C-ordered base array.
Array device_view(const Array& base, const HostView& hv) {
  Strides bytes(hv.strides.size());
  for (std::size_t d = 0; d < bytes.size(); ++d) bytes[d] = hv.strides[d] * base.itemsize();
  return base.view(hv.offset, hv.shape, bytes);
}

HostView transposed(const HostView& v, const std::vector<std::size_t>& axes) {
  HostView t{Shape(axes.size()), std::vector<std::size_t>(axes.size()), v.offset};
  for (std::size_t k = 0; k < axes.size(); ++k) {
    t.shape[k] = v.shape[axes[k]];
    t.strides[k] = v.strides[axes[k]];
  }
  return t;
}

// v[begin:end:step] along `axis`.
HostView sliced(const HostView& v, std::size_t axis, std::size_t begin, std::size_t end,
                std::size_t step) {
  HostView s = v;
  s.offset += begin * v.strides[axis];
  s.shape[axis] = end > begin ? (end - begin + step - 1) / step : 0;
  s.strides[axis] *= step;
  return s;
}

HostView c_ordered(const Shape& shape) {
  HostView v{shape, std::vector<std::size_t>(shape.size()), 0};
  std::size_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    v.strides[d] = s;
    s *= shape[d];
  }
  return v;
}

// Shapes of `n` elements to reshape a view of shape `from` into: flat, the shape reversed,
// neighbours merged, the first axis split, and axes of size 1 added.
std::vector<Shape> targets(const Shape& from) {
  const std::size_t n = shape_size(from);
  std::vector<Shape> out{{n}, Shape(from.rbegin(), from.rend()), {1, n}, {n, 1, 1}};
  for (std::size_t k = 0; k + 1 < from.size(); ++k) {
    Shape merged = from;
    merged[k] *= merged[k + 1];
    merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    out.push_back(merged);
  }
  for (std::size_t f : {2, 3}) {
    if (!from.empty() && from[0] % f == 0 && from[0] > f) {
      Shape split = from;
      split[0] /= f;
      split.insert(split.begin() + 1, f);
      out.push_back(split);
    }
  }
  Shape ones = from;
  ones.insert(ones.begin() + static_cast<std::ptrdiff_t>(from.size() / 2), 1);
  out.push_back(ones);
  return out;
}

// The views of a C-ordered array of `shape` the reshape test walks: the array, its reversed and
// rotated transposes, slices of a middle range and with steps, and the two combined.
std::vector<std::pair<std::string, HostView>> views_of(const Shape& shape) {
  const HostView c = c_ordered(shape);
  const std::size_t nd = shape.size();
  std::vector<std::size_t> rev(nd), rot(nd);
  for (std::size_t k = 0; k < nd; ++k) {
    rev[k] = nd - 1 - k;
    rot[k] = (k + 1) % nd;
  }
  std::vector<std::pair<std::string, HostView>> out{{"contiguous", c},
                                                    {"reversed axes", transposed(c, rev)},
                                                    {"rotated axes", transposed(c, rot)}};
  out.emplace_back("rows 1..", sliced(c, 0, 1, shape[0], 1));
  out.emplace_back("last axis ::2", sliced(c, nd - 1, 0, shape[nd - 1], 2));
  out.emplace_back("first axis ::2", sliced(c, 0, 0, shape[0], 2));
  out.emplace_back("transposed, then ::2", sliced(transposed(c, rev), 0, 0, shape[nd - 1], 2));
  out.emplace_back("middle range of the last axis", sliced(c, nd - 1, 1, shape[nd - 1] - 1, 1));
  return out;
}

void check_reshape(const Queue& queue, const Array& base, const std::vector<std::int32_t>& host,
                   const std::string& what, const HostView& hv, const Shape& target, Order order) {
  const bool f = order == Order::F;
  const std::string where = fmt::format("{} of shape {} -> {} in {} order", what,
                                        to_string(hv.shape), to_string(target), f ? 'F' : 'C');
  SCOPED_TRACE(where);
  const Array v = device_view(base, hv);
  const auto positions = reshaped_positions(hv, target, f);
  std::vector<std::int32_t> expected(positions.size());
  for (std::size_t c = 0; c < positions.size(); ++c) expected[c] = host[positions[c]];
  const bool view_exists = affine(positions, target);

  const Array r = reshape(queue, v, target, order);
  EXPECT_EQ(r.shape(), target);
  EXPECT_EQ(r.get<std::int32_t>(), expected);
  if (view_exists) {
    EXPECT_EQ(r.data().adapter(), base.data().adapter()) << "a view exists; a copy was made";
    EXPECT_FALSE(r.flags().owndata);
    const Array m = v.reshape(target, order);  // the member: the same view
    EXPECT_EQ(m.strides(), r.strides());
    EXPECT_EQ(m.offset(), r.offset());
  } else {
    EXPECT_NE(r.data().adapter(), base.data().adapter()) << "no view exists; a copy is needed";
    EXPECT_FALSE(may_share_memory(r, base));
    EXPECT_TRUE(r.flags().owndata);
    EXPECT_TRUE(f ? r.is_f_contiguous() : r.is_c_contiguous());
    expect_logic_error([&] { (void)v.reshape(target, order); },
                       {"Array::reshape", "no view", to_string(target), "skein::reshape"});
  }
}

TEST_P(ArrayShapes, ReshapeOfViewsInBothOrders) {
  auto ctx = context();
  Queue queue(ctx);
  for (const Shape& shape : {Shape{12}, Shape{4, 6}, Shape{3, 4, 5}, Shape{2, 3, 4, 3}}) {
    const auto host = numbered(shape_size(shape));
    const Array base = Array::from_host(queue, host, shape);
    for (const auto& [what, hv] : views_of(shape)) {
      for (const Shape& target : targets(hv.shape)) {
        for (Order order : {Order::C, Order::F}) {
          check_reshape(queue, base, host, what, hv, target, order);
        }
      }
    }
  }
}

// Cases whose answer is known without the brute force: each must be a view, or a copy.
TEST_P(ArrayShapes, ReshapeViewsWhereNumPyMakesThem) {
  auto ctx = context();
  Queue queue(ctx);
  const auto host = numbered(24);
  const Array a = Array::from_host(queue, host, {4, 6});
  auto shares = [&](const Array& r) { return r.data().adapter() == a.data().adapter(); };
  // A transposed matrix in F order is a dense block: a view; in C order it is not.
  EXPECT_TRUE(shares(reshape(queue, a.transpose(), {24}, Order::F)));
  EXPECT_EQ(reshape(queue, a.transpose(), {24}, Order::F).get<std::int32_t>(), host);
  EXPECT_FALSE(shares(reshape(queue, a.transpose(), {24}, Order::C)));
  // Every other column: (4, 3) with strides (24, 8) bytes merges (24 = 3 * 8) into (12) stride 8.
  const Array every_other = a.view(0, {4, 3}, {24, 8});
  const Array flat = reshape(queue, every_other, {12});
  EXPECT_TRUE(shares(flat));
  EXPECT_EQ(flat.strides(), (Strides{8}));
  std::vector<std::int32_t> evens;
  for (std::size_t i = 0; i < 24; i += 2) evens.push_back(host[i]);
  EXPECT_EQ(flat.get<std::int32_t>(), evens);
  // Columns 1..4 of each row: rows are not adjacent, so merging them needs a copy; splitting the
  // rows' axis does not.
  const Array middle = a.view(1, {4, 4}, {24, 4});
  EXPECT_FALSE(shares(reshape(queue, middle, {16})));
  EXPECT_TRUE(shares(reshape(queue, middle, {2, 2, 4})));
  EXPECT_TRUE(shares(reshape(queue, middle, {4, 2, 2})));
  // A C-contiguous array in F order: a copy unless the shape only adds or drops axes of size 1.
  EXPECT_FALSE(shares(reshape(queue, a, {24}, Order::F)));
  EXPECT_TRUE(shares(reshape(queue, a, {4, 1, 6}, Order::F)));
  // The member keeps its old behaviour for contiguous arrays and refuses what needs a copy.
  EXPECT_TRUE(shares(a.reshape({6, 4})));
  expect_logic_error([&] { (void)a.transpose().reshape({24}); },
                     {"no view of shape (6, 4)", "axes 0 to 1", "C order", "skein::reshape"});
  expect_logic_error(
      [&] {
        (void)reshape(queue, a, {5, 5});
      },
      {"skein::reshape", "24 elements", "(5, 5)"});
  // After the refusals the array is unchanged and usable.
  EXPECT_EQ(a.get<std::int32_t>(), host);
}

TEST_P(ArrayShapes, ReshapeEdgeSizes) {
  auto ctx = context();
  Queue queue(ctx);
  // 0-d <-> (1, 1): views.
  const Array scalar = Array::from_host(queue, std::vector<std::int32_t>{42}, {1}).reshape({});
  EXPECT_EQ(scalar.ndim(), 0u);
  for (Order order : {Order::C, Order::F}) {
    const Array r = reshape(queue, scalar, {1, 1}, order);
    EXPECT_EQ(r.shape(), (Shape{1, 1}));
    EXPECT_EQ(r.get<std::int32_t>(), std::vector<std::int32_t>{42});
    EXPECT_EQ(r.data().adapter(), scalar.data().adapter());
  }
  // Empty arrays: always views, even of a strided empty view.
  const Array e = Array::empty(queue, {0, 5}, Dtype::int32);
  const Array et = e.transpose();
  for (Order order : {Order::C, Order::F}) {
    EXPECT_EQ(reshape(queue, et, {5, 0, 2}, order).shape(), (Shape{5, 0, 2}));
    EXPECT_EQ(reshape(queue, et, {5, 0, 2}, order).data().adapter(), e.data().adapter());
  }
  expect_logic_error([&] { (void)reshape(queue, e, {1}); }, {"0 elements", "(1)"});
  // A 16-byte dtype, a copy from a transposed view, both orders.
  std::vector<std::complex<double>> z(6);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = {double(i), -double(i) * 0.5};
  const Array zc = Array::from_host(queue, z, {2, 3});
  const Array zr = reshape(queue, zc.transpose(), {6});  // C order of the (3, 2) transpose
  EXPECT_EQ(zr.get<std::complex<double>>(),
            (std::vector<std::complex<double>>{z[0], z[3], z[1], z[4], z[2], z[5]}));
  const Array zf = reshape(queue, zc.transpose(), {2, 3}, Order::F);  // a view
  EXPECT_EQ(zf.data().adapter(), zc.data().adapter());
  // F order: read (3, 2)^T column-major = z in C order, placed column-major into (2, 3).
  EXPECT_EQ(zf.get<std::complex<double>>(),
            (std::vector<std::complex<double>>{z[0], z[2], z[4], z[1], z[3], z[5]}));
}

TEST_P(ArrayShapes, Flags) {
  auto ctx = context();
  Queue queue(ctx);
  const Array a = Array::from_host(queue, numbered(24), {4, 6});
  ArrayFlags fa = a.flags();
  EXPECT_TRUE(fa.c_contiguous && !fa.f_contiguous && fa.aligned && fa.writeable && fa.owndata);
  EXPECT_TRUE(fa.behaved() && fa.carray() && !fa.farray() && !fa.fnc() && fa.forc());
  const Array copy_of_handle = a;  // the same array
  EXPECT_TRUE(copy_of_handle.flags().owndata);

  const Array f = Array::zeros(queue, {4, 6}, Dtype::float64, Order::F);
  const ArrayFlags ff = f.flags();
  EXPECT_TRUE(ff.owndata && ff.f_contiguous && !ff.c_contiguous && ff.farray() && ff.fnc());
  EXPECT_FALSE(ff.carray());
  EXPECT_TRUE(Array::empty(queue, {3}, Dtype::int8).flags().owndata);
  EXPECT_TRUE(Array::empty_pitched(queue, {3, 5}, Dtype::float32).flags().owndata);

  // New arrays from Skein's calls own their memory; views and adopted buffers do not.
  EXPECT_TRUE(copy(queue, a.transpose()).flags().owndata);
  EXPECT_TRUE(concatenate(queue, {a, a}).flags().owndata);
  EXPECT_TRUE(astype(queue, a, Dtype::float32).flags().owndata);
  EXPECT_TRUE(reshape(queue, a.transpose(), {24}).flags().owndata);  // a copy
  for (const Array& v : {a.slice(1, 3), a.view(2, {5}), a.transpose(), a.reshape({24}),
                         split(a, 2)[1], atleast_3d(a), a.single_device_view(a.device_idx())}) {
    EXPECT_FALSE(v.flags().owndata) << to_string(v.shape());
    EXPECT_TRUE(v.flags().writeable);
  }
  const Buffer adopted = Buffer::allocate(ctx, 0, 64);
  EXPECT_FALSE(Array(queue, adopted, {16}, Dtype::float32).flags().owndata);

  // Alignment: the first element's offset and the strides of axes longer than 1, against the
  // dtype's kernel alignment (complex64: 8).
  const Array c = Array::zeros(queue, {8}, Dtype::complex64);
  const Array imag(queue, c.data(), {8}, Dtype::float32, {8}, c.offset() + 4);
  EXPECT_TRUE(imag.flags().aligned);
  EXPECT_EQ(imag.get<float>(), std::vector<float>(8, 0.0f));
  const Array shifted(queue, c.data(), {7}, Dtype::complex64, {}, c.offset() + 4);
  EXPECT_FALSE(shifted.flags().aligned);
  EXPECT_FALSE(shifted.flags().behaved() || shifted.flags().carray());
  EXPECT_TRUE(shifted.flags().c_contiguous);
  const Array odd_stride(queue, c.data(), {3}, Dtype::float32, {6}, c.offset());
  EXPECT_FALSE(odd_stride.flags().aligned);
  const Array one_row(queue, c.data(), {1, 2}, Dtype::float32, {6, 4}, c.offset());
  EXPECT_TRUE(one_row.flags().aligned);  // the odd stride is of an axis of size 1
  const Array empty_shifted(queue, c.data(), {0}, Dtype::complex64, {}, c.offset() + 4);
  EXPECT_TRUE(empty_shifted.flags().aligned);  // NumPy: an empty array is aligned
  // An unaligned array still reads right (a plain transfer).
  EXPECT_EQ(shifted.get<std::complex<float>>(), std::vector<std::complex<float>>(7));
}

TEST_P(ArrayShapes, AtLeastNd) {
  auto ctx = context();
  Queue queue(ctx);
  const Array s = Array::from_host(queue, std::vector<std::int32_t>{5}, {1}).reshape({});
  const Array v = Array::from_host(queue, numbered(4));
  const Array m = Array::from_host(queue, numbered(6), {2, 3});
  const Array t = Array::from_host(queue, numbered(24), {2, 3, 4});
  const Array e = Array::empty(queue, {0}, Dtype::int32);
  struct Case {
    const Array& in;
    Shape one, two, three;
  };
  for (const Case& c :
       {Case{s, {1}, {1, 1}, {1, 1, 1}}, Case{v, {4}, {1, 4}, {1, 4, 1}},
        Case{m, {2, 3}, {2, 3}, {2, 3, 1}}, Case{t, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
        Case{e, {0}, {1, 0}, {1, 0, 1}}}) {
    SCOPED_TRACE(to_string(c.in.shape()));
    const auto values = c.in.get<std::int32_t>();
    for (const auto& [r, shape] :
         {std::pair{atleast_1d(c.in), c.one}, std::pair{atleast_2d(c.in), c.two},
          std::pair{atleast_3d(c.in), c.three}}) {
      EXPECT_EQ(r.shape(), shape);
      EXPECT_EQ(r.get<std::int32_t>(), values);  // the same elements, same order
      EXPECT_EQ(r.data().adapter(), c.in.data().adapter());
      EXPECT_EQ(r.offset(), c.in.offset());
    }
  }
  // Arrays with enough dimensions come back as they are (a strided view too).
  const Array tv = t.transpose();
  EXPECT_EQ(atleast_3d(tv).strides(), tv.strides());
  // vstack, hstack and dstack of 0-d arrays now follow NumPy (atleast_2d / 1d / 3d first).
  const Array s2 = Array::from_host(queue, std::vector<std::int32_t>{9}, {1}).reshape({});
  EXPECT_EQ(vstack(queue, {s, s2}).shape(), (Shape{2, 1}));
  EXPECT_EQ(hstack(queue, {s, s2}).get<std::int32_t>(), (std::vector<std::int32_t>{5, 9}));
  EXPECT_EQ(dstack(queue, {s, s2}).shape(), (Shape{1, 1, 2}));
}

TEST_P(ArrayShapes, DirectionalSplits) {
  auto ctx = context();
  Queue queue(ctx);
  const Shape shape{4, 6, 2};
  const auto host = numbered(shape_size(shape));
  const Array a = Array::from_host(queue, host, shape);
  // Host reference: the block [r0, r1) x [c0, c1) x [d0, d1), C order.
  auto block = [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1, std::size_t d0,
                   std::size_t d1) {
    std::vector<std::int32_t> out;
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t c = c0; c < c1; ++c)
        for (std::size_t d = d0; d < d1; ++d) out.push_back(host[(r * 6 + c) * 2 + d]);
    return out;
  };
  const auto h = hsplit(a, 3);
  ASSERT_EQ(h.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(h[k].shape(), (Shape{4, 2, 2}));
    EXPECT_EQ(h[k].get<std::int32_t>(), block(0, 4, 2 * k, 2 * k + 2, 0, 2));
    EXPECT_EQ(h[k].data().adapter(), a.data().adapter());
  }
  const auto v = vsplit(a, std::vector<std::size_t>{1, 3});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].get<std::int32_t>(), block(0, 1, 0, 6, 0, 2));
  EXPECT_EQ(v[1].get<std::int32_t>(), block(1, 3, 0, 6, 0, 2));
  EXPECT_EQ(v[2].get<std::int32_t>(), block(3, 4, 0, 6, 0, 2));
  const auto d = dsplit(a, 2);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].get<std::int32_t>(), block(0, 4, 0, 6, 1, 2));
  const auto di = dsplit(a, std::vector<std::size_t>{0, 5});  // an empty part, then the rest
  ASSERT_EQ(di.size(), 3u);
  EXPECT_EQ(di[0].shape(), (Shape{4, 6, 0}));
  EXPECT_EQ(di[1].get<std::int32_t>(), host);
  EXPECT_EQ(di[2].shape(), (Shape{4, 6, 0}));
  // A 1-D array: hsplit splits axis 0.
  const Array flat = Array::from_host(queue, numbered(6));
  const auto hf = hsplit(flat, std::vector<std::size_t>{4});
  EXPECT_EQ(hf[0].get<std::int32_t>(), std::vector<std::int32_t>(host.begin(), host.begin() + 4));
  EXPECT_EQ(hf[1].get<std::int32_t>(),
            std::vector<std::int32_t>(host.begin() + 4, host.begin() + 6));
  // An empty axis splits into empty sections.
  const Array empty_rows = Array::empty(queue, {0, 3}, Dtype::int32);
  for (const Array& part : vsplit(empty_rows, 3)) EXPECT_EQ(part.shape(), (Shape{0, 3}));
  // Errors, with NumPy's words.
  expect_logic_error([&] { hsplit(a, 4); },
                     {"skein::hsplit", "array split does not result in an equal division", "axis 1",
                      "array_split"});
  expect_logic_error([&] { vsplit(flat, 2); },
                     {"skein::vsplit", "vsplit only works on arrays of 2 or more dimensions"});
  expect_logic_error([&] { dsplit(a.reshape({48}), 2); },
                     {"dsplit only works on arrays of 3 or more dimensions", "(48)"});
  const Array scalar = flat.slice(0, 1).reshape({});
  expect_logic_error([&] { hsplit(scalar, 1); },
                     {"hsplit only works on arrays of 1 or more dimensions", "atleast_1d"});
  // What a user does next: the array is untouched; array_split or atleast_1d give the parts.
  EXPECT_EQ(a.get<std::int32_t>(), host);
  EXPECT_EQ(array_split(a, 4, 1).size(), 4u);
  EXPECT_EQ(hsplit(atleast_1d(scalar), 1)[0].get<std::int32_t>(),
            std::vector<std::int32_t>{host[0]});
}

SKEIN_INSTANTIATE_BACKENDS(ArrayShapes);

}  // namespace array_shapes_test
}  // namespace
}  // namespace skein::test
