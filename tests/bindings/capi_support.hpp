// SPDX-License-Identifier: BSD-3-Clause
// What the C API's tests share: a runtime, queue and communicator made through the C functions
// (one set per backend present), the check that no exception crosses the C boundary, and host
// values of every dtype encoded independently of Skein (float16 and bfloat16 as bit patterns of
// exactly representable values).
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends.hpp"
#include "skein/skein.h"

namespace skein::test::capi {

// Calls `f` where an exception would end the process (a noexcept function): a test that gets a
// status back proves nothing escaped.
template <class F>
skein_status nothrow(F&& f) noexcept {
  return f();
}

#define CAPI_OK(...)                                                                    \
  ASSERT_EQ(::skein::test::capi::nothrow([&] { return (__VA_ARGS__); }), SKEIN_SUCCESS) \
      << skein_last_error_message()
#define CAPI_STATUS(status, ...) \
  EXPECT_EQ(::skein::test::capi::nothrow([&] { return (__VA_ARGS__); }), (status))

using Bytes = std::vector<std::byte>;

constexpr skein_dtype kAllDtypes[] = {
    SKEIN_INT8,    SKEIN_INT16,   SKEIN_INT32,     SKEIN_INT64,     SKEIN_UINT8,
    SKEIN_UINT16,  SKEIN_UINT32,  SKEIN_UINT64,    SKEIN_FLOAT16,   SKEIN_BFLOAT16,
    SKEIN_FLOAT32, SKEIN_FLOAT64, SKEIN_COMPLEX64, SKEIN_COMPLEX128};

inline bool is_complex(skein_dtype d) { return d == SKEIN_COMPLEX64 || d == SKEIN_COMPLEX128; }
inline bool is_integer(skein_dtype d) { return d <= SKEIN_UINT64; }

// IEEE binary16 bits of a value that is exact in it (a normal number or 0), by hand.
inline std::uint16_t half_bits(double v) {
  if (v == 0) return 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = std::fabs(v);
  int e = 0;
  while (a >= 2) a /= 2, ++e;
  while (a < 1) a *= 2, --e;
  const double mantissa = (a - 1) * 1024;
  EXPECT_EQ(mantissa, std::floor(mantissa)) << v << " is not exact in float16";
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | static_cast<int>(mantissa));
}

// bfloat16: the upper half of float32's bits (exact values only).
inline std::uint16_t bfloat16_bits(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  EXPECT_EQ(bits & 0xffffu, 0u) << v << " is not exact in bfloat16";
  return static_cast<std::uint16_t>(bits >> 16);
}

template <class T>
void put(Bytes& out, std::size_t i, T value) {
  std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
}

// Values (and imaginary parts, for the complex dtypes) as the dtype's bytes.
inline Bytes encode(skein_dtype d, const std::vector<double>& re,
                    const std::vector<double>& im = {}) {
  Bytes out(re.size() * skein_dtype_size(d));
  for (std::size_t i = 0; i < re.size(); ++i) {
    const double v = re[i];
    const double w = im.empty() ? 0.0 : im[i];
    switch (d) {
      case SKEIN_INT8: put(out, i, static_cast<std::int8_t>(v)); break;
      case SKEIN_INT16: put(out, i, static_cast<std::int16_t>(v)); break;
      case SKEIN_INT32: put(out, i, static_cast<std::int32_t>(v)); break;
      case SKEIN_INT64: put(out, i, static_cast<std::int64_t>(v)); break;
      case SKEIN_UINT8: put(out, i, static_cast<std::uint8_t>(v)); break;
      case SKEIN_UINT16: put(out, i, static_cast<std::uint16_t>(v)); break;
      case SKEIN_UINT32: put(out, i, static_cast<std::uint32_t>(v)); break;
      case SKEIN_UINT64: put(out, i, static_cast<std::uint64_t>(v)); break;
      case SKEIN_FLOAT16: put(out, i, half_bits(v)); break;
      case SKEIN_BFLOAT16: put(out, i, bfloat16_bits(v)); break;
      case SKEIN_FLOAT32: put(out, i, static_cast<float>(v)); break;
      case SKEIN_FLOAT64: put(out, i, v); break;
      case SKEIN_COMPLEX64: put(out, i, std::complex<float>(float(v), float(w))); break;
      case SKEIN_COMPLEX128: put(out, i, std::complex<double>(v, w)); break;
    }
  }
  return out;
}

// One runtime, queue and communicator made through the C API over MPI_COMM_WORLD.
struct Session {
  skein_runtime* runtime = nullptr;
  skein_queue* queue = nullptr;
  skein_communicator* comm = nullptr;
  int rank = 0, size = 1;
  std::size_t members = 0, local = 0;
};

// The API of each backend present (once per API: the C API chooses an API, not a platform).
std::vector<skein_api> apis();

class CApi : public testing::TestWithParam<skein_api> {
 protected:
  void SetUp() override;
  void TearDown() override;
  // This rank's first member's communicator rank, and local member l's.
  int member(std::size_t l) const;

  Session s;
};

struct ApiName {
  std::string operator()(const testing::TestParamInfo<skein_api>& info) const {
    return info.param == SKEIN_API_CUDA ? "cuda" : "opencl";
  }
};

}  // namespace skein::test::capi
