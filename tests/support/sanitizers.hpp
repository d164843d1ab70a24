// SPDX-License-Identifier: BSD-3-Clause
// Whether this test program runs under the sanitizers (the asan preset, CI's sanitizer phase:
// tests/CMakeLists.txt defines SKEIN_TEST_UNDER_SANITIZERS for the test programs of a build with
// SKEIN_SANITIZE). There a test may leave out cases that only repeat, with another dtype, a code
// path of Skein's that its other cases already take: the sanitizers check what the code does to
// memory, which a repetition over more bytes of another dtype does not change, and each such case
// costs AddressSanitizer's checks on megabytes of host data. The release build runs them all.
// (The byte and array round trips of buffer_test.cpp and array_test.cpp: framework.pocl4 under
// the sanitizers 30 -> 25 CPU-s and 30-35 -> 25 s here. The few-MiB cases of the DistOps tests
// for their second and third dtypes were tried too: no difference beyond the run-to-run noise of
// collectives.np1 and np2, so they stay.)
#pragma once

namespace skein::test {

#ifdef SKEIN_TEST_UNDER_SANITIZERS
inline constexpr bool kUnderSanitizers = true;
#else
inline constexpr bool kUnderSanitizers = false;
#endif

}  // namespace skein::test
