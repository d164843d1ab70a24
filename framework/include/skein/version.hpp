// SPDX-License-Identifier: BSD-3-Clause
// The version of the Skein library a program runs with. <skein/config.hpp> (SKEIN_VERSION_MAJOR,
// SKEIN_VERSION_MINOR, SKEIN_VERSION_PATCH, SKEIN_VERSION_STRING) says which Skein a program was
// compiled against, header_version() the same as numbers; version() and version_numbers() say
// which libskein_framework it loaded, which differs when the program is run against another
// installation than the one it was built with (a module switched, LD_LIBRARY_PATH). A code that
// records its provenance, or refuses a mismatch, compares the two (pygpu's abi_version() and
// api_version()). The C API's skein_version() and skein_version_numbers() (<skein/skein.h>)
// return the same as version() and version_numbers().
#pragma once

#include <compare>

#include "skein/config.hpp"
#include "skein/export.hpp"

namespace skein {

// A Skein version, MAJOR.MINOR.PATCH, ordered as numbers (0.10.0 > 0.9.3).
struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
};

// The library's SKEIN_VERSION_STRING, "MAJOR.MINOR.PATCH" (e.g. "0.1.0"): a string with static
// storage, never null. May be called at any time, before any other Skein call and from any thread.
SKEIN_EXPORT const char* version() noexcept;
// The same as numbers, compiled into the library. Any time, any thread.
SKEIN_EXPORT Version version_numbers() noexcept;
// The version of the headers the calling code was compiled with (SKEIN_VERSION_MAJOR, ...): inline,
// so it is the caller's, not the library's.
constexpr Version header_version() noexcept {
  return {SKEIN_VERSION_MAJOR, SKEIN_VERSION_MINOR, SKEIN_VERSION_PATCH};
}

}  // namespace skein
