// SPDX-License-Identifier: BSD-3-Clause
// Buffers that virtual allocations' pack() can move (skein/virtual_alloc.hpp,
// src/virtual_alloc.cpp): an adapter of the backend's own kind (the backends' calls take it as any
// other of theirs) that stands for a region of another allocation, and that can be pointed at
// another region later. The caller keeps the regions alive, and orders the move with the work that
// uses them.
#pragma once

#include <memory>

#include "skein/buffer.hpp"
#include "skein/config.hpp"
#include "skein/detail/adapter.hpp"

namespace skein::detail {

#if SKEIN_HAS_CUDA
std::shared_ptr<BufferAdapter> cuda_relocatable(const Buffer& region);
void cuda_relocate(BufferAdapter& relocatable, const Buffer& region);
#endif
#if SKEIN_HAS_OPENCL
// LogicError when the region starts at an offset the device cannot make a sub-buffer at.
std::shared_ptr<BufferAdapter> opencl_relocatable(const Buffer& region);
void opencl_relocate(BufferAdapter& relocatable, const Buffer& region);
#endif

}  // namespace skein::detail
