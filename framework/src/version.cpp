// SPDX-License-Identifier: BSD-3-Clause
// skein::version() and version_numbers() (<skein/version.hpp>): the version this library was
// built as, compiled in here from the generated <skein/config.h>, so that it is the library's and
// not the caller's headers'.
#include "skein/version.hpp"

#include "skein/config.h"

namespace skein {

const char* version() noexcept { return SKEIN_VERSION_STRING; }

Version version_numbers() noexcept {
  return {SKEIN_VERSION_MAJOR, SKEIN_VERSION_MINOR, SKEIN_VERSION_PATCH};
}

}  // namespace skein
