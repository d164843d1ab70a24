// SPDX-License-Identifier: BSD-3-Clause
// Record dtypes (skein/records.hpp): the registry, the definitions of their C types, flattening,
// C paths, field views and C constants.
#include "skein/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "record_registry.hpp"
#include "skein/detail/errors.hpp"
#include "skein/template.hpp"

namespace skein {

namespace {

struct RecordRegistry {
  std::shared_mutex mutex;
  std::deque<detail::RecordEntry> entries;  // value first_record_dtype + index; never erased
};

RecordRegistry& record_registry() {
  static RecordRegistry r;
  return r;
}

bool is_c_identifier(std::string_view s) {
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !s.empty() && start(s[0]) && std::all_of(s.begin(), s.end(), [&](char c) {
    return start(c) || (c >= '0' && c <= '9');
  });
}

Dtype record_value(std::size_t index) {
  return static_cast<Dtype>(static_cast<std::size_t>(first_record_dtype) + index);
}

}  // namespace

const detail::RecordEntry* detail::find_record(Dtype dtype) noexcept {
  if (!is_record(dtype)) return nullptr;
  auto& r = record_registry();
  std::shared_lock lock(r.mutex);
  const std::size_t i = static_cast<std::size_t>(dtype) - first_record_dtype;
  return i < r.entries.size() ? &r.entries[i] : nullptr;
}

const detail::RecordEntry& detail::record_entry(Dtype dtype, std::string_view call) {
  if (const auto* e = find_record(dtype)) return *e;
  detail::raise_in(SKEIN_HERE, call, "Use a Dtype that register_dtype returned.",
                   "dtype value {} is neither a built-in dtype nor a registered record",
                   int(dtype));
}

std::optional<Dtype> detail::record_by_name(std::string_view cname) noexcept {
  auto& r = record_registry();
  std::shared_lock lock(r.mutex);
  for (std::size_t i = 0; i < r.entries.size(); ++i) {
    if (r.entries[i].cname == cname) return record_value(i);
  }
  return std::nullopt;
}

std::string detail::record_names() {
  auto& r = record_registry();
  std::shared_lock lock(r.mutex);
  std::string out;
  for (const auto& e : r.entries) out += (out.empty() ? "" : ", ") + e.cname;
  return out;
}

Dtype register_dtype(const StructType& type, std::string cname) {
  constexpr const char* call = "skein::register_dtype";
  if (!is_c_identifier(cname)) {
    detail::raise_in(SKEIN_HERE, call, "Name the type with a C identifier.",
                     "'{}' is not a C identifier", cname);
  }
  for (Dtype d : all_dtypes) {
    if (cname == name(d) || cname == ctype(d)) {
      detail::raise_in(SKEIN_HERE, call, "Pick a name of its own for the struct.",
                       "'{}' names the built-in dtype {}", cname, name(d));
    }
  }
  // Checks the fields (and writes the definition once, for the registry's itemsize).
  (void)ctype_struct(type, cname);
  auto& r = record_registry();
  std::unique_lock lock(r.mutex);
  for (std::size_t i = 0; i < r.entries.size(); ++i) {
    if (r.entries[i].cname != cname) continue;
    if (r.entries[i].type == type) return record_value(i);
    detail::raise_in(SKEIN_HERE, call,
                     "Register the struct under another name (or reuse the registered struct).",
                     "the name '{}' is taken by a different struct", cname);
  }
  if (r.entries.size() + first_record_dtype > 255) {
    detail::raise_in(SKEIN_HERE, call, "Reuse registered records: names are process-wide.",
                     "{} record dtypes are registered, the most there can be", r.entries.size());
  }
  r.entries.push_back({type, cname, type.itemsize(), type.alignment()});
  return record_value(r.entries.size() - 1);
}

const StructType& record_type(Dtype dtype) {
  if (!is_record(dtype)) {
    detail::raise_in(SKEIN_HERE, "skein::record_type", "Pass a dtype made by register_dtype.",
                     "{} is a built-in dtype, not a record", name(dtype));
  }
  return detail::record_entry(dtype, "skein::record_type").type;
}

std::vector<Dtype> record_dtypes() {
  auto& r = record_registry();
  std::shared_lock lock(r.mutex);
  std::vector<Dtype> out;
  for (std::size_t i = 0; i < r.entries.size(); ++i) out.push_back(record_value(i));
  return out;
}

std::string record_definition(Dtype dtype) {
  if (!is_record(dtype)) {
    detail::raise_in(SKEIN_HERE, "skein::record_definition", "Pass a dtype made by register_dtype.",
                     "{} is a built-in dtype, not a record", name(dtype));
  }
  const auto& entry = detail::record_entry(dtype, "skein::record_definition");
  return fmt::format("#ifndef SKEIN_RECORD_{0}\n#define SKEIN_RECORD_{0}\n{1}#endif\n", entry.cname,
                     ctype_struct(entry.type, entry.cname));
}

std::string record_definitions(std::span<const Dtype> dtypes) {
  std::string out;
  std::vector<Dtype> seen;
  for (Dtype d : dtypes) {
    if (!is_record(d) || std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
    seen.push_back(d);
    out += record_definition(d);
  }
  return out;
}

// --- flattening and paths ----------------------------------------------------------------------

namespace {

std::size_t part_size(const StructField& f) {
  return f.is_struct() ? std::get<1>(f.type)->itemsize() : itemsize(std::get<0>(f.type));
}

void flatten_into(const StructType& type, const FieldPath& prefix, std::size_t base,
                  std::vector<FlatField>& out) {
  const auto offsets = type.offsets();
  for (std::size_t k = 0; k < type.fields().size(); ++k) {
    const auto& f = type.fields()[k];
    FieldPath path = prefix;
    path.emplace_back(f.name);
    const std::size_t n = std::max<std::size_t>(f.count, 1);
    for (std::size_t i = 0; i < n; ++i) {
      FieldPath p = path;
      if (f.count) p.emplace_back(i);
      const std::size_t at = base + offsets[k] + i * part_size(f);
      if (f.is_struct()) {
        flatten_into(*std::get<1>(f.type), p, at, out);
      } else {
        out.push_back({std::move(p), std::get<0>(f.type), at});
      }
    }
  }
}

std::string path_text(const FieldPath& path) {
  std::string out;
  for (const auto& e : path) {
    if (e.index() == 0) {
      out += (out.empty() ? "" : ".") + std::get<0>(e);
    } else {
      out += fmt::format("[{}]", std::get<1>(e));
    }
  }
  return out;
}

}  // namespace

std::vector<FlatField> flatten_dtype(const StructType& type) {
  std::vector<FlatField> out;
  flatten_into(type, {}, 0, out);
  return out;
}

std::vector<FlatField> flatten_dtype(Dtype dtype) { return flatten_dtype(record_type(dtype)); }

std::string c_path(const FieldPath& path) {
  if (path.empty() || path.front().index() != 0) {
    detail::raise_in(SKEIN_HERE, "skein::c_path", "Start the path with a field name.",
                     "the path {} does not start with a field name",
                     path.empty() ? std::string("is empty and") : path_text(path));
  }
  return path_text(path);
}

// --- field views --------------------------------------------------------------------------------

namespace {

// Where `path` leads within `type`: the byte offset, the leaf (a dtype or a struct), and the
// length of an array field left unindexed at the end (0: none).
struct PathEnd {
  std::size_t offset = 0;
  std::variant<Dtype, const StructType*> leaf;
  std::size_t trailing = 0;
  std::size_t trailing_stride = 0;
};

PathEnd walk_path(const StructType& top, const FieldPath& path, std::string_view record) {
  constexpr const char* call = "skein::extract_field";
  if (path.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Name a field.", "the path into '{}' is empty", record);
  }
  PathEnd end;
  const StructType* type = &top;
  for (std::size_t k = 0; k < path.size(); ++k) {
    if (path[k].index() != 0 || type == nullptr) {
      detail::raise_in(SKEIN_HERE, call, "Index only array fields, once, right after their name.",
                       "path element {} of '{}' in record '{}' is an index where a field name "
                       "belongs",
                       k, path_text(path), record);
    }
    const std::string& fname = std::get<0>(path[k]);
    const auto& fields = type->fields();
    const auto it = std::find_if(fields.begin(), fields.end(),
                                 [&](const StructField& f) { return f.name == fname; });
    if (it == fields.end()) {
      std::string names;
      for (const auto& f : fields) names += (names.empty() ? "" : ", ") + f.name;
      detail::raise_in(SKEIN_HERE, call, fmt::format("The fields there are: {}.", names),
                       "record '{}' has no field '{}' (path '{}')", record, fname, path_text(path));
    }
    end.offset += type->offsets()[static_cast<std::size_t>(it - fields.begin())];
    const std::size_t size = part_size(*it);
    bool indexed = false;
    if (k + 1 < path.size() && path[k + 1].index() == 1) {
      const std::size_t i = std::get<1>(path[k + 1]);
      if (it->count == 0 || i >= it->count) {
        detail::raise_in(
            SKEIN_HERE, call, "Index array fields within their length.",
            "field '{}' of record '{}' {} (index {})", fname, record,
            it->count ? fmt::format("has {} elements", it->count) : std::string("is not an array"),
            i);
      }
      end.offset += i * size;
      indexed = true;
      ++k;
    }
    const bool last = k + 1 == path.size();
    if (it->count && !indexed) {
      if (!last) {
        detail::raise_in(SKEIN_HERE, call, "Index the array field before naming its fields.",
                         "field '{}' of record '{}' is an array of {}", fname, record, it->count);
      }
      end.trailing = it->count;
      end.trailing_stride = size;
    }
    if (it->is_struct()) {
      type = std::get<1>(it->type).get();
      end.leaf = type;
    } else {
      end.leaf = std::get<0>(it->type);
      type = nullptr;
    }
  }
  return end;
}

}  // namespace

Array extract_field(const Array& array, const FieldPath& path) {
  if (!is_record(array.dtype())) {
    detail::raise_in(SKEIN_HERE, "skein::extract_field", "Pass an array of a record dtype.",
                     "the array's dtype {} has no fields", name(array.dtype()));
  }
  const std::string record(name(array.dtype()));
  const PathEnd end = walk_path(record_type(array.dtype()), path, record);
  Dtype dtype;
  if (end.leaf.index() == 0) {
    dtype = std::get<0>(end.leaf);
  } else {
    const StructType& inner = *std::get<1>(end.leaf);
    dtype = Dtype{};
    bool found = false;
    for (Dtype d : record_dtypes()) {
      if (record_type(d) == inner) {
        dtype = d;
        found = true;
        break;
      }
    }
    if (!found) {
      std::string suffix = c_path(path);
      std::replace_if(
          suffix.begin(), suffix.end(), [](char c) { return c == '.' || c == '[' || c == ']'; },
          '_');
      while (!suffix.empty() && suffix.back() == '_') suffix.pop_back();
      dtype = register_dtype(inner, record + "_" + suffix);
    }
  }
  Shape shape = array.shape();
  Strides strides = array.strides();
  if (end.trailing) {
    shape.push_back(end.trailing);
    strides.push_back(end.trailing_stride);
  }
  return Array(array.queue(), array.data(), std::move(shape), dtype, std::move(strides),
               array.offset() + end.offset);
}

}  // namespace skein
