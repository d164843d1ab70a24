// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files of distributed arrays (see <skein/hdf5.hpp> for what is written and the two paths).
//
// How the ranks stay in step:
//   - Each public call starts with an agreement: every rank hashes its call (name, shape, dtype,
//     options) and the ranks compare the hashes (detail::Agreement, agreement.hpp: non-blocking
//     MPI under SKEIN_COLLECTIVE_TIMEOUT). Different calls would otherwise meet in MPI-IO's
//     collectives and hang, or write a file nobody asked for; a rank that never arrives makes the
//     others raise TimeoutError naming the call and the ranks. Every exchange of Skein's own
//     (failures, results, the rows through rank 0) goes through the same Agreement and deadline;
//     only HDF5's MPI-IO collectives inside one call have none (a rank that dies inside them is
//     ended with the job by mpirun or srun).
//   - HDF5 work runs on the *file ranks*: every rank on the parallel path, rank 0 only through
//     rank 0. Whatever fails there is caught, and share_failure() tells every rank (the lowest
//     failing rank's message travels), so all raise together and none waits in a collective.
//   - Inside a transfer loop a rank that failed keeps taking part (empty selections, empty
//     messages) until the loop ends: collective calls and messages must pair up.
//   - Results read from the file on rank 0 alone (through rank 0) are broadcast as JSON.
//
// Rows: a dataset of shape (n, ...) is moved in pieces of whole rows along the first axis. Every
// rank owns one contiguous range of rows (a DistArray rank's blocks are consecutive); a piece is
// at most FileOptions::max_bytes_per_call bytes (at least one row). A 0-D (scalar) dataset is one
// row of one element.
#include "skein/hdf5.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>

#include "skein/detail/errors.hpp"
#include "skein/detail/trace.hpp"
#include "skein/communicator.hpp"
#include "skein/error.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <hdf5.h>

#include <nlohmann/json.hpp>

#include "skein/detail/agreement.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/mpi_util.hpp"
#endif

namespace skein::hdf5 {

std::string to_string(const AttributeValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>) {
          return fmt::format("\"{}\"", v);
        } else if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, double>) {
          return fmt::format("{}", v);
        } else {
          return fmt::format("[{}]", fmt::join(v, ", "));
        }
      },
      value);
}

std::string DatasetInfo::describe() const {
  std::string text = fmt::format("{}: {} {}", name, skein::name(dtype), skein::to_string(shape));
  if (chunk_rows > 0) text += fmt::format(", chunks of {} rows", chunk_rows);
  if (compression > 0) text += fmt::format(", deflate {}", compression);
  if (checksum) text += ", fletcher32";
  if (step) text += fmt::format(", step {}", *step);
  if (time) text += fmt::format(", time {}", *time);
  return text;
}

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace {

using json = nlohmann::json;

constexpr const char* kRankZeroTag = "through rank 0";
constexpr int kTransferTag = 4711;  // messages of the path through rank 0, on the file's own comm

// ---- HDF5 errors ------------------------------------------------------------------------------

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

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  lines->push_back(fmt::format("{}(): {}", error->func_name ? error->func_name : "?",
                               error->desc ? error->desc : "(no description)"));
  return 0;
}

// HDF5's error stack, outermost (the API call) first, and clears it.
std::vector<std::string> hdf5_error_lines() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  return lines;
}

// The stack in one line: the first entry says what failed, the last ones why (e.g. the system's
// "No such file or directory").
std::string hdf5_error_stack(std::vector<std::string> lines) {
  if (lines.empty()) return "HDF5 gave no details";
  if (lines.size() > 4) {
    lines = {lines[0], "...", lines[lines.size() - 2], lines.back()};
  }
  return fmt::format("{}", fmt::join(lines, "; "));
}

std::string hdf5_error_stack() { return hdf5_error_stack(hdf5_error_lines()); }

[[noreturn]] void raise_hdf5(const char* call, const std::string& where, const char* file, int line) {
  throw RuntimeError(ErrorInfo{
      .what = fmt::format("{}: {}", where, hdf5_error_stack()),
      .call = call,
      .hint = "HDF5's messages above say what failed: a path that does not exist or cannot be "
              "written, a full disk, a file that is not HDF5 or is damaged, or a file system "
              "without file locks (then set HDF5_USE_FILE_LOCKING=FALSE).",
      .location = detail::source_location(file, line)});
}

template <class T, class Where>
T hdf5_checked(T result, const char* call, Where&& where, const char* file, int line) {
  if (result < 0) [[unlikely]] raise_hdf5(call, where(), file, line);
  return result;
}

}  // namespace

// SKEIN_H5_CHECK(H5Dopen2, (file, name, H5P_DEFAULT), describe_where) calls HDF5 and yields its
// result; a negative one (every HDF5 call's failure) throws RuntimeError with the call, where it
// was (an expression evaluated only on failure) and HDF5's error stack.
#define SKEIN_H5_CHECK(function, arguments, where) \
  (hdf5_checked(function arguments, #function, [&]() -> std::string { return (where); }, __FILE__, __LINE__))

namespace {

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

// ---- types ------------------------------------------------------------------------------------

// A 2-byte float type with the given fields, made from IEEE float32 (HDF5 has no predefined half
// types before 1.14.4). The fields are set before the precision shrinks so that they always fit.
hid_t make_half_type(std::size_t exponent_size, std::size_t mantissa_size, std::size_t bias) {
  const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  if (t < 0) return t;
  if (H5Tset_fields(t, 15, mantissa_size, exponent_size, 0, mantissa_size) < 0 ||
      H5Tset_precision(t, 16) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, bias) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

// The HDF5 type of a dtype, in memory and in the file (the same: native little-endian, as h5py
// writes). Complex numbers are compounds {r, i}; reading uses the file's member names so that
// HDF5 matches the members without a conversion.
Handle type_of(Dtype dtype, const std::string& real_name = "r", const std::string& imag_name = "i") {
  hid_t t = -1;
  switch (dtype) {
    case Dtype::int8: t = H5Tcopy(H5T_NATIVE_INT8); break;
    case Dtype::int16: t = H5Tcopy(H5T_NATIVE_INT16); break;
    case Dtype::int32: t = H5Tcopy(H5T_NATIVE_INT32); break;
    case Dtype::int64: t = H5Tcopy(H5T_NATIVE_INT64); break;
    case Dtype::uint8: t = H5Tcopy(H5T_NATIVE_UINT8); break;
    case Dtype::uint16: t = H5Tcopy(H5T_NATIVE_UINT16); break;
    case Dtype::uint32: t = H5Tcopy(H5T_NATIVE_UINT32); break;
    case Dtype::uint64: t = H5Tcopy(H5T_NATIVE_UINT64); break;
    case Dtype::float16: t = make_half_type(5, 10, 15); break;
    case Dtype::bfloat16: t = make_half_type(8, 7, 127); break;
    case Dtype::float32: t = H5Tcopy(H5T_NATIVE_FLOAT); break;
    case Dtype::float64: t = H5Tcopy(H5T_NATIVE_DOUBLE); break;
    case Dtype::complex64:
    case Dtype::complex128: {
      const bool single = dtype == Dtype::complex64;
      const std::size_t part = single ? 4 : 8;
      t = H5Tcreate(H5T_COMPOUND, 2 * part);
      if (t >= 0 &&
          (H5Tinsert(t, real_name.c_str(), 0, single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE) < 0 ||
           H5Tinsert(t, imag_name.c_str(), part, single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE) < 0)) {
        H5Tclose(t);
        t = -1;
      }
      break;
    }
  }
  if (t < 0) raise_hdf5("H5Tcopy", fmt::format("making the HDF5 type of dtype {}", name(dtype)), __FILE__, __LINE__);
  return Handle(t, H5Tclose);
}

// A file type in words, for messages: "a 3-byte integer", "an H5T_STRING".
std::string type_words(hid_t t) {
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return fmt::format("a {}-byte {}integer", H5Tget_size(t), H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned " : "");
    case H5T_FLOAT: return fmt::format("a {}-byte float", H5Tget_size(t));
    case H5T_STRING: return "a string type";
    case H5T_COMPOUND: return fmt::format("a compound type of {} members", H5Tget_nmembers(t));
    case H5T_ENUM: return "an enum type";
    case H5T_ARRAY: return "an array type";
    case H5T_VLEN: return "a variable-length type";
    case H5T_BITFIELD: return "a bitfield type";
    case H5T_OPAQUE: return "an opaque type";
    case H5T_REFERENCE: return "a reference type";
    case H5T_TIME: return "a time type";
    default: return "an unknown type";
  }
}

struct FileType {
  Dtype dtype = Dtype::uint8;
  std::string real_name = "r", imag_name = "i";  // complex: the compound's member names
};

std::string member_name(hid_t t, unsigned i) {
  char* n = H5Tget_member_name(t, i);
  std::string s = n ? n : "";
  if (n) H5free_memory(n);
  return s;
}

// The dtype a file type maps to, or why there is none.
std::optional<FileType> dtype_of_type(hid_t t, std::string& why) {
  const std::size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(t) != H5T_SGN_NONE;
      switch (size) {
        case 1: return FileType{is_signed ? Dtype::int8 : Dtype::uint8};
        case 2: return FileType{is_signed ? Dtype::int16 : Dtype::uint16};
        case 4: return FileType{is_signed ? Dtype::int32 : Dtype::uint32};
        case 8: return FileType{is_signed ? Dtype::int64 : Dtype::uint64};
        default: break;
      }
      break;
    }
    case H5T_FLOAT: {
      if (size == 4) return FileType{Dtype::float32};
      if (size == 8) return FileType{Dtype::float64};
      if (size == 2) {
        std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize);
        if (esize == 5 && msize == 10) return FileType{Dtype::float16};
        if (esize == 8 && msize == 7) return FileType{Dtype::bfloat16};
        why = fmt::format("a 2-byte float with {} exponent and {} mantissa bits (neither float16 "
                          "nor bfloat16)", esize, msize);
        return std::nullopt;
      }
      break;
    }
    case H5T_COMPOUND: {
      if (H5Tget_nmembers(t) == 2) {
        Handle re(H5Tget_member_type(t, 0), H5Tclose), im(H5Tget_member_type(t, 1), H5Tclose);
        const std::string rn = member_name(t, 0), in = member_name(t, 1);
        const bool names = (rn == "r" && in == "i") || (rn == "real" && in == "imag");
        if (names && re.valid() && im.valid() && H5Tget_class(re.get()) == H5T_FLOAT &&
            H5Tget_class(im.get()) == H5T_FLOAT && H5Tget_size(re.get()) == H5Tget_size(im.get())) {
          const std::size_t part = H5Tget_size(re.get());
          if (part == 4 || part == 8) {
            return FileType{part == 4 ? Dtype::complex64 : Dtype::complex128, rn, in};
          }
        }
      }
      why = "a compound type that is not a complex number (two float members named r, i or "
            "real, imag)";
      return std::nullopt;
    }
    default: break;
  }
  why = type_words(t);
  return std::nullopt;
}

// ---- attributes -------------------------------------------------------------------------------

json attribute_to_json(const AttributeValue& value) {
  // Doubles travel as their bits: JSON has no NaN or infinity.
  return std::visit(
      [](const auto& v) -> json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::int64_t>) return {{"i", v}};
        else if constexpr (std::is_same_v<V, double>) return {{"d", std::bit_cast<std::uint64_t>(v)}};
        else if constexpr (std::is_same_v<V, std::string>) return {{"s", v}};
        else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) return {{"I", v}};
        else {
          std::vector<std::uint64_t> bits;
          for (double d : v) bits.push_back(std::bit_cast<std::uint64_t>(d));
          return {{"D", bits}};
        }
      },
      value);
}

AttributeValue attribute_from_json(const json& j) {
  if (j.contains("i")) return j["i"].get<std::int64_t>();
  if (j.contains("d")) return std::bit_cast<double>(j["d"].get<std::uint64_t>());
  if (j.contains("s")) return j["s"].get<std::string>();
  if (j.contains("I")) return j["I"].get<std::vector<std::int64_t>>();
  std::vector<double> out;
  for (auto b : j["D"].get<std::vector<std::uint64_t>>()) out.push_back(std::bit_cast<double>(b));
  return out;
}

json attributes_to_json(const Attributes& attributes) {
  json j = json::object();
  for (const auto& [k, v] : attributes) j[k] = attribute_to_json(v);
  return j;
}

Attributes attributes_from_json(const json& j) {
  Attributes out;
  for (const auto& [k, v] : j.items()) out[k] = attribute_from_json(v);
  return out;
}

// Writes (or replaces) one attribute of an open object.
void write_attribute(hid_t object, const std::string& object_name, const std::string& name,
                     const AttributeValue& value) {
  const std::string where = fmt::format("attribute '{}' of '{}'", name, object_name);
  if (SKEIN_H5_CHECK(H5Aexists, (object, name.c_str()), where) > 0) {
    SKEIN_H5_CHECK(H5Adelete, (object, name.c_str()), where);
  }
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>) {
          Handle type(SKEIN_H5_CHECK(H5Tcopy, (H5T_C_S1), where), H5Tclose);
          SKEIN_H5_CHECK(H5Tset_size, (type.get(), H5T_VARIABLE), where);
          SKEIN_H5_CHECK(H5Tset_cset, (type.get(), H5T_CSET_UTF8), where);
          Handle space(SKEIN_H5_CHECK(H5Screate, (H5S_SCALAR), where), H5Sclose);
          Handle attr(SKEIN_H5_CHECK(H5Acreate2, (object, name.c_str(), type.get(), space.get(),
                                                  H5P_DEFAULT, H5P_DEFAULT), where),
                      H5Aclose);
          const char* text = v.c_str();
          SKEIN_H5_CHECK(H5Awrite, (attr.get(), type.get(), &text), where);
        } else {
          constexpr bool is_int = std::is_same_v<V, std::int64_t> || std::is_same_v<V, std::vector<std::int64_t>>;
          const hid_t type = is_int ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
          const void* data = nullptr;
          Handle space;
          if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, double>) {
            space = Handle(SKEIN_H5_CHECK(H5Screate, (H5S_SCALAR), where), H5Sclose);
            data = &v;
          } else {
            const hsize_t n = v.size();
            space = Handle(SKEIN_H5_CHECK(H5Screate_simple, (1, &n, nullptr), where), H5Sclose);
            data = v.data();
          }
          Handle attr(SKEIN_H5_CHECK(H5Acreate2, (object, name.c_str(), type, space.get(),
                                                  H5P_DEFAULT, H5P_DEFAULT), where),
                      H5Aclose);
          static const std::int64_t dummy = 0;  // HDF5 wants a buffer even for no elements
          SKEIN_H5_CHECK(H5Awrite, (attr.get(), type, data ? data : &dummy), where);
        }
      },
      value);
}

// One attribute as an AttributeValue; nullopt for what has none (compounds, string arrays,
// empty dataspaces).
std::optional<AttributeValue> read_attribute(hid_t attr, const std::string& where) {
  Handle type(SKEIN_H5_CHECK(H5Aget_type, (attr), where), H5Tclose);
  Handle space(SKEIN_H5_CHECK(H5Aget_space, (attr), where), H5Sclose);
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class != H5S_SCALAR && space_class != H5S_SIMPLE) return std::nullopt;
  const hssize_t n = SKEIN_H5_CHECK(H5Sget_simple_extent_npoints, (space.get()), where);
  const bool scalar = space_class == H5S_SCALAR;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      if (!scalar) return std::nullopt;
      if (SKEIN_H5_CHECK(H5Tis_variable_str, (type.get()), where) > 0) {
        Handle mem(SKEIN_H5_CHECK(H5Tcopy, (H5T_C_S1), where), H5Tclose);
        SKEIN_H5_CHECK(H5Tset_size, (mem.get(), H5T_VARIABLE), where);
        SKEIN_H5_CHECK(H5Tset_cset, (mem.get(), H5Tget_cset(type.get())), where);
        char* text = nullptr;
        SKEIN_H5_CHECK(H5Aread, (attr, mem.get(), &text), where);
        std::string s = text ? text : "";
        if (text) H5free_memory(text);
        return s;
      }
      const std::size_t size = H5Tget_size(type.get());
      Handle mem(SKEIN_H5_CHECK(H5Tcopy, (H5T_C_S1), where), H5Tclose);
      SKEIN_H5_CHECK(H5Tset_size, (mem.get(), size + 1), where);
      SKEIN_H5_CHECK(H5Tset_strpad, (mem.get(), H5T_STR_NULLTERM), where);
      std::string s(size + 1, '\0');
      SKEIN_H5_CHECK(H5Aread, (attr, mem.get(), s.data()), where);
      s.resize(std::strlen(s.c_str()));
      return s;
    }
    case H5T_INTEGER: {
      std::vector<std::int64_t> v(static_cast<std::size_t>(std::max<hssize_t>(n, 1)));
      SKEIN_H5_CHECK(H5Aread, (attr, H5T_NATIVE_INT64, v.data()), where);
      if (scalar) return v[0];
      v.resize(static_cast<std::size_t>(n));
      return v;
    }
    case H5T_FLOAT: {
      std::vector<double> v(static_cast<std::size_t>(std::max<hssize_t>(n, 1)));
      SKEIN_H5_CHECK(H5Aread, (attr, H5T_NATIVE_DOUBLE, v.data()), where);
      if (scalar) return v[0];
      v.resize(static_cast<std::size_t>(n));
      return v;
    }
    default: return std::nullopt;
  }
}

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

Attributes read_attributes(hid_t object, const std::string& object_name) {
  std::vector<std::string> names;
  hsize_t index = 0;
  SKEIN_H5_CHECK(H5Aiterate2, (object, H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute_name, &names),
                 fmt::format("the attributes of '{}'", object_name));
  Attributes out;
  for (const auto& n : names) {
    const std::string where = fmt::format("attribute '{}' of '{}'", n, object_name);
    Handle attr(SKEIN_H5_CHECK(H5Aopen, (object, n.c_str(), H5P_DEFAULT), where), H5Aclose);
    if (auto v = read_attribute(attr.get(), where)) out[n] = std::move(*v);
  }
  return out;
}

// ---- shapes and rows --------------------------------------------------------------------------

// Rows along the first axis (a 0-D dataset is one row) and elements per row.
std::size_t rows_of(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }
std::size_t row_elements(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::size_t rows_per_piece(const Shape& shape, Dtype dtype, std::size_t max_bytes) {
  const std::size_t row_bytes = row_elements(shape) * itemsize(dtype);
  return std::max<std::size_t>(1, row_bytes == 0 ? rows_of(shape) : max_bytes / row_bytes);
}

// The k-th piece of `range` (empty past its end).
RowRange piece_of(RowRange range, std::size_t per_piece, std::size_t k) {
  const std::size_t begin = range.begin + k * per_piece;
  if (begin >= range.end) return {range.end, range.end};
  return {begin, std::min(range.end, begin + per_piece)};
}

std::size_t pieces_of(RowRange range, std::size_t per_piece) {
  return (range.size() + per_piece - 1) / per_piece;
}

// Selects rows [begin, end) of a dataspace of `shape` (none when empty).
void select_rows(hid_t space, const Shape& shape, RowRange rows, const std::string& where) {
  if (rows.empty() || shape_size(shape) == 0) {
    SKEIN_H5_CHECK(H5Sselect_none, (space), where);
    return;
  }
  if (shape.empty()) {
    SKEIN_H5_CHECK(H5Sselect_all, (space), where);
    return;
  }
  std::vector<hsize_t> start(shape.size(), 0), count(shape.begin(), shape.end());
  start[0] = rows.begin;
  count[0] = rows.size();
  SKEIN_H5_CHECK(H5Sselect_hyperslab, (space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                 where);
}

// A memory dataspace of n elements; with none, a 1-element space with nothing selected (HDF5
// wants a space even for a rank that moves nothing in a collective transfer).
Handle memory_space(std::size_t elements, const std::string& where) {
  const hsize_t n = std::max<std::size_t>(elements, 1);
  Handle space(SKEIN_H5_CHECK(H5Screate_simple, (1, &n, nullptr), where), H5Sclose);
  if (elements == 0) SKEIN_H5_CHECK(H5Sselect_none, (space.get()), where);
  return space;
}

std::string shape_text(const Shape& shape) { return skein::to_string(shape); }

// Names relative to the root group, as h5py shows them: "/fields/u/" is "fields/u" ("/" stays).
std::string normalise(const std::string& name) {
  std::string n = name;
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  while (n.size() > 1 && n.front() == '/') n.erase(0, 1);
  return n;
}

// ---- ranks ------------------------------------------------------------------------------------

void print_line(const std::string& line) {
  const std::string text = "skein: " + detail::error_prefix() + line + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// SKEIN_HDF5_SERIAL: through rank 0 even where HDF5 has MPI-IO (default: no).
bool serial_from_environment() {
  return detail::env_flag("SKEIN_HDF5_SERIAL", false, "hdf5::File",
                          "read and write HDF5 files through rank 0");
}
}  // namespace

// ---- File::Impl -------------------------------------------------------------------------------

struct File::Impl {
  std::string path;
  // The ranks' own duplicate of the caller's communicator, with its deadlines: HDF5's and our
  // messages never meet others'.
  detail::Agreement agreement;
  MPI_Comm comm = MPI_COMM_NULL;  // agreement.comm() while open
  int rank = 0;
  int size = 1;
  bool parallel = false;
  bool writable = false;
  FileOptions options;
  Handle file;  // open on the file ranks

  ~Impl() {
    if (file.valid() && parallel && !agreement.broken().empty()) {
      // H5Fclose is collective on the parallel path; after a timeout the other ranks are not
      // coming: the handle is left open rather than waited on forever.
      (void)file.release();
    }
    file.reset();  // before the communicator (HDF5 holds a duplicate of its own, but in order)
  }

  // Whether this rank opens the file: every rank on the parallel path, rank 0 otherwise.
  bool has_file() const { return parallel || rank == 0; }

  // The transfer property list: collective MPI-IO on the parallel path (filtered datasets need
  // it, and it lets MPI-IO aggregate the ranks' rows into large writes).
  Handle transfer_list() const {
    Handle dxpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_DATASET_XFER), path), H5Pclose);
    // Reads verify the Fletcher32 checksums (HDF5's default, stated so that it stays so).
    SKEIN_H5_CHECK(H5Pset_edc_check, (dxpl.get(), H5Z_ENABLE_EDC), path);
#ifdef H5_HAVE_PARALLEL
    if (parallel) SKEIN_H5_CHECK(H5Pset_dxpl_mpio, (dxpl.get(), H5FD_MPIO_COLLECTIVE), path);
#endif
    return dxpl;
  }

  // ---- agreement between ranks ----

  // Every rank must make the same call: compares a hash of `description` (which holds the call
  // and its arguments) across ranks. On a mismatch every rank raises, naming rank 0's call.
  void agree_on_call(const std::string& call, const std::string& description) {
    agreement.agree_on_call(call, description);
  }

  std::string broadcast_string(const std::string& call, const std::string& text, int root) {
    return agreement.broadcast_string(call, text, root);
  }

  void share_failure(std::exception_ptr mine, const std::string& call) {
    agreement.share_failure(std::move(mine), call, fmt::format("on HDF5 file '{}'", path));
  }

  // Runs `f` on the file ranks, shares any failure, and returns its
  // result on every rank: through rank 0 it travels from rank 0.
  std::string on_file_ranks(const std::string& call, const std::function<std::string()>& f) {
    std::string result;
    std::exception_ptr failure;
    if (has_file()) {
      try {
        QuietHdf5Errors quiet;
        result = f();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    share_failure(failure, call);
    if (!parallel) result = broadcast_string(call, result, 0);
    return result;
  }

  void check_writable(const std::string& call) const {
    if (!writable) {
      detail::raise_in(SKEIN_HERE, call,
                       "Open the file with Access::read_write, or create it with File::create.",
                       "HDF5 file '{}' is open read-only", path);
    }
  }

  // The memory type to move a dataset's elements with: the dtype's, with a complex compound's
  // member names taken from the file (HDF5 matches compound members by name).
  Handle transfer_type(hid_t dataset, Dtype dtype) const {
    if (!is_complex(dtype)) return type_of(dtype);
    Handle file_type(SKEIN_H5_CHECK(H5Dget_type, (dataset), path), H5Tclose);
    std::string why;
    const auto t = dtype_of_type(file_type.get(), why);
    return t ? type_of(dtype, t->real_name, t->imag_name) : type_of(dtype);
  }

  Handle open_object(const std::string& object) const {
    return Handle(SKEIN_H5_CHECK(H5Oopen, (file.get(), object.c_str(), H5P_DEFAULT),
                                 fmt::format("opening '{}' in HDF5 file '{}'", object, path)),
                  H5Oclose);
  }

  // Whether `name` exists as a link (each group along the path first: H5Lexists fails on a
  // missing intermediate group).
  bool link_exists(const std::string& name) const {
    std::string prefix;
    std::size_t pos = 0;
    const std::string n = name.front() == '/' ? name.substr(1) : name;
    while (true) {
      const std::size_t slash = n.find('/', pos);
      prefix = n.substr(0, slash);
      if (SKEIN_H5_CHECK(H5Lexists, (file.get(), prefix.c_str(), H5P_DEFAULT),
                         fmt::format("looking up '{}' in HDF5 file '{}'", prefix, path)) <= 0) {
        return false;
      }
      if (slash == std::string::npos) return true;
      pos = slash + 1;
    }
  }

  bool is_dataset(const std::string& name) const {
    if (!link_exists(name)) return false;
    const hid_t object = H5Oopen(file.get(), name.c_str(), H5P_DEFAULT);
    if (object < 0) {
      H5Eclear2(H5E_DEFAULT);  // a dangling soft or external link
      return false;
    }
    const bool dataset = H5Iget_type(object) == H5I_DATASET;
    H5Oclose(object);
    return dataset;
  }

  // Opens dataset `name` (LogicError naming the file's datasets when there is none).
  Handle open_dataset(const std::string& name, const std::string& call) const {
    if (!is_dataset(name)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass the name of a dataset of the file (File::datasets() lists them).",
                       "HDF5 file '{}' has no dataset '{}' (its datasets: {})", path, name,
                       fmt::join(list_datasets("/"), ", "));
    }
    return Handle(SKEIN_H5_CHECK(H5Dopen2, (file.get(), name.c_str(), H5P_DEFAULT),
                                 fmt::format("opening dataset '{}' in HDF5 file '{}'", name, path)),
                  H5Dclose);
  }

  std::vector<std::string> list_datasets(const std::string& group) const;
  DatasetInfo read_info(hid_t dataset, const std::string& name) const;

  // Moves rows between the file and the ranks, see write_rows / read_rows below.
  struct RowPlan {
    Shape shape;
    Dtype dtype = Dtype::uint8;
    std::vector<RowRange> rank_rows;  // per rank: the rows it moves
    // This rank's rows [begin, end) to / from the host (bytes of whole rows).
    std::function<void(RowRange, std::span<std::byte>)> fetch;
    std::function<void(RowRange, std::span<const std::byte>)> store;
  };
  void write_rows(hid_t dataset, const std::string& name, const RowPlan& plan, const std::string& call);
  void read_rows(hid_t dataset, const std::string& name, const RowPlan& plan, const std::string& call);

  // H5Dread of rows `rows` of dataset `name`. A chunk whose Fletcher32 checksum does not match
  // (the file changed after it was written) is named as such: HDF5 says so only deep in its stack.
  void read_checked(hid_t dataset, hid_t type, hid_t mem, hid_t space, hid_t dxpl, void* buffer,
                    const std::string& name, RowRange rows, const std::string& call) const {
    if (H5Dread(dataset, type, mem, space, dxpl, buffer) >= 0) return;
    std::vector<std::string> lines = hdf5_error_lines();
    const bool checksum = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("Fletcher32") != std::string::npos;
    });
    const std::string where = fmt::format("reading rows [{}, {}) of dataset '{}' of HDF5 file '{}'",
                                          rows.begin, rows.end, name, path);
    if (!checksum) {
      throw RuntimeError(ErrorInfo{
          .what = fmt::format("{}: {}", where, hdf5_error_stack(std::move(lines))),
          .call = "H5Dread",
          .hint = "HDF5's messages above say what failed: a file that is not HDF5 or is damaged, "
                  "or a file system that lost it.",
          .location = SKEIN_HERE});
    }
    throw RuntimeError(ErrorInfo{
        .what = fmt::format("the Fletcher32 checksum failed {}: the file was changed or damaged "
                            "after it was written ({})",
                            where, hdf5_error_stack(std::move(lines))),
        .call = call,
        .hint = "Do not use this dataset's values: restore the file from a good copy or write it "
                "again. HDF5 checks each chunk's checksum on every read; h5py and h5dump refuse "
                "the damaged chunk too.",
        .location = SKEIN_HERE});
  }
};

std::vector<std::string> File::Impl::list_datasets(const std::string& group) const {
  struct Visit {
    hid_t file;
    std::string base;
    std::vector<std::string> names;
  } visit{file.get(), group == "/" ? "" : group, {}};
  auto callback = [](hid_t g, const char* link, const H5L_info_t*, void* data) -> herr_t {
    auto* v = static_cast<Visit*>(data);
    const hid_t object = H5Oopen(g, link, H5P_DEFAULT);
    if (object < 0) {
      H5Eclear2(H5E_DEFAULT);  // dangling links are not datasets
      return 0;
    }
    if (H5Iget_type(object) == H5I_DATASET) {
      std::string n = v->base.empty() ? std::string(link) : v->base + "/" + link;
      if (!n.empty() && n.front() == '/') n.erase(0, 1);
      v->names.push_back(n);
    }
    H5Oclose(object);
    return 0;
  };
  Handle g(SKEIN_H5_CHECK(H5Gopen2, (file.get(), group.c_str(), H5P_DEFAULT),
                          fmt::format("opening group '{}' in HDF5 file '{}'", group, path)),
           H5Gclose);
  SKEIN_H5_CHECK(H5Lvisit, (g.get(), H5_INDEX_NAME, H5_ITER_INC, callback, &visit),
                 fmt::format("listing group '{}' of HDF5 file '{}'", group, path));
  std::sort(visit.names.begin(), visit.names.end());
  return visit.names;
}

DatasetInfo File::Impl::read_info(hid_t dataset, const std::string& name) const {
  const std::string where = fmt::format("dataset '{}' in HDF5 file '{}'", name, path);
  DatasetInfo info;
  info.name = name;
  Handle type(SKEIN_H5_CHECK(H5Dget_type, (dataset), where), H5Tclose);
  std::string why;
  const auto file_type = dtype_of_type(type.get(), why);
  if (!file_type) {
    detail::raise_in(SKEIN_HERE, "hdf5::File", "Skein reads integers, floats and complex numbers "
                     "({r, i} compounds); convert the dataset with another tool.",
                     "{} has {}, which no Skein dtype matches", where, why);
  }
  info.dtype = file_type->dtype;
  Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
  const int ndims = SKEIN_H5_CHECK(H5Sget_simple_extent_ndims, (space.get()), where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(ndims));
  SKEIN_H5_CHECK(H5Sget_simple_extent_dims, (space.get(), dims.data(), nullptr), where);
  info.shape.assign(dims.begin(), dims.end());
  Handle dcpl(SKEIN_H5_CHECK(H5Dget_create_plist, (dataset), where), H5Pclose);
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED && ndims > 0) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(ndims));
    SKEIN_H5_CHECK(H5Pget_chunk, (dcpl.get(), ndims, chunk.data()), where);
    info.chunk_rows = chunk[0];
  }
  const int filters = SKEIN_H5_CHECK(H5Pget_nfilters, (dcpl.get()), where);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, values[8] = {};
    std::size_t n = 8;
    char filter_name[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n, values,
                                           sizeof filter_name, filter_name, nullptr);
    if (id == H5Z_FILTER_DEFLATE && n > 0) info.compression = static_cast<int>(values[0]);
    if (id == H5Z_FILTER_FLETCHER32) info.checksum = true;
  }
  info.attributes = read_attributes(dataset, name);
  if (auto it = info.attributes.find("skein_step"); it != info.attributes.end()) {
    if (auto* v = std::get_if<std::int64_t>(&it->second)) info.step = *v;
  }
  if (auto it = info.attributes.find("skein_time"); it != info.attributes.end()) {
    if (auto* v = std::get_if<double>(&it->second)) info.time = *v;
  }
  if (auto it = info.attributes.find("skein_layout"); it != info.attributes.end()) {
    if (auto* v = std::get_if<std::string>(&it->second)) info.layout = *v;
  }
  return info;
}

json info_to_json(const DatasetInfo& info) {
  json j{{"name", info.name},
         {"shape", info.shape},
         {"dtype", std::string(name(info.dtype))},
         {"chunk_rows", info.chunk_rows},
         {"compression", info.compression},
         {"checksum", info.checksum},
         {"layout", info.layout},
         {"attributes", attributes_to_json(info.attributes)}};
  if (info.step) j["step"] = *info.step;
  if (info.time) j["time"] = std::bit_cast<std::uint64_t>(*info.time);
  return j;
}

DatasetInfo info_from_json(const json& j) {
  DatasetInfo info;
  info.name = j["name"].get<std::string>();
  info.shape = j["shape"].get<Shape>();
  info.dtype = dtype_from_name(j["dtype"].get<std::string>());
  info.chunk_rows = j["chunk_rows"].get<std::size_t>();
  info.compression = j["compression"].get<int>();
  info.checksum = j["checksum"].get<bool>();
  info.layout = j["layout"].get<std::string>();
  info.attributes = attributes_from_json(j["attributes"]);
  if (j.contains("step")) info.step = j["step"].get<std::int64_t>();
  if (j.contains("time")) info.time = std::bit_cast<double>(j["time"].get<std::uint64_t>());
  return info;
}

// Writes every rank's rows. Parallel: in rounds, each a collective H5Dwrite in which every rank
// writes its next piece (or nothing). Through rank 0: rank 0 takes each rank's pieces in turn
// (its own from its devices, the others' as messages) and writes them.
void File::Impl::write_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                            const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("writing dataset '{}' of HDF5 file '{}'", name, path);
  const bool nothing = shape_size(plan.shape) == 0;
  std::exception_ptr failure;
  // Owned through `owner`: after a timeout MPI may still write it, and it is kept until exit.
  auto owner = std::make_shared<std::vector<std::byte>>();
  std::vector<std::byte>& buffer = *owner;
  auto remember = [&] {
    if (!failure) failure = std::current_exception();
    // After a timeout the ranks no longer pair up, and MPI may still use the buffer: out at once.
    if (!agreement.broken().empty()) throw;
  };

  if (parallel) {
    std::size_t rounds = 0;
    for (const auto& r : plan.rank_rows) rounds = std::max(rounds, pieces_of(r, per_piece));
    if (nothing) rounds = 0;
    const RowRange mine = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < rounds; ++k) {
      // A rank that failed goes on with empty selections: the others wait for it in each round.
      RowRange piece = failure ? RowRange{} : piece_of(mine, per_piece, k);
      try {
        QuietHdf5Errors quiet;
        buffer.resize(piece.size() * row_bytes);
        if (!piece.empty()) plan.fetch(piece, buffer);
      } catch (...) {
        remember();
        piece = {};
      }
      try {
        QuietHdf5Errors quiet;
        Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
        select_rows(space.get(), plan.shape, piece, where);
        Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
        Handle type = transfer_type(dataset, plan.dtype);
        Handle dxpl = transfer_list();
        static std::byte dummy[16];
        SKEIN_H5_CHECK(H5Dwrite, (dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                                  buffer.empty() ? dummy : buffer.data()),
                       where);
      } catch (...) {
        remember();
      }
    }
    share_failure(failure, call);
    return;
  }

  if (nothing) {
    share_failure(failure, call);
    return;
  }
  if (rank == 0) {
    Handle type, dxpl;
    try {
      QuietHdf5Errors quiet;
      type = transfer_type(dataset, plan.dtype);
      dxpl = transfer_list();
    } catch (...) {
      remember();
    }
    for (int r = 0; r < size; ++r) {
      const RowRange rows = plan.rank_rows[static_cast<std::size_t>(r)];
      for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
        const RowRange piece = piece_of(rows, per_piece, k);
        buffer.resize(piece.size() * row_bytes);
        try {
          if (r == 0) {
            if (!failure) plan.fetch(piece, buffer);
          } else {
            // Received even after a failure: the sender must not be left waiting.
            const std::size_t got = agreement.receive(call, std::as_writable_bytes(std::span(buffer)), r,
                                                      kTransferTag, owner);
            if (got != buffer.size() && !failure) {
              throw RuntimeError(ErrorInfo{
                  .what = fmt::format("rank {} could not send rows [{}, {}) of dataset '{}' (it "
                                      "says why)",
                                      r, piece.begin, piece.end, name),
                  .call = call});
            }
          }
          if (!failure) {
            QuietHdf5Errors quiet;
            Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
            select_rows(space.get(), plan.shape, piece, where);
            Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
            SKEIN_H5_CHECK(H5Dwrite, (dataset, type.get(), mem.get(), space.get(), dxpl.get(), buffer.data()),
                           where);
          }
        } catch (...) {
          remember();
        }
      }
    }
  } else {
    const RowRange rows = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
      const RowRange piece = piece_of(rows, per_piece, k);
      buffer.resize(piece.size() * row_bytes);
      int count = static_cast<int>(buffer.size());
      try {
        if (failure) {
          count = 0;
        } else {
          plan.fetch(piece, buffer);
        }
      } catch (...) {
        remember();
        count = 0;  // an empty message tells rank 0 this piece is missing
      }
      try {
        agreement.send(call, std::as_bytes(std::span(buffer).first(static_cast<std::size_t>(count))), 0,
                       kTransferTag, owner);
      } catch (...) {
        remember();
      }
    }
  }
  share_failure(failure, call);
}

// Reads every rank's rows: the mirror of write_rows.
void File::Impl::read_rows(hid_t dataset, const std::string& name, const RowPlan& plan,
                           const std::string& call) {
  const std::size_t per_piece = rows_per_piece(plan.shape, plan.dtype, options.max_bytes_per_call);
  const std::size_t row_bytes = row_elements(plan.shape) * itemsize(plan.dtype);
  const std::string where = fmt::format("reading dataset '{}' of HDF5 file '{}'", name, path);
  const bool nothing = shape_size(plan.shape) == 0;
  std::exception_ptr failure;
  // Owned through `owner`: after a timeout MPI may still write it, and it is kept until exit.
  auto owner = std::make_shared<std::vector<std::byte>>();
  std::vector<std::byte>& buffer = *owner;
  auto remember = [&] {
    if (!failure) failure = std::current_exception();
    // After a timeout the ranks no longer pair up, and MPI may still use the buffer: out at once.
    if (!agreement.broken().empty()) throw;
  };

  if (parallel) {
    std::size_t rounds = 0;
    for (const auto& r : plan.rank_rows) rounds = std::max(rounds, pieces_of(r, per_piece));
    if (nothing) rounds = 0;
    const RowRange mine = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < rounds; ++k) {
      const RowRange piece = failure ? RowRange{} : piece_of(mine, per_piece, k);
      buffer.resize(piece.size() * row_bytes);
      bool read = false;
      try {
        QuietHdf5Errors quiet;
        Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
        select_rows(space.get(), plan.shape, piece, where);
        Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
        Handle type = transfer_type(dataset, plan.dtype);
        Handle dxpl = transfer_list();
        static std::byte dummy[16];
        read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(),
                     buffer.empty() ? dummy : buffer.data(), name, piece, call);
        read = true;
      } catch (...) {
        remember();
      }
      try {
        if (read && !piece.empty()) plan.store(piece, buffer);
      } catch (...) {
        remember();
      }
    }
    share_failure(failure, call);
    return;
  }

  if (nothing) {
    share_failure(failure, call);
    return;
  }
  if (rank == 0) {
    Handle type, dxpl;
    try {
      QuietHdf5Errors quiet;
      type = transfer_type(dataset, plan.dtype);
      dxpl = transfer_list();
    } catch (...) {
      remember();
    }
    for (int r = 0; r < size; ++r) {
      const RowRange rows = plan.rank_rows[static_cast<std::size_t>(r)];
      for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
        const RowRange piece = piece_of(rows, per_piece, k);
        buffer.resize(piece.size() * row_bytes);
        bool read = false;
        try {
          if (!failure) {
            QuietHdf5Errors quiet;
            Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
            select_rows(space.get(), plan.shape, piece, where);
            Handle mem = memory_space(piece.size() * row_elements(plan.shape), where);
            read_checked(dataset, type.get(), mem.get(), space.get(), dxpl.get(), buffer.data(), name,
                         piece, call);
            read = true;
          }
        } catch (...) {
          remember();
        }
        try {
          if (r == 0) {
            if (read) plan.store(piece, buffer);
          } else {
            // Sent even after a failure (empty): the receiver must not be left waiting.
            agreement.send(call, std::as_bytes(std::span(buffer).first(read ? buffer.size() : 0)), r,
                           kTransferTag, owner);
          }
        } catch (...) {
          remember();
        }
      }
    }
  } else {
    // A short message means rank 0 failed: its error (a damaged chunk, say) is shared below and
    // raised here as "rank 0 failed ...: <its message>", which says more than this rank knows.
    std::optional<RowRange> missing;
    const RowRange rows = plan.rank_rows[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < pieces_of(rows, per_piece); ++k) {
      const RowRange piece = piece_of(rows, per_piece, k);
      buffer.resize(piece.size() * row_bytes);
      try {
        const std::size_t got = agreement.receive(call, std::as_writable_bytes(std::span(buffer)), 0,
                                                  kTransferTag, owner);
        if (got == buffer.size()) {
          if (!failure && !missing) plan.store(piece, buffer);
        } else if (!missing) {
          missing = piece;
        }
      } catch (...) {
        remember();
      }
    }
    if (missing && !failure) {
      share_failure(failure, call);  // raises rank 0's error, which it always has then
      throw RuntimeError(ErrorInfo{
          .what = fmt::format("rank 0 could not read rows [{}, {}) of dataset '{}' for this rank",
                              missing->begin, missing->end, name),
          .call = call});
    }
  }
  share_failure(failure, call);
}

namespace {

std::unique_ptr<File::Impl> make_impl(MPI_Comm comm, const std::string& path, const FileOptions& options,
                                      const std::string& call) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    detail::raise_in(SKEIN_HERE, call, "Create a skein::Runtime first, or call MPI_Init.",
                     "MPI is not initialised");
  }
  if (comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, call, "Pass the arrays' communicator (e.g. runtime.comm()).",
                     "the MPI communicator is MPI_COMM_NULL");
  }
  auto impl = std::make_unique<File::Impl>();
  impl->path = path;
  impl->options = options;
  impl->agreement = detail::Agreement(comm, fmt::format("HDF5 file '{}'", path),
                                      "Make every rank call the same File operations in the same order with the "
                                      "same arguments (names, shapes, dtypes, options, attribute values).",
                                      call);
  impl->comm = impl->agreement.comm();
  impl->rank = impl->agreement.rank();
  impl->size = impl->agreement.size();

  // The same on every rank: the environment is the job's, the options are checked just below.
  std::exception_ptr failure;
  bool serial_env = false;
  try {
    serial_env = serial_from_environment();
    if (path.empty()) {
      detail::raise_in(SKEIN_HERE, call, "Pass the path of the HDF5 file.", "the file path is empty");
    }
    if (options.max_bytes_per_call == 0) {
      detail::raise_in(SKEIN_HERE, call, "Pass a positive FileOptions::max_bytes_per_call (the "
                       "default is 256 MiB).",
                       "FileOptions::max_bytes_per_call is 0");
    }
  } catch (...) {
    failure = std::current_exception();
  }
  impl->share_failure(failure, call);
  // MPI message counts are ints: pieces stay below 1 GiB.
  impl->options.max_bytes_per_call = std::min<std::size_t>(options.max_bytes_per_call, std::size_t{1} << 30);

  bool parallel = false;
#ifdef H5_HAVE_PARALLEL
  parallel = !(options.serial || serial_env);
#else
  (void)serial_env;  // only one way without MPI-IO (the variable was still checked above)
#endif
  impl->parallel = parallel;
  impl->agree_on_call(call, fmt::format("{} '{}' through {} in pieces of {} bytes", call, path,
                                        parallel ? "MPI-IO" : kRankZeroTag,
                                        impl->options.max_bytes_per_call));
  if (!parallel && impl->rank == 0) {
    static std::once_flag once;
    std::call_once(once, [&] {
#ifdef H5_HAVE_PARALLEL
      const char* why = options.serial ? "FileOptions::serial is set" : "SKEIN_HDF5_SERIAL=1";
#else
      const char* why = "this HDF5 library has no parallel (MPI-IO) support";
#endif
      print_line(fmt::format("HDF5 files are read and written through rank 0 ({}); this is "
                             "correct but slower than MPI-IO",
                             why));
    });
  }
  return impl;
}

Handle file_access_list(const File::Impl& f) {
  Handle fapl(SKEIN_H5_CHECK(H5Pcreate, (H5P_FILE_ACCESS), f.path), H5Pclose);
#ifdef H5_HAVE_PARALLEL
  if (f.parallel) SKEIN_H5_CHECK(H5Pset_fapl_mpio, (fapl.get(), f.comm, MPI_INFO_NULL), f.path);
#endif
  return fapl;
}

void check_name(const std::string& name, const std::string& call) {
  if (name.empty() || name == "/") {
    detail::raise_in(SKEIN_HERE, call, "Pass a dataset name such as \"u\" or \"fields/u\".",
                     "the dataset name '{}' is empty", name);
  }
}

void check_write_options(const WriteOptions& o, const std::string& call) {
  if (o.compression < 0 || o.compression > 9) {
    detail::raise_in(SKEIN_HERE, call, "Use a deflate level from 1 (fast) to 9 (small), or 0 for none.",
                     "WriteOptions::compression is {}", o.compression);
  }
  for (const auto& [k, v] : o.attributes) {
    if (k.empty() || k.rfind("skein_", 0) == 0) {
      detail::raise_in(SKEIN_HERE, call,
                       "Name user attributes without the skein_ prefix (Skein's own attributes use it).",
                       "attribute name '{}' is {}", k, k.empty() ? "empty" : "reserved for Skein");
    }
  }
}

std::string describe_options(const WriteOptions& o) {
  std::vector<std::string> attrs;
  for (const auto& [k, v] : o.attributes) attrs.push_back(k + "=" + to_string(v));
  return fmt::format("chunk_rows {} compression {} shuffle {} checksum {} step {} time {} overwrite {} "
                     "attributes {{{}}}",
                     o.chunk_rows, o.compression, o.shuffle, o.checksum, o.step ? std::to_string(*o.step) : "-",
                     o.time ? fmt::format("{:a}", *o.time) : "-", o.overwrite, fmt::join(attrs, ", "));
}

}  // namespace

// ---- File -------------------------------------------------------------------------------------

bool available() { return true; }

bool parallel_available() {
#ifdef H5_HAVE_PARALLEL
  return true;
#else
  return false;
#endif
}

std::string library_description() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return fmt::format("HDF5 {}.{}.{} ({})", major, minor, release,
                     parallel_available() ? "parallel, MPI-IO" : "serial: files go through rank 0");
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    try {
      if (impl_ && impl_->comm != MPI_COMM_NULL) close();
    } catch (const std::exception& e) {
      print_line(fmt::format("closing HDF5 file failed: {}", e.what()));
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

File::~File() {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) return;
  try {
    close();
  } catch (const std::exception& e) {
    print_line(fmt::format("closing HDF5 file '{}' failed: {}", impl_->path, e.what()));
  }
}

File File::create(Communicator& comm, const std::string& path, FileOptions options) {
  return create(comm.mpi_comm(), path, options);
}

File File::open(Communicator& comm, const std::string& path, Access access, FileOptions options) {
  return open(comm.mpi_comm(), path, access, options);
}

File File::create(MPI_Comm comm, const std::string& path, FileOptions options) {
  const std::string call = "hdf5::File::create";
  auto impl = make_impl(comm, path, options, call);
  impl->writable = true;
  File::Impl& f = *impl;
  f.on_file_ranks(call, [&] {
    Handle fapl = file_access_list(f);
    f.file = Handle(SKEIN_H5_CHECK(H5Fcreate, (path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                                   fmt::format("creating HDF5 file '{}'", path)),
                    H5Fclose);
    Handle root = f.open_object("/");
    write_attribute(root.get(), "/", "skein_version", std::string(SKEIN_VERSION_STRING));
    write_attribute(root.get(), "/", "skein_format_version", format_version);
    return std::string();
  });
  return File(std::move(impl));
}

File File::open(MPI_Comm comm, const std::string& path, Access access, FileOptions options) {
  const std::string call = "hdf5::File::open";
  auto impl = make_impl(comm, path, options, call);
  impl->writable = access == Access::read_write;
  File::Impl& f = *impl;
  // HDF5 says "unable to open file" for any reason; a missing file deserves plainer words. Checked
  // before the open, which is collective on the parallel path.
  std::exception_ptr missing;
  if (f.rank == 0 && !std::filesystem::exists(path)) {
    try {
      detail::raise_in<RuntimeError>(SKEIN_HERE, call, "Check the path (relative paths are from the "
                                     "working directory of rank 0).",
                                     "HDF5 file '{}' does not exist", path);
    } catch (...) {
      missing = std::current_exception();
    }
  }
  f.share_failure(missing, call);
  f.on_file_ranks(call, [&] {
    Handle fapl = file_access_list(f);
    f.file = Handle(SKEIN_H5_CHECK(H5Fopen, (path.c_str(), f.writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()),
                                   fmt::format("opening HDF5 file '{}'", path)),
                    H5Fclose);
    return std::string();
  });
  return File(std::move(impl));
}

File::Impl& File::checked(const char* call) const {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, call, "Open or create a file first (File::open, File::create).",
                     "the File is closed (or was moved from)");
  }
  return *impl_;
}

const std::string& File::path() const {
  static const std::string none;
  return impl_ ? impl_->path : none;
}
bool File::is_open() const { return impl_ && impl_->comm != MPI_COMM_NULL; }
bool File::parallel() const { return impl_ && impl_->parallel; }
int File::rank() const { return impl_ ? impl_->rank : 0; }
int File::ranks() const { return impl_ ? impl_->size : 0; }

void File::close() {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) return;
  Impl& f = *impl_;
  const std::string call = "hdf5::File::close";
  // Without the other ranks, the file is closed where that needs no one else: on rank 0 through
  // rank 0; on the parallel path H5Fclose is collective, and the handle is left open instead.
  auto close_alone = [&] {
    if (f.file.valid()) {
      QuietHdf5Errors quiet;
      if (f.parallel) {
        (void)f.file.release();
      } else {
        H5Fclose(f.file.release());
      }
    }
    impl_.reset();
  };
  if (!f.agreement.broken().empty()) {  // the error was raised by the step that timed out
    close_alone();
    return;
  }
  try {
    f.agree_on_call(call, "close");  // a rank that never closes: a timeout, not a hang in H5Fclose
  } catch (...) {
    close_alone();
    throw;
  }
  std::exception_ptr failure;
  if (f.file.valid()) {
    QuietHdf5Errors quiet;
    // Released first: a failed close must not be retried by the handle's destructor.
    const hid_t id = f.file.release();
    if (H5Fclose(id) < 0) {
      try {
        raise_hdf5("H5Fclose", fmt::format("closing HDF5 file '{}'", f.path), __FILE__, __LINE__);
      } catch (...) {
        failure = std::current_exception();
      }
    }
  }
  std::unique_ptr<Impl> keep = std::move(impl_);
  keep->share_failure(failure, call);
}

void File::flush() {
  Impl& f = checked("hdf5::File::flush");
  const std::string call = "hdf5::File::flush";
  f.agree_on_call(call, call);
  f.on_file_ranks(call, [&] {
    SKEIN_H5_CHECK(H5Fflush, (f.file.get(), H5F_SCOPE_GLOBAL), fmt::format("flushing HDF5 file '{}'", f.path));
    return std::string();
  });
}

namespace {

// Creates (or, with overwrite, reopens) a dataset and writes Skein's and the user's attributes.
Handle make_dataset(File::Impl& f, const std::string& name, const Shape& shape, Dtype dtype,
                    const WriteOptions& o, const Attributes& skein_attributes, const std::string& call) {
  const std::string where = fmt::format("dataset '{}' in HDF5 file '{}'", name, f.path);
  Handle dataset;
  if (f.is_dataset(name)) {
    const Handle existing(SKEIN_H5_CHECK(H5Dopen2, (f.file.get(), name.c_str(), H5P_DEFAULT), where), H5Dclose);
    const DatasetInfo info = f.read_info(existing.get(), name);
    if (!o.overwrite || info.shape != shape || info.dtype != dtype) {
      detail::raise_in(SKEIN_HERE, call,
                       o.overwrite ? "Write over it only with the same shape and dtype, or use another name."
                                   : "Use another name, or set WriteOptions::overwrite to write over "
                                     "it (same shape and dtype).",
                       "{} exists already ({} {}; this write: {} {})", where, skein::name(info.dtype),
                       shape_text(info.shape), skein::name(dtype), shape_text(shape));
    }
    dataset = Handle(SKEIN_H5_CHECK(H5Dopen2, (f.file.get(), name.c_str(), H5P_DEFAULT), where), H5Dclose);
    // A step or time the new data does not have must not stay from the old.
    for (const char* stale : {"skein_step", "skein_time"}) {
      const bool given = std::string(stale) == "skein_step" ? o.step.has_value() : o.time.has_value();
      if (!given && SKEIN_H5_CHECK(H5Aexists, (dataset.get(), stale), where) > 0) {
        SKEIN_H5_CHECK(H5Adelete, (dataset.get(), stale), where);
      }
    }
  } else if (f.link_exists(name)) {
    detail::raise_in(SKEIN_HERE, call, "Use a name that is not a group of the file.",
                     "'{}' in HDF5 file '{}' is a group, not a dataset", name, f.path);
  } else {
    Handle space;
    if (shape.empty()) {
      space = Handle(SKEIN_H5_CHECK(H5Screate, (H5S_SCALAR), where), H5Sclose);
    } else {
      const std::vector<hsize_t> dims(shape.begin(), shape.end());
      space = Handle(SKEIN_H5_CHECK(H5Screate_simple, (static_cast<int>(dims.size()), dims.data(), nullptr), where),
                     H5Sclose);
    }
    Handle dcpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_DATASET_CREATE), where), H5Pclose);
    std::size_t chunk_rows = o.chunk_rows;
    if (chunk_rows == 0 && (o.compression > 0 || o.checksum)) {
      const std::size_t row_bytes = std::max<std::size_t>(1, row_elements(shape) * itemsize(dtype));
      chunk_rows = std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes);
    }
    // HDF5 refuses chunks larger than a fixed-size dataset and chunks of 0-D or empty datasets:
    // those stay contiguous, unfiltered (an empty one has nothing to protect or compress).
    const bool chunked = chunk_rows > 0 && !shape.empty() && shape_size(shape) > 0;
    const bool filtered = chunked && (o.compression > 0 || o.checksum);
    if (chunked) {
      std::vector<hsize_t> chunk(shape.begin(), shape.end());
      chunk[0] = std::min(chunk_rows, shape[0]);
      SKEIN_H5_CHECK(H5Pset_chunk, (dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), where);
      if (o.compression > 0) {
        if (o.shuffle) SKEIN_H5_CHECK(H5Pset_shuffle, (dcpl.get()), where);
        SKEIN_H5_CHECK(H5Pset_deflate, (dcpl.get(), static_cast<unsigned>(o.compression)), where);
      }
      // Last in the pipeline, so that the checksum covers the bytes as they lie in the file.
      if (o.checksum) SKEIN_H5_CHECK(H5Pset_fletcher32, (dcpl.get()), where);
    }
    if (!filtered) {
      // Every element is written: HDF5 need not write fill values first.
      SKEIN_H5_CHECK(H5Pset_fill_time, (dcpl.get(), H5D_FILL_TIME_NEVER), where);
    }
    Handle lcpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_LINK_CREATE), where), H5Pclose);
    SKEIN_H5_CHECK(H5Pset_create_intermediate_group, (lcpl.get(), 1), where);
    Handle type = type_of(dtype);
    dataset = Handle(SKEIN_H5_CHECK(H5Dcreate2, (f.file.get(), name.c_str(), type.get(), space.get(),
                                                 lcpl.get(), dcpl.get(), H5P_DEFAULT),
                                    where),
                     H5Dclose);
  }
  Attributes all = skein_attributes;
  all["skein_dtype"] = std::string(skein::name(dtype));
  all["skein_global_shape"] = std::vector<std::int64_t>(shape.begin(), shape.end());
  if (o.step) all["skein_step"] = *o.step;
  if (o.time) all["skein_time"] = *o.time;
  for (const auto& [k, v] : o.attributes) all[k] = v;
  for (const auto& [k, v] : all) write_attribute(dataset.get(), name, k, v);
  return dataset;
}

}  // namespace

namespace {
// NVTX ranges of the writes and reads (skein/detail/trace.hpp): registered once.
skein::detail::TraceName trace_write() {
  static const skein::detail::TraceName name = skein::detail::trace_name("hdf5 write");
  return name;
}
skein::detail::TraceName trace_read() {
  static const skein::detail::TraceName name = skein::detail::trace_name("hdf5 read");
  return name;
}
}  // namespace

void File::write(const std::string& name_in, const DistArray& array, const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const BlockLayout& layout = array.layout();
  f.agree_on_call(call, fmt::format("write DistArray '{}' {} {} split {} ({})", name, skein::name(array.dtype()),
                                    shape_text(array.shape()), layout.describe(), describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    if (layout.ranks() != f.size || array.rank() != f.rank) {
      detail::raise_in(SKEIN_HERE, call,
                       "Open the file over the array's communicator (File::create(comm, ...)).",
                       "the array's communicator has {} ranks (this is its rank {}), the file's {} "
                       "(this is its rank {})",
                       layout.ranks(), array.rank(), f.size, f.rank);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);

  std::vector<std::int64_t> starts;
  for (std::size_t m = 0; m < layout.members(); ++m) starts.push_back(static_cast<std::int64_t>(layout.member_rows(m).begin));
  starts.push_back(static_cast<std::int64_t>(layout.rows()));
  const Attributes skein_attributes = {{"skein_layout", layout.describe()}, {"skein_row_starts", starts}};
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, array.shape(), array.dtype(), options, skein_attributes, call);
    return std::string();
  });

  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  for (int r = 0; r < f.size; ++r) plan.rank_rows.push_back(layout.rank_rows(r));
  const std::size_t row_bytes = layout.row_size() * itemsize(array.dtype());
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    for (const auto& b : array.blocks()) {
      const std::size_t lo = std::max(rows.begin, b.rows.begin), hi = std::min(rows.end, b.rows.end);
      if (lo >= hi) continue;
      b.interior.slice(lo - b.rows.begin, hi - b.rows.begin)
          .get(dest.subspan((lo - rows.begin) * row_bytes, (hi - lo) * row_bytes));
    }
  };
  f.write_rows(dataset.get(), name, plan, call);
}

void File::read(const std::string& name_in, const DistArray& array) {
  skein::detail::TraceRange trace(trace_read());
  const std::string call = "hdf5::File::read";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const BlockLayout& layout = array.layout();
  f.agree_on_call(call, fmt::format("read DistArray '{}' {} {} split {}", name, skein::name(array.dtype()),
                                    shape_text(array.shape()), layout.describe()));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    if (layout.ranks() != f.size || array.rank() != f.rank) {
      detail::raise_in(SKEIN_HERE, call,
                       "Open the file over the array's communicator (File::open(comm, ...)).",
                       "the array's communicator has {} ranks (this is its rank {}), the file's {} "
                       "(this is its rank {})",
                       layout.ranks(), array.rank(), f.size, f.rank);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);

  Handle dataset;
  const DatasetInfo info = info_from_json(json::parse(f.on_file_ranks(call, [&] {
    dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
  if (info.dtype != array.dtype() || info.shape != array.shape()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Read into a DistArray of the dataset's global shape and dtype (File::info() gives them).",
                     "dataset '{}' of HDF5 file '{}' is {} {}, but the array is {} {}", name, f.path,
                     skein::name(info.dtype), shape_text(info.shape), skein::name(array.dtype()),
                     shape_text(array.shape()));
  }
  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  for (int r = 0; r < f.size; ++r) plan.rank_rows.push_back(layout.rank_rows(r));
  const std::size_t row_bytes = layout.row_size() * itemsize(array.dtype());
  plan.store = [&](RowRange rows, std::span<const std::byte> src) {
    for (const auto& b : array.blocks()) {
      const std::size_t lo = std::max(rows.begin, b.rows.begin), hi = std::min(rows.end, b.rows.end);
      if (lo >= hi) continue;
      b.interior.slice(lo - b.rows.begin, hi - b.rows.begin)
          .set(src.subspan((lo - rows.begin) * row_bytes, (hi - lo) * row_bytes));
    }
  };
  f.read_rows(dataset.get(), name, plan, call);
}

void File::write(const std::string& name_in, const ReplicatedArray& array, const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("write ReplicatedArray '{}' {} {} ({})", name, skein::name(array.dtype()),
                                    shape_text(array.shape()), describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    if (array.rank() != f.rank) {
      detail::raise_in(SKEIN_HERE, call, "Open the file over the array's communicator.",
                       "this process is rank {} of the array's communicator but rank {} of the file's",
                       array.rank(), f.rank);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, array.shape(), array.dtype(), options, {}, call);
    return std::string();
  });
  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[0] = {0, rows_of(array.shape())};
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    const Array local = array.local(0);
    if (local.ndim() == 0) {
      local.get(dest);
    } else {
      local.slice(rows.begin, rows.end).get(dest);
    }
  };
  f.write_rows(dataset.get(), name, plan, call);
}

void File::read(const std::string& name, const ReplicatedArray& array) {
  const std::string call = "hdf5::File::read";
  const DatasetInfo info = this->info(name);
  if (info.dtype != array.dtype() || info.shape != array.shape()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Read into a ReplicatedArray of the dataset's shape and dtype (File::info() gives them).",
                     "dataset '{}' of HDF5 file '{}' is {} {}, but the array is {} {}", name, path(),
                     skein::name(info.dtype), shape_text(info.shape), skein::name(array.dtype()),
                     shape_text(array.shape()));
  }
  const std::vector<std::byte> host = read_host_bytes_as(name, array.dtype());
  array.set(std::span<const std::byte>(host));
}

void File::write_host(const std::string& name_in, std::span<const std::byte> data,
                      const std::optional<Shape>& shape_in, Dtype dtype, int root_rank,
                      const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write_host";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("write host data '{}' {} {} from rank {} ({})", name, skein::name(dtype),
                                    shape_in ? shape_text(*shape_in) : "of the root's size", root_rank,
                                    describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    if (root_rank < 0 || root_rank >= f.size) {
      detail::raise_in(SKEIN_HERE, call, "Pass a rank of the file's communicator as the root.",
                       "root rank {} does not exist (the file's communicator has {} ranks)", root_rank, f.size);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Shape shape;
  if (shape_in) {
    shape = *shape_in;
  } else {
    auto n = std::make_shared<std::uint64_t>(f.rank == root_rank ? data.size() / itemsize(dtype) : 0);
    f.agreement.broadcast_bytes(call, std::as_writable_bytes(std::span(n.get(), 1)), root_rank, n);
    shape = {static_cast<std::size_t>(*n)};
  }
  try {
    if (f.rank == root_rank && data.size() != shape_size(shape) * itemsize(dtype)) {
      detail::raise_in(SKEIN_HERE, call, "On the root rank, pass the whole array (shape_size(shape) elements).",
                       "rank {} (the root): the host data has {} bytes, but shape {} of {} has {}", f.rank,
                       data.size(), shape_text(shape), skein::name(dtype), shape_size(shape) * itemsize(dtype));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, shape, dtype, options, {}, call);
    return std::string();
  });
  Impl::RowPlan plan;
  plan.shape = shape;
  plan.dtype = dtype;
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[static_cast<std::size_t>(root_rank)] = {0, rows_of(shape)};
  const std::size_t row_bytes = row_elements(shape) * itemsize(dtype);
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    std::memcpy(dest.data(), data.data() + rows.begin * row_bytes, rows.size() * row_bytes);
  };
  f.write_rows(dataset.get(), name, plan, call);
}

std::vector<std::byte> File::read_host_bytes(const std::string& name) {
  return read_host_bytes_as(name, std::nullopt);
}

std::vector<std::byte> File::read_host_bytes_as(const std::string& name_in, std::optional<Dtype> expected) {
  const std::string call = "hdf5::File::read_host";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("read host data '{}' as {}", name, expected ? skein::name(*expected) : "its dtype"));
  std::exception_ptr failure;
  try {
    check_name(name, call);
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  const DatasetInfo info = info_from_json(json::parse(f.on_file_ranks(call, [&] {
    dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
  if (expected && *expected != info.dtype) {
    detail::raise_in(SKEIN_HERE, call, "Read it as the dataset's dtype (File::info() gives it).",
                     "dataset '{}' of HDF5 file '{}' is {} {}, not {}", name, f.path, skein::name(info.dtype),
                     shape_text(info.shape), skein::name(*expected));
  }
  const std::size_t row_bytes = row_elements(info.shape) * itemsize(info.dtype);
  // Owned through `owner`: the broadcast below may time out with MPI still writing it.
  auto owner = std::make_shared<std::vector<std::byte>>(shape_size(info.shape) * itemsize(info.dtype));
  std::vector<std::byte>& out = *owner;
  // Every rank reads the whole dataset: on the parallel path each rank selects all rows (MPI-IO
  // reads them once and spreads them); through rank 0 rank 0 reads and the rows are broadcast.
  Impl::RowPlan plan;
  plan.shape = info.shape;
  plan.dtype = info.dtype;
  if (f.parallel) {
    plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{0, rows_of(info.shape)});
    plan.store = [&](RowRange rows, std::span<const std::byte> src) {
      std::memcpy(out.data() + rows.begin * row_bytes, src.data(), src.size());
    };
    f.read_rows(dataset.get(), name, plan, call);
    return std::move(out);
  }
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[0] = {0, rows_of(info.shape)};
  plan.store = [&](RowRange rows, std::span<const std::byte> src) {
    std::memcpy(out.data() + rows.begin * row_bytes, src.data(), src.size());
  };
  f.read_rows(dataset.get(), name, plan, call);
  f.agreement.broadcast_bytes(call, std::span(out), 0, owner);
  return std::move(out);
}

DatasetInfo File::info(const std::string& name_in) {
  const std::string call = "hdf5::File::info";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("info '{}'", name));
  return info_from_json(json::parse(f.on_file_ranks(call, [&] {
    check_name(name, call);
    Handle dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
}

bool File::exists(const std::string& name_in) {
  const std::string call = "hdf5::File::exists";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("exists '{}'", name));
  return f.on_file_ranks(call, [&] {
    return std::string(name.empty() || name == "/" ? "0" : f.is_dataset(name) ? "1" : "0");
  }) == "1";
}

std::vector<std::string> File::datasets(const std::string& group_in) {
  const std::string call = "hdf5::File::datasets";
  Impl& f = checked(call.c_str());
  const std::string group = group_in.empty() ? "/" : normalise(group_in);
  f.agree_on_call(call, fmt::format("datasets '{}'", group));
  return json::parse(f.on_file_ranks(call, [&] { return json(f.list_datasets(group)).dump(); }))
      .get<std::vector<std::string>>();
}

void File::set_attribute(const std::string& object_in, const std::string& name, const AttributeValue& value) {
  const std::string call = "hdf5::File::set_attribute";
  Impl& f = checked(call.c_str());
  const std::string object = object_in.empty() ? "/" : normalise(object_in);
  // The value is part of the agreement: parallel HDF5 wants the same attribute data on every rank.
  f.agree_on_call(call, fmt::format("set_attribute '{}' '{}' = {}", object, name, attribute_to_json(value).dump()));
  f.on_file_ranks(call, [&] {
    f.check_writable(call);
    if (name.empty()) {
      detail::raise_in(SKEIN_HERE, call, "Pass an attribute name.", "the attribute name is empty");
    }
    Handle o = f.open_object(object);
    write_attribute(o.get(), object, name, value);
    return std::string();
  });
}

Attributes File::attributes(const std::string& object_in) {
  const std::string call = "hdf5::File::attributes";
  Impl& f = checked(call.c_str());
  const std::string object = object_in.empty() ? "/" : normalise(object_in);
  f.agree_on_call(call, fmt::format("attributes '{}'", object));
  return attributes_from_json(json::parse(f.on_file_ranks(call, [&] {
    Handle o = f.open_object(object);
    return attributes_to_json(read_attributes(o.get(), object)).dump();
  })));
}

std::optional<AttributeValue> File::attribute(const std::string& object, const std::string& name) {
  Attributes all = attributes(object);
  const auto it = all.find(name);
  if (it == all.end()) return std::nullopt;
  return it->second;
}

#else  // no HDF5 (or no MPI, without which there are no distributed arrays)

namespace {
[[noreturn]] void raise_unavailable(const std::string& call) {
  detail::raise_in<RuntimeError>(
      SKEIN_HERE, call,
      "Rebuild Skein with HDF5 and MPI (SKEIN_WITH_HDF5=ON, SKEIN_WITH_MPI=ON; on Debian the "
      "packages libhdf5-openmpi-dev or libhdf5-dev).",
      "this build of Skein has no HDF5 I/O ({})", SKEIN_HAS_HDF5 ? "no MPI" : "no HDF5 library");
}
}  // namespace

struct File::Impl {};

bool available() { return false; }
bool parallel_available() { return false; }
std::string library_description() {
  return SKEIN_HAS_HDF5 ? "HDF5 present but unused: this build has no MPI" : "no HDF5 in this build";
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;
File File::create(Communicator&, const std::string&, FileOptions) { raise_unavailable("hdf5::File::create"); }
File File::open(Communicator&, const std::string&, Access, FileOptions) { raise_unavailable("hdf5::File::open"); }
#if SKEIN_HAS_MPI
File File::create(MPI_Comm, const std::string&, FileOptions) { raise_unavailable("hdf5::File::create"); }
File File::open(MPI_Comm, const std::string&, Access, FileOptions) { raise_unavailable("hdf5::File::open"); }
#endif
File::Impl& File::checked(const char* call) const { raise_unavailable(call); }
const std::string& File::path() const {
  static const std::string none;
  return none;
}
bool File::is_open() const { return false; }
bool File::parallel() const { return false; }
int File::rank() const { return 0; }
int File::ranks() const { return 0; }
void File::write(const std::string&, const DistArray&, const WriteOptions&) { raise_unavailable("hdf5::File::write"); }
void File::read(const std::string&, const DistArray&) { raise_unavailable("hdf5::File::read"); }
void File::write(const std::string&, const ReplicatedArray&, const WriteOptions&) { raise_unavailable("hdf5::File::write"); }
void File::read(const std::string&, const ReplicatedArray&) { raise_unavailable("hdf5::File::read"); }
void File::write_host(const std::string&, std::span<const std::byte>, const std::optional<Shape>&, Dtype, int,
                      const WriteOptions&) {
  raise_unavailable("hdf5::File::write_host");
}
std::vector<std::byte> File::read_host_bytes(const std::string&) { raise_unavailable("hdf5::File::read_host"); }
std::vector<std::byte> File::read_host_bytes_as(const std::string&, std::optional<Dtype>) {
  raise_unavailable("hdf5::File::read_host");
}
DatasetInfo File::info(const std::string&) { raise_unavailable("hdf5::File::info"); }
bool File::exists(const std::string&) { raise_unavailable("hdf5::File::exists"); }
std::vector<std::string> File::datasets(const std::string&) { raise_unavailable("hdf5::File::datasets"); }
void File::set_attribute(const std::string&, const std::string&, const AttributeValue&) {
  raise_unavailable("hdf5::File::set_attribute");
}
Attributes File::attributes(const std::string&) { raise_unavailable("hdf5::File::attributes"); }
std::optional<AttributeValue> File::attribute(const std::string&, const std::string&) {
  raise_unavailable("hdf5::File::attribute");
}
void File::flush() { raise_unavailable("hdf5::File::flush"); }
void File::close() {}

#endif

}  // namespace skein::hdf5
