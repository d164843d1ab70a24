// SPDX-License-Identifier: BSD-3-Clause
// The checks and conversions of handles.hpp: what a C caller passes, checked before it reaches
// the C++ layers, whose enumerations a C int out of range would break.
#include <algorithm>
#include <string>
#include <vector>

#include "handles.hpp"
#include "skein/error.hpp"

namespace skein::capi {

void invalid(const std::string& what, const std::string& hint) {
  throw LogicError(ErrorInfo{.what = what, .hint = hint});
}

Dtype dtype(skein_dtype value, const char* parameter) {
  const int v = static_cast<int>(value);
  if (v < SKEIN_INT8 || v > SKEIN_COMPLEX128) {
    invalid(std::string(parameter) + " is " + std::to_string(v) + ", not a skein_dtype",
            "Pass one of SKEIN_INT8 (0) .. SKEIN_COMPLEX128 (13).");
  }
  return static_cast<Dtype>(v);
}

skein_dtype c_dtype(Dtype value) { return static_cast<skein_dtype>(static_cast<int>(value)); }

ReduceOp reduce_op(skein_reduce_op value) {
  switch (value) {
    case SKEIN_SUM:
      return ReduceOp::sum;
    case SKEIN_PROD:
      return ReduceOp::prod;
    case SKEIN_MIN:
      return ReduceOp::min;
    case SKEIN_MAX:
      return ReduceOp::max;
    case SKEIN_AVG:
      return ReduceOp::avg;
  }
  invalid("op is " + std::to_string(static_cast<int>(value)) + ", not a skein_reduce_op",
          "Pass one of SKEIN_SUM (0), SKEIN_PROD, SKEIN_MIN, SKEIN_MAX, SKEIN_AVG (4).");
}

void check_order(skein_order order) {
  if (order != SKEIN_ORDER_C && order != SKEIN_ORDER_FORTRAN) {
    invalid("order is " + std::to_string(static_cast<int>(order)) + ", not a skein_order",
            "Pass SKEIN_ORDER_C (0) or SKEIN_ORDER_FORTRAN (1).");
  }
}

std::vector<std::size_t> to_c_order(const std::size_t* values, std::size_t n, skein_order order) {
  check_order(order);
  std::vector<std::size_t> out(values, values + n);
  if (order == SKEIN_ORDER_FORTRAN) std::reverse(out.begin(), out.end());
  return out;
}

void from_c_order(const std::vector<std::size_t>& values, skein_order order, std::size_t* out) {
  check_order(order);
  if (order == SKEIN_ORDER_FORTRAN) {
    std::reverse_copy(values.begin(), values.end(), out);
  } else {
    std::copy(values.begin(), values.end(), out);
  }
}

std::vector<Array> arrays(skein_array* const* handles, std::size_t count, std::size_t expected,
                          const char* parameter) {
  if (count != expected) {
    invalid("count is " + std::to_string(count) + ", but the communicator has " +
                std::to_string(expected) + " local devices",
            std::string("Pass one array per local device in ") + parameter +
                " (count = skein_communicator_local_size()).");
  }
  if (count > 0) require(handles, parameter);
  std::vector<Array> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (handles[i] == nullptr) {
      invalid(std::string(parameter) + "[" + std::to_string(i) + "] is NULL",
              "Pass an array made by skein_array_create or skein_array_from_native.");
    }
    out.push_back(handles[i]->array);
  }
  return out;
}

}  // namespace skein::capi
