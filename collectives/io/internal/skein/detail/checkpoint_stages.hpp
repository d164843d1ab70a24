// SPDX-License-Identifier: BSD-3-Clause
// For tests: an observer of every checkpoint write's stages, on every rank. The kill-and-restart
// tests (tests/collectives/checkpoint_main.cpp) install one that SIGKILLs a chosen rank after a
// chosen stage, a job killed in the middle of a checkpoint on demand; the library itself holds no
// such hook of its own. Not installed (io's internal interface, skein_io_internal).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "skein/checkpoint.hpp"
#include "skein/export.hpp"

namespace skein::detail {

struct CheckpointStageEvent {
  CheckpointStage stage = CheckpointStage::created;
  std::int64_t step = 0;
  int rank = 0;             // in the manager's communicator
  std::string directory{};  // the manager's
};
using CheckpointStageObserver = std::function<void(const CheckpointStageEvent&)>;

// Installs `observer` for every CheckpointManager of this process (an empty one removes it) and
// returns the previous one. It is called on each rank after each stage that rank takes part in
// (created and written on every rank, renamed and marked on rank 0 alone), on the thread calling
// write(), before CheckpointOptions::after_stage; what it throws abandons the write as
// after_stage's does (every rank raises). Thread-safe to install; install it before the writes.
SKEIN_EXPORT CheckpointStageObserver
set_checkpoint_stage_observer(CheckpointStageObserver observer);

}  // namespace skein::detail
