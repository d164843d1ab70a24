// SPDX-License-Identifier: BSD-3-Clause
// What the HDF5 files' sources (hdf5_*.cpp) share below File::Impl: HDF5's errors as Skein's
// exceptions (SKEIN_H5_CHECK), identifiers that close themselves (Handle), the mapping between
// dtypes and HDF5 types, attributes (in the file and as JSON between ranks), dataset creation and
// description, and the small checks of names and options. Only for builds with HDF5 and MPI.
#pragma once

#include <skein/config.hpp>

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <hdf5.h>

#include <fmt/format.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skein/detail/errors.hpp"
#include "skein/detail/trace.hpp"
#include "skein/error.hpp"
#include "skein/hdf5.hpp"

namespace skein::hdf5 {

namespace internal {

using json = nlohmann::json;

constexpr const char* kRankZeroTag = "through rank 0";
constexpr int kTransferTag = 4711;  // messages of the path through rank 0, on the file's own comm

// ---- HDF5 errors (hdf5_errors.cpp) ----------------------------------------------------------

// HDF5 prints its error stack to stderr by default. During Skein's calls the stack becomes the
// exception's text instead; the previous setting is restored afterwards, so the application's own
// HDF5 calls behave as before.
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// HDF5's error stack, outermost (the API call) first, and clears it.
std::vector<std::string> hdf5_error_lines();
// The stack in one line: the first entry says what failed, the last ones why (e.g. the system's
// "No such file or directory").
std::string hdf5_error_stack(std::vector<std::string> lines);
std::string hdf5_error_stack();

[[noreturn]] void raise_hdf5(const char* call, const std::string& where, const char* file,
                             int line);

template <class T, class Where>
T hdf5_checked(T result, const char* call, Where&& where, const char* file, int line) {
  if (result < 0) [[unlikely]]
    raise_hdf5(call, where(), file, line);
  return result;
}

}  // namespace internal

// SKEIN_H5_CHECK(H5Dopen2, (file, name, H5P_DEFAULT), describe_where) calls HDF5 and yields its
// result; a negative one (every HDF5 call's failure) throws RuntimeError with the call, where it
// was (an expression evaluated only on failure) and HDF5's error stack.
#define SKEIN_H5_CHECK(function, arguments, where)                                        \
  (::skein::hdf5::internal::hdf5_checked(                                                 \
      function arguments, #function, [&]() -> std::string { return std::string(where); }, \
      __FILE__, __LINE__))

namespace internal {

// An HDF5 identifier that closes itself.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Gives up ownership (the caller closes it).
  hid_t release() { return std::exchange(id_, -1); }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// ---- types (hdf5_types.cpp) -----------------------------------------------------------------

// The HDF5 type of a dtype, in memory and in the file (the same: native little-endian, as h5py
// writes). Complex numbers are compounds {r, i}; reading uses the file's member names so that
// HDF5 matches the members without a conversion.
Handle type_of(Dtype dtype, const std::string& real_name = "r", const std::string& imag_name = "i");

struct FileType {
  Dtype dtype = Dtype::uint8;
  std::string real_name = "r", imag_name = "i";  // complex: the compound's member names
};

// The dtype a file type maps to, or why there is none.
std::optional<FileType> dtype_of_type(hid_t t, std::string& why);

// ---- attributes (hdf5_attributes.cpp) -------------------------------------------------------

// Values travel between ranks as JSON; doubles as their bits (JSON has no NaN or infinity).
json attribute_to_json(const AttributeValue& value);
AttributeValue attribute_from_json(const json& j);
json attributes_to_json(const Attributes& attributes);
Attributes attributes_from_json(const json& j);

// Writes (or replaces) one attribute of an open object.
void write_attribute(hid_t object, const std::string& object_name, const std::string& name,
                     const AttributeValue& value);
// Every attribute of an open object that has an AttributeValue (compounds, string arrays and
// empty dataspaces have none and are left out).
Attributes read_attributes(hid_t object, const std::string& object_name);

// ---- datasets (hdf5_datasets.cpp) -----------------------------------------------------------

// Rows along the first axis (a 0-D dataset is one row) and elements per row (hdf5_transfer.cpp).
std::size_t rows_of(const Shape& shape);
std::size_t row_elements(const Shape& shape);

json info_to_json(const DatasetInfo& info);
DatasetInfo info_from_json(const json& j);

inline std::string shape_text(const Shape& shape) { return skein::to_string(shape); }

// Names relative to the root group, as h5py shows them: "/fields/u/" is "fields/u" ("/" stays).
inline std::string normalise(const std::string& name) {
  std::string n = name;
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  while (n.size() > 1 && n.front() == '/') n.erase(0, 1);
  return n;
}

void check_name(const std::string& name, const std::string& call);
void check_write_options(const WriteOptions& o, const std::string& call);
std::string describe_options(const WriteOptions& o);

// ---- traces ----------------------------------------------------------------------------------

// NVTX ranges of the writes and reads (skein/detail/trace.hpp): registered once.
inline skein::detail::TraceName trace_write() {
  static const skein::detail::TraceName name = skein::detail::trace_name("hdf5 write");
  return name;
}
inline skein::detail::TraceName trace_read() {
  static const skein::detail::TraceName name = skein::detail::trace_name("hdf5 read");
  return name;
}

}  // namespace internal

using namespace internal;

}  // namespace skein::hdf5

#endif
