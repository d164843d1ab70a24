#include <mutex>

#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaQueueAdapter final : public QueueAdapter {
 public:
  CudaQueueAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   int priority)
      : context_(std::move(context)), device_idx_(device_idx) {
    CudaContextScope scope(cu_context(), device());
    // Non-blocking: no implicit synchronisation with the legacy default stream, which the CUDA
    // runtime and libraries built on it use. The priority is in the device's range (checked by
    // Queue); 0, the default, is the least urgent on every device so far.
    SKEIN_CU_CHECK(cuStreamCreateWithPriority, (&stream_, CU_STREAM_NON_BLOCKING, priority),
                   device());
  }

  // Over the application's stream, which stays the application's.
  CudaQueueAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   CUstream stream)
      : context_(std::move(context)), device_idx_(device_idx), stream_(stream), owned_(false) {}

  ~CudaQueueAdapter() override {
    // Work still pending completes; the driver frees the stream afterwards.
    CudaContextScope scope(cu_context(), CudaContextScope::NoThrow{});
    if (marker_) report_cuda_cleanup_failure(cu().cuEventDestroy(marker_), "cuEventDestroy", device());
    if (owned_) {
      report_cuda_cleanup_failure(cu().cuStreamDestroy(stream_), "cuStreamDestroy", device());
    }
  }

  std::size_t device_idx() const override { return device_idx_; }

  void synchronize() override { SKEIN_CU_CHECK(cuStreamSynchronize, (stream_), device()); }

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
                      address(src, src_offset), context_->context(src.device_idx()), size,
                      stream_),
                     device() + " (copy from " + context_->description(src.device_idx()) + ")");
    }
  }

  void fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) override {
    if (size == 0) return;
    CudaContextScope scope(cu_context(), device());
    SKEIN_CU_CHECK(cuMemsetD8Async, (address(dst, offset), 0, size, stream_), device());
  }

  std::shared_ptr<EventAdapter> record() override {
    return record_cuda_event(context_, device_idx_, stream_, true);
  }

  std::shared_ptr<EventAdapter> record_untimed() override {
    return record_cuda_event(context_, device_idx_, stream_, false);
  }

  void wait_for(EventAdapter& event) override {
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
    SKEIN_CU_CHECK(cuEventRecord, (marker, other.stream_), other.device());
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
  CUevent marker() {
    if (!marker_) {
      CudaContextScope scope(cu_context(), device());
      SKEIN_CU_CHECK(cuEventCreate, (&marker_, CU_EVENT_DISABLE_TIMING), device());
    }
    return marker_;
  }

  static CUdeviceptr address(const BufferAdapter& buffer, std::size_t offset) {
    return static_cast<CUdeviceptr>(buffer.native() + offset);
  }
  CUcontext cu_context() const { return context_->context(device_idx_); }
  const std::string& device() const { return context_->description(device_idx_); }

  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUstream stream_ = nullptr;
  bool owned_ = true;         // false for the application's stream
  CUevent marker_ = nullptr;  // for wait_for_queue(), created on first use
  std::mutex marker_mutex_;    // guards marker_ and its record-and-wait
};

}  // namespace

std::unique_ptr<QueueAdapter> make_cuda_queue(std::shared_ptr<CudaContextAdapter> context,
                                              std::size_t device_idx, int priority) {
  return std::make_unique<CudaQueueAdapter>(std::move(context), device_idx, priority);
}

std::unique_ptr<QueueAdapter> make_cuda_foreign_queue(std::shared_ptr<CudaContextAdapter> context,
                                                      std::size_t device_idx, CUstream stream) {
  return std::make_unique<CudaQueueAdapter>(std::move(context), device_idx, stream);
}

}  // namespace skein::detail
