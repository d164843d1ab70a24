// SPDX-License-Identifier: BSD-3-Clause
// The kinds of arrays in a checkpoint (checkpoint_arrays.hpp), GridArrays among them.
//
// A GridArray goes into a checkpoint as hdf5::File writes it (hdf5_grid.cpp): one dataset of its
// layout's global shape, each member's block a hyperslab written by its own rank (with MPI-IO
// where HDF5 is parallel, else piece by piece through rank 0); restore() reads it back with
// File::read, each rank the hyperslabs of the target's blocks, whatever its process grid. So what
// is particular to grids here is only the bookkeeping: the marker's kind "grid", the global shape
// (GridLayout::global_shape(), with the components axis), and the check of a target's shape and
// dtype against the marker before the file is opened (a LogicError on every rank, as every rank
// holds the same CheckpointInfo).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <type_traits>
#include <variant>
#include <vector>

#include "checkpoint_arrays.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail {

std::string_view checkpoint_kind(const CheckpointInfo::ArrayEntry& entry) {
  if (entry.grid) return "grid";
  return entry.replicated ? "replicated" : "distributed";
}

CheckpointInfo::ArrayEntry checkpoint_entry_of_kind(std::string_view kind, Dtype dtype,
                                                    Shape shape) {
  CheckpointInfo::ArrayEntry entry;
  entry.dtype = dtype;
  entry.shape = std::move(shape);
  entry.replicated = kind == "replicated";
  entry.grid = kind == "grid";
  return entry;
}

CheckpointInfo::ArrayEntry checkpoint_entry(const CheckpointArray& array) {
  return std::visit(
      [](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        CheckpointInfo::ArrayEntry entry;
        entry.dtype = x.dtype();
        if constexpr (std::is_same_v<X, GridArray>) {
          entry.shape = x.layout().global_shape();
          entry.grid = true;
        } else {
          entry.shape = x.shape();
          entry.replicated = std::is_same_v<X, ReplicatedArray>;
        }
        return entry;
      },
      array);
}

std::string describe_checkpoint_arrays(const CheckpointArrays& arrays) {
  std::vector<std::string> parts;
  for (const auto& [n, a] : arrays) {
    const CheckpointInfo::ArrayEntry entry = checkpoint_entry(a);
    parts.push_back(fmt::format("{}: {} {} {}", n, checkpoint_kind(entry), name(entry.dtype),
                                to_string(entry.shape)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

void check_restore_targets(const CheckpointInfo& checkpoint, const CheckpointArrays& arrays,
                           const std::string& call) {
  std::vector<std::string> names;
  for (const auto& [n, a] : checkpoint.arrays) names.push_back(n);
  for (const auto& [n, a] : arrays) {
    const auto it = checkpoint.arrays.find(n);
    if (it == checkpoint.arrays.end()) {
      raise_in(SKEIN_HERE, call, "Restore only arrays the checkpoint has (CheckpointInfo::arrays).",
               "the checkpoint of step {} ('{}') has no array '{}'; it has: {}", checkpoint.step,
               checkpoint.file.string(), n, fmt::join(names, ", "));
    }
    const CheckpointInfo::ArrayEntry target = checkpoint_entry(a);
    if (target.shape != it->second.shape || target.dtype != it->second.dtype) {
      raise_in(
          SKEIN_HERE, call,
          "Restore into an array of the global shape and dtype it was written with (any layout, "
          "any process grid, any number of ranks).",
          "array '{}' of the checkpoint of step {} ('{}') is {} {} (written as a {} array), the {} "
          "array to restore it into is {} {}",
          n, checkpoint.step, checkpoint.file.string(), name(it->second.dtype),
          to_string(it->second.shape), checkpoint_kind(it->second), checkpoint_kind(target),
          name(target.dtype), to_string(target.shape));
    }
  }
}

}  // namespace skein::detail
