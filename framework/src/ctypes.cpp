// SPDX-License-Identifier: BSD-3-Clause
#include "skein/ctypes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "skein/detail/errors.hpp"
#include "arithmetic.hpp"
#include "record_registry.hpp"

namespace skein {

std::string ctype(Dtype dtype) {
  if (is_record(dtype)) return detail::record_entry(dtype, "skein::ctype").cname;
  switch (dtype) {
    case Dtype::int8: return "int8_t";
    case Dtype::int16: return "int16_t";
    case Dtype::int32: return "int32_t";
    case Dtype::int64: return "int64_t";
    case Dtype::uint8: return "uint8_t";
    case Dtype::uint16: return "uint16_t";
    case Dtype::uint32: return "uint32_t";
    case Dtype::uint64: return "uint64_t";
    case Dtype::float16: return "skein_float16";
    case Dtype::bfloat16: return "skein_bfloat16";
    case Dtype::float32: return "float";
    case Dtype::float64: return "double";
    case Dtype::complex64: return "skein_complex64";
    case Dtype::complex128: return "skein_complex128";
  }
  detail::raise_in(SKEIN_HERE, "skein::ctype", {}, "invalid dtype value {}", int(dtype));
}

std::size_t alignment_of(Dtype dtype) {
  if (is_record(dtype)) return detail::record_entry(dtype, "skein::alignment_of").alignment;
  return itemsize(dtype);
}

namespace {

bool is_identifier(std::string_view s) {
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !s.empty() && start(s[0]) && std::all_of(s.begin(), s.end(), [&](char c) {
    return start(c) || (c >= '0' && c <= '9');
  });
}

using detail::round_up;

std::size_t field_alignment(const StructField& f) {
  return f.is_struct() ? std::get<1>(f.type)->alignment() : alignment_of(std::get<0>(f.type));
}

std::size_t field_size(const StructField& f) {
  const std::size_t one =
      f.is_struct() ? std::get<1>(f.type)->itemsize() : itemsize(std::get<0>(f.type));
  return one * std::max<std::size_t>(f.count, 1);
}

void write_body(std::string& out, const StructType& type, int indent, bool aligned) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  for (const auto& f : type.fields()) {
    const std::string dims = f.count ? fmt::format("[{}]", f.count) : "";
    if (f.is_struct()) {
      const auto& inner = *std::get<1>(f.type);
      if (aligned) {
        out += fmt::format("{}struct ALIGN({}) {{\n", pad, inner.alignment());
      } else {
        out += fmt::format("{}struct {{\n", pad);
      }
      write_body(out, inner, indent + 1, aligned);
      out += fmt::format("{}}} {}{};\n", pad, f.name, dims);
    } else {
      out += fmt::format("{}{} {}{};\n", pad, ctype(std::get<0>(f.type)), f.name, dims);
    }
  }
}

void check_nonempty(const StructType& type, std::string_view what) {
  if (type.fields().empty()) {
    detail::raise_in(SKEIN_HERE, std::string(what), "Add at least one field.",
                     "a C struct cannot be empty");
  }
  for (const auto& f : type.fields()) {
    if (f.is_struct()) check_nonempty(*std::get<1>(f.type), what);
  }
}

}  // namespace

StructField::StructField(std::string name_, Dtype dtype, std::size_t count_)
    : name(std::move(name_)), type(dtype), count(count_) {}

StructField::StructField(std::string name_, const StructType& t, std::size_t count_)
    : name(std::move(name_)), type(std::make_shared<const StructType>(t)), count(count_) {}

StructType::StructType(std::initializer_list<StructField> fields) {
  for (const auto& f : fields) push(f);
}

StructType& StructType::add(std::string name, Dtype dtype, std::size_t count) {
  push(StructField(std::move(name), dtype, count));
  return *this;
}

StructType& StructType::add(std::string name, const StructType& type, std::size_t count) {
  push(StructField(std::move(name), type, count));
  return *this;
}

void StructType::push(StructField field) {
  // A record dtype's field is its struct, nested (so it is written inline and flattened).
  if (!field.is_struct() && is_record(std::get<0>(field.type))) {
    field.type = std::make_shared<const StructType>(
        detail::record_entry(std::get<0>(field.type), "skein::StructType").type);
  }
  if (!is_identifier(field.name)) {
    detail::raise_in(SKEIN_HERE, "skein::StructType", {}, "field name '{}' is not a C identifier",
                     field.name);
  }
  for (const auto& f : fields_) {
    if (f.name == field.name) {
      detail::raise_in(SKEIN_HERE, "skein::StructType", {}, "duplicate field name '{}'",
                       field.name);
    }
  }
  fields_.push_back(std::move(field));
}

std::vector<std::size_t> StructType::offsets() const {
  std::vector<std::size_t> out;
  std::size_t pos = 0;
  for (const auto& f : fields_) {
    pos = round_up(pos, field_alignment(f));
    out.push_back(pos);
    pos += field_size(f);
  }
  return out;
}

std::size_t StructType::alignment() const {
  std::size_t a = min_alignment_;
  for (const auto& f : fields_) a = std::max(a, field_alignment(f));
  return a;
}

std::size_t StructType::itemsize() const {
  if (fields_.empty()) return 0;
  return round_up(offsets().back() + field_size(fields_.back()), alignment());
}

bool operator==(const StructType& a, const StructType& b) {
  if (a.min_alignment_ != b.min_alignment_ || a.fields_.size() != b.fields_.size()) return false;
  for (std::size_t i = 0; i < a.fields_.size(); ++i) {
    const auto& fa = a.fields_[i];
    const auto& fb = b.fields_[i];
    if (fa.name != fb.name || fa.count != fb.count || fa.is_struct() != fb.is_struct())
      return false;
    if (fa.is_struct() ? !(*std::get<1>(fa.type) == *std::get<1>(fb.type))
                       : std::get<0>(fa.type) != std::get<0>(fb.type)) {
      return false;
    }
  }
  return true;
}

StructType align(const StructType& type, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    detail::raise_in(SKEIN_HERE, "skein::align", {}, "alignment {} is not a power of two",
                     alignment);
  }
  StructType out = type;
  out.min_alignment_ = std::max(out.min_alignment_, alignment);
  return out;
}

std::string ctype_struct(const StructType& type, std::string_view name, bool ignore_alignment) {
  check_nonempty(type, "skein::ctype_struct");
  if (!is_identifier(name)) {
    detail::raise_in(SKEIN_HERE, "skein::ctype_struct", {},
                     "struct name '{}' is not a C identifier", name);
  }
  // Every field type has its natural alignment equal to the one used for the layout, so the only
  // explicit alignment needed is the struct's own (which align() may have raised).
  std::string out = ignore_alignment
                        ? std::string("typedef struct {\n")
                        : fmt::format("typedef struct ALIGN({}) {{\n", type.alignment());
  write_body(out, type, 1, !ignore_alignment);
  out += fmt::format("}} {};\n", name);
  return out;
}

Module ctype_module(const StructType& type, std::string name) {
  check_nonempty(type, "skein::ctype_module");
  // A cache keyed by the definition's text: equal types give the same module, hence one C type.
  static std::mutex mutex;
  static std::map<std::string, Module> cache;
  std::string body = ctype_struct(type, "PREFIX_");
  body.replace(body.rfind("PREFIX_"), 7, "${prefix}");
  const std::string key = name + '\n' + body;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Module m(body, {}, std::move(name));
  cache.emplace(key, m);
  return m;
}

}  // namespace skein
