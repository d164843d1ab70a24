// SPDX-License-Identifier: BSD-3-Clause
// The C API's errors: each kind of bad input gives its status and a message naming the C
// function and the reason, nothing throws across the boundary (every call here runs inside a
// noexcept function: an escaping exception would end the process), and the objects still work
// after a failed call.
#include <string>
#include <vector>

#include "capi_grid_support.hpp"

namespace {
namespace capi_errors_test {

using namespace skein::test::capi;

class CApiErrors : public CApi {};

// The last error's message names the function and contains `reason`.
void expect_message(const char* function, const std::string& reason) {
  const std::string message = skein_last_error_message();
  EXPECT_EQ(message.rfind(std::string(function) + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(reason), std::string::npos) << message;
}

TEST_P(CApiErrors, StatusesNamesAndVersion) {
  EXPECT_STREQ(skein_version(), SKEIN_VERSION_STRING);
  int major = -1, minor = -1, patch = -1;
  skein_version_numbers(&major, &minor, &patch);
  EXPECT_EQ(major, SKEIN_VERSION_MAJOR);
  EXPECT_EQ(minor, SKEIN_VERSION_MINOR);
  EXPECT_EQ(patch, SKEIN_VERSION_PATCH);
  EXPECT_EQ(skein_has_mpi(), 1);
  EXPECT_STREQ(skein_status_name(SKEIN_ERROR_TIMEOUT), "SKEIN_ERROR_TIMEOUT");
  EXPECT_STREQ(skein_status_name(static_cast<skein_status>(42)), "unknown status");
  EXPECT_EQ(skein_dtype_size(SKEIN_BFLOAT16), 2u);
  EXPECT_EQ(skein_dtype_size(static_cast<skein_dtype>(77)), 0u);
  EXPECT_STREQ(skein_dtype_name(SKEIN_COMPLEX64), "complex64");
  EXPECT_STREQ(skein_dtype_name(static_cast<skein_dtype>(-1)), "unknown dtype");
  skein_clear_error();
  EXPECT_STREQ(skein_last_error_message(), "");
  EXPECT_EQ(skein_last_error_status(), SKEIN_SUCCESS);
}

TEST_P(CApiErrors, BadInputThenTheObjectsStillWork) {
  const std::size_t shape[2] = {2, 3};
  skein_array* a = nullptr;
  // NULL handle and out-pointer.
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_queue_synchronize(nullptr));
  expect_message("skein_queue_synchronize", "queue is NULL");
  EXPECT_EQ(skein_last_error_status(), SKEIN_ERROR_INVALID_ARGUMENT);
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_array_create(s.queue, 0, SKEIN_FLOAT32, 2, shape, SKEIN_ORDER_C, nullptr));
  expect_message("skein_array_create", "array is NULL");
  // An enumeration out of range, a bad order, too many axes, a bad device.
  CAPI_STATUS(
      SKEIN_ERROR_INVALID_ARGUMENT,
      skein_array_create(s.queue, 0, static_cast<skein_dtype>(77), 2, shape, SKEIN_ORDER_C, &a));
  expect_message("skein_array_create", "dtype is 77");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_array_create(s.queue, 0, SKEIN_FLOAT32, 2, shape,
                                                               static_cast<skein_order>(5), &a));
  expect_message("skein_array_create", "order is 5");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_array_create(s.queue, 0, SKEIN_FLOAT32, 9, shape, SKEIN_ORDER_C, &a));
  expect_message("skein_array_create", "ndim is 9");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_array_create(s.queue, 99, SKEIN_FLOAT32, 2, shape, SKEIN_ORDER_C, &a));
  expect_message("skein_array_create", "device 99");
  EXPECT_EQ(a, nullptr);
  // A wrong size; then the right one on the same array works.
  CAPI_OK(skein_array_create(s.queue, 0, SKEIN_FLOAT32, 2, shape, SKEIN_ORDER_FORTRAN, &a));
  float host[6] = {1, 2, 3, 4, 5, 6}, back[6] = {};
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_array_from_host(a, host, 20));
  expect_message("skein_array_from_host", "nbytes 20");
  CAPI_OK(skein_array_from_host(a, host, sizeof host));
  CAPI_OK(skein_array_to_host(a, back, sizeof back));
  EXPECT_EQ(std::vector<float>(back, back + 6), std::vector<float>(host, host + 6));
  std::size_t c_shape[2] = {};
  CAPI_OK(skein_array_shape(a, SKEIN_ORDER_C, c_shape));
  EXPECT_EQ(c_shape[0], 3u);  // the Fortran shape {2, 3} is {3, 2} in C order
  EXPECT_EQ(c_shape[1], 2u);
  CAPI_OK(skein_array_destroy(a));

  // Collectives: a count other than the local members, a bad root, a bad op.
  std::vector<skein_array*> arrays(s.local, nullptr);
  const std::size_t n = 4;
  for (std::size_t l = 0; l < s.local; ++l) {
    CAPI_OK(skein_array_create(s.queue, l, SKEIN_INT32, 1, &n, SKEIN_ORDER_C, &arrays[l]));
    CAPI_OK(skein_array_fill(arrays[l], 1.0));
  }
  CAPI_STATUS(
      SKEIN_ERROR_INVALID_ARGUMENT,
      skein_all_reduce(s.comm, s.queue, arrays.data(), arrays.data(), s.local + 1, SKEIN_SUM));
  expect_message("skein_all_reduce", "count is");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_broadcast(s.comm, s.queue, arrays.data(), s.local,
                                                            static_cast<int>(s.members)));
  expect_message("skein_broadcast", "root is");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_all_reduce(s.comm, s.queue, arrays.data(), arrays.data(), s.local,
                               static_cast<skein_reduce_op>(9)));
  expect_message("skein_all_reduce", "op is 9");
  CAPI_OK(skein_all_reduce(s.comm, s.queue, arrays.data(), arrays.data(), s.local, SKEIN_SUM));
  for (auto* x : arrays) {
    int v[4] = {};
    CAPI_OK(skein_array_to_host(x, v, sizeof v));
    EXPECT_EQ(v[3], static_cast<int>(s.members));
    CAPI_OK(skein_array_destroy(x));
  }
}

TEST_P(CApiErrors, GridAndKernelErrors) {
  const std::size_t shape[2] = {6, 4};
  skein_grid* g = nullptr;
  // A process grid that does not multiply to the members: the C++ layer's LogicError, reported.
  skein_grid_options o;
  skein_grid_options_init(&o);
  const std::size_t bad_grid[2] = {s.members + 1, 1};
  o.process_grid = bad_grid;
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_grid_create(s.comm, s.queue, 2, shape, SKEIN_FLOAT64, &o, &g));
  expect_message("skein_grid_create", "grid");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_grid_create(s.comm, s.queue, 4, shape, SKEIN_FLOAT64, nullptr, &g));
  expect_message("skein_grid_create", "ndim is 4");
  ASSERT_NO_FATAL_FAILURE(make_grid(s, GridSpec{.shape = {6, 4}}, &g));
  std::size_t offset[2];
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_grid_local_block(g, s.local, SKEIN_ORDER_C, offset, nullptr));
  expect_message("skein_grid_local_block", "local is");
  double value = 0;
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_grid_local_to_host(g, 0, &value, 3));
  expect_message("skein_grid_local_to_host", "nbytes is 3");

  // Kernel source that does not compile: COMPILE with the compiler's log; then a correct kernel
  // on the same grid works.
  skein_kernel* broken = nullptr;
  CAPI_OK(skein_kernel_create_elementwise("T y", "y[i] = y[i] +* ;", "broken", &broken));
  const skein_operand arg{.kind = SKEIN_OPERAND_GRID, .grid = g, .real_value = 0, .int_value = 0};
  CAPI_STATUS(SKEIN_ERROR_COMPILE, skein_grid_elementwise(broken, &arg, 1));
  expect_message("skein_grid_elementwise", "broken");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_grid_elementwise(broken, &arg, 2));
  expect_message("skein_grid_elementwise", "count is 2");
  skein_operand bad_kind = arg;
  bad_kind.kind = static_cast<skein_operand_kind>(12);
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_grid_elementwise(broken, &bad_kind, 1));
  expect_message("skein_grid_elementwise", "kind is 12");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_grid_stencil(broken, &arg, 1, SKEIN_REGION_ALL));
  expect_message("skein_grid_stencil", "elementwise kernel");
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT,
              skein_kernel_create_elementwise("T y", "y[i] == 1", nullptr, &broken));
  expect_message("skein_kernel_create_elementwise", "assigns none");
  CAPI_OK(skein_kernel_destroy(broken));

  skein_kernel* twice = nullptr;
  CAPI_OK(skein_kernel_create_elementwise("T y", "y[i] = 2 * y[i]", nullptr, &twice));
  CAPI_OK(skein_grid_fill(g, 1.5));
  CAPI_OK(skein_grid_elementwise(twice, &arg, 1));
  double sum = 0;
  CAPI_OK(skein_grid_sum(g, &sum));
  EXPECT_EQ(sum, 3.0 * 24);
  CAPI_OK(skein_kernel_destroy(twice));
  CAPI_OK(skein_grid_destroy(g));
}

INSTANTIATE_TEST_SUITE_P(Apis, CApiErrors, testing::ValuesIn(apis()), ApiName());

}  // namespace capi_errors_test
}  // namespace
