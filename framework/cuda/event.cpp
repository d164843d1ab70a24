#include "adapters.hpp"

namespace skein::detail {

namespace {

class CudaEventAdapter final : public EventAdapter {
 public:
  CudaEventAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                   CUevent event)
      : context_(std::move(context)), device_idx_(device_idx), event_(event) {}

  ~CudaEventAdapter() override {
    // Safe while work before the event is pending: the driver releases it once it completes.
    report_cuda_cleanup_failure(cu().cuEventDestroy(event_), "cuEventDestroy", device());
  }

  void wait() override { SKEIN_CU_CHECK(cuEventSynchronize, (event_), device()); }

  bool query() override {
    const CUresult result = cu().cuEventQuery(event_);
    if (result == CUDA_SUCCESS) return true;
    if (result == CUDA_ERROR_NOT_READY) return false;
    throw_cuda_error(result, "cuEventQuery", device(), SKEIN_HERE);
  }

  double time_since(EventAdapter& start) override {
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
};

}  // namespace

std::shared_ptr<EventAdapter> record_cuda_event(std::shared_ptr<CudaContextAdapter> context,
                                                std::size_t device_idx, CUstream stream) {
  const std::string& device = context->description(device_idx);
  CudaContextScope scope(context->context(device_idx), device);
  CUevent event = nullptr;
  // Timing stays on (CU_EVENT_DEFAULT): Event::time_since needs it, and recording costs the same.
  SKEIN_CU_CHECK(cuEventCreate, (&event, CU_EVENT_DEFAULT), device);
  auto adapter = std::make_shared<CudaEventAdapter>(std::move(context), device_idx, event);
  SKEIN_CU_CHECK(cuEventRecord, (event, stream), device);
  return adapter;
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
