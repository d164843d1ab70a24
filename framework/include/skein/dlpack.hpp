// SPDX-License-Identifier: BSD-3-Clause
// DLPack (dlpack/dlpack.h, the tensor exchange format of PyTorch, CuPy, JAX and C/C++ libraries):
// arrays out of Skein and tensors into it, without a copy. Needs the DLPack header (Debian's
// libdlpack-dev); SKEIN_HAS_DLPACK says whether this build has it.
//
// Devices: a CUDA array is a kDLCUDA tensor whose device_id is the CUDA device ordinal and whose
// data is the device address; an OpenCL array is a kDLOpenCL tensor whose device_id is the
// device's index in the array's context and whose data is the cl_mem, with the array's start in
// byte_offset. Strides are in elements (DLPack's unit; Skein's own are in bytes).
#pragma once

#include "skein/config.hpp"

#if SKEIN_HAS_DLPACK

#include <dlpack/dlpack.h>

#include "skein/array.hpp"
#include "skein/export.hpp"
#include "skein/queue.hpp"

namespace skein {

// Exports `array` (CuPy's toDlpack): a DLManagedTensor over its memory, with its shape and
// strides, that keeps the memory alive until the consumer calls its deleter; memory from a queue's
// pool (an array made without an allocator) is then freed, never reused, since the consumer's work
// may run on streams Skein does not see. LogicError for a dtype DLPack cannot describe exactly
// (none: every Skein dtype has a DLPack code) or a stride that is not a whole number of elements.
SKEIN_EXPORT DLManagedTensor* to_dlpack(const Array& array);

// Imports `tensor` (CuPy's fromDlpack): an Array over its memory on `queue`, no copy. Skein owns
// the tensor from then on: its deleter runs once the last Array or Buffer over the memory is gone.
// LogicError, and the tensor stays the caller's, for a tensor on the host or on another kind of
// device, on a device that is not one of the queue's, of a dtype Skein does not have (lanes != 1,
// bool, other widths), or with negative strides.
SKEIN_EXPORT Array from_dlpack(const Queue& queue, DLManagedTensor* tensor);

// The DLPack data type of a dtype, and back (LogicError for one Skein does not have).
SKEIN_EXPORT DLDataType dlpack_dtype(Dtype dtype);
SKEIN_EXPORT Dtype dtype_from_dlpack(DLDataType type);

}  // namespace skein

#endif  // SKEIN_HAS_DLPACK
