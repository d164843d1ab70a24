// SPDX-License-Identifier: BSD-3-Clause
// Whether this test program runs under the sanitizers (the asan preset, CI's sanitizer phase:
// tests/CMakeLists.txt defines SKEIN_TEST_UNDER_SANITIZERS for the test programs of a build with
// SKEIN_SANITIZE). There a test may leave out cases that only repeat, with another dtype, a code
// path of Skein's that its other cases already take: the sanitizers check what the code does to
// memory, which a repetition over more bytes of another dtype does not change, and each such case
// costs several seconds of AddressSanitizer's checks on host data. The release build runs them all.
#pragma once

namespace skein::test {

#ifdef SKEIN_TEST_UNDER_SANITIZERS
inline constexpr bool kUnderSanitizers = true;
#else
inline constexpr bool kUnderSanitizers = false;
#endif

}  // namespace skein::test
