// SPDX-License-Identifier: BSD-3-Clause
// Part of the code-generation module (see types.hpp): the built-in kernels' skeletons. Each is a
// template file under framework/src/kernels/ (NAME.tmpl, in Skein's template language,
// skein/template.hpp: %for, %if, <%def>, ${...}), compiled into the library as text
// (cmake/SkeinEmbed.cmake) and rendered by the generators with their values as globals.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "skein/template.hpp"

namespace skein::detail::codegen {

// The text of the skeleton `name` (the file's name, "copy_rows.tmpl"). A name with no file is
// Skein's bug: LogicError.
std::string_view skeleton(std::string_view name);

// The skeleton `name` rendered with `globals`. A mistake in it is a RenderError that names
// "skein/kernels/NAME:LINE".
std::string render_skeleton(std::string_view name, const RenderGlobals& globals);

// The table of skeletons, defined in the source that cmake/SkeinEmbed.cmake generates.
struct EmbeddedText {
  std::string_view name;
  std::string_view text;
};
extern const EmbeddedText kEmbeddedTexts[];
extern const std::size_t kEmbeddedTextCount;

}  // namespace skein::detail::codegen
