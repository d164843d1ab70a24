// SPDX-License-Identifier: BSD-3-Clause
// skein_array_*: one skein::Array on one device, Skein's memory or the application's. The C++
// array is C-ordered; a shape given in Fortran order is kept reversed (the same memory).
#include <string>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "native.hpp"
#include "skein/elementwise.hpp"

namespace skein::capi {

namespace {

constexpr std::size_t kMaxDims = 8;

Shape checked_shape(std::size_t ndim, const std::size_t* shape, skein_order order) {
  if (ndim > kMaxDims) {
    invalid("ndim is " + std::to_string(ndim), "Pass 0 .. 8 axes.");
  }
  if (ndim > 0) require(shape, "shape");
  return to_c_order(shape, ndim, order);
}

void check_queue_device(const Queue& queue, std::size_t device) {
  if (!queue.has_device(device)) {
    invalid("device " + std::to_string(device) + " is not one of the queue's " +
                std::to_string(queue.device_idxs().size()) + " devices",
            "Pass an index below skein_runtime_device_count().");
  }
}

void check_nbytes(const Array& array, std::size_t nbytes, const char* what) {
  if (nbytes != array.nbytes()) {
    invalid(std::string(what) + " has nbytes " + std::to_string(nbytes) + ", but the array of shape " +
                to_string(array.shape()) + " and dtype " + std::string(name(array.dtype())) +
                " has " + std::to_string(array.nbytes()) + " bytes",
            "Pass exactly the array's bytes (skein_array_size() * skein_dtype_size()).");
  }
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_array_create(const skein_queue* queue, size_t device, skein_dtype dtype,
                                size_t ndim, const size_t* shape, skein_order order,
                                skein_array** array) {
  return guard("skein_array_create", [&] {
    require(queue, "queue");
    require(array, "array");
    const skein::Dtype type = skein::capi::dtype(dtype);
    skein::Shape c_shape = checked_shape(ndim, shape, order);
    check_queue_device(queue->queue, device);
    *array = new skein_array{skein::Array::empty(queue->queue, std::move(c_shape), type, device)};
  });
}

skein_status skein_array_from_native(const skein_queue* queue, size_t device, void* native,
                                     size_t nbytes, skein_dtype dtype, size_t ndim,
                                     const size_t* shape, skein_order order,
                                     skein_array** array) {
  return guard("skein_array_from_native", [&] {
    require(queue, "queue");
    require(array, "array");
    const skein::Dtype type = skein::capi::dtype(dtype);
    skein::Shape c_shape = checked_shape(ndim, shape, order);
    check_queue_device(queue->queue, device);
    const std::size_t needed = skein::shape_size(c_shape) * skein::itemsize(type);
    if (nbytes < needed) {
      invalid("nbytes is " + std::to_string(nbytes) + ", but shape " + skein::to_string(c_shape) +
                  " (C order) of dtype " + std::string(skein::name(type)) + " needs " +
                  std::to_string(needed),
              "Pass the size of the native allocation, at least the shape's bytes.");
    }
    skein::Buffer buffer =
        buffer_from_native(queue->queue.context(), device, native, nbytes);
    *array = new skein_array{skein::Array(queue->queue, std::move(buffer), std::move(c_shape), type)};
  });
}

skein_status skein_array_destroy(skein_array* array) {
  return guard("skein_array_destroy", [&] { delete array; });
}

skein_status skein_array_dtype(const skein_array* array, skein_dtype* dtype) {
  return guard("skein_array_dtype", [&] {
    require(array, "array");
    require(dtype, "dtype");
    *dtype = c_dtype(array->array.dtype());
  });
}

skein_status skein_array_size(const skein_array* array, size_t* size) {
  return guard("skein_array_size", [&] {
    require(array, "array");
    require(size, "size");
    *size = array->array.size();
  });
}

skein_status skein_array_ndim(const skein_array* array, size_t* ndim) {
  return guard("skein_array_ndim", [&] {
    require(array, "array");
    require(ndim, "ndim");
    *ndim = array->array.ndim();
  });
}

skein_status skein_array_shape(const skein_array* array, skein_order order, size_t* shape) {
  return guard("skein_array_shape", [&] {
    require(array, "array");
    check_order(order);
    if (array->array.ndim() > 0) require(shape, "shape");
    from_c_order(array->array.shape(), order, shape);
  });
}

skein_status skein_array_device(const skein_array* array, size_t* device) {
  return guard("skein_array_device", [&] {
    require(array, "array");
    require(device, "device");
    *device = array->array.device_idx();
  });
}

skein_status skein_array_native(const skein_array* array, void** native, size_t* offset) {
  return guard("skein_array_native", [&] {
    require(array, "array");
    require(native, "native");
    require(offset, "offset");
    native_of(array->array.data(), array->array.offset(), native, offset);
  });
}

skein_status skein_array_to_host(const skein_array* array, void* host, size_t nbytes) {
  return guard("skein_array_to_host", [&] {
    require(array, "array");
    check_nbytes(array->array, nbytes, "the host memory");
    if (nbytes > 0) require(host, "host");
    array->array.get(std::span<std::byte>(static_cast<std::byte*>(host), nbytes));
  });
}

skein_status skein_array_from_host(const skein_array* array, const void* host, size_t nbytes) {
  return guard("skein_array_from_host", [&] {
    require(array, "array");
    check_nbytes(array->array, nbytes, "the host memory");
    if (nbytes > 0) require(host, "host");
    array->array.set(std::span<const std::byte>(static_cast<const std::byte*>(host), nbytes));
  });
}

skein_status skein_array_fill(const skein_array* array, double value) {
  return guard("skein_array_fill", [&] {
    require(array, "array");
    const skein::Array& a = array->array;
    skein::fill(a.queue(), a, skein::Operand(value));
  });
}

}  // extern "C"
