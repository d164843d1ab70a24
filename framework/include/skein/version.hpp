// SPDX-License-Identifier: BSD-3-Clause
// The version of the Skein library a program runs with. <skein/config.hpp> (SKEIN_VERSION_MAJOR,
// SKEIN_VERSION_MINOR, SKEIN_VERSION_PATCH, SKEIN_VERSION_STRING) says which Skein a program was
// compiled against; version() says which libskein_framework it loaded, which differs when the
// program is run against another installation than the one it was built with (a module switched,
// LD_LIBRARY_PATH). A code that records its provenance, or refuses a mismatch, compares the two.
// The C API's skein_version() (<skein/skein.h>) returns the same string.
#pragma once

#include "skein/export.hpp"

namespace skein {

// The library's SKEIN_VERSION_STRING, "MAJOR.MINOR.PATCH" (e.g. "0.1.0"): a string with static
// storage, never null. May be called at any time, before any other Skein call and from any thread.
SKEIN_EXPORT const char* version() noexcept;

}  // namespace skein
