// SPDX-License-Identifier: BSD-3-Clause
// Linked into skein-heat-killable, a copy of skein-heat made of skein-heat's own object files and
// this one (tests/apps/heat.cmake), for apps.heat.grid.restart: before main runs, it installs the
// kill that SKEIN_TEST_CHECKPOINT_KILL="[RANK@]W:STAGE" asks for (tests/support/
// checkpoint_kill.hpp), so that the app dies in the middle of a checkpoint while neither Skein nor
// skein-heat holds a test hook. A bad value ends the process with status 2 before MPI starts.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint_kill.hpp"

namespace {
namespace heat_checkpoint_kill {

[[maybe_unused]] const bool installed = [] {
  const char* spec = std::getenv("SKEIN_TEST_CHECKPOINT_KILL");
  if (spec == nullptr || *spec == '\0') return false;
  const auto kill = skein::test::parse_checkpoint_kill(spec);
  if (!kill) {
    std::fprintf(stderr,
                 "skein-heat-killable: SKEIN_TEST_CHECKPOINT_KILL='%s' is not [RANK@]W:STAGE\n",
                 spec);
    std::_Exit(2);
  }
  skein::test::install_checkpoint_kill(*kill, "skein-heat-killable");
  return true;
}();

}  // namespace heat_checkpoint_kill
}  // namespace
