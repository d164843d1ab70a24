// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/trace.hpp"

#include "skein/driver.hpp"

// The CUDA toolkit's include directory is on this library's path only in builds with CUDA.
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define SKEIN_HAS_NVTX 1
#endif

namespace skein::detail {

#ifdef SKEIN_HAS_NVTX

namespace {
// Made on first use; null when no tool is attached (NVTX's stubs return null).
nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("Skein");
  return handle;
}
}  // namespace

TraceName trace_name(const char* name) noexcept {
  nvtxDomainHandle_t d = domain();
  if (d == nullptr) return nullptr;
  return nvtxDomainRegisterStringA(d, name);
}

bool trace_push(TraceName name) noexcept {
  if (name == nullptr) return false;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered =
      const_cast<nvtxStringHandle_t>(static_cast<const nvtxStringRegistration_st*>(name));
  nvtxDomainRangePushEx(domain(), &attributes);
  return true;
}

bool trace_push_text(const char* name) noexcept {
  nvtxDomainHandle_t d = domain();
  if (d == nullptr || name == nullptr) return false;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  nvtxDomainRangePushEx(d, &attributes);
  return true;
}

void trace_pop() noexcept { nvtxDomainRangePop(domain()); }

#else

TraceName trace_name(const char*) noexcept { return nullptr; }
bool trace_push(TraceName) noexcept { return false; }
bool trace_push_text(const char*) noexcept { return false; }
void trace_pop() noexcept {}

#endif

}  // namespace skein::detail

namespace skein {

ProfileRange::ProfileRange(const char* name) noexcept : pushed_(detail::trace_push_text(name)) {}

ProfileRange::~ProfileRange() {
  if (pushed_) detail::trace_pop();
}

}  // namespace skein
