// SPDX-License-Identifier: BSD-3-Clause
// Dtypes: sizes, names, and the float16 / bfloat16 host conversions against exact values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <skein/skein.hpp>

namespace skein {
namespace {
namespace dtype_test {

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(itemsize(Dtype::int8), 1u);
  EXPECT_EQ(itemsize(Dtype::uint16), 2u);
  EXPECT_EQ(itemsize(Dtype::float16), 2u);
  EXPECT_EQ(itemsize(Dtype::bfloat16), 2u);
  EXPECT_EQ(itemsize(Dtype::int64), 8u);
  EXPECT_EQ(itemsize(Dtype::complex64), 8u);
  EXPECT_EQ(itemsize(Dtype::complex128), 16u);
  for (Dtype d : all_dtypes) EXPECT_EQ(dtype_from_name(name(d)), d);
  EXPECT_THROW(dtype_from_name("float128"), LogicError);
  EXPECT_TRUE(is_integer(Dtype::uint64));
  EXPECT_FALSE(is_integer(Dtype::float16));
  EXPECT_TRUE(is_floating(Dtype::bfloat16));
  EXPECT_TRUE(is_complex(Dtype::complex64));
  EXPECT_FALSE(is_signed(Dtype::uint8));
  EXPECT_TRUE(is_signed(Dtype::int8));
  EXPECT_EQ(dtype_of<std::complex<double>>, Dtype::complex128);
}

TEST(Float16, ExactValuesAndRounding) {
  // Reference bit patterns from the IEEE 754 binary16 definition.
  EXPECT_EQ(float16(0.0f).bits, 0x0000);
  EXPECT_EQ(float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);                          // largest finite
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);                          // rounds to infinity
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001);             // smallest subnormal
  EXPECT_EQ(float16(std::ldexp(1.0f, -14)).bits, 0x0400);             // smallest normal
  EXPECT_EQ(float16(std::ldexp(1.0f, -26)).bits, 0x0000);             // underflows
  EXPECT_EQ(float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);      // tie to even (down)
  EXPECT_EQ(float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // tie to even (up)
  EXPECT_EQ(float16(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::nanf("")))));
  // Every finite half converts to float and back unchanged.
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = float16::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16(f).bits, b) << std::hex << b;
  }
}

TEST(BFloat16, ExactValuesAndRounding) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(static_cast<float>(bfloat16::from_bits(0x4049)), 3.140625f);
  EXPECT_EQ(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);      // tie to even (down)
  EXPECT_EQ(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);  // tie to even (up)
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::nanf("")))));
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(bfloat16(f).bits, b) << std::hex << b;
  }
}

TEST(Errors, MessagesNameTheCallTheCodeAndTheFix) {
  ErrorInfo info{.what = "it broke",
                 .call = "cuMemAlloc",
                 .code_name = "CUDA_ERROR_OUT_OF_MEMORY",
                 .code = 2,
                 .has_code = true,
                 .device = "CUDA device 0 (X)",
                 .hint = "Use less.",
                 .location = "framework/cuda/context.cpp:1"};
  const std::string msg = MemoryError(info, 10, 5).what();
  for (const char* part : {"cuMemAlloc", "it broke", "CUDA_ERROR_OUT_OF_MEMORY", "2",
                           "CUDA device 0 (X)", "Use less.", "context.cpp:1"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB (1536 bytes)");
}

}  // namespace dtype_test
}  // namespace
}  // namespace skein
