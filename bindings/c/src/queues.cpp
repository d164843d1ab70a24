// SPDX-License-Identifier: BSD-3-Clause
// skein_queue_*: a skein::Queue over every device of a runtime, Skein's streams or the
// application's.
#include "errors.hpp"
#include "handles.hpp"
#include "native.hpp"

using namespace skein::capi;

extern "C" {

skein_status skein_queue_create(const skein_runtime* runtime, skein_queue** queue) {
  return guard("skein_queue_create", [&] {
    require(runtime, "runtime");
    require(queue, "queue");
    *queue = new skein_queue{skein::Queue(runtime->runtime->context())};
  });
}

skein_status skein_queue_from_native(const skein_runtime* runtime, void* const* streams,
                                     size_t count, skein_queue** queue) {
  return guard("skein_queue_from_native", [&] {
    require(runtime, "runtime");
    require(queue, "queue");
    *queue = new skein_queue{queue_from_native(runtime->runtime->context(), streams, count)};
  });
}

skein_status skein_queue_destroy(skein_queue* queue) {
  return guard("skein_queue_destroy", [&] { delete queue; });
}

skein_status skein_queue_synchronize(const skein_queue* queue) {
  return guard("skein_queue_synchronize", [&] {
    require(queue, "queue");
    queue->queue.synchronize();
  });
}

}  // extern "C"
