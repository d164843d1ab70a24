// SPDX-License-Identifier: BSD-3-Clause
// The built-in kernels' skeletons (skeletons.hpp): the table that cmake/SkeinEmbed.cmake generates
// from framework/src/kernels/*.tmpl, looked up by name, and the functions skeletons call.
#include "codegen/skeletons.hpp"

#include <charconv>
#include <cstddef>
#include <utility>

#include "codegen/types.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail::codegen {

std::string_view skeleton(std::string_view name) {
  for (std::size_t i = 0; i < kEmbeddedTextCount; ++i) {
    if (kEmbeddedTexts[i].name == name) return kEmbeddedTexts[i].text;
  }
  raise_in(SKEIN_HERE, "skein kernel generator", "This is a bug in Skein.",
           "no kernel skeleton '{}' is compiled into the library (framework/src/kernels/)", name);
}

std::string render_skeleton(std::string_view name, const RenderGlobals& globals) {
  return render(skeleton(name), globals, "skein/kernels/" + std::string(name));
}

namespace {

// A template whose output is `text` exactly: one placeholder of a string literal. The engine
// renders a snippet's text again; this way nothing in the text is taken for its syntax.
std::string verbatim(std::string_view text) {
  std::string out = "${'";
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += "'}";
  return out;
}

// Parameter k of `dtypes`, from the text of a skeleton's argument.
Dtype dtype_at(const std::vector<Dtype>& dtypes, const std::string& k, std::string_view fn) {
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), index);
  if (ec != std::errc() || end != k.data() + k.size() || index >= dtypes.size()) {
    raise_in(SKEIN_HERE, "skein kernel generator", "This is a bug in Skein.",
             "a skeleton called {}({}, ...) with {} parameters", fn, k, dtypes.size());
  }
  return dtypes[index];
}

}  // namespace

Snippet text_function(std::size_t arity, TextFunction fn, std::string name) {
  return Snippet::from_callable(
      arity, [fn = std::move(fn)](std::span<const std::string> args) { return verbatim(fn(args)); },
      {}, std::move(name));
}

Snippet line_joiner(std::string separator, std::string name) {
  return text_function(
      1,
      [separator = std::move(separator)](std::span<const std::string> args) {
        std::string out;
        std::string_view rest = args[0];
        while (true) {
          const std::size_t eol = rest.find('\n');
          out += rest.substr(0, eol);
          if (eol == std::string_view::npos) break;
          out += separator;
          rest.remove_prefix(eol + 1);
        }
        return out;
      },
      std::move(name));
}

Snippet value_loader(std::vector<Dtype> dtypes) {
  return text_function(
      2,
      [dtypes = std::move(dtypes)](std::span<const std::string> args) {
        return load_value(dtype_at(dtypes, args[0], "load"), args[1]);
      },
      "load");
}

Snippet value_storer(std::vector<Dtype> dtypes) {
  return text_function(
      2,
      [dtypes = std::move(dtypes)](std::span<const std::string> args) {
        return store_value(dtype_at(dtypes, args[0], "store"), args[1]);
      },
      "store");
}

RenderList typedef_lines(const Bindings& bindings) {
  RenderList lines;
  const std::string text = placeholder_typedefs(bindings);
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t eol = text.find('\n', start);
    lines.emplace_back(text.substr(start, eol - start));
    start = eol == std::string::npos ? text.size() : eol + 1;
  }
  return lines;
}

}  // namespace skein::detail::codegen
