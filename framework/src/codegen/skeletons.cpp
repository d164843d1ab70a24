// SPDX-License-Identifier: BSD-3-Clause
// The built-in kernels' skeletons (skeletons.hpp): the table that cmake/SkeinEmbed.cmake generates
// from framework/src/kernels/*.tmpl, looked up by name.
#include "codegen/skeletons.hpp"

#include <cstddef>

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

}  // namespace skein::detail::codegen
