// SPDX-License-Identifier: BSD-3-Clause
// Record (struct) dtypes (skein/records.hpp): the registry and what knows records, flattening, C
// paths and constants, NumPy's min_scalar_type and grunnur's complex_for / real_for on the host;
// on every backend, arrays of a record dtype through transfers, views and copies, records in a
// Program, an ElementwiseKernel and a ReductionKernel, and field views (extract_field) read and
// written, all compared with host references built from the StructType's offsets.
#include <gtest/gtest.h>

#include <cstring>
#include <skein/records.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"

namespace skein::test {
namespace {
namespace records_test {

// struct { float x; double w; int32_t n[3]; }: x at 0, w at 8, n at 16, 32 bytes, aligned to 8.
StructType point_type() {
  return StructType{{"x", Dtype::float32}, {"w", Dtype::float64}, {"n", Dtype::int32, 3}};
}
Dtype point() { return register_dtype(point_type(), "rec_point"); }

// A host element of rec_point, packed at the StructType's offsets.
struct HostPoint {
  float x;
  double w;
  std::int32_t n[3];
};

std::vector<std::byte> pack(const std::vector<HostPoint>& ps) {
  const StructType t = point_type();
  const auto off = t.offsets();
  std::vector<std::byte> out(ps.size() * t.itemsize(), std::byte{0xAB});
  for (std::size_t i = 0; i < ps.size(); ++i) {
    std::byte* e = out.data() + i * t.itemsize();
    std::memcpy(e + off[0], &ps[i].x, 4);
    std::memcpy(e + off[1], &ps[i].w, 8);
    std::memcpy(e + off[2], ps[i].n, 12);
  }
  return out;
}

std::vector<HostPoint> unpack(const std::vector<std::byte>& bytes) {
  const StructType t = point_type();
  const auto off = t.offsets();
  std::vector<HostPoint> out(bytes.size() / t.itemsize());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::byte* e = bytes.data() + i * t.itemsize();
    std::memcpy(&out[i].x, e + off[0], 4);
    std::memcpy(&out[i].w, e + off[1], 8);
    std::memcpy(out[i].n, e + off[2], 12);
  }
  return out;
}

std::vector<HostPoint> make_points(std::size_t n, int seed) {
  std::vector<HostPoint> ps(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double k = static_cast<double>(i) + seed;
    ps[i].x = static_cast<float>(0.5 + 0.25 * static_cast<double>((i * 7 + seed) % 13));
    ps[i].w = 1.0 / (k + 1.0);
    for (int j = 0; j < 3; ++j) ps[i].n[j] = static_cast<std::int32_t>(i * 3 + j) - seed;
  }
  return ps;
}

std::vector<std::byte> get_bytes(const Array& a) {
  std::vector<std::byte> out(a.nbytes());
  a.get(std::span<std::byte>(out));
  return out;
}

void expect_equal(const std::vector<HostPoint>& got, const std::vector<HostPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].x, want[i].x) << i;
    ASSERT_EQ(got[i].w, want[i].w) << i;
    for (int j = 0; j < 3; ++j) ASSERT_EQ(got[i].n[j], want[i].n[j]) << i << "," << j;
  }
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const LogicError& e) {
    return e.what();
  }
  return "(no LogicError)";
}

// ---- host ----

TEST(RecordDtypes, RegistryAndWhatKnowsRecords) {
  const Dtype p = point();
  EXPECT_TRUE(is_record(p));
  EXPECT_EQ(register_dtype(point_type(), "rec_point"), p);  // equal struct, same name: same dtype
  EXPECT_EQ(itemsize(p), 32u);
  EXPECT_EQ(alignment_of(p), 8u);
  EXPECT_EQ(name(p), "rec_point");
  EXPECT_EQ(ctype(p), "rec_point");
  EXPECT_EQ(dtype_from_name("rec_point"), p);
  EXPECT_TRUE(record_type(p) == point_type());
  const auto all = record_dtypes();
  EXPECT_NE(std::find(all.begin(), all.end(), p), all.end());
  EXPECT_FALSE(is_integer(p));
  EXPECT_FALSE(is_signed(p));
  EXPECT_FALSE(is_floating(p));
  EXPECT_FALSE(is_complex(p));
  for (Dtype d : all_dtypes) EXPECT_FALSE(is_record(d)) << name(d);

  // A different struct under a taken name; bad names; built-in names.
  const std::string taken = message([] {
    register_dtype(StructType{{"x", Dtype::float32}}, "rec_point");
  });
  EXPECT_NE(taken.find("taken by a different struct"), std::string::npos) << taken;
  EXPECT_THROW(register_dtype(point_type(), "not an identifier"), LogicError);
  EXPECT_THROW(register_dtype(point_type(), "float32"), LogicError);
  EXPECT_THROW(register_dtype(point_type(), "int32_t"), LogicError);
  EXPECT_THROW(register_dtype(StructType{}, "rec_empty"), LogicError);
  EXPECT_THROW(record_type(Dtype::float32), LogicError);
  EXPECT_THROW(itemsize(static_cast<Dtype>(250)), LogicError);  // never registered
  // The same struct under another name is another dtype with the same layout.
  const Dtype q = register_dtype(point_type(), "rec_point2");
  EXPECT_NE(q, p);
  EXPECT_EQ(itemsize(q), 32u);
  EXPECT_EQ(point(), p);  // and the first is still there
  // A field of a record dtype is the record's struct, nested.
  const StructType with_record{{"k", Dtype::int8}, {"p", p, 2}};
  EXPECT_TRUE(with_record == (StructType{{"k", Dtype::int8}, {"p", point_type(), 2}}));
  EXPECT_EQ(with_record.offsets(), (std::vector<std::size_t>{0, 8}));
  EXPECT_EQ(with_record.itemsize(), 72u);
  const auto flat = flatten_dtype(with_record);
  ASSERT_EQ(flat.size(), 11u);
  EXPECT_EQ(c_path(flat[6].path), "p[1].x");
  EXPECT_EQ(flat[6].offset, 40u);
}

TEST(RecordDtypes, NumericCallsRefuseRecordsByName) {
  const Dtype p = point();
  const std::string v = message([&] { visit_dtype(p, [](auto t) { return sizeof(t); }); });
  EXPECT_NE(v.find("rec_point"), std::string::npos) << v;
  EXPECT_NE(v.find("NumericCallsRefuseRecordsByName"), std::string::npos) << v;  // the caller
  const std::string r = message([&] { result_type({p, Dtype::float32}); });
  EXPECT_NE(r.find("rec_point"), std::string::npos) << r;
  EXPECT_NE(r.find("result_type"), std::string::npos) << r;
  EXPECT_THROW(promote_types(p, p), LogicError);
  EXPECT_THROW(Operand(1.0).bytes_as(p, "test"), LogicError);
  EXPECT_THROW(c_constant(Operand(1.0), p), LogicError);
}

TEST(RecordDtypes, FlattenAndCPath) {
  const StructType inner{{"a", Dtype::int8}, {"b", Dtype::float32, 2}};  // a 0, b 4, size 12
  const StructType outer{{"h", Dtype::int16}, {"s", inner, 2}, {"z", Dtype::complex64}};
  // h 0; s at 4 (align 4), 2 x 12 = 24 -> 28; z at 32 (align 8); size 40.
  EXPECT_EQ(outer.offsets(), (std::vector<std::size_t>{0, 4, 32}));
  EXPECT_EQ(outer.itemsize(), 40u);
  const auto flat = flatten_dtype(outer);
  struct Want {
    std::string path;
    Dtype dtype;
    std::size_t offset;
  };
  const std::vector<Want> want{{"h", Dtype::int16, 0},
                               {"s[0].a", Dtype::int8, 4},
                               {"s[0].b[0]", Dtype::float32, 8},
                               {"s[0].b[1]", Dtype::float32, 12},
                               {"s[1].a", Dtype::int8, 16},
                               {"s[1].b[0]", Dtype::float32, 20},
                               {"s[1].b[1]", Dtype::float32, 24},
                               {"z", Dtype::complex64, 32}};
  ASSERT_EQ(flat.size(), want.size());
  for (std::size_t k = 0; k < flat.size(); ++k) {
    EXPECT_EQ(c_path(flat[k].path), want[k].path) << k;
    EXPECT_EQ(flat[k].dtype, want[k].dtype) << k;
    EXPECT_EQ(flat[k].offset, want[k].offset) << k;
  }
  EXPECT_EQ(c_path({"a", "b", std::size_t{2}}), "a.b[2]");
  EXPECT_THROW(c_path({}), LogicError);
  EXPECT_THROW(c_path({std::size_t{1}, "a"}), LogicError);
  EXPECT_EQ(flatten_dtype(point()).size(), 5u);
  EXPECT_THROW(flatten_dtype(Dtype::int32), LogicError);
}

TEST(RecordDtypes, CtypeStructIgnoreAlignment) {
  const StructType s = align(StructType{{"a", Dtype::int8}, {"b", Dtype::float32}}, 16);
  EXPECT_EQ(ctype_struct(s, "s16"),
            "typedef struct ALIGN(16) {\n  int8_t a;\n  float b;\n} s16;\n");
  EXPECT_EQ(ctype_struct(s, "s16", true), "typedef struct {\n  int8_t a;\n  float b;\n} s16;\n");
  const StructType n{{"p", s}, {"c", Dtype::int8}};
  EXPECT_EQ(
      ctype_struct(n, "nest", true),
      "typedef struct {\n  struct {\n    int8_t a;\n    float b;\n  } p;\n  int8_t c;\n} nest;\n");
}

TEST(RecordDtypes, CConstant) {
  EXPECT_EQ(c_constant(Operand(3), Dtype::int32), "3");
  EXPECT_EQ(c_constant(Operand(-3), Dtype::int8), "-3");
  EXPECT_EQ(c_constant(Operand(7), Dtype::uint16), "7u");
  EXPECT_EQ(c_constant(Operand(-5), Dtype::int64), "((int64_t)-5)");
  EXPECT_EQ(c_constant(Operand(std::numeric_limits<std::int64_t>::min()), Dtype::int64),
            "((int64_t)(-9223372036854775807 - 1))");
  EXPECT_EQ(c_constant(Operand(std::numeric_limits<std::int32_t>::min()), Dtype::int32),
            "(-2147483647 - 1)");
  EXPECT_EQ(c_constant(Operand(std::numeric_limits<std::uint64_t>::max()), Dtype::uint64),
            "((uint64_t)18446744073709551615u)");
  EXPECT_EQ(c_constant(Operand(1.5), Dtype::float32), "1.5f");
  EXPECT_EQ(c_constant(Operand(0.25), Dtype::float64), literal(0.25));
  EXPECT_EQ(c_constant(Operand(1.0), Dtype::float16), "{15360}");  // 0x3c00
  EXPECT_EQ(c_constant(Operand(std::complex<double>(1, -2)), Dtype::complex64),
            "skein_make_complex64(1.0f, (-2.0f))");
  EXPECT_EQ(c_constant(Operand(2.5)), literal(2.5));  // its own dtype: float64
  EXPECT_THROW(c_constant(Operand(300), Dtype::int8), LogicError);
  EXPECT_THROW(c_constant(Operand(std::numeric_limits<double>::infinity()), Dtype::float64),
               LogicError);
  // A record: fields in order, arrays and complex in braces.
  const HostPoint hp{0.5f, 2.0, {1, -2, 3}};
  const auto bytes = pack({hp});
  EXPECT_EQ(c_constant(std::span<const std::byte>(bytes), point()),
            "{0.5f, " + literal(2.0) + ", {1, -2, 3}}");
  EXPECT_THROW(c_constant(std::span<const std::byte>(bytes).first(8), point()), LogicError);
  const Dtype zc =
      register_dtype(StructType{{"z", Dtype::complex64}, {"k", Dtype::uint8}}, "rec_zc");
  std::vector<std::byte> zb(itemsize(zc), std::byte{0});
  const float re = 1.0f, im = 2.0f;
  std::memcpy(zb.data(), &re, 4);
  std::memcpy(zb.data() + 4, &im, 4);
  zb[8] = std::byte{9};
  EXPECT_EQ(c_constant(std::span<const std::byte>(zb), zc), "{{1.0f, 2.0f}, 9u}");
}

TEST(RecordDtypes, MinScalarTypeComplexForRealFor) {
  EXPECT_EQ(min_scalar_type(0), Dtype::uint8);
  EXPECT_EQ(min_scalar_type(255), Dtype::uint8);
  EXPECT_EQ(min_scalar_type(256), Dtype::uint16);
  EXPECT_EQ(min_scalar_type(65536), Dtype::uint32);
  EXPECT_EQ(min_scalar_type(std::uint64_t{1} << 32), Dtype::uint64);
  EXPECT_EQ(min_scalar_type(-1), Dtype::int8);
  EXPECT_EQ(min_scalar_type(-128), Dtype::int8);
  EXPECT_EQ(min_scalar_type(-129), Dtype::int16);
  EXPECT_EQ(min_scalar_type(-40000), Dtype::int32);
  EXPECT_EQ(min_scalar_type(std::int64_t{-1} << 40), Dtype::int64);
  EXPECT_EQ(min_scalar_type(200, true), Dtype::int16);
  EXPECT_EQ(min_scalar_type(127, true), Dtype::int8);
  EXPECT_EQ(min_scalar_type(std::uint64_t{1} << 63, false), Dtype::uint64);
  EXPECT_THROW(min_scalar_type(std::uint64_t{1} << 63, true), LogicError);
  EXPECT_EQ(min_scalar_type(0.1), Dtype::float16);
  EXPECT_EQ(min_scalar_type(65504.0), Dtype::float16);
  EXPECT_EQ(min_scalar_type(70000.0), Dtype::float32);
  EXPECT_EQ(min_scalar_type(-1e39), Dtype::float64);
  EXPECT_EQ(min_scalar_type(std::numeric_limits<double>::infinity()), Dtype::float16);
  EXPECT_EQ(min_scalar_type(std::complex<double>(1, 2)), Dtype::complex64);
  EXPECT_EQ(min_scalar_type(std::complex<double>(1, 1e300)), Dtype::complex128);
  EXPECT_EQ(complex_for(Dtype::float32), Dtype::complex64);
  EXPECT_EQ(complex_for(Dtype::float64), Dtype::complex128);
  EXPECT_EQ(real_for(Dtype::complex64), Dtype::float32);
  EXPECT_EQ(real_for(Dtype::complex128), Dtype::float64);
  EXPECT_THROW(complex_for(Dtype::int32), LogicError);
  EXPECT_THROW(complex_for(Dtype::complex64), LogicError);
  EXPECT_THROW(real_for(Dtype::float32), LogicError);
  EXPECT_THROW(complex_for(point()), LogicError);
}

// ---- every backend ----

class Records : public BackendTest {};

TEST_P(Records, ArraysTransfersViewsAndCopies) {
  auto ctx = context();
  Queue queue(ctx);
  const Dtype p = point();
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}}) {
    SCOPED_TRACE(n);
    const auto ps = make_points(n, 3);
    Array a = Array::empty(queue, {n}, p);
    EXPECT_EQ(a.nbytes(), 32 * n);
    const auto bytes = pack(ps);
    a.set(std::span<const std::byte>(bytes));
    expect_equal(unpack(get_bytes(a)), ps);
    // Device copy, slice, a strided view (every other element) copied by the copy kernel.
    Array b = Array::zeros(queue, {n}, p);
    b.set(a);
    expect_equal(unpack(get_bytes(b)), ps);
    if (n >= 2) {
      const Array s = a.slice(1, n);
      expect_equal(unpack(get_bytes(s)), std::vector<HostPoint>(ps.begin() + 1, ps.end()));
      const std::size_t h = n / 2;
      const Array every_other = a.view(0, {h}, {64});
      std::vector<HostPoint> want;
      for (std::size_t i = 0; i < h; ++i) want.push_back(ps[2 * i]);
      Array dense = Array::empty(queue, {h}, p);
      copy(queue, every_other, dense);
      expect_equal(unpack(get_bytes(dense)), want);
      every_other.fill_zero();
      auto got = unpack(get_bytes(a));
      for (std::size_t i = 0; i < n; ++i) {
        if (i % 2 == 0 && i / 2 < h) {
          ASSERT_EQ(got[i].x, 0.0f) << i;
          ASSERT_EQ(got[i].n[2], 0) << i;
        } else {
          ASSERT_EQ(got[i].w, ps[i].w) << i;
        }
      }
    }
  }
  // 2-D: transpose and copy to a dense array.
  const auto ps = make_points(12, 5);
  const auto bytes = pack(ps);
  Array m = Array::empty(queue, {3, 4}, p);
  m.set(std::span<const std::byte>(bytes));
  Array t = Array::empty(queue, {4, 3}, p);
  copy(queue, m.transpose(), t);
  const auto got = unpack(get_bytes(t));
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 3; ++j) ASSERT_EQ(got[i * 3 + j].w, ps[j * 4 + i].w);
  }
  // Copies to other dtypes and arithmetic refuse records; the array is still usable.
  EXPECT_THROW(copy(queue, m, Array::empty(queue, {3, 4}, Dtype::float32)), LogicError);
  const std::string e = message([&] { sum(queue, m); });
  EXPECT_NE(e.find("rec_point"), std::string::npos) << e;
  EXPECT_THROW(m.get<float>(), LogicError);
  expect_equal(unpack(get_bytes(m)), ps);
}

TEST_P(Records, ProgramSeesTheStructByItsName) {
  auto ctx = context();
  Queue queue(ctx);
  const Dtype p = point();
  Program program(ctx, R"(
KERNEL void weigh(GLOBAL_MEM rec_point* pts, GLOBAL_MEM double* out, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    rec_point q = pts[i];
    out[i] = q.x * q.w + q.n[0] + q.n[1] + q.n[2];
    pts[i].n[1] = i;
}
)");
  const std::size_t n = 1001;
  const auto ps = make_points(n, 1);
  Array a = Array::empty(queue, {n}, p);
  const auto bytes = pack(ps);
  a.set(std::span<const std::byte>(bytes));
  Array out = Array::empty(queue, {n}, Dtype::float64);
  program.kernel("weigh")(queue, n, std::nullopt, a, out, static_cast<std::int32_t>(n));
  const auto got = out.get<double>();
  auto want = ps;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = double(ps[i].x) * ps[i].w + ps[i].n[0] + ps[i].n[1] + ps[i].n[2];
    ASSERT_NEAR(got[i], r, 1e-12 * (1 + std::abs(r))) << i;
    want[i].n[1] = static_cast<std::int32_t>(i);
  }
  expect_equal(unpack(get_bytes(a)), want);
}

TEST_P(Records, ElementwiseKernelOverRecords) {
  auto ctx = context();
  Queue queue(ctx);
  const Dtype p = point();
  ElementwiseKernel k("rec_point a, float32 s", "float64 y, rec_point b",
                      "y = a.x * a.w + a.n[2]; b = a; b.x = a.x * s; b.n[0] = -a.n[0]",
                      {.name = "rec_ew"});
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, std::size_t{70001}}) {
    SCOPED_TRACE(n);
    const auto ps = make_points(n, 2);
    const auto bytes = pack(ps);
    Array a = Array::empty(queue, {n}, p);
    a.set(std::span<const std::byte>(bytes));
    const auto outs = k(queue, {a, 2.0f});
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[1].dtype(), p);
    const auto y = outs[0].get<double>();
    const auto b = unpack(get_bytes(outs[1]));
    for (std::size_t i = 0; i < n; ++i) {
      const double r = double(ps[i].x) * ps[i].w + ps[i].n[2];
      ASSERT_NEAR(y[i], r, 1e-12 * (1 + std::abs(r))) << i;
      ASSERT_EQ(b[i].x, ps[i].x * 2.0f) << i;
      ASSERT_EQ(b[i].w, ps[i].w) << i;
      ASSERT_EQ(b[i].n[0], -ps[i].n[0]) << i;
      ASSERT_EQ(b[i].n[1], ps[i].n[1]) << i;
    }
  }
  // A 12-byte record (three chunks of 4 elements per 48-byte vector group), unaligned start.
  const Dtype t3 = register_dtype(
      StructType{{"a", Dtype::int32}, {"b", Dtype::float32}, {"c", Dtype::int16}}, "rec_t3");
  ASSERT_EQ(itemsize(t3), 12u);
  ElementwiseKernel inc("rec_t3 u", "rec_t3 v", "v = u; v.a = u.a + 1; v.c = (int16_t)(u.c * 2)",
                        {.name = "rec_inc"});
  const std::size_t n = 1003;
  std::vector<std::byte> raw(n * 12);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t a = static_cast<std::int32_t>(i);
    const float b = static_cast<float>(i) * 0.5f;
    const std::int16_t c = static_cast<std::int16_t>(i % 1000);
    std::memcpy(raw.data() + 12 * i, &a, 4);
    std::memcpy(raw.data() + 12 * i + 4, &b, 4);
    std::memcpy(raw.data() + 12 * i + 8, &c, 2);
  }
  Array u = Array::empty(queue, {n}, t3);
  u.set(std::span<const std::byte>(raw));
  const Array v = inc(queue, {u.slice(1, n)}).front();
  const auto vb = get_bytes(v);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    std::int32_t a;
    float b;
    std::int16_t c;
    std::memcpy(&a, vb.data() + 12 * i, 4);
    std::memcpy(&b, vb.data() + 12 * i + 4, 4);
    std::memcpy(&c, vb.data() + 12 * i + 8, 2);
    ASSERT_EQ(a, static_cast<std::int32_t>(i + 2)) << i;
    ASSERT_EQ(b, static_cast<float>(i + 1) * 0.5f) << i;
    ASSERT_EQ(c, static_cast<std::int16_t>(((i + 1) % 1000) * 2)) << i;
  }
}

TEST_P(Records, ReductionOverARecordField) {
  auto ctx = context();
  Queue queue(ctx);
  const Dtype p = point();
  ReductionKernel k("rec_point q", "float64 s", "q.x * q.w", "a + b", "0", {.name = "rec_dot"});
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{100003}}) {
    SCOPED_TRACE(n);
    const auto ps = make_points(n, 4);
    const auto bytes = pack(ps);
    Array a = Array::empty(queue, {n}, p);
    if (n) a.set(std::span<const std::byte>(bytes));
    double want = 0, mag = 0;
    for (const auto& e : ps) {
      want += double(e.x) * e.w;
      mag += std::abs(double(e.x) * e.w);
    }
    for (bool det : {false, true}) {
      const double got = k(queue, {a}, {.deterministic = det}).get<double>()[0];
      EXPECT_NEAR(got, want, 1e-13 * (1 + mag)) << det;
    }
  }
}

TEST_P(Records, ExtractFieldReadsAndWrites) {
  auto ctx = context();
  Queue queue(ctx);
  const Dtype p = point();
  const std::size_t n = 517;
  const auto ps = make_points(n, 6);
  const auto bytes = pack(ps);
  Array a = Array::empty(queue, {n}, p);
  a.set(std::span<const std::byte>(bytes));

  const Array x = extract_field(a, {"x"});
  EXPECT_EQ(x.dtype(), Dtype::float32);
  EXPECT_EQ(x.shape(), Shape{n});
  EXPECT_EQ(x.strides(), Strides{32});
  const auto xs = x.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(xs[i], ps[i].x) << i;

  const Array nn = extract_field(a, {"n"});  // an array field: one more dimension
  EXPECT_EQ(nn.shape(), (Shape{n, 3}));
  EXPECT_EQ(nn.strides(), (Strides{32, 4}));
  const auto ns = nn.get<std::int32_t>();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 3; ++j) ASSERT_EQ(ns[i * 3 + j], ps[i].n[j]);
  }
  const Array n1 = extract_field(a, {"n", std::size_t{1}});
  EXPECT_EQ(n1.offset(), a.offset() + 20);
  EXPECT_EQ(n1.get<std::int32_t>()[5], ps[5].n[1]);

  // Writing one field leaves the others as they were.
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = -static_cast<double>(i);
  extract_field(a, {"w"}).set(w);
  auto want = ps;
  for (std::size_t i = 0; i < n; ++i) want[i].w = w[i];
  expect_equal(unpack(get_bytes(a)), want);
  // A field of a view: the view's offset plus the field's.
  const Array tail_w = extract_field(a.slice(10, n), {"w"});
  EXPECT_EQ(tail_w.get<double>()[0], -10.0);
  // Elementwise over field views (strided arrays of numbers).
  const Array prod =
      binary(queue, BinaryOp::multiply, extract_field(a, {"x"}), extract_field(a, {"w"}));
  const auto pr = prod.get<double>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(pr[i], double(ps[i].x) * w[i]) << i;

  // Errors, then the array is still usable.
  EXPECT_THROW(extract_field(a, {"nope"}), LogicError);
  EXPECT_THROW(extract_field(a, {"x", std::size_t{0}}), LogicError);
  EXPECT_THROW(extract_field(a, {"n", std::size_t{3}}), LogicError);
  EXPECT_THROW(extract_field(a, {}), LogicError);
  EXPECT_THROW(extract_field(x, {"x"}), LogicError);
  expect_equal(unpack(get_bytes(a)), want);
}

TEST_P(Records, NestedStructFieldsAndPadding) {
  auto ctx = context();
  Queue queue(ctx);
  // inner { int8 a; float32 b[2]; } (12 bytes, align 4) padded to 16 by align(); outer
  // { int16 h; inner s[2]; complex64 z; }: h 0, s 16 (2 x 16), z 48, size 56.
  const StructType inner = align(StructType{{"a", Dtype::int8}, {"b", Dtype::float32, 2}}, 16);
  const StructType outer{{"h", Dtype::int16}, {"s", inner, 2}, {"z", Dtype::complex64}};
  ASSERT_EQ(outer.offsets(), (std::vector<std::size_t>{0, 16, 48}));
  ASSERT_EQ(outer.itemsize(), 64u);  // aligned to 16
  const Dtype o = register_dtype(outer, "rec_outer");
  const std::size_t n = 33;
  std::vector<std::byte> raw(n * 64, std::byte{0});
  for (std::size_t i = 0; i < n; ++i) {
    std::byte* e = raw.data() + 64 * i;
    const std::int16_t h = static_cast<std::int16_t>(i);
    std::memcpy(e, &h, 2);
    for (std::size_t s = 0; s < 2; ++s) {
      e[16 + 16 * s] = static_cast<std::byte>(i + s);
      for (std::size_t b = 0; b < 2; ++b) {
        const float v = static_cast<float>(i * 10 + s * 2 + b);
        std::memcpy(e + 16 + 16 * s + 4 + 4 * b, &v, 4);
      }
    }
    const float z[2] = {static_cast<float>(i), -static_cast<float>(i)};
    std::memcpy(e + 48, z, 8);
  }
  Array a = Array::empty(queue, {n}, o);
  a.set(std::span<const std::byte>(raw));
  // A leaf deep inside, and a nested struct (which gets a record dtype of its own).
  const auto b1 = extract_field(a, {"s", std::size_t{1}, "b", std::size_t{1}}).get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(b1[i], static_cast<float>(i * 10 + 3)) << i;
  const Array s0 = extract_field(a, {"s", std::size_t{0}});
  EXPECT_TRUE(is_record(s0.dtype()));
  EXPECT_TRUE(record_type(s0.dtype()) == inner);
  EXPECT_EQ(s0.offset(), a.offset() + 16);
  EXPECT_EQ(extract_field(s0, {"a"}).get<std::int8_t>()[7], 7);
  const auto z = extract_field(a, {"z"}).get<std::complex<float>>();
  EXPECT_EQ(z[5], std::complex<float>(5, -5));
  // A kernel over the nested record reads through the inner struct and the complex field.
  ElementwiseKernel k("rec_outer r", "float32 y", "y = r.s[1].b[0] + r.z.im + (float)r.h",
                      {.name = "rec_nested"});
  const auto y = k(queue, {a}).front().get<float>();
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], static_cast<float>(i * 10 + 2) - static_cast<float>(i) + static_cast<float>(i))
        << i;
  }
}

SKEIN_INSTANTIATE_BACKENDS(Records);

}  // namespace records_test
}  // namespace
}  // namespace skein::test
