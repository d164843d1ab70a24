// SPDX-License-Identifier: BSD-3-Clause
// A rank killed in the middle of a checkpoint, on demand, for the kill-and-restart tests:
// "[RANK@]W:STAGE" makes rank RANK (0 by default) SIGKILL itself after stage STAGE (created,
// written, renamed, marked: see CheckpointStage; the last two happen on rank 0 alone) of its W-th
// checkpoint write. It is installed as io's observer of the stages (skein/detail/
// checkpoint_stages.hpp, not installed), so that neither Skein nor the apps hold a test hook:
// skein-checkpoint-loop takes it as --kill (checkpoint_main.cpp), skein-heat-killable from
// SKEIN_TEST_CHECKPOINT_KILL (tests/apps/heat_checkpoint_kill.cpp).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <skein/checkpoint.hpp>
#include <string>

#include "skein/detail/checkpoint_stages.hpp"

namespace skein::test {

struct CheckpointKill {
  int rank = 0;
  std::uint64_t write = 0;  // from 1
  CheckpointStage stage = CheckpointStage::created;
};

// "[RANK@]W:STAGE", or nullopt when it is not that.
inline std::optional<CheckpointKill> parse_checkpoint_kill(const std::string& whole) {
  CheckpointKill k;
  std::string v = whole;
  if (const auto at = whole.find('@'); at != std::string::npos) {
    char* end = nullptr;
    const long r = std::strtol(whole.c_str(), &end, 10);
    if (at == 0 || end != whole.c_str() + at || r < 0 || r >= INT_MAX) return std::nullopt;
    k.rank = static_cast<int>(r);
    v = whole.substr(at + 1);
  }
  const auto colon = v.find(':');
  if (colon == std::string::npos) return std::nullopt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (n == 0 || end != v.c_str() + colon) return std::nullopt;
  k.write = n;
  using S = CheckpointStage;
  for (auto s : {S::created, S::written, S::renamed, S::marked}) {
    if (v.substr(colon + 1) == name(s)) {
      k.stage = s;
      return k;
    }
  }
  return std::nullopt;
}

// Installs the kill as the process's observer of every rank's stages: the W-th write is the W-th
// `created` this rank sees (every rank takes part in that stage of every write). Says on stderr,
// as `program`, which rank it kills and when, before it does.
inline void install_checkpoint_kill(const CheckpointKill& kill, const char* program) {
  auto writes = std::make_shared<std::uint64_t>(0);
  detail::set_checkpoint_stage_observer(
      [kill, writes, program](const detail::CheckpointStageEvent& e) {
        if (e.stage == CheckpointStage::created) ++*writes;
        if (e.rank != kill.rank || *writes != kill.write || e.stage != kill.stage) return;
        std::fprintf(
            stderr,
            "%s: killing rank %d after stage '%s' of checkpoint write %llu (step %lld) in '%s'\n",
            program, e.rank, std::string(name(e.stage)).c_str(),
            static_cast<unsigned long long>(*writes), static_cast<long long>(e.step),
            e.directory.c_str());
        std::fflush(stdout);
        std::fflush(stderr);
        ::kill(::getpid(), SIGKILL);
      });
}

}  // namespace skein::test
