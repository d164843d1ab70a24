// SPDX-License-Identifier: BSD-3-Clause
// What CheckpointManager needs to know about each kind of array it checkpoints (DistArray,
// ReplicatedArray, GridArray): its entry in the marker, its description in the ranks' agreement,
// and the checks of restore()'s targets against the checkpoint (checkpoint_grid.cpp).
#pragma once

#include <string>
#include <string_view>

#include "skein/checkpoint.hpp"

namespace skein::detail {

// The marker's "kind" of an entry: "distributed", "replicated" or "grid"; and back.
std::string_view checkpoint_kind(const CheckpointInfo::ArrayEntry& entry);
CheckpointInfo::ArrayEntry checkpoint_entry_of_kind(std::string_view kind, Dtype dtype,
                                                    Shape shape);

// The entry an array gets in the marker: dtype, global shape, kind.
CheckpointInfo::ArrayEntry checkpoint_entry(const CheckpointArray& array);

// "name: kind dtype shape; ..." of every array (for the ranks' agreement on a call).
std::string describe_checkpoint_arrays(const CheckpointArrays& arrays);

// Not collective, the same verdict on every rank (the checkpoint's info is): every target is in
// the checkpoint with the global shape and dtype it was written with, else LogicError naming both.
// (Any kind of array may take any kind's data: each is one global dataset.)
void check_restore_targets(const CheckpointInfo& checkpoint, const CheckpointArrays& arrays,
                           const std::string& call);

}  // namespace skein::detail
