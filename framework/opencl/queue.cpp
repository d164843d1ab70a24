// SPDX-License-Identifier: BSD-3-Clause
#include <optional>

#include "adapters.hpp"
#include "check.hpp"

namespace skein::detail::opencl {

namespace {
cl_mem mem_of(BufferAdapter& buffer) { return static_cast<OclBuffer&>(buffer).mem(); }

// OpenCL's rules for a rectangle's pitches: row pitch >= region[0]; slice pitch >= region[1] *
// row pitch and a multiple of it. With depth 1 the slice pitch does not matter, so it is given as
// height * row pitch (what OpenCL computes for 0).
struct ClRect {
  std::size_t dst_origin[3];
  std::size_t src_origin[3];
  std::size_t region[3];
  std::size_t dst_row_pitch, dst_slice_pitch, src_row_pitch, src_slice_pitch;
};

bool pitches_ok(std::size_t width, std::size_t height, std::size_t depth, std::size_t row,
                std::size_t slice) {
  if (row < width) return false;
  return depth == 1 || (slice >= height * row && slice % row == 0);
}

std::optional<ClRect> cl_rect(const RectRegion& r) {
  if (!pitches_ok(r.width, r.height, r.depth, r.dst_row_pitch, r.dst_slice_pitch) ||
      !pitches_ok(r.width, r.height, r.depth, r.src_row_pitch, r.src_slice_pitch)) {
    return std::nullopt;
  }
  ClRect c{.dst_origin = {0, 0, 0},
           .src_origin = {0, 0, 0},
           .region = {r.width, r.height, r.depth},
           .dst_row_pitch = r.dst_row_pitch,
           .dst_slice_pitch = r.depth == 1 ? r.height * r.dst_row_pitch : r.dst_slice_pitch,
           .src_row_pitch = r.src_row_pitch,
           .src_slice_pitch = r.depth == 1 ? r.height * r.src_row_pitch : r.src_slice_pitch};
  // The byte offset of an origin is origin[0] + origin[1] * row pitch + origin[2] * slice pitch;
  // the offsets are split so (x within a row, y within a slice), as drivers' overlap checks (the
  // specification's own) expect.
  auto split = [](std::size_t offset, std::size_t row, std::size_t slice, std::size_t* origin) {
    origin[2] = offset / slice;
    origin[1] = offset % slice / row;
    origin[0] = offset % slice % row;
  };
  split(r.dst_offset, c.dst_row_pitch, c.dst_slice_pitch, c.dst_origin);
  split(r.src_offset, c.src_row_pitch, c.src_slice_pitch, c.src_origin);
  return c;
}
}  // namespace

OclQueue::OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx, QueueSync sync)
    : context_(std::move(context)),
      device_idx_(device_idx),
      device_(context_->describe_device(device_idx)),
      sync_(sync) {
  cl_int err = CL_SUCCESS;
  // Profiling is on so that events can time work (Event::time_since).
  queue_ = clCreateCommandQueue(context_->get(), context_->device_id(device_idx),
                                CL_QUEUE_PROFILING_ENABLE, &err);
  SKEIN_CL_CHECK_RESULT(err, "clCreateCommandQueue", device_);
  context_->register_queue(queue_);
}

OclQueue::OclQueue(std::shared_ptr<OclContext> context, std::size_t device_idx,
                   cl_command_queue queue)
    : context_(std::move(context)),
      device_idx_(device_idx),
      device_(context_->describe_device(device_idx)),
      queue_(queue),
      owned_(false) {
  SKEIN_CL_CHECK(clRetainCommandQueue(queue_), device_);
  context_->register_queue(queue_);
}

OclQueue::~OclQueue() {
  context_->unregister_queue(queue_);
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
  SKEIN_CL_CHECK(clEnqueueReadBuffer(queue_, mem_of(src), blocking ? CL_TRUE : CL_FALSE, src_offset,
                                     size, dst, 0, nullptr, nullptr),
                 device_);
}

void OclQueue::copy(BufferAdapter& dst, std::size_t dst_offset, BufferAdapter& src,
                    std::size_t src_offset, std::size_t size) {
  if (size == 0) return;
  SKEIN_CL_CHECK(clEnqueueCopyBuffer(queue_, mem_of(src), mem_of(dst), src_offset, dst_offset, size,
                                     0, nullptr, nullptr),
                 device_);
}

void OclQueue::fill_zero(BufferAdapter& dst, std::size_t offset, std::size_t size) {
  if (size == 0) return;
  const cl_uchar zero = 0;
  SKEIN_CL_CHECK(clEnqueueFillBuffer(queue_, mem_of(dst), &zero, sizeof(zero), offset, size, 0,
                                     nullptr, nullptr),
                 device_);
}

// rect_refused: NVIDIA's driver refuses (CL_INVALID_VALUE) some rectangles that the specification
// allows and PoCL takes (seen on an H200 with views that reshape makes); such a rectangle is not an
// error of the caller's: return false, and the caller copies through its kernel path instead.
bool OclQueue::write_rect(BufferAdapter& dst, const void* src, const RectRegion& region,
                          bool blocking) {
  const auto r = cl_rect(region);
  if (!r) return false;
  const cl_int err =
      clEnqueueWriteBufferRect(queue_, mem_of(dst), blocking ? CL_TRUE : CL_FALSE, r->dst_origin,
                               r->src_origin, r->region, r->dst_row_pitch, r->dst_slice_pitch,
                               r->src_row_pitch, r->src_slice_pitch, src, 0, nullptr, nullptr);
  if (err == CL_INVALID_VALUE) return false;  // see rect_refused
  SKEIN_CL_CHECK_RESULT(err, "clEnqueueWriteBufferRect", device_);
  return true;
}

bool OclQueue::read_rect(void* dst, BufferAdapter& src, const RectRegion& region, bool blocking) {
  const auto r = cl_rect(region);
  if (!r) return false;
  const cl_int err =
      clEnqueueReadBufferRect(queue_, mem_of(src), blocking ? CL_TRUE : CL_FALSE, r->src_origin,
                              r->dst_origin, r->region, r->src_row_pitch, r->src_slice_pitch,
                              r->dst_row_pitch, r->dst_slice_pitch, dst, 0, nullptr, nullptr);
  if (err == CL_INVALID_VALUE) return false;  // see rect_refused
  SKEIN_CL_CHECK_RESULT(err, "clEnqueueReadBufferRect", device_);
  return true;
}

bool OclQueue::copy_rect(BufferAdapter& dst, BufferAdapter& src, const RectRegion& region) {
  const auto r = cl_rect(region);
  if (!r) return false;
  // Within one buffer OpenCL refuses rectangles whose row and slice pitches both differ.
  if (mem_of(dst) == mem_of(src) && r->dst_row_pitch != r->src_row_pitch &&
      r->dst_slice_pitch != r->src_slice_pitch) {
    return false;
  }
  const cl_int err = clEnqueueCopyBufferRect(
      queue_, mem_of(src), mem_of(dst), r->src_origin, r->dst_origin, r->region, r->src_row_pitch,
      r->src_slice_pitch, r->dst_row_pitch, r->dst_slice_pitch, 0, nullptr, nullptr);
  if (err == CL_INVALID_VALUE) return false;  // see rect_refused
  SKEIN_CL_CHECK_RESULT(err, "clEnqueueCopyBufferRect", device_);
  return true;
}

std::shared_ptr<EventAdapter> OclQueue::record() {
  cl_event event = nullptr;
  SKEIN_CL_CHECK(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), device_);
  return std::make_shared<OclEvent>(event, device_);
}

std::shared_ptr<EventAdapter> OclQueue::record_flags(const EventFlags& flags) {
  cl_event event = nullptr;
  SKEIN_CL_CHECK(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), device_);
  return std::make_shared<OclEvent>(event, device_, !flags.disable_timing);
}

void OclQueue::wait_for(EventAdapter& event) {
  cl_event e = static_cast<OclEvent&>(event).get();
  SKEIN_CL_CHECK(clEnqueueBarrierWithWaitList(queue_, 1, &e, nullptr), device_);
}

void OclQueue::wait_for_queue(QueueAdapter& other) {
  cl_event marker = nullptr;
  SKEIN_CL_CHECK(
      clEnqueueMarkerWithWaitList(static_cast<OclQueue&>(other).queue_, 0, nullptr, &marker),
      static_cast<OclQueue&>(other).device_);
  const cl_int err = clEnqueueBarrierWithWaitList(queue_, 1, &marker, nullptr);
  clReleaseEvent(marker);
  SKEIN_CL_CHECK_RESULT(err, "clEnqueueBarrierWithWaitList", device_);
}

}  // namespace skein::detail::opencl
