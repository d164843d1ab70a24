// SPDX-License-Identifier: BSD-3-Clause
// Attributes: AttributeValue in words, in the file (scalars and 1-D arrays of int64 and float64,
// variable-length UTF-8 strings) and as JSON between ranks; File::set_attribute, attributes and
// attribute.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "skein/hdf5.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <algorithm>
#include <bit>
#include <cstring>

#include "hdf5_impl.hpp"
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

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace internal {

json attribute_to_json(const AttributeValue& value) {
  // Doubles travel as their bits: JSON has no NaN or infinity.
  return std::visit(
      [](const auto& v) -> json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::int64_t>)
          return {{"i", v}};
        else if constexpr (std::is_same_v<V, double>)
          return {{"d", std::bit_cast<std::uint64_t>(v)}};
        else if constexpr (std::is_same_v<V, std::string>)
          return {{"s", v}};
        else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>)
          return {{"I", v}};
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
          Handle attr(
              SKEIN_H5_CHECK(
                  H5Acreate2,
                  (object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), where),
              H5Aclose);
          const char* text = v.c_str();
          SKEIN_H5_CHECK(H5Awrite, (attr.get(), type.get(), &text), where);
        } else {
          constexpr bool is_int =
              std::is_same_v<V, std::int64_t> || std::is_same_v<V, std::vector<std::int64_t>>;
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
          Handle attr(
              SKEIN_H5_CHECK(H5Acreate2,
                             (object, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                             where),
              H5Aclose);
          static const std::int64_t dummy = 0;  // HDF5 wants a buffer even for no elements
          SKEIN_H5_CHECK(H5Awrite, (attr.get(), type, data ? data : &dummy), where);
        }
      },
      value);
}

namespace {

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

}  // namespace

Attributes read_attributes(hid_t object, const std::string& object_name) {
  std::vector<std::string> names;
  hsize_t index = 0;
  SKEIN_H5_CHECK(H5Aiterate2,
                 (object, H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute_name, &names),
                 fmt::format("the attributes of '{}'", object_name));
  Attributes out;
  for (const auto& n : names) {
    const std::string where = fmt::format("attribute '{}' of '{}'", n, object_name);
    Handle attr(SKEIN_H5_CHECK(H5Aopen, (object, n.c_str(), H5P_DEFAULT), where), H5Aclose);
    if (auto v = read_attribute(attr.get(), where)) out[n] = std::move(*v);
  }
  return out;
}

}  // namespace internal

void File::set_attribute(const std::string& object_in, const std::string& name,
                         const AttributeValue& value) {
  const std::string call = "hdf5::File::set_attribute";
  Impl& f = checked(call.c_str());
  const std::string object = object_in.empty() ? "/" : normalise(object_in);
  // The value is part of the agreement: parallel HDF5 wants the same attribute data on every rank.
  f.agree_on_call(call, fmt::format("set_attribute '{}' '{}' = {}", object, name,
                                    attribute_to_json(value).dump()));
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

#endif

}  // namespace skein::hdf5
