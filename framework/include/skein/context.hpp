// SPDX-License-Identifier: BSD-3-Clause
// A context over one or several devices of one platform.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "skein/device.hpp"
#include "skein/export.hpp"

namespace skein {

namespace detail {
class ContextAdapter;
struct ImplAccess;
}  // namespace detail

// Some devices of one platform that work together; a cheap handle (copies are the same context).
// Threads: a Context and its copies may be used from any number of threads at once: its program
// cache, BLAS handles and CUDA event pool are locked, and on CUDA each call makes the device's
// context current for its own duration (pushed and popped when it is not), so no thread needs to
// make one current. deactivate() acts on the calling thread's stack of current CUDA contexts only.
class SKEIN_EXPORT Context {
 public:
  static Context from_devices(std::span<const Device> devices);
  static Context from_devices(const Device& device) { return from_devices(std::span(&device, 1)); }
  // Selects `devices_num` devices with select_devices() and makes a context of them.
  static Context from_criteria(const Api& api, std::size_t devices_num = 1,
                               const DeviceFilter& filter = {});

  Api api() const;
  Platform platform() const;
  const std::vector<Device>& devices() const;
  std::size_t num_devices() const { return devices().size(); }
  const Device& device(std::size_t device_idx) const;

  // CUDA: makes sure none of this context's CUDA contexts is left current on this thread.
  // Other APIs: nothing to do.
  void deactivate() const;

  // Whether arrays made without an allocator (Array::empty, zeros, from_host, and the results of
  // Skein's calls: reductions, astype, copy, take, concatenate, ...) take their memory from their
  // queue's pool, freed in the queue's order (temporaries_pool() in skein/memory_pool.hpp says
  // when a block is reused, and the rule for arrays used on another queue). On by default, and
  // read from SKEIN_ARRAY_POOL when the context is made (0: off; a bad value raises LogicError
  // there). Off: such arrays get plain allocations (Buffer::allocate), for codes that manage
  // memory themselves; Skein's temporaries still come from the queue's pool. A change applies to
  // arrays made afterwards, on every queue of the context and from every thread.
  void set_array_pool(bool on) const;
  bool array_pool() const;

  friend bool operator==(const Context& a, const Context& b) { return a.impl_ == b.impl_; }

  struct Impl;
  explicit Context(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

}  // namespace skein
