// SPDX-License-Identifier: BSD-3-Clause
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>

#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaQueueAdapter final : public QueueAdapter {
 public:
  CudaQueueAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   int priority, QueueSync sync)
      : context_(std::move(context)), device_idx_(device_idx) {
    CudaContextScope scope(cu_context(), device());
    // Non-blocking unless asked: no implicit synchronisation with the legacy default stream,
    // which the CUDA runtime and libraries built on it use. The priority is in the device's range
    // (checked by Queue); 0, the default, is the least urgent on every device so far.
    const unsigned flags = sync == QueueSync::blocking ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
    SKEIN_CU_CHECK(cuStreamCreateWithPriority, (&stream_, flags, priority), device());
  }

  // Over the application's stream, which stays the application's.
  CudaQueueAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   CUstream stream)
      : context_(std::move(context)), device_idx_(device_idx), stream_(stream), owned_(false) {}

  ~CudaQueueAdapter() override {
    // Work still pending completes; the driver frees the stream afterwards.
    CudaContextScope scope(cu_context(), CudaContextScope::NoThrow{});
    if (marker_)
      report_cuda_cleanup_failure(cu().cuEventDestroy(marker_), "cuEventDestroy", device());
    if (owned_) {
      report_cuda_cleanup_failure(cu().cuStreamDestroy(stream_), "cuStreamDestroy", device());
    }
  }

  std::size_t device_idx() const override { return device_idx_; }

  void synchronize() override {
    // A default stream is the current context's: make ours current for it. A stream of our own
    // carries its context, so its synchronisation needs no push.
    std::optional<CudaContextScope> scope;
    if (on_default_stream()) scope.emplace(cu_context(), device());
    SKEIN_CU_CHECK(cuStreamSynchronize, (stream_), device());
  }

  void write(BufferAdapter& dst, std::size_t dst_offset, const void* src, std::size_t size,
             bool blocking) override {
    if (size == 0) return;
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuMemcpyHtoDAsync, (address(dst, dst_offset), src, size, stream_), device());
    if (blocking) synchronize();
  }

  void read(void* dst, BufferAdapter& src, std::size_t src_offset, std::size_t size,
            bool blocking) override {
    if (size == 0) return;
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuMemcpyDtoHAsync, (dst, address(src, src_offset), size, stream_), device());
    if (blocking) synchronize();
  }

  void copy(BufferAdapter& dst, std::size_t dst_offset, BufferAdapter& src, std::size_t src_offset,
            std::size_t size) override {
    if (size == 0) return;
    CudaContextScope scope(cu_context(), device());
    if (dst.device_idx() == src.device_idx()) {
      SKEIN_CU_CHECK(cuMemcpyDtoDAsync,
                     (address(dst, dst_offset), address(src, src_offset), size, stream_), device());
    } else {
      // Direct over NVLink / PCIe when peer access is on, staged through the host by the driver
      // otherwise.
      SKEIN_CU_CHECK(cuMemcpyPeerAsync,
                     (address(dst, dst_offset), context_->context(dst.device_idx()),
                      address(src, src_offset), context_->context(src.device_idx()), size, stream_),
                     device() + " (copy from " + context_->description(src.device_idx()) + ")");
    }
  }

  void fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) override {
    if (size == 0) return;
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuMemsetD8Async, (address(dst, offset), 0, size, stream_), device());
  }

  bool write_rect(BufferAdapter& dst, const void* src, const RectRegion& region,
                  bool blocking) override {
    if (!pitches_ok(region)) return false;
    CudaContextScope scope(cu_context(), device());
    Side s{.memory_type = CU_MEMORYTYPE_HOST,
           .host = static_cast<const std::byte*>(src) + region.src_offset};
    Side d{.memory_type = CU_MEMORYTYPE_DEVICE, .device = address(dst, region.dst_offset)};
    rect_copy(d, s, region, device());
    if (blocking) synchronize();
    return true;
  }

  bool read_rect(void* dst, BufferAdapter& src, const RectRegion& region, bool blocking) override {
    if (!pitches_ok(region)) return false;
    CudaContextScope scope(cu_context(), device());
    Side s{.memory_type = CU_MEMORYTYPE_DEVICE, .device = address(src, region.src_offset)};
    Side d{.memory_type = CU_MEMORYTYPE_HOST,
           .host = static_cast<std::byte*>(dst) + region.dst_offset};
    rect_copy(d, s, region, device());
    if (blocking) synchronize();
    return true;
  }

  bool copy_rect(BufferAdapter& dst, BufferAdapter& src, const RectRegion& region) override {
    if (!pitches_ok(region)) return false;
    CudaContextScope scope(cu_context(), device());
    Side s{.memory_type = CU_MEMORYTYPE_DEVICE, .device = address(src, region.src_offset)};
    Side d{.memory_type = CU_MEMORYTYPE_DEVICE, .device = address(dst, region.dst_offset)};
    if (dst.device_idx() == src.device_idx()) {
      rect_copy(d, s, region, device());
      return true;
    }
    // Between the CUcontexts of two devices: the peer form (direct with peer access, staged by
    // the driver otherwise).
    CUDA_MEMCPY3D_PEER p{};
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = s.device;
    p.srcContext = context_->context(src.device_idx());
    p.srcPitch = region.src_row_pitch;
    p.srcHeight = region.depth > 1 ? region.src_slice_pitch / region.src_row_pitch : region.height;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d.device;
    p.dstContext = context_->context(dst.device_idx());
    p.dstPitch = region.dst_row_pitch;
    p.dstHeight = region.depth > 1 ? region.dst_slice_pitch / region.dst_row_pitch : region.height;
    p.WidthInBytes = region.width;
    p.Height = region.height;
    p.Depth = region.depth;
    SKEIN_CU_CHECK(cuMemcpy3DPeerAsync, (&p, stream_),
                   device() + " (copy from " + context_->description(src.device_idx()) + ")");
    return true;
  }

  std::shared_ptr<EventAdapter> record() override {
    return record_cuda_event(context_, device_idx_, stream_, true);
  }

  std::shared_ptr<EventAdapter> record_untimed() override {
    return record_cuda_event(context_, device_idx_, stream_, false);
  }

  QueueSync sync() const override {
    // The legacy and per-thread default streams have no flags to read: the legacy one is the
    // blocking stream itself, the per-thread one does not block.
    if (on_default_stream()) {
      return stream_ == CU_STREAM_PER_THREAD ? QueueSync::non_blocking : QueueSync::blocking;
    }
    CudaContextScope scope(cu_context(), device());
    unsigned flags = 0;
    SKEIN_CU_CHECK(cuStreamGetFlags, (stream_, &flags), device());
    return (flags & CU_STREAM_NON_BLOCKING) ? QueueSync::non_blocking : QueueSync::blocking;
  }

  std::shared_ptr<EventAdapter> record_flags(const EventFlags& flags) override {
    if (!flags.blocking_sync) return flags.disable_timing ? record_untimed() : record();
    // Not pooled: the pools hold events of the two plain kinds only.
    CudaContextScope scope(cu_context(), device());
    CUevent event = nullptr;
    const unsigned cu_flags =
        CU_EVENT_BLOCKING_SYNC |
        (flags.disable_timing ? static_cast<unsigned>(CU_EVENT_DISABLE_TIMING) : 0u);
    SKEIN_CU_CHECK(cuEventCreate, (&event, cu_flags), device());
    auto adapter = make_cuda_unpooled_event(context_, device_idx_, event, !flags.disable_timing);
    SKEIN_CU_CHECK(cuEventRecord, (event, stream_), device());
    return adapter;
  }

  void wait_for(EventAdapter& event) override {
    // In the context, as every other call here: a queue over the legacy or the per-thread default
    // stream (cuda::queue_from_native with CU_STREAM_LEGACY, as DLPack's stream 1 names it) has
    // no context of its own, and the wait on it fails without a current one.
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuStreamWaitEvent, (stream_, cuda_event_of(event, "Queue::wait_for"), 0),
                   device());
  }

  void wait_for_queue(QueueAdapter& other_queue) override {
    auto& other = static_cast<CudaQueueAdapter&>(other_queue);
    // One reusable event per queue: cuStreamWaitEvent waits for the work the event captured when
    // it was recorded, so recording it again later does not disturb earlier waits. Created once,
    // under the other queue's lock (threads may share a Queue), and recorded and waited on under
    // it, so that a wait never takes another thread's later record.
    std::lock_guard lock(other.marker_mutex_);
    CUevent marker = other.marker();
    {
      // Each call in its stream's context (the default streams have none of their own: see
      // wait_for).
      CudaContextScope scope(other.cu_context(), other.device());
      SKEIN_CU_CHECK(cuEventRecord, (marker, other.stream_), other.device());
    }
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuStreamWaitEvent, (stream_, marker, 0), device());
  }

  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(stream_); }

  int priority() const override {
    int value = 0;
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuStreamGetPriority, (stream_, &value), device());
    return value;
  }

 private:
  // The legacy or the per-thread default stream (cuda::queue_from_native with CU_STREAM_LEGACY,
  // CU_STREAM_PER_THREAD or 0): the current context's, with no flags of its own.
  bool on_default_stream() const {
    return stream_ == nullptr || stream_ == CU_STREAM_LEGACY || stream_ == CU_STREAM_PER_THREAD;
  }

  // One side of a rectangular copy: host or device memory, at the region's first byte.
  struct Side {
    CUmemorytype memory_type = CU_MEMORYTYPE_DEVICE;
    const void* host = nullptr;
    CUdeviceptr device = 0;
  };

  // The driver's limits: pitches up to CU_DEVICE_ATTRIBUTE_MAX_PITCH, not below the width; a 3-D
  // copy counts slices in rows, so slice pitches must be whole rows.
  bool pitches_ok(const RectRegion& r) {
    const std::size_t limit = max_pitch();
    auto ok = [&](std::size_t row, std::size_t slice) {
      if (row < r.width || row > limit) return false;
      return r.depth == 1 || (slice % row == 0 && slice / row >= r.height);
    };
    return ok(r.dst_row_pitch, r.dst_slice_pitch) && ok(r.src_row_pitch, r.src_slice_pitch);
  }

  std::size_t max_pitch() {
    std::size_t value = max_pitch_.load(std::memory_order_relaxed);
    if (value != 0) return value;
    CudaContextScope scope(cu_context(), device());
    CUdevice dev = 0;
    SKEIN_CU_CHECK(cuCtxGetDevice, (&dev), device());
    int attribute = 0;
    SKEIN_CU_CHECK(cuDeviceGetAttribute, (&attribute, CU_DEVICE_ATTRIBUTE_MAX_PITCH, dev),
                   device());
    value = static_cast<std::size_t>(std::max(attribute, 1));
    max_pitch_.store(value, std::memory_order_relaxed);
    return value;
  }

  // cuMemcpy2DAsync for one slice, cuMemcpy3DAsync for more (in the queue's context).
  void rect_copy(const Side& d, const Side& s, const RectRegion& r, const std::string& where) {
    if (r.depth == 1) {
      CUDA_MEMCPY2D p{};
      p.srcMemoryType = s.memory_type;
      p.srcHost = s.host;
      p.srcDevice = s.device;
      p.srcPitch = r.src_row_pitch;
      p.dstMemoryType = d.memory_type;
      p.dstHost = const_cast<void*>(d.host);
      p.dstDevice = d.device;
      p.dstPitch = r.dst_row_pitch;
      p.WidthInBytes = r.width;
      p.Height = r.height;
      SKEIN_CU_CHECK(cuMemcpy2DAsync, (&p, stream_), where);
      return;
    }
    CUDA_MEMCPY3D p{};
    p.srcMemoryType = s.memory_type;
    p.srcHost = s.host;
    p.srcDevice = s.device;
    p.srcPitch = r.src_row_pitch;
    p.srcHeight = r.src_slice_pitch / r.src_row_pitch;
    p.dstMemoryType = d.memory_type;
    p.dstHost = const_cast<void*>(d.host);
    p.dstDevice = d.device;
    p.dstPitch = r.dst_row_pitch;
    p.dstHeight = r.dst_slice_pitch / r.dst_row_pitch;
    p.WidthInBytes = r.width;
    p.Height = r.height;
    p.Depth = r.depth;
    SKEIN_CU_CHECK(cuMemcpy3DAsync, (&p, stream_), where);
  }

  CUevent marker() {
    if (!marker_) {
      CudaContextScope scope(cu_context(), device());
      SKEIN_CU_CHECK(cuEventCreate, (&marker_, CU_EVENT_DISABLE_TIMING), device());
    }
    return marker_;
  }

  static CUdeviceptr address(const BufferAdapter& buffer, std::size_t offset) {
    return static_cast<CUdeviceptr>(buffer.native()) + offset;
  }
  CUcontext cu_context() const { return context_->context(device_idx_); }
  const std::string& device() const { return context_->description(device_idx_); }

  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUstream stream_ = nullptr;
  bool owned_ = true;                      // false for the application's stream
  CUevent marker_ = nullptr;               // for wait_for_queue(), created on first use
  std::atomic<std::size_t> max_pitch_{0};  // CU_DEVICE_ATTRIBUTE_MAX_PITCH, read on first use
  std::mutex marker_mutex_;                // guards marker_ and its record-and-wait
};

}  // namespace

std::unique_ptr<QueueAdapter> make_cuda_queue(std::shared_ptr<CudaContextAdapter> context,
                                              std::size_t device_idx, int priority,
                                              QueueSync sync) {
  return std::make_unique<CudaQueueAdapter>(std::move(context), device_idx, priority, sync);
}

std::unique_ptr<QueueAdapter> make_cuda_foreign_queue(std::shared_ptr<CudaContextAdapter> context,
                                                      std::size_t device_idx, CUstream stream) {
  return std::make_unique<CudaQueueAdapter>(std::move(context), device_idx, stream);
}

}  // namespace skein::detail
