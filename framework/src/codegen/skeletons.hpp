// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): the built-in kernels' skeletons. Each is a
// template file under framework/src/kernels/ (NAME.tmpl, in Skein's template language,
// skein/template.hpp: %for, %if, <%def>, ${...}), compiled into the library as text
// (cmake/SkeinEmbed.cmake) and rendered by the generators with their values as globals.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/params.hpp"
#include "skein/dtype.hpp"
#include "skein/template.hpp"

namespace skein::detail::codegen {

// The text of the skeleton `name` (the file's name, "copy_rows.tmpl"). A name with no file is
// Skein's bug: LogicError.
std::string_view skeleton(std::string_view name);

// The skeleton `name` rendered with `globals`. A mistake in it is a RenderError that names
// "skein/kernels/NAME:LINE".
std::string render_skeleton(std::string_view name, const RenderGlobals& globals);

// Values a skeleton calls as functions, for text that its own language cannot write. Each is a
// snippet whose text C++ computes from the arguments (text, rendered where the call is written)
// and that is inserted as it is: nothing in it ('$', a leading '%' or '##') is read as template
// syntax.
using TextFunction = std::function<std::string(std::span<const std::string> args)>;
Snippet text_function(std::size_t arity, TextFunction fn, std::string name);
// ${NAME(lines)}: the argument's lines joined by `separator`. A list on one line (a parameter
// list, a sum of terms) cannot come from %for, whose output is whole lines: a def writes the items
// one a line, and this joins them.
Snippet line_joiner(std::string separator, std::string name);
// ${load(k, stored)} and ${store(k, computed)}: codegen::load_value and store_value (types.hpp)
// for the dtype of parameter k, `dtypes[k]`.
Snippet value_loader(std::vector<Dtype> dtypes);
Snippet value_storer(std::vector<Dtype> dtypes);
// The lines of codegen::placeholder_typedefs(bindings), without their newlines: a string global
// that ends with a newline cannot start a line that a %for writes the rest of.
RenderList typedef_lines(const Bindings& bindings);

// The table of skeletons, defined in the source that cmake/SkeinEmbed.cmake generates.
struct EmbeddedText {
  std::string_view name;
  std::string_view text;
};
extern const EmbeddedText kEmbeddedTexts[];
extern const std::size_t kEmbeddedTextCount;

}  // namespace skein::detail::codegen
