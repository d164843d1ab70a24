// SPDX-License-Identifier: BSD-3-Clause
// What the layers above the framework (the NCCL communicator, collectives/comm/nccl/) use of the
// CUDA backend's contexts: a Skein Context's CUcontexts, kept alive by its adapter, and the scope
// that makes one current. Internal interface (not installed); the backend's own adapters stay in
// framework/cuda/adapters.hpp.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>

#include "skein/context.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/export.hpp"

namespace skein::detail {

// Makes a CUcontext current for a scope and restores the previous one at its end. When the
// context is current already (the common case: one thread driving one device) it costs one
// cuCtxGetCurrent; otherwise it pushes the context and pops it at the end, so that Skein never
// changes what the CUDA runtime or the application sees as current.
class SKEIN_EXPORT CudaContextScope {
 public:
  // Throws a Skein error naming `device` when the context cannot be made current.
  CudaContextScope(CUcontext context, const std::string& device);
  // For destructors: never throws; entered() says whether the context is current.
  struct NoThrow {};
  CudaContextScope(CUcontext context, NoThrow) noexcept;
  ~CudaContextScope();
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;

  bool entered() const { return entered_; }

 private:
  bool pushed_ = false;
  bool entered_ = false;
};

// The CUDA backend's adapter of `context` (holding it keeps the context's CUcontexts alive), or
// null when `context` is not a CUDA context.
SKEIN_EXPORT std::shared_ptr<ContextAdapter> cuda_context_adapter(const Context& context);
// The CUcontext of device `device_idx` of an adapter from cuda_context_adapter(), and that
// device's description for messages ("CUDA device 0 (...)"). LogicError for another adapter.
SKEIN_EXPORT CUcontext cuda_context(const ContextAdapter& adapter, std::size_t device_idx);
SKEIN_EXPORT const std::string& cuda_device_description(const ContextAdapter& adapter,
                                                        std::size_t device_idx);

}  // namespace skein::detail
