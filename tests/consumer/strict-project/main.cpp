// SPDX-License-Identifier: BSD-3-Clause
// The strict consumer: a code built with -Wall -Wextra -Wpedantic -Wshadow -Wconversion
// -Wsign-conversion -Werror against an installed Skein, whose headers it includes as its own
// (not as system headers), using the idioms the documentation shows. It runs them on the first
// available API and compares the results with the host.
//   skein-strict-consumer [SCRATCH_DIR]   (HDF5 files and checkpoints go there; default: the
//                                          current directory)
// Exit status: 0 on success (or when no API is available and none is required), 1 on failure.
#include "idioms.hpp"

#include <skein/skein.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace strict {

void Checker::expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures_;
  std::cerr << "FAIL: " << what << "\n";
}

}  // namespace strict

namespace {

// SKEIN_TEST_EXPECT_APIS (a comma list of API shortcuts, as the test suite sets it) names APIs that
// must be available.
bool required(const std::string& shortcut) {
  const char* env = std::getenv("SKEIN_TEST_EXPECT_APIS");
  if (env == nullptr) return false;
  // Appended piece by piece: GCC 12's -Wrestrict misfires at -O3 on `"," + std::string(...)`
  // (libstdc++'s operator+ of a literal and a temporary, GCC bug 105329).
  std::string list = ",";
  list += env;
  list += ",";
  std::string item = ",";
  item += shortcut;
  item += ",";
  return list.find(item) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string scratch = argc > 1 ? argv[1] : ".";
  const auto apis = skein::Api::all_available();
  if (apis.empty()) {
    if (required("opencl") || required("cuda")) {
      std::cerr << "FAIL: SKEIN_TEST_EXPECT_APIS names an API, but none is available\n";
      return 1;
    }
    std::cout << "no GPGPU API here: nothing to run\n";
    return 0;
  }
  skein::Runtime runtime(&argc, &argv);
  strict::Checker check;
  try {
    strict::check_framework(apis.front(), check);
    strict::check_collectives(runtime, scratch, check);
  } catch (const skein::Error& e) {  // every rank reports its own error, before MPI ends
    std::cerr << "FAIL: rank " << runtime.rank() << ": " << e.what() << "\n";
    return 1;
  }
  if (runtime.rank() == 0) {
    std::cout << "strict consumer on " << skein::name(apis.front().id()) << ", " << runtime.size()
              << " rank(s): " << (check.failures() == 0 ? "ok" : "FAILED") << "\n";
  }
  return check.failures() == 0 ? 0 : 1;
} catch (const skein::Error& e) {  // the Runtime could not start (MPI, devices, environment)
  std::cerr << "FAIL: " << e.what() << "\n";
  return 1;
}
