// SPDX-License-Identifier: BSD-3-Clause
#include <atomic>
#include <exception>
#include <functional>

#include "adapters.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/relocatable.hpp"

namespace skein::detail {

namespace {

// Device memory of Skein's (cuMemAlloc or cuMemAllocManaged, freed here) or of the application's
// (foreign: never freed by Skein; its deleter, if any, runs when the last Buffer over it is gone).
class CudaBufferAdapter final : public BufferAdapter {
 public:
  CudaBufferAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                    CUdeviceptr pointer, std::size_t size, bool owned,
                    std::function<void()> deleter = {}, bool managed = false)
      : context_(std::move(context)),
        device_idx_(device_idx),
        pointer_(pointer),
        size_(size),
        owned_(owned),
        managed_(managed),
        deleter_(std::move(deleter)) {}

  ~CudaBufferAdapter() override {
    if (owned_ && pointer_ != 0) {
      CudaContextScope scope(context_->context(device_idx_), CudaContextScope::NoThrow{});
      report_cuda_cleanup_failure(cu().cuMemFree(pointer_), "cuMemFree",
                                  context_->description(device_idx_));
    }
    if (!deleter_) return;
    try {
      deleter_();
    } catch (const std::exception& e) {
      detail::log(LogLevel::error, LogScope::rank,
                  "the deleter of a foreign buffer on {} threw: {}",
                  context_->description(device_idx_), e.what());
    } catch (...) {
      detail::log(LogLevel::error, LogScope::rank, "the deleter of a foreign buffer on {} threw",
                  context_->description(device_idx_));
    }
  }

  std::size_t size() const override { return size_; }
  std::size_t device_idx() const override { return device_idx_; }
  std::uintptr_t native() const override { return static_cast<std::uintptr_t>(pointer_); }
  bool managed() const override { return managed_; }

 private:
  // Kept alive: the memory belongs to its CUcontext, which must outlive it.
  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUdeviceptr pointer_;
  std::size_t size_;
  bool owned_;
  bool managed_;
  std::function<void()> deleter_;
};

class CudaHostBufferAdapter final : public HostBufferAdapter {
 public:
  CudaHostBufferAdapter(std::shared_ptr<CudaContextAdapter> context, void* pointer,
                        std::size_t size, HostMemoryFlags flags, bool registered)
      : context_(std::move(context)),
        pointer_(static_cast<std::byte*>(pointer)),
        size_(size),
        flags_(flags),
        registered_(registered) {}

  ~CudaHostBufferAdapter() override {
    if (pointer_ == nullptr) return;
    CudaContextScope scope(context_->context(0), CudaContextScope::NoThrow{});
    if (registered_) {
      report_cuda_cleanup_failure(cu().cuMemHostUnregister(pointer_), "cuMemHostUnregister",
                                  "registered host memory for " + context_->description(0));
    } else {
      report_cuda_cleanup_failure(cu().cuMemFreeHost(pointer_), "cuMemFreeHost",
                                  "page-locked host memory for " + context_->description(0));
    }
  }

  std::byte* data() const override { return pointer_; }
  std::size_t size() const override { return size_; }
  HostMemoryFlags flags() const override { return flags_; }
  bool registered() const override { return registered_; }
  const ContextAdapter* owner() const override { return context_.get(); }

 private:
  std::shared_ptr<CudaContextAdapter> context_;
  std::byte* pointer_;
  std::size_t size_;
  HostMemoryFlags flags_;
  bool registered_;
};

// A region of another allocation that virtual allocations' pack() can point elsewhere
// (skein/detail/relocatable.hpp). It owns nothing: the virtual allocation manager keeps the
// region's Buffer alive while this points into it.
class CudaRelocatableBuffer final : public BufferAdapter {
 public:
  CudaRelocatableBuffer(std::size_t device_idx, CUdeviceptr pointer, std::size_t size, bool managed)
      : device_idx_(device_idx), pointer_(pointer), size_(size), managed_(managed) {}
  std::size_t size() const override { return size_.load(std::memory_order_acquire); }
  std::size_t device_idx() const override { return device_idx_; }
  std::uintptr_t native() const override {
    return static_cast<std::uintptr_t>(pointer_.load(std::memory_order_acquire));
  }
  bool managed() const override { return managed_; }
  void relocate(CUdeviceptr pointer, std::size_t size) {
    size_.store(size, std::memory_order_release);
    pointer_.store(pointer, std::memory_order_release);
  }

 private:
  std::size_t device_idx_;
  std::atomic<CUdeviceptr> pointer_;
  std::atomic<std::size_t> size_;
  bool managed_;
};

CUdeviceptr region_pointer(const Buffer& region) {
  return region.adapter() ? static_cast<CUdeviceptr>(region.adapter()->native()) + region.offset()
                          : 0;
}

}  // namespace

std::shared_ptr<BufferAdapter> make_cuda_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                std::size_t device_idx, CUdeviceptr pointer,
                                                std::size_t size) {
  return std::make_shared<CudaBufferAdapter>(std::move(context), device_idx, pointer, size, true);
}

std::shared_ptr<BufferAdapter> make_cuda_managed_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                        std::size_t device_idx, CUdeviceptr pointer,
                                                        std::size_t size) {
  return std::make_shared<CudaBufferAdapter>(std::move(context), device_idx, pointer, size, true,
                                             std::function<void()>{}, true);
}

std::shared_ptr<BufferAdapter> make_cuda_foreign_buffer(std::shared_ptr<CudaContextAdapter> context,
                                                        std::size_t device_idx, CUdeviceptr pointer,
                                                        std::size_t size,
                                                        std::function<void()> deleter) {
  return std::make_shared<CudaBufferAdapter>(std::move(context), device_idx, pointer, size, false,
                                             std::move(deleter));
}

std::shared_ptr<HostBufferAdapter> make_cuda_host_buffer(
    std::shared_ptr<CudaContextAdapter> context, void* pointer, std::size_t size,
    HostMemoryFlags flags, bool registered) {
  return std::make_shared<CudaHostBufferAdapter>(std::move(context), pointer, size, flags,
                                                 registered);
}

std::shared_ptr<BufferAdapter> cuda_relocatable(const Buffer& region) {
  return std::make_shared<CudaRelocatableBuffer>(region.device_idx(), region_pointer(region),
                                                 region.size(),
                                                 region.adapter() && region.adapter()->managed());
}

void cuda_relocate(BufferAdapter& relocatable, const Buffer& region) {
  static_cast<CudaRelocatableBuffer&>(relocatable).relocate(region_pointer(region), region.size());
}

}  // namespace skein::detail
