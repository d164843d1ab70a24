// SPDX-License-Identifier: BSD-3-Clause
// The C API's errors: every entry point runs its body through guard(), which turns any C++
// exception into a skein_status and this thread's message, so that nothing throws across the C
// boundary.
#pragma once

#include <stdexcept>
#include <string>

#include "skein/skein.h"

namespace skein::capi {

// What this build of Skein lacks (MPI, HDF5): SKEIN_ERROR_UNSUPPORTED.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void unsupported(const char* function, const std::string& lacks);
// UNSUPPORTED unless this build has HDF5 and MPI (the io layer needs both): files, checkpoints.
void need_hdf5(const char* function);

// Inside a catch block: records the exception in flight as this thread's last error, its message
// prefixed with the C function's name, and returns its status.
skein_status fail(const char* function) noexcept;

// Runs `body` (a callable of no arguments) as the C function `function`: SKEIN_SUCCESS, or the
// status of the exception it threw.
template <class Body>
skein_status guard(const char* function, Body&& body) noexcept {
  try {
    body();
    return SKEIN_SUCCESS;
  } catch (...) {
    return fail(function);
  }
}

}  // namespace skein::capi
