// SPDX-License-Identifier: BSD-3-Clause
#include "codegen/launch.hpp"

#include <algorithm>

#include "skein/memory_pool.hpp"

namespace skein::detail::codegen {

// --- arguments ---------------------------------------------------------------------------------

void ArgPack::buffer(const Buffer& b, std::uint64_t byte_offset) {
  add_buffer(b, byte_offset, false, b.device_idx());
}

void ArgPack::add_buffer(const Buffer& b, std::uint64_t byte_offset, bool array,
                         std::size_t device) {
  args_.push_back(KernelArg{.kind = KernelArg::Kind::buffer,
                            .array = array,
                            .device = device,
                            .buffer = b.adapter().get(),
                            .offset = 0,
                            .buffer_device = b.device_idx(),
                            .context = b.context_id()});
  value_at_.resize(args_.size(), 0);
  value(std::uint64_t{b.offset() + byte_offset});
}

void ArgPack::bytes(std::span<const std::byte> v) {
  const std::size_t at = (bytes_.size() + 15) / 16 * 16;
  bytes_.resize(at + v.size());
  std::copy(v.begin(), v.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(at));
  args_.push_back(KernelArg{.kind = KernelArg::Kind::scalar, .size = v.size()});
  value_at_.resize(args_.size(), 0);
  value_at_.back() = at;
}

std::span<const KernelArg> ArgPack::args() const {
  // Pointers are set here, not when the bytes are added: bytes_ may have moved since.
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].kind == KernelArg::Kind::scalar) args_[i].value = bytes_.data() + value_at_[i];
  }
  return args_;
}

void launch(const Kernel& kernel, const Queue& queue, std::size_t device_idx, std::size_t groups,
            std::size_t local, const ArgPack& args) {
  launch_generated(kernel, queue, device_idx, groups, local, args.args());
}

// --- scratch -----------------------------------------------------------------------------------

Scratch::Scratch(const Queue& queue, std::size_t device_idx, std::size_t bytes)
    : buffer_(temporaries_pool(queue).allocate(device_idx, std::max<std::size_t>(bytes, 256))) {}

}  // namespace skein::detail::codegen
