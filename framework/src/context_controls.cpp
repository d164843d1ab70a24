// SPDX-License-Identifier: BSD-3-Clause
// The driver rows of Context (after PyCUDA's make_context flags, Context.push / pop and
// Context.synchronize): a context's scheduling, the calling thread's current CUDA context, and
// waiting for all of a context's work.
#include "skein/context.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

const char* name(ContextScheduling scheduling) {
  switch (scheduling) {
    case ContextScheduling::automatic: return "automatic";
    case ContextScheduling::spin: return "spin";
    case ContextScheduling::yield: return "yield";
    case ContextScheduling::blocking_sync: return "blocking_sync";
  }
  return "unknown";
}

Context Context::from_devices(std::span<const Device> devices, const ContextFlags& flags) {
  Context context = from_devices(devices);
  auto& adapter = *detail::impl_of(context)->adapter;
  for (std::size_t d = 0; d < context.num_devices(); ++d) {
    adapter.set_scheduling(d, flags.scheduling);
  }
  return context;
}

ContextScheduling Context::scheduling(std::size_t device_idx) const {
  detail::check_device_idx(*this, device_idx, "Context::scheduling");
  return impl_->adapter->scheduling(device_idx);
}

void Context::push(std::size_t device_idx) const {
  detail::check_device_idx(*this, device_idx, "Context::push");
  impl_->adapter->push(device_idx);
}

void Context::pop() const { impl_->adapter->pop(); }

void Context::synchronize() const { impl_->adapter->synchronize(); }

}  // namespace skein
