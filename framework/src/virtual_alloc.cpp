// SPDX-License-Identifier: BSD-3-Clause
#include "skein/virtual_alloc.hpp"

#include <fmt/ranges.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

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
    Buffer buffer;
    std::size_t device_idx;
    std::size_t size;
    std::set<Id> virtuals;
  };

  State(Queue queue, Allocator real_allocator, bool share, const char* name)
      : queue(std::move(queue)),
        real_allocator(std::move(real_allocator)),
        share(share),
        name(name) {}

  // The live virtual buffers among `deps` (under the lock).
  std::set<Id> resolve(const VirtualDependencies& deps) const;
  // A real allocation that can take a new virtual buffer (under the lock).
  std::optional<Id> find_real(std::size_t device_idx, std::size_t nbytes,
                              const std::set<Id>& deps) const;
  Buffer make_real(std::size_t device_idx, std::size_t nbytes) const;
  // Called when the last handle of a virtual buffer is gone. Never throws.
  void free(Id id) noexcept;

  const Queue queue;
  const Allocator real_allocator;
  const bool share;  // ZeroOffsetManager: virtual buffers may share real allocations
  const char* const name;

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

  VirtualBlock(std::shared_ptr<VirtualManager::State> manager, VirtualManager::State::Id id)
      : manager(std::move(manager)), id(id) {}
  VirtualBlock(const VirtualBlock&) = delete;
  VirtualBlock& operator=(const VirtualBlock&) = delete;
  ~VirtualBlock() { manager->free(id); }
};

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
      reals.erase(r);
    }
  }
  ids.erase(it->second.owner);
  virtuals.erase(it);
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
  bool fresh = false;
  std::unique_lock lock(s.mutex);
  std::set<State::Id> deps = s.resolve(dependencies);
  std::optional<State::Id> real_id = s.find_real(device_idx, nbytes, deps);
  if (!real_id) {
    // Allocated outside the lock: it may take long, and may free pooled memory. A fresh real
    // allocation holds nothing, so it suits the new buffer whatever happened meanwhile; only the
    // dependencies freed meanwhile are dropped.
    lock.unlock();
    new_real = s.make_real(device_idx, nbytes);
    fresh = true;
    lock.lock();
    deps = s.resolve(dependencies);
  }

  const State::Id id = s.next_id++;
  block = std::make_shared<VirtualBlock>(state_, id);
  if (!real_id) real_id = s.next_id++;
  s.virtuals.emplace(id, State::Virtual{device_idx, nbytes, *real_id, deps, block});
  if (fresh) {
    s.reals.emplace(*real_id, State::Real{std::move(new_real), device_idx, nbytes, {}});
    s.reals_by_size.emplace(device_idx, nbytes, *real_id);
  }
  State::Real& real = s.reals.at(*real_id);
  real.virtuals.insert(id);
  for (State::Id dep : deps) s.virtuals.at(dep).dependencies.insert(id);
  s.ids.emplace(std::weak_ptr<const void>(block), id);

  std::shared_ptr<detail::BufferAdapter> adapter(block, real.buffer.adapter().get());
  return Buffer(s.queue.context(), std::move(adapter), device_idx, real.buffer.offset(), nbytes);
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

TrivialManager::TrivialManager(const Queue& queue, Allocator real_allocator)
    : VirtualManager(
          std::make_shared<State>(queue, std::move(real_allocator), false, "TrivialManager")) {}

ZeroOffsetManager::ZeroOffsetManager(const Queue& queue, Allocator real_allocator)
    : VirtualManager(
          std::make_shared<State>(queue, std::move(real_allocator), true, "ZeroOffsetManager")) {}

}  // namespace skein
