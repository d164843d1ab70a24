// SPDX-License-Identifier: BSD-3-Clause
#include "skein/virtual_alloc.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/relocatable.hpp"

namespace skein {

// How virtual buffers are recognised: a virtual buffer's Buffer points at its real allocation's
// backend object, but shares ownership of a VirtualBlock (shared_ptr's aliasing constructor), as
// do its copies, sub-regions and the arrays over it. So the ownership identity of a buffer's
// adapter (owner_before, not the pointer) names the virtual buffer, and a buffer that is not
// virtual has an identity the manager does not know.

VirtualDependencies& VirtualDependencies::add(const Buffer& buffer) {
  if (buffer.adapter()) ids_.emplace_back(buffer.adapter());
  return *this;
}

VirtualDependencies& VirtualDependencies::add(const VirtualDependencies& other) {
  ids_.insert(ids_.end(), other.ids_.begin(), other.ids_.end());
  return *this;
}

struct VirtualManager::State : std::enable_shared_from_this<VirtualManager::State> {
  using Id = std::uint64_t;

  struct Virtual {
    std::size_t device_idx;
    std::size_t size;
    Id real;
    // Virtual buffers this one must not share memory with (kept symmetric).
    std::set<Id> dependencies;
    std::weak_ptr<const void> owner;
  };
  struct Real {
    Buffer buffer;  // what the real allocator returned
    std::size_t device_idx;
    std::size_t size;
    std::set<Id> virtuals;
    // What the virtual buffers in it hold: an adapter of the backend's kind standing for the first
    // `size` bytes of `buffer`, which pack() points at a new buffer (skein/detail/relocatable.hpp).
    std::shared_ptr<detail::BufferAdapter> slot;
  };

  State(Queue queue, Allocator real_allocator, bool share, const char* name, VirtualPacking packing)
      : queue(std::move(queue)),
        real_allocator(std::move(real_allocator)),
        share(share),
        name(name),
        packing(packing) {}

  // The live virtual buffers among `deps` (under the lock).
  std::set<Id> resolve(const VirtualDependencies& deps) const;
  // A real allocation that can take a new virtual buffer (under the lock).
  std::optional<Id> find_real(std::size_t device_idx, std::size_t nbytes,
                              const std::set<Id>& deps) const;
  Buffer make_real(std::size_t device_idx, std::size_t nbytes) const;
  // Called when the last handle of a virtual buffer is gone. Never throws.
  void free(Id id) noexcept;

  // --- packing (pack(), pack_on_alloc, pack_on_free) ---
  // The largest size of the virtual buffers in a real allocation (under the lock).
  std::size_t needed(const Real& real) const;
  // pack_on_alloc: the largest real allocation of the device smaller than `nbytes` that holds none
  // of `deps`, which the new buffer can join once it is grown (under the lock).
  std::optional<Id> growable(std::size_t device_idx, std::size_t nbytes,
                             const std::set<Id>& deps) const;
  // Moves real allocation `id` to `fresh` (at least `size` bytes), keeping the first
  // min(old size, size) bytes: a copy enqueued on the queue, then the slot points at `fresh`. The
  // old buffer goes to `retired`, to be dropped once the queue has done the copy (under the lock).
  void move_real(Id id, Buffer fresh, std::size_t size, std::vector<Buffer>& retired);
  // Shrinks real allocation `id` to its largest virtual buffer (pack_on_free). Never throws.
  void shrink_after_free(Id id) noexcept;

  const Queue queue;
  const Allocator real_allocator;
  const bool share;  // ZeroOffsetManager: virtual buffers may share real allocations
  const char* const name;
  const VirtualPacking packing;

  std::mutex mutex;
  Id next_id = 0;
  std::map<Id, Virtual> virtuals;
  std::map<Id, Real> reals;
  // (device, size, id): the smallest fitting real allocation first, the oldest of equal sizes.
  std::set<std::tuple<std::size_t, std::size_t, Id>> reals_by_size;
  std::map<std::weak_ptr<const void>, Id, std::owner_less<>> ids;
};

namespace {

struct VirtualBlock {
  std::shared_ptr<VirtualManager::State> manager;
  VirtualManager::State::Id id;
  std::shared_ptr<detail::BufferAdapter> slot;  // its real allocation's, set once registered

  VirtualBlock(std::shared_ptr<VirtualManager::State> manager, VirtualManager::State::Id id)
      : manager(std::move(manager)), id(id) {}
  VirtualBlock(const VirtualBlock&) = delete;
  VirtualBlock& operator=(const VirtualBlock&) = delete;
  ~VirtualBlock() { manager->free(id); }
};

std::shared_ptr<detail::BufferAdapter> relocatable(const Buffer& region) {
  const ApiId api = region.context().api().id();
#if SKEIN_HAS_CUDA
  if (api == ApiId::cuda) return detail::cuda_relocatable(region);
#endif
#if SKEIN_HAS_OPENCL
  if (api == ApiId::opencl) return detail::opencl_relocatable(region);
#endif
  detail::raise_in<RuntimeError>(SKEIN_HERE, "virtual allocation", "This is a bug in Skein.",
                                 "no backend for {}", name(api));
}

void relocate(detail::BufferAdapter& slot, const Buffer& region) {
  const ApiId api = region.context().api().id();
#if SKEIN_HAS_CUDA
  if (api == ApiId::cuda) return detail::cuda_relocate(slot, region);
#endif
#if SKEIN_HAS_OPENCL
  if (api == ApiId::opencl) return detail::opencl_relocate(slot, region);
#endif
  (void)slot;
}

}  // namespace

std::set<VirtualManager::State::Id> VirtualManager::State::resolve(
    const VirtualDependencies& deps) const {
  std::set<Id> result;
  for (const auto& owner : deps.ids_) {
    if (auto it = ids.find(owner); it != ids.end()) result.insert(it->second);
  }
  return result;
}

std::optional<VirtualManager::State::Id> VirtualManager::State::find_real(
    std::size_t device_idx, std::size_t nbytes, const std::set<Id>& deps) const {
  if (!share) return std::nullopt;
  for (auto it = reals_by_size.lower_bound({device_idx, nbytes, 0});
       it != reals_by_size.end() && std::get<0>(*it) == device_idx; ++it) {
    const Real& real = reals.at(std::get<2>(*it));
    bool disjoint = true;
    for (Id v : real.virtuals) {
      if (deps.count(v)) {
        disjoint = false;
        break;
      }
    }
    if (disjoint) return std::get<2>(*it);
  }
  return std::nullopt;
}

Buffer VirtualManager::State::make_real(std::size_t device_idx, std::size_t nbytes) const {
  const Context& context = queue.context();
  Buffer real = real_allocator ? real_allocator(device_idx, nbytes)
                               : Buffer::allocate(context, device_idx, nbytes);
  if (real.size() < nbytes || real.device_idx() != device_idx ||
      (real.context_id() != detail::impl_of(context).get())) {
    detail::raise_in(
        SKEIN_HERE, std::string(name) + "::allocate",
        "The real allocator must return a buffer of the queue's context, on the "
        "requested device, of at least the requested size.",
        "the real allocator returned {} bytes on device {}{} for a request of {} "
        "bytes on device {}",
        real.size(), real.device_idx(),
        real.context_id() == detail::impl_of(context).get() ? "" : " of another context", nbytes,
        device_idx);
  }
  return real;
}

void VirtualManager::State::free(Id id) noexcept {
  Buffer to_free;  // a real allocation nobody uses any more; freed after the lock is released
  std::optional<Id> shrink;
  {
    std::lock_guard lock(mutex);
    auto it = virtuals.find(id);
    if (it == virtuals.end()) return;  // never registered (its allocation failed half-way)
    for (Id dep : it->second.dependencies) {
      if (auto d = virtuals.find(dep); d != virtuals.end()) d->second.dependencies.erase(id);
    }
    if (auto r = reals.find(it->second.real); r != reals.end()) {
      r->second.virtuals.erase(id);
      if (r->second.virtuals.empty()) {
        reals_by_size.erase({r->second.device_idx, r->second.size, r->first});
        to_free = std::move(r->second.buffer);
        // Memory handed to the application through the virtual buffers (native_pointer,
        // DLPack): the real allocation's pool must not hand it out again either.
        if (r->second.slot && r->second.slot->exported() && to_free.adapter()) {
          to_free.adapter()->mark_exported();
        }
        reals.erase(r);
      } else if (packing.pack_on_free) {
        shrink = r->first;
      }
    }
    ids.erase(it->second.owner);
    virtuals.erase(it);
  }
  if (shrink) shrink_after_free(*shrink);
}

std::size_t VirtualManager::State::needed(const Real& real) const {
  std::size_t need = 0;
  for (Id v : real.virtuals) need = std::max(need, virtuals.at(v).size);
  return need;
}

std::optional<VirtualManager::State::Id> VirtualManager::State::growable(
    std::size_t device_idx, std::size_t nbytes, const std::set<Id>& deps) const {
  if (!share) return std::nullopt;
  // Smaller than nbytes (find_real found none at least as large): the largest first.
  auto end = reals_by_size.lower_bound({device_idx, nbytes, 0});
  for (auto it = std::make_reverse_iterator(end); it != reals_by_size.rend(); ++it) {
    if (std::get<0>(*it) != device_idx) break;
    const Real& real = reals.at(std::get<2>(*it));
    if (real.slot->exported()) continue;  // the application holds its address: it stays
    bool disjoint = std::none_of(real.virtuals.begin(), real.virtuals.end(),
                                 [&](Id v) { return deps.count(v) != 0; });
    if (disjoint) return std::get<2>(*it);
  }
  return std::nullopt;
}

void VirtualManager::State::move_real(Id id, Buffer fresh, std::size_t size,
                                      std::vector<Buffer>& retired) {
  Real& real = reals.at(id);
  const std::size_t keep = std::min(real.size, size);
  Buffer target = fresh.get_sub_region(0, size);
  if (keep > 0) {
    // Enqueued after the work that used the old memory, before any that will use the new.
    target.get_sub_region(0, keep).set(queue, real.buffer.get_sub_region(0, keep), Sync::async);
  }
  relocate(*real.slot, target);
  reals_by_size.erase({real.device_idx, real.size, id});
  real.size = size;
  reals_by_size.emplace(real.device_idx, size, id);
  retired.push_back(std::exchange(real.buffer, std::move(fresh)));
}

void VirtualManager::State::shrink_after_free(Id id) noexcept {
  try {
    std::size_t device_idx = 0, need = 0;
    {
      std::lock_guard lock(mutex);
      auto r = reals.find(id);
      if (r == reals.end() || r->second.slot->exported()) return;
      need = needed(r->second);
      if (need >= r->second.size) return;
      device_idx = r->second.device_idx;
    }
    Buffer fresh = make_real(device_idx, need);
    std::vector<Buffer> retired;
    {
      std::lock_guard lock(mutex);
      auto r = reals.find(id);
      if (r == reals.end() || needed(r->second) != need) return;  // changed meanwhile: stays
      move_real(id, std::move(fresh), need, retired);
    }
    queue.synchronize();  // the copies are done: the old memory may go
  } catch (const std::exception& e) {
    detail::log(LogLevel::error, LogScope::rank,
                "{}: pack_on_free could not shrink a real allocation (it stays as it was): {}",
                name, e.what());
  } catch (...) {
    detail::log(LogLevel::error, LogScope::rank,
                "{}: pack_on_free could not shrink a real allocation (it stays as it was)", name);
  }
}

const Queue& VirtualManager::queue() const { return state_->queue; }

Buffer VirtualManager::allocate(std::size_t device_idx, std::size_t nbytes,
                                const VirtualDependencies& dependencies) const {
  State& s = *state_;
  const std::string call = std::string(s.name) + "::allocate";
  if (!s.queue.has_device(device_idx)) {
    detail::check_device_idx(s.queue.context(), device_idx, call.c_str());
    detail::raise_in(SKEIN_HERE, call,
                     "Allocate on a device of the manager's queue, or make the manager with a "
                     "queue over this device.",
                     "device {} is not in the manager's queue (its devices: {})", device_idx,
                     fmt::join(s.queue.device_idxs(), ", "));
  }

  // Declared before the lock so that, should registration throw, the lock is released before the
  // block's destructor takes it to undo what was registered.
  std::shared_ptr<VirtualBlock> block;
  Buffer new_real;
  std::shared_ptr<detail::BufferAdapter> new_slot;
  std::vector<Buffer> retired;  // pack_on_alloc: a grown allocation's old memory
  bool fresh = false;
  std::unique_lock lock(s.mutex);
  std::set<State::Id> deps = s.resolve(dependencies);
  std::optional<State::Id> real_id = s.find_real(device_idx, nbytes, deps);
  if (!real_id) {
    // pack_on_alloc: rather than a new allocation beside a smaller one that could hold the new
    // buffer, that one grows (its contents kept).
    const std::optional<State::Id> grow =
        s.packing.pack_on_alloc ? s.growable(device_idx, nbytes, deps) : std::nullopt;
    // Allocated outside the lock: it may take long, and may free pooled memory. A fresh real
    // allocation holds nothing, so it suits the new buffer whatever happened meanwhile; only the
    // dependencies freed meanwhile are dropped.
    lock.unlock();
    new_real = s.make_real(device_idx, nbytes);
    lock.lock();
    deps = s.resolve(dependencies);
    auto r = grow ? s.reals.find(*grow) : s.reals.end();
    if (r != s.reals.end() && r->second.size < nbytes &&
        std::none_of(r->second.virtuals.begin(), r->second.virtuals.end(),
                     [&](State::Id v) { return deps.count(v) != 0; })) {
      s.move_real(*grow, std::move(new_real), nbytes, retired);
      real_id = grow;
    } else {
      new_slot = relocatable(new_real.get_sub_region(0, nbytes));
      fresh = true;
    }
  }

  const State::Id id = s.next_id++;
  block = std::make_shared<VirtualBlock>(state_, id);
  if (!real_id) real_id = s.next_id++;
  s.virtuals.emplace(id, State::Virtual{device_idx, nbytes, *real_id, deps, block});
  if (fresh) {
    // `fresh` is set only where new_real was not moved into a grown allocation.
    s.reals.emplace(*real_id, State::Real{std::move(new_real),  // NOLINT(bugprone-use-after-move)
                                          device_idx,
                                          nbytes,
                                          {},
                                          std::move(new_slot)});
    s.reals_by_size.emplace(device_idx, nbytes, *real_id);
  }
  State::Real& real = s.reals.at(*real_id);
  real.virtuals.insert(id);
  for (State::Id dep : deps) s.virtuals.at(dep).dependencies.insert(id);
  s.ids.emplace(std::weak_ptr<const void>(block), id);
  block->slot = real.slot;

  std::shared_ptr<detail::BufferAdapter> adapter(block, real.slot.get());
  Buffer result(s.queue.context(), std::move(adapter), device_idx, 0, nbytes);
  lock.unlock();
  if (!retired.empty()) s.queue.synchronize();  // the grown allocation's copy is done
  return result;
}

void VirtualManager::pack() const {
  State& s = *state_;
  // Each real allocation larger than its largest virtual buffer moves to one of that size. The
  // allocations are made outside the lock; one whose buffers changed meanwhile is left alone.
  std::vector<std::tuple<State::Id, std::size_t, std::size_t>> plan;  // id, device, size
  {
    std::lock_guard lock(s.mutex);
    for (const auto& [id, real] : s.reals) {
      const std::size_t need = s.needed(real);
      if (need < real.size && !real.slot->exported()) plan.emplace_back(id, real.device_idx, need);
    }
  }
  std::vector<Buffer> retired;
  for (const auto& [id, device_idx, need] : plan) {
    Buffer fresh = s.make_real(device_idx, need);
    std::lock_guard lock(s.mutex);
    auto r = s.reals.find(id);
    if (r == s.reals.end() || s.needed(r->second) != need) continue;
    s.move_real(id, std::move(fresh), need, retired);
  }
  if (!retired.empty()) s.queue.synchronize();  // the copies are done: the old memory may go
}

Buffer VirtualManager::real_allocation(const Buffer& buffer) const {
  std::lock_guard lock(state_->mutex);
  if (!buffer.adapter()) return {};
  auto it = state_->ids.find(std::weak_ptr<const void>(buffer.adapter()));
  if (it == state_->ids.end()) return {};
  return state_->reals.at(state_->virtuals.at(it->second).real).buffer;
}

Allocator VirtualManager::allocator(VirtualDependencies dependencies) const {
  return [manager = *this, deps = std::move(dependencies)](std::size_t device_idx,
                                                           std::size_t nbytes) {
    return manager.allocate(device_idx, nbytes, deps);
  };
}

VirtualAllocationStatistics VirtualManager::statistics() const {
  VirtualAllocationStatistics stats;
  std::lock_guard lock(state_->mutex);
  for (const auto& [id, real] : state_->reals) {
    stats.real_size_total += real.size;
    ++stats.real_num;
    ++stats.real_sizes[real.size];
  }
  for (const auto& [id, v] : state_->virtuals) {
    stats.virtual_size_total += v.size;
    ++stats.virtual_num;
    ++stats.virtual_sizes[v.size];
  }
  return stats;
}

TrivialManager::TrivialManager(const Queue& queue, Allocator real_allocator, VirtualPacking packing)
    : VirtualManager(std::make_shared<State>(queue, std::move(real_allocator), false,
                                             "TrivialManager", packing)) {}

ZeroOffsetManager::ZeroOffsetManager(const Queue& queue, Allocator real_allocator,
                                     VirtualPacking packing)
    : VirtualManager(std::make_shared<State>(queue, std::move(real_allocator), true,
                                             "ZeroOffsetManager", packing)) {}

}  // namespace skein
