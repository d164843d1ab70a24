// SPDX-License-Identifier: BSD-3-Clause
// The driver controls of skein/driver.hpp: argument checks here, the work in the backends'
// context adapters.
#include "skein/driver.hpp"

#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

namespace {

detail::ContextAdapter& adapter_of(const Context& context) {
  return *detail::impl_of(context)->adapter;
}

void check_pair(const Context& context, std::size_t from, std::size_t to, const char* call) {
  detail::check_device_idx(context, from, call);
  detail::check_device_idx(context, to, call);
  if (from == to) {
    detail::raise_in(SKEIN_HERE, call,
                     "Name two different devices of the context: a device always reaches its "
                     "own memory.",
                     "device index {} ({}) is given as both `from` and `to`", from,
                     context.device(from).description());
  }
}

}  // namespace

MemoryInfo memory_info(const Context& context, std::size_t device_idx) {
  detail::check_device_idx(context, device_idx, "memory_info");
  return adapter_of(context).memory_info(device_idx);
}

QueuePriorityRange queue_priority_range(const Context& context, std::size_t device_idx) {
  detail::check_device_idx(context, device_idx, "queue_priority_range");
  return adapter_of(context).queue_priority_range(device_idx);
}

const char* name(ContextLimit limit) {
  switch (limit) {
    case ContextLimit::stack_size: return "stack_size";
    case ContextLimit::malloc_heap_size: return "malloc_heap_size";
    case ContextLimit::printf_fifo_size: return "printf_fifo_size";
  }
  return "unknown limit";
}

const char* name(CacheConfig config) {
  switch (config) {
    case CacheConfig::prefer_none: return "prefer_none";
    case CacheConfig::prefer_shared: return "prefer_shared";
    case CacheConfig::prefer_l1: return "prefer_l1";
    case CacheConfig::prefer_equal: return "prefer_equal";
  }
  return "unknown cache configuration";
}

std::size_t get_limit(const Context& context, std::size_t device_idx, ContextLimit limit) {
  detail::check_device_idx(context, device_idx, "get_limit");
  return adapter_of(context).get_limit(device_idx, limit);
}

void set_limit(const Context& context, std::size_t device_idx, ContextLimit limit,
               std::size_t value) {
  detail::check_device_idx(context, device_idx, "set_limit");
  adapter_of(context).set_limit(device_idx, limit, value);
}

CacheConfig get_cache_config(const Context& context, std::size_t device_idx) {
  detail::check_device_idx(context, device_idx, "get_cache_config");
  return adapter_of(context).get_cache_config(device_idx);
}

void set_cache_config(const Context& context, std::size_t device_idx, CacheConfig config) {
  detail::check_device_idx(context, device_idx, "set_cache_config");
  adapter_of(context).set_cache_config(device_idx, config);
}

bool can_access_peer(const Context& context, std::size_t from, std::size_t to) {
  check_pair(context, from, to, "can_access_peer");
  return adapter_of(context).can_access_peer(from, to);
}

bool peer_access_enabled(const Context& context, std::size_t from, std::size_t to) {
  check_pair(context, from, to, "peer_access_enabled");
  return adapter_of(context).can_access(from, to);
}

void enable_peer_access(const Context& context, std::size_t from, std::size_t to) {
  check_pair(context, from, to, "enable_peer_access");
  auto& adapter = adapter_of(context);
  if (!adapter.can_access_peer(from, to)) {
    detail::raise_in(SKEIN_HERE, "enable_peer_access",
                     "Check can_access_peer() first; copies between these devices still work "
                     "(Buffer::set, Array::set), staged through the host.",
                     "{} cannot access the memory of {}: the hardware does not connect them "
                     "(cuDeviceCanAccessPeer)",
                     context.device(from).description(), context.device(to).description());
  }
  adapter.set_peer_access(from, to, true);
}

void disable_peer_access(const Context& context, std::size_t from, std::size_t to) {
  check_pair(context, from, to, "disable_peer_access");
  adapter_of(context).set_peer_access(from, to, false);
}

void start_profiler(const Context& context) { adapter_of(context).profiler(true); }
void stop_profiler(const Context& context) { adapter_of(context).profiler(false); }

}  // namespace skein
