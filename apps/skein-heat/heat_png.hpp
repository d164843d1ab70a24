// SPDX-License-Identifier: BSD-3-Clause
// An image of the final field for skein-heat --png: each rank samples its own rows at the image's
// pixels, rank 0 assembles the image and writes it as an 8-bit RGB PNG through libpng.
#pragma once

#include <cstddef>
#include <string>

#include <skein/dist_array.hpp>

namespace skein::heat {

// Whether this build can write PNG files (libpng was found when it was configured).
bool png_available();

struct ImageInfo {
  std::size_t width = 0, height = 0;  // pixels
  bool downsampled = false;           // the grid was larger than max_side along an axis
  double min = 0, max = 0;            // the values mapped to the ends of the colour map
};

// Collective: writes an image of the 2-D field `u` to `path` (on rank 0). A grid with more than
// `max_side` points along an axis is sampled (nearest point) on an image whose longer side has
// max_side pixels, with the grid's aspect ratio, so no rank ever holds more than max_side^2
// values of it. Row 0 of the array is the
// bottom of the image (y grows upwards). The colour map (viridis-like) spans [min, max] of the
// sampled values. Throws LogicError when the build has no libpng, RuntimeError when the file
// cannot be written (on every rank: rank 0's outcome is shared).
ImageInfo write_png(const DistArray& u, const std::string& path, std::size_t max_side = 1024);

}  // namespace skein::heat
