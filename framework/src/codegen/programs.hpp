// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): the generated programs kept in memory per
// (owner, context, signature), and the work-group size they are written for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skein/context.hpp"
#include "skein/program.hpp"

namespace skein::detail::codegen {

struct CompiledProgram {
  Program program;
  std::map<std::string, Kernel, std::less<>> kernels;
  // Per device of the context: the work-group size the sources were written for, and how many
  // such groups of each kernel are resident on the whole device at once.
  std::vector<std::size_t> local_size;
  std::map<std::string, std::vector<std::size_t>, std::less<>> resident_groups;

  const Kernel& kernel(std::string_view name) const;
  std::size_t resident(std::string_view kernel, std::size_t device_idx) const;
};

// A unique id for an object that owns cache entries.
std::uint64_t new_cache_owner();
// The entries of an owner are dropped when it goes.
void drop_cache_owner(std::uint64_t owner);
// Drops every entry (clear_context_caches): the next use of each generated kernel builds its
// program again.
void drop_all_cached_programs();
// The program for (owner, context, signature); `build` renders the source (only on a miss).
// Entries whose context nobody else holds any more are dropped on the way (the cache keeps
// contexts alive only while they are used elsewhere).
std::shared_ptr<const CompiledProgram> cached_program(std::uint64_t owner, const Context& context,
                                                      const std::string& signature,
                                                      const std::function<std::string()>& build,
                                                      const std::vector<std::string>& kernel_names,
                                                      const ProgramOptions& options);

// The work-group size generated kernels are written for on the context's devices: a power of
// two, at most 256 and at most what every device allows.
std::size_t group_size_for(const Context& context);

// The key of a built-in kernel (the built-in elementwise and reduction operations): the operation
// (tag) and its dtypes and enums, packed a byte each (plus one) above the tag's byte, so that no
// string is made per call.
template <class... E>
std::uint64_t builtin_key(std::uint64_t tag, E... parts) {
  std::uint64_t key = tag;
  unsigned shift = 8;
  ((key |= (static_cast<std::uint64_t>(parts) + 1) << shift, shift += 8), ...);
  return key;
}

// A built-in kernel (an ElementwiseKernel or a ReductionKernel) by its builtin_key, made by
// `make` on first use and kept for the program's life. The kernels are never destroyed, so each
// thread remembers its last one: a loop calling one built-in skips the lock and the lookup.
template <class Kernel, class Make>
const Kernel& builtin_kernel(std::uint64_t key, Make&& make) {
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<std::uint64_t, std::unique_ptr<Kernel>>;
  thread_local const Kernel* last = nullptr;
  thread_local std::uint64_t last_key = 0;
  if (last != nullptr && last_key == key) return *last;
  std::lock_guard lock(mutex);
  auto& slot = (*kernels)[key];
  if (!slot) slot = std::make_unique<Kernel>(make());
  last = slot.get();
  last_key = key;
  return *slot;
}

}  // namespace skein::detail::codegen
