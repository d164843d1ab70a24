// SPDX-License-Identifier: BSD-3-Clause
// Skein's dtypes as HDF5 types and back (the mapping <skein/hdf5.hpp> describes): native
// little-endian integers and IEEE floats, float16 and bfloat16 as 2-byte floats with their own
// fields, complex numbers as compounds {r, i}.
#include "hdf5_support.hpp"
#include "skein/detail/errors.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

namespace internal {

namespace {

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

}  // namespace

Handle type_of(Dtype dtype, const std::string& real_name, const std::string& imag_name) {
  if (is_record(dtype)) {
    detail::raise_in(SKEIN_HERE, "skein HDF5 I/O",
                     "Write the record's numeric fields as datasets of their own (extract_field in "
                     "skein/records.hpp, copied into contiguous arrays).",
                     "record (struct) dtype '{}' has no HDF5 type in Skein", name(dtype));
  }
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
           H5Tinsert(t, imag_name.c_str(), part, single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE) <
               0)) {
        H5Tclose(t);
        t = -1;
      }
      break;
    }
  }
  if (t < 0)
    raise_hdf5("H5Tcopy", fmt::format("making the HDF5 type of dtype {}", name(dtype)), __FILE__,
               __LINE__);
  return Handle(t, H5Tclose);
}

namespace {

// A file type in words, for messages: "a 3-byte integer", "an H5T_STRING".
std::string type_words(hid_t t) {
  switch (H5Tget_class(t)) {
    case H5T_INTEGER:
      return fmt::format("a {}-byte {}integer", H5Tget_size(t),
                         H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned " : "");
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

std::string member_name(hid_t t, unsigned i) {
  char* n = H5Tget_member_name(t, i);
  std::string s = n ? n : "";
  if (n) H5free_memory(n);
  return s;
}

}  // namespace

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
        why = fmt::format(
            "a 2-byte float with {} exponent and {} mantissa bits (neither float16 "
            "nor bfloat16)",
            esize, msize);
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
      why =
          "a compound type that is not a complex number (two float members named r, i or "
          "real, imag)";
      return std::nullopt;
    }
    default: break;
  }
  why = type_words(t);
  return std::nullopt;
}

}  // namespace internal

}  // namespace skein::hdf5

#endif
