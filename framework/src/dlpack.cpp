// SPDX-License-Identifier: BSD-3-Clause
// DLPack export and import (skein/dlpack.hpp).
#include "skein/dlpack.hpp"

#if SKEIN_HAS_DLPACK

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "skein/detail/errors.hpp"
#if SKEIN_HAS_CUDA
#include "skein/cuda.hpp"
#endif
#if SKEIN_HAS_OPENCL
#include "skein/opencl.hpp"
#endif

namespace skein {

namespace {

struct Code {
  Dtype dtype;
  std::uint8_t code;
};
constexpr Code kCodes[] = {
    {Dtype::int8, kDLInt},          {Dtype::int16, kDLInt},         {Dtype::int32, kDLInt},
    {Dtype::int64, kDLInt},         {Dtype::uint8, kDLUInt},        {Dtype::uint16, kDLUInt},
    {Dtype::uint32, kDLUInt},       {Dtype::uint64, kDLUInt},       {Dtype::float16, kDLFloat},
    {Dtype::bfloat16, kDLBfloat},   {Dtype::float32, kDLFloat},     {Dtype::float64, kDLFloat},
    {Dtype::complex64, kDLComplex}, {Dtype::complex128, kDLComplex}};

// What an exported tensor keeps alive: the array (and so its memory), its shape and strides.
struct Exported {
  DLManagedTensor tensor{};
  std::optional<Array> array;
  std::vector<std::int64_t> shape, strides;
};

}  // namespace

DLDataType dlpack_dtype(Dtype dtype) {
  for (const auto& c : kCodes) {
    if (c.dtype == dtype) {
      return DLDataType{c.code, static_cast<std::uint8_t>(8 * itemsize(dtype)), 1};
    }
  }
  detail::raise_in(SKEIN_HERE, "skein::dlpack_dtype", "Use one of Skein's dtypes.",
                   "dtype {} has no DLPack code", static_cast<int>(dtype));
}

Dtype dtype_from_dlpack(DLDataType type) {
  if (type.lanes == 1) {
    for (const auto& c : kCodes) {
      if (c.code == type.code && 8 * itemsize(c.dtype) == type.bits) return c.dtype;
    }
  }
  detail::raise_in(SKEIN_HERE, "skein::from_dlpack",
                   "Convert the tensor to one of Skein's dtypes (int8-64, uint8-64, float16, "
                   "bfloat16, float32, float64, complex64, complex128) first.",
                   "DLPack type (code {}, {} bits, {} lanes) is not one of Skein's dtypes",
                   type.code, type.bits, type.lanes);
}

DLManagedTensor* to_dlpack(const Array& array) {
  auto holder = std::make_unique<Exported>();
  holder->array = array;
  const std::size_t es = itemsize(array.dtype());
  for (std::size_t i = 0; i < array.shape().size(); ++i) {
    holder->shape.push_back(static_cast<std::int64_t>(array.shape()[i]));
    if (array.strides()[i] % es != 0) {
      detail::raise_in(SKEIN_HERE, "skein::to_dlpack",
                       "Copy the view into a contiguous array first.",
                       "stride {} of {} bytes is not a whole number of {}-byte elements", i,
                       array.strides()[i], es);
    }
    holder->strides.push_back(static_cast<std::int64_t>(array.strides()[i] / es));
  }
  DLTensor& t = holder->tensor.dl_tensor;
  const Context& context = array.queue().context();
  const std::size_t d = array.device_idx();
  switch (context.api().id()) {
#if SKEIN_HAS_CUDA
    case ApiId::cuda:
      t.device =
          DLDevice{kDLCUDA, static_cast<std::int32_t>(cuda::native_device(context.device(d)))};
      t.data = array.data().empty()
                   ? nullptr
                   : reinterpret_cast<void*>(cuda::native_pointer(array.data()) + array.offset());
      t.byte_offset = 0;
      break;
#endif
#if SKEIN_HAS_OPENCL
    case ApiId::opencl:
      t.device = DLDevice{kDLOpenCL, static_cast<std::int32_t>(d)};
      t.data = opencl::native_mem(array.data());
      t.byte_offset = array.data().offset() + array.offset();
      break;
#endif
    default:
      detail::raise_in(SKEIN_HERE, "skein::to_dlpack", "Use a CUDA or OpenCL array.",
                       "arrays of {} cannot be exported", name(context.api().id()));
  }
  t.ndim = static_cast<int>(holder->shape.size());
  t.dtype = dlpack_dtype(array.dtype());
  t.shape = holder->shape.data();
  t.strides = holder->strides.data();
  holder->tensor.manager_ctx = holder.get();
  holder->tensor.deleter = [](DLManagedTensor* self) {
    delete static_cast<Exported*>(self->manager_ctx);
  };
  return &holder.release()->tensor;
}

Array from_dlpack(const Queue& queue, DLManagedTensor* tensor) {
  constexpr const char* call = "skein::from_dlpack";
  if (tensor == nullptr) {
    detail::raise_in(SKEIN_HERE, call, "Pass the tensor's DLManagedTensor.", "the tensor is null");
  }
  const DLTensor& t = tensor->dl_tensor;
  const Context& context = queue.context();
  const ApiId api = context.api().id();
  const Dtype dtype = dtype_from_dlpack(t.dtype);
  const std::size_t es = itemsize(dtype);
  const DLDeviceType want = api == ApiId::cuda ? kDLCUDA : kDLOpenCL;
  if (t.device.device_type != want) {
    detail::raise_in(SKEIN_HERE, call,
                     "Import tensors of the queue's backend only (copy host tensors with "
                     "Array::from_host).",
                     "the tensor is on DLPack device type {}, the queue's backend ({}) is device "
                     "type {}",
                     static_cast<int>(t.device.device_type), name(api), static_cast<int>(want));
  }
  // The queue's device that holds the tensor.
  std::optional<std::size_t> device_idx;
  for (std::size_t d : queue.device_idxs()) {
#if SKEIN_HAS_CUDA
    if (api == ApiId::cuda &&
        static_cast<int>(cuda::native_device(context.device(d))) == t.device.device_id) {
      device_idx = d;
    }
#endif
    if (api == ApiId::opencl && static_cast<int>(d) == t.device.device_id) device_idx = d;
  }
  if (!device_idx) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue over the tensor's device.",
                     "the tensor is on {} device {}, which is not one of the queue's", name(api),
                     t.device.device_id);
  }
  if (t.ndim < 0) {
    detail::raise_in(SKEIN_HERE, call, "Pass a valid tensor.", "ndim is {}", t.ndim);
  }
  Shape shape;
  Strides strides;
  std::size_t elements = 1, extent = es;  // bytes from the first element to past the last
  std::size_t contiguous = es;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] < 0 || (t.strides != nullptr && t.strides[i] < 0)) {
      detail::raise_in(
          SKEIN_HERE, call, "Copy the tensor into a layout without negative strides first.",
          "dimension {} has size {} and stride {}", i, t.shape[i], t.strides ? t.strides[i] : 0);
    }
    const auto n = static_cast<std::size_t>(t.shape[i]);
    const std::size_t stride = t.strides ? static_cast<std::size_t>(t.strides[i]) * es : contiguous;
    contiguous *= n;
    elements *= n;
    if (n > 0) extent += (n - 1) * stride;
    strides.insert(strides.begin(), stride);
    shape.insert(shape.begin(), n);
  }
  if (elements == 0) extent = 0;
  Buffer buffer;
  std::size_t offset = 0;
#if SKEIN_HAS_CUDA
  if (api == ApiId::cuda) {
    const auto pointer = reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset;
    buffer = cuda::buffer_from_native(context, *device_idx, extent ? pointer : 0, extent, [tensor] {
      if (tensor->deleter) tensor->deleter(tensor);
    });
  }
#endif
#if SKEIN_HAS_OPENCL
  if (api == ApiId::opencl) {
    offset = extent ? static_cast<std::size_t>(t.byte_offset) : 0;
    buffer = opencl::buffer_from_native(context, *device_idx, static_cast<cl_mem>(t.data),
                                        offset + extent, [tensor] {
                                          if (tensor->deleter) tensor->deleter(tensor);
                                        });
  }
#endif
  return Array(queue, std::move(buffer), std::move(shape), dtype, std::move(strides), offset);
}

}  // namespace skein

#endif  // SKEIN_HAS_DLPACK
