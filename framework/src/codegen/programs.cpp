// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/programs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "arithmetic.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/occupancy.hpp"

namespace skein::detail::codegen {

const Kernel& CompiledProgram::kernel(std::string_view name) const {
  auto it = kernels.find(name);
  if (it == kernels.end()) {
    raise_in<RuntimeError>(SKEIN_HERE, "skein kernel generator", "This is a bug in Skein.",
                           "the generated program has no kernel '{}'", name);
  }
  return it->second;
}

std::size_t CompiledProgram::resident(std::string_view kernel, std::size_t device_idx) const {
  auto it = resident_groups.find(kernel);
  if (it == resident_groups.end() || device_idx >= it->second.size()) return 1;
  return std::max<std::size_t>(1, it->second[device_idx]);
}

namespace {

struct CacheEntry {
  const void* context = nullptr;
  std::uint64_t owner = 0;
  std::shared_ptr<const CompiledProgram> program;
};

struct ProgramCache {
  std::mutex mutex;
  std::unordered_map<std::string, CacheEntry> entries;
};

ProgramCache& program_cache() {
  // Never destroyed: kernel objects with static storage (the built-ins) drop their entries from
  // their destructors, which may run after a function-local static would be gone.
  static auto* cache = new ProgramCache;
  return *cache;
}

std::atomic<std::uint64_t> next_owner{1};

// Drops the entries of contexts that only the cache still holds (each entry's Program holds one
// reference to its context). Called with the cache locked.
void purge_unused_contexts(ProgramCache& cache,
                           std::vector<std::shared_ptr<const CompiledProgram>>& dropped) {
  std::map<const void*, std::pair<long, long>> refs;  // context -> (entries, use_count)
  for (const auto& [key, e] : cache.entries) {
    auto& r = refs[e.context];
    r.first += 1;
    r.second = detail::impl_of(e.program->program.context()).use_count();
  }
  for (auto it = cache.entries.begin(); it != cache.entries.end();) {
    const auto& r = refs[it->second.context];
    if (r.second <= r.first) {
      dropped.push_back(std::move(it->second.program));
      it = cache.entries.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t resident_groups_on(const Kernel& kernel, const Device& device, std::size_t device_idx,
                               std::size_t local) {
  const auto& p = device.params();
  const std::size_t units = std::max<std::size_t>(1, p.compute_units);
  if (p.max_threads_per_compute_unit > 0 && p.compute_capability) {
    try {
      return units * std::max<std::size_t>(1, occupancy(kernel, device_idx, local).tb_per_mp);
    } catch (const LogicError&) {
      // Fall through to the estimate below.
    }
  }
  if (p.type == DeviceType::gpu) return units * std::max<std::size_t>(1, 1024 / local);
  return units * 4;
}

}  // namespace

std::uint64_t new_cache_owner() { return next_owner.fetch_add(1); }

void drop_cache_owner(std::uint64_t owner) {
  auto& cache = program_cache();
  std::vector<std::shared_ptr<const CompiledProgram>> dropped;  // released after the lock
  std::lock_guard lock(cache.mutex);
  for (auto it = cache.entries.begin(); it != cache.entries.end();) {
    if (it->second.owner == owner) {
      dropped.push_back(std::move(it->second.program));
      it = cache.entries.erase(it);
    } else {
      ++it;
    }
  }
}

void drop_all_cached_programs() {
  auto& cache = program_cache();
  std::unordered_map<std::string, CacheEntry> dropped;  // released after the lock
  std::lock_guard lock(cache.mutex);
  dropped.swap(cache.entries);
}

std::size_t group_size_for(const Context& context) {
  std::size_t size = 256;
  for (const auto& d : context.devices()) {
    size = std::min<std::size_t>(
        size, floor_pow2(std::max<std::size_t>(1, d.params().max_total_local_size)));
  }
  return std::max<std::size_t>(size, 1);
}

std::shared_ptr<const CompiledProgram> cached_program(std::uint64_t owner, const Context& context,
                                                      const std::string& signature,
                                                      const std::function<std::string()>& build,
                                                      const std::vector<std::string>& kernel_names,
                                                      const ProgramOptions& options) {
  auto& cache = program_cache();
  const void* ctx = detail::impl_of(context).get();
  std::string key = fmt::format("{}\x1f{}\x1f", owner, ctx);
  key += signature;
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second.program;
  }
  // Compiled outside the lock: other kernels stay usable meanwhile.
  Program program(context, build(), options);
  auto compiled = std::make_shared<CompiledProgram>(CompiledProgram{program, {}, {}, {}});
  const std::size_t local = group_size_for(context);
  compiled->local_size.assign(context.num_devices(), local);
  for (const auto& n : kernel_names) {
    Kernel k = program.kernel(n);
    auto& resident = compiled->resident_groups[n];
    resident.assign(context.num_devices(), 1);
    for (std::size_t d = 0; d < context.num_devices(); ++d) {
      const std::size_t max_local = k.attributes(d).max_total_local_size;
      if (max_local != 0 && max_local < local) {
        raise_in<RuntimeError>(
            SKEIN_HERE, "skein kernel generator",
            "Simplify the expressions (fewer registers), or report this to Skein's developers.",
            "kernel '{}' can run at most {} work items per group on {}; the generated code "
            "needs {}",
            n, max_local, context.device(d).description(), local);
      }
      resident[d] = resident_groups_on(k, context.device(d), d, local);
    }
    compiled->kernels.emplace(n, std::move(k));
  }
  std::vector<std::shared_ptr<const CompiledProgram>> dropped;  // released after the lock
  std::lock_guard lock(cache.mutex);
  purge_unused_contexts(cache, dropped);
  auto [it, inserted] = cache.entries.emplace(key, CacheEntry{ctx, owner, compiled});
  return it->second.program;
}

}  // namespace skein::detail::codegen
