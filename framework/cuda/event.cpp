// SPDX-License-Identifier: BSD-3-Clause
#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaEventAdapter final : public EventAdapter {
 public:
  CudaEventAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   CUevent event, bool timing, bool pooled = true)
      : context_(std::move(context)),
        device_idx_(device_idx),
        event_(event),
        timing_(timing),
        pooled_(pooled) {}

  // Back to the context's pool. Recording it again later is safe while work before this record
  // is pending: waits already enqueued on it keep the state they captured. An unpooled event (IPC)
  // is destroyed.
  ~CudaEventAdapter() override {
    if (pooled_) {
      context_->give_back_event(device_idx_, timing_, event_);
    } else {
      CudaContextScope scope(context_->context(device_idx_), CudaContextScope::NoThrow{});
      report_cuda_cleanup_failure(cu().cuEventDestroy(event_), "cuEventDestroy", device());
    }
  }

  void wait() override { SKEIN_CU_CHECK(cuEventSynchronize, (event_), device()); }

  bool query() override {
    const CUresult result = cu().cuEventQuery(event_);
    if (result == CUDA_SUCCESS) return true;
    if (result == CUDA_ERROR_NOT_READY) return false;
    throw_cuda_error(result, "cuEventQuery", device(), SKEIN_HERE);
  }

  double time_since(EventAdapter& start) override {
    auto* other = dynamic_cast<CudaEventAdapter*>(&start);
    if (!timing_ || (other != nullptr && !other->timing_)) {
      raise_in(SKEIN_HERE, "Event::time_since", "Record the events with Queue::record_event().",
               "an event recorded without timing (Queue::record_marker(), or returned by a "
               "collective) cannot be timed");
    }
    float milliseconds = 0;
    const CUresult result =
        cu().cuEventElapsedTime(&milliseconds, cuda_event_of(start, "Event::time_since"), event_);
    if (result == CUDA_ERROR_NOT_READY) {
      raise_in(SKEIN_HERE, "Event::time_since", "Call wait() on the later event first.",
               "one of the events has not completed yet");
    }
    if (result != CUDA_SUCCESS) {
      throw_cuda_error(result, "cuEventElapsedTime", device(), SKEIN_HERE);
    }
    return milliseconds;
  }

  CUevent event() const { return event_; }

 private:
  const std::string& device() const { return context_->description(device_idx_); }

  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUevent event_;
  bool timing_;
  bool pooled_;
};

}  // namespace

std::shared_ptr<EventAdapter> make_cuda_unpooled_event(std::shared_ptr<CudaContextAdapter> context,
                                                       std::size_t device_idx, CUevent event,
                                                       bool timing) {
  return std::make_shared<CudaEventAdapter>(std::move(context), device_idx, event, timing, false);
}

std::shared_ptr<EventAdapter> record_cuda_event(const std::shared_ptr<CudaContextAdapter>& context,
                                                std::size_t device_idx, CUstream stream,
                                                bool timing) {
  CUevent event = context->take_event(device_idx, timing);
  auto adapter = std::make_shared<CudaEventAdapter>(context, device_idx, event, timing);
  SKEIN_CU_CHECK(cuEventRecord, (event, stream), context->description(device_idx));
  return adapter;
}

CUevent CudaContextAdapter::take_event(std::size_t device_idx, bool timing) {
  {
    std::lock_guard lock(events_.mutex);
    auto& pool = timing ? events_.free : events_.free_untimed;
    if (device_idx < pool.size() && !pool[device_idx].empty()) {
      CUevent event = pool[device_idx].back();
      pool[device_idx].pop_back();
      return event;
    }
  }
  const std::string& device = description(device_idx);
  CudaContextScope scope(context(device_idx), device);
  CUevent event = nullptr;
  SKEIN_CU_CHECK(cuEventCreate, (&event, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                 device);
  return event;
}

void CudaContextAdapter::give_back_event(std::size_t device_idx, bool timing,
                                         CUevent event) noexcept {
  // Bounded: a burst of live events must not keep that many forever.
  constexpr std::size_t kMaxPooled = 256;
  try {
    std::lock_guard lock(events_.mutex);
    auto& pool = timing ? events_.free : events_.free_untimed;
    if (pool.size() <= device_idx) pool.resize(devices_.size());
    if (pool[device_idx].size() < kMaxPooled) {
      pool[device_idx].push_back(event);
      return;
    }
  } catch (...) {
    // Out of memory growing the pool: destroy it instead.
  }
  report_cuda_cleanup_failure(cu().cuEventDestroy(event), "cuEventDestroy",
                              description(device_idx));
}

CudaContextAdapter::EventPool::~EventPool() {
  for (const auto* pool : {&free, &free_untimed}) {
    for (const auto& events : *pool) {
      for (CUevent event : events) (void)cu().cuEventDestroy(event);
    }
  }
}

CUevent cuda_event_of(EventAdapter& event, const char* call) {
  auto* cuda_event = dynamic_cast<CudaEventAdapter*>(&event);
  if (cuda_event == nullptr) {
    raise_in(SKEIN_HERE, call, "Use events recorded on queues of a CUDA context.",
             "the event does not belong to the CUDA backend");
  }
  return cuda_event->event();
}

}  // namespace skein::detail
