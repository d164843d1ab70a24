// SPDX-License-Identifier: BSD-3-Clause
// skein_dtype's sizes and names, from skein::Dtype's (the same numbering).
#include "skein/dtype.hpp"
#include "skein/skein.h"

namespace {

bool is_dtype(skein_dtype dtype) {
  const int v = static_cast<int>(dtype);
  return v >= SKEIN_INT8 && v <= SKEIN_COMPLEX128;
}

}  // namespace

extern "C" {

size_t skein_dtype_size(skein_dtype dtype) {
  return is_dtype(dtype) ? skein::itemsize(static_cast<skein::Dtype>(dtype)) : 0;
}

const char* skein_dtype_name(skein_dtype dtype) {
  // skein::name gives views of string literals: NUL-terminated.
  return is_dtype(dtype) ? skein::name(static_cast<skein::Dtype>(dtype)).data() : "unknown dtype";
}

}  // extern "C"
