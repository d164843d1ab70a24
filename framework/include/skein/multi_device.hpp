// SPDX-License-Identifier: BSD-3-Clause
// MultiDevice<T>: one value per device of a context (grunnur's MultiDevice), for launch sizes and
// kernel arguments that differ between devices.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "skein/export.hpp"

namespace skein {

namespace detail {
[[noreturn]] SKEIN_EXPORT void raise_missing_device_value(std::size_t device_idx, std::size_t size);
}

// Threads: a plain value, like std::vector: const calls from several threads at once are fine;
// set() must not run at the same time as any other use of the same object.
template <class T>
class MultiDevice {
 public:
  MultiDevice() = default;
  // Values for devices 0, 1, ... of the context, in order.
  MultiDevice(std::initializer_list<T> values) {
    for (const auto& v : values) values_.emplace_back(v);
  }
  explicit MultiDevice(std::vector<T> values) {
    for (auto& v : values) values_.emplace_back(std::move(v));
  }
  // Values for the given device indices only.
  explicit MultiDevice(std::vector<std::pair<std::size_t, T>> values) {
    for (auto& [idx, v] : values) set(idx, std::move(v));
  }

  void set(std::size_t device_idx, T value) {
    if (values_.size() <= device_idx) values_.resize(device_idx + 1);
    values_[device_idx] = std::move(value);
  }
  bool has(std::size_t device_idx) const {
    return device_idx < values_.size() && values_[device_idx].has_value();
  }
  // Throws LogicError when the device has no value.
  const T& operator[](std::size_t device_idx) const {
    if (!has(device_idx)) detail::raise_missing_device_value(device_idx, values_.size());
    return *values_[device_idx];
  }

 private:
  std::vector<std::optional<T>> values_;
};

template <class T>
struct is_multi_device : std::false_type {};
template <class T>
struct is_multi_device<MultiDevice<T>> : std::true_type {};

}  // namespace skein
