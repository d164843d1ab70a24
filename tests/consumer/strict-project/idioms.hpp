// SPDX-License-Identifier: BSD-3-Clause
// The strict consumer's checks: each runs documented idioms on the device and compares the results
// with the host. A check returns the number of mismatches it found (0: all good); Skein's errors
// propagate as skein::Error.
#pragma once

#include <skein/skein.hpp>

#include <cstddef>
#include <string>

namespace strict {

// Counts and reports mismatches (on stderr, with the check's name).
class Checker {
 public:
  void expect(bool ok, const std::string& what);
  std::size_t failures() const { return failures_; }

 private:
  std::size_t failures_ = 0;
};

// Framework idioms on one device of `api`: kernels, array kernels and their options, StaticKernel,
// array operations, driver controls, typed errors (framework_idioms.cpp).
void check_framework(const skein::Api& api, Checker& check);

// Collectives idioms over the Runtime's ranks and devices: Communicator, DistArray, GridArray,
// dist:: operations, HDF5 files and checkpoints in `directory` (collectives_idioms.cpp).
void check_collectives(const skein::Runtime& runtime, const std::string& directory, Checker& check);

}  // namespace strict
