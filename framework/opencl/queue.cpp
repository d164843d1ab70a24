#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail::opencl {

namespace {
cl_mem mem_of(BufferAdapter& buffer) { return static_cast<OclBuffer&>(buffer).mem(); }
}  // namespace

OclQueue::OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx)
    : context_(std::move(context)),
      device_idx_(device_idx),
      device_(context_->describe_device(device_idx)) {
  cl_int err = CL_SUCCESS;
  // Profiling is on so that events can time work (Event::time_since).
  queue_ = clCreateCommandQueue(context_->get(), context_->device_id(device_idx),
                                CL_QUEUE_PROFILING_ENABLE, &err);
  SKEIN_CL_CHECK(err, device_);
}

OclQueue::OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx,
                   cl_command_queue queue)
    : context_(std::move(context)),
      device_idx_(device_idx),
      device_(context_->describe_device(device_idx)),
      queue_(queue),
      owned_(false) {
  SKEIN_CL_CHECK(clRetainCommandQueue(queue_), device_);
}

OclQueue::~OclQueue() {
  if (owned_) clFinish(queue_);
  clReleaseCommandQueue(queue_);
}

void OclQueue::synchronize() { SKEIN_CL_CHECK(clFinish(queue_), device_); }

void OclQueue::write(BufferAdapter& dst, std::size_t dst_offset, const void* src, std::size_t size,
                     bool blocking) {
  if (size == 0) return;
  SKEIN_CL_CHECK(clEnqueueWriteBuffer(queue_, mem_of(dst), blocking ? CL_TRUE : CL_FALSE,
                                      dst_offset, size, src, 0, nullptr, nullptr),
                 device_);
}

void OclQueue::read(void* dst, BufferAdapter& src, std::size_t src_offset, std::size_t size,
                    bool blocking) {
  if (size == 0) return;
  SKEIN_CL_CHECK(clEnqueueReadBuffer(queue_, mem_of(src), blocking ? CL_TRUE : CL_FALSE,
                                     src_offset, size, dst, 0, nullptr, nullptr),
                 device_);
}

void OclQueue::copy(BufferAdapter& dst, std::size_t dst_offset, BufferAdapter& src,
                    std::size_t src_offset, std::size_t size) {
  if (size == 0) return;
  SKEIN_CL_CHECK(clEnqueueCopyBuffer(queue_, mem_of(src), mem_of(dst), src_offset, dst_offset,
                                     size, 0, nullptr, nullptr),
                 device_);
}

void OclQueue::fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) {
  if (size == 0) return;
  const cl_uchar zero = 0;
  SKEIN_CL_CHECK(clEnqueueFillBuffer(queue_, mem_of(dst), &zero, sizeof(zero), offset, size, 0,
                                     nullptr, nullptr),
                 device_);
}

std::shared_ptr<EventAdapter> OclQueue::record() {
  cl_event event = nullptr;
  SKEIN_CL_CHECK(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), device_);
  return std::make_shared<OclEvent>(event, device_);
}

void OclQueue::wait_for(EventAdapter& event) {
  cl_event e = static_cast<OclEvent&>(event).get();
  SKEIN_CL_CHECK(clEnqueueBarrierWithWaitList(queue_, 1, &e, nullptr), device_);
}

void OclQueue::wait_for_queue(QueueAdapter& other) {
  cl_event marker = nullptr;
  SKEIN_CL_CHECK(clEnqueueMarkerWithWaitList(static_cast<OclQueue&>(other).queue_, 0, nullptr,
                                             &marker),
                 static_cast<OclQueue&>(other).device_);
  const cl_int err = clEnqueueBarrierWithWaitList(queue_, 1, &marker, nullptr);
  clReleaseEvent(marker);
  SKEIN_CL_CHECK(err, device_);
}

}  // namespace skein::detail::opencl
