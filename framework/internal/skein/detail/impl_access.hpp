// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Internal interface: the state behind the framework's public handles (Context, Queue, Program,
// Kernel). Their impl() is private; the framework's sources, the layers above it and the tests
// reach it here, so that no public header hands out a pointer to its internals.
namespace skein::detail {

struct ImplAccess {
  template <class Handle>
  static const auto& impl(const Handle& handle) {
    return handle.impl();
  }
  // A handle over state made by the framework (a Queue over the application's streams).
  template <class Handle, class Impl>
  static Handle make(Impl impl) {
    return Handle(std::move(impl));
  }
};

// The shared state of `handle` (a std::shared_ptr<Handle::Impl>).
template <class Handle>
const auto& impl_of(const Handle& handle) {
  return ImplAccess::impl(handle);
}

}  // namespace skein::detail
