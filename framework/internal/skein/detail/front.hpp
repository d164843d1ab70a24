// SPDX-License-Identifier: BSD-3-Clause
// The front-end objects' shared state, for the front-end and the backends' interop code.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/context_memo.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/deferred_marker.hpp"
#include "skein/detail/pending_results.hpp"
#include "skein/export.hpp"
#include "skein/memory_pool.hpp"
#include "skein/queue.hpp"

namespace skein {

namespace detail {
class BlasAdapter;
struct HostValueSlots;
}  // namespace detail

struct Context::Impl {
  std::shared_ptr<detail::ContextAdapter> adapter;
  std::vector<Device> devices;
  // Whether arrays made without an allocator (Array::empty, the results of Skein's calls) come
  // from their queue's pool (Context::set_array_pool; SKEIN_ARRAY_POOL, read when the context is
  // made).
  std::atomic<bool> array_pool{true};
  // The queues of this context whose pools exist (temporaries_pool()), so that an allocation that
  // finds a device full can free what all of them hold there (detail::trim_pools,
  // memory_pool.cpp). Expired entries are dropped when a pool is added.
  std::mutex pool_queues_mutex;
  std::vector<std::weak_ptr<Queue::Impl>> pool_queues;
  // Programs loaded in this context, per device and compile key: a program is loaded once per
  // device, and only ever in that device's context.
  std::mutex programs_mutex;
  std::map<std::pair<std::size_t, std::string>, std::shared_ptr<detail::ProgramAdapter>> programs;
  // BLAS (cuBLAS handles, src/blas.cpp), made on first use and dropped with the context.
  std::mutex blas_mutex;
  std::shared_ptr<detail::BlasAdapter> blas;
  // ContextMemo's values (skein/context_memo.hpp), one table per memo; dropped with the context
  // and by clear_context_caches() (src/context_caches.cpp).
  std::mutex memos_mutex;
  std::map<std::uint64_t, std::shared_ptr<detail::MemoTable>> memos;
};

struct Queue::Impl {
  explicit Impl(Context c) : context(std::move(c)) { markers->owner = this; }
  // Records the markers still pending (their events' users may still wait for them).
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Context context;
  std::vector<std::size_t> device_idxs;
  // Indexed by device index in the context; null for devices not in the queue.
  std::vector<std::unique_ptr<detail::QueueAdapter>> queues;
  // Events of calls recorded when first needed (skein/detail/deferred_marker.hpp).
  std::shared_ptr<detail::MarkerSlots> markers = std::make_shared<detail::MarkerSlots>();
  // Per device (indexed by device index; empty until first use): results of work on it that the
  // host may have only once confirmed (skein/detail/pending_results.hpp). `holds_results` says
  // whether any device has some, read without the lock: host completions of queues that never
  // held any pay one load.
  std::mutex results_mutex;
  std::atomic<bool> holds_results{false};
  std::vector<detail::PendingResults> results;
  // Per device: the set events recorded there now carry (null until an event asks after a change),
  // shared by the events recorded while it stays the same.
  std::vector<std::shared_ptr<const detail::PendingResults>> results_snapshots;
  // The pool that Skein's array operations on this queue take their temporaries from
  // (temporaries_pool()): made on first use, and freed with the queue. Declared last, so that its
  // held blocks are freed while the device queues still exist.
  std::mutex temporaries_mutex;
  std::optional<DeviceMemoryPool> temporaries;
  // Per device (indexed by device index; empty until first use): the word that the groups of a
  // one-launch whole-array reduction count themselves in (detail::codegen::group_counter,
  // codegen/group_counter.cpp). Only this queue's work uses it, and that work runs in order, so no
  // two calls share it at once.
  std::mutex group_counters_mutex;
  std::vector<Buffer> group_counters;
  // Page-locked memory for values the host reads (detail::HostValues, host_values.cpp): slot sets
  // not in use, and whether this context's devices can have it mapped (false after a refusal).
  std::mutex host_values_mutex;
  std::vector<std::shared_ptr<detail::HostValueSlots>> host_values_free;
  bool host_values_unmappable = false;
};

namespace detail {
// The pending results (skein/detail/pending_results.hpp) that an event recorded now on the queue's
// device carries (null when none), and those that an event brings to a device waiting for it.
std::shared_ptr<const PendingResults> results_for_event(Queue::Impl& impl, std::size_t device_idx);
void take_results(Queue::Impl& impl, std::size_t device_idx, const PendingResults& results);

// A Context over a backend context adapter (its devices come from the adapter).
Context wrap_context(std::shared_ptr<ContextAdapter> adapter);
// A Queue over backend queues made by the caller (the application's own streams and command
// queues): one per index of device_idxs, in that order. Checks the indices as Queue does.
SKEIN_EXPORT Queue wrap_queue(const Context& context, std::vector<std::size_t> device_idxs,
                              std::vector<std::unique_ptr<QueueAdapter>> queues, const char* call);
// Throws LogicError when device_idx is not a device of the context.
SKEIN_EXPORT void check_device_idx(const Context& context, std::size_t device_idx,
                                   const char* call);
// The registry of live contexts that clear_context_caches() goes over (src/context_caches.cpp):
// wrap_context registers every context it makes.
void register_context(const std::shared_ptr<Context::Impl>& impl);
std::vector<std::shared_ptr<Context::Impl>> live_contexts();
}  // namespace detail

}  // namespace skein
