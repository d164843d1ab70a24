// SPDX-License-Identifier: BSD-3-Clause
// The checked-call macro for the OpenCL API: a non-CL_SUCCESS result throws Skein's typed error
// with the call, the error's name and code, the device and the place in Skein's source.
#pragma once

#include <string>

#include "driver.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail::opencl {

const char* error_name(cl_int code);
[[noreturn]] void raise_error(cl_int code, const char* call, std::string device,
                              std::string location);

}  // namespace skein::detail::opencl

#define SKEIN_CL_CHECK(expr, device)                                                    \
  do {                                                                                  \
    const cl_int skein_cl_err_ = (expr);                                                \
    if (skein_cl_err_ != CL_SUCCESS) {                                                  \
      ::skein::detail::opencl::raise_error(skein_cl_err_, #expr, (device), SKEIN_HERE); \
    }                                                                                   \
  } while (0)

// The same for a result kept in a variable (the clCreate* calls return their object and put the
// error in an out parameter): `call` names the call in the message, not the variable.
#define SKEIN_CL_CHECK_RESULT(result, call, device)                                      \
  do {                                                                                   \
    const cl_int skein_cl_err_ = (result);                                               \
    if (skein_cl_err_ != CL_SUCCESS) {                                                   \
      ::skein::detail::opencl::raise_error(skein_cl_err_, (call), (device), SKEIN_HERE); \
    }                                                                                    \
  } while (0)
