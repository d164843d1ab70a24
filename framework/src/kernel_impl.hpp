// SPDX-License-Identifier: BSD-3-Clause
// The state behind Kernel and PreparedKernel, shared by program.cpp (compiling, preparing,
// launching) and kernel_attributes.cpp / kernel_host_args.cpp (attributes, In / Out / InOut,
// timed launches).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/detail/adapter.hpp"
#include "skein/program.hpp"

namespace skein {

struct Kernel::Impl {
  Program program;
  std::string name;
  std::vector<std::shared_ptr<detail::KernelAdapter>> kernels;  // by device index
};

struct PreparedKernel::Impl {
  struct PerDevice {
    detail::KernelAdapter* kernel = nullptr;
    detail::QueueAdapter* queue = nullptr;
    detail::LaunchDims dims;
    WorkSize global = 1;
    WorkSize local = 1;
    WorkSize items = 1;  // the work items asked for (Kernel::prepare_items), else `global`
  };
  Kernel kernel;
  Queue queue;
  std::vector<std::size_t> device_idxs;
  std::vector<std::optional<PerDevice>> per_device;  // by device index
  const void* context_id = nullptr;
  detail::ContextAdapter* context = nullptr;
};

namespace detail {
// PreparedKernel::launch of arguments with In, Out or InOut among them (kernel_host_args.cpp):
// the temporaries, the copies and the launch on one device, then a wait for it all.
void launch_with_host_args(const PreparedKernel& prepared, std::size_t device_idx,
                           std::span<const KernelArg> args, std::vector<Event>* events);
}  // namespace detail

}  // namespace skein
