// SPDX-License-Identifier: BSD-3-Clause
// The process-wide registry of record dtypes (skein/records.hpp), as dtype.cpp and ctypes.cpp ask
// it: a registered record's entry by value or by name.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "skein/ctypes.hpp"
#include "skein/dtype.hpp"

namespace skein::detail {

struct RecordEntry {
  StructType type;
  std::string cname;
  std::size_t itemsize = 0;
  std::size_t alignment = 1;
};

// The entry of a registered record (never moved nor removed once made), or null.
const RecordEntry* find_record(Dtype dtype) noexcept;
// The entry of a record, LogicError naming `call` for an unregistered value.
const RecordEntry& record_entry(Dtype dtype, std::string_view call);
// The record registered under `cname`.
std::optional<Dtype> record_by_name(std::string_view cname) noexcept;
// "a, b, c": the registered names (for error messages); "" when none.
std::string record_names();

}  // namespace skein::detail
