// SPDX-License-Identifier: BSD-3-Clause
#include "heat_png.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>
#include <skein/communicator.hpp>
#include <skein/error.hpp>

#if SKEIN_HEAT_HAS_PNG
#include <png.h>
#endif

namespace skein::heat {

namespace {

// Viridis at five points, interpolated linearly: perceptually ordered and readable in grey.
constexpr std::array<std::array<double, 3>, 5> colour_points = {
    {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};

std::array<std::uint8_t, 3> colour(double t) {
  t = std::clamp(std::isnan(t) ? 0.0 : t, 0.0, 1.0) * (colour_points.size() - 1);
  const std::size_t i =
      std::min<std::size_t>(static_cast<std::size_t>(t), colour_points.size() - 2);
  const double f = t - static_cast<double>(i);
  std::array<std::uint8_t, 3> rgb{};
  for (int k = 0; k < 3; ++k) {
    rgb[k] = static_cast<std::uint8_t>(
        std::lround(colour_points[i][k] * (1 - f) + colour_points[i + 1][k] * f));
  }
  return rgb;
}

// The grid point sampled for pixel p of `pixels` along an axis of `points` (nearest to the
// pixel's centre; every point when there are at most as many as pixels).
std::size_t sample(std::size_t p, std::size_t pixels, std::size_t points) {
  return std::min(points - 1, static_cast<std::size_t>((static_cast<double>(p) + 0.5) *
                                                       static_cast<double>(points) /
                                                       static_cast<double>(pixels)));
}

}  // namespace

bool png_available() { return SKEIN_HEAT_HAS_PNG != 0; }

ImageInfo write_png(const DistArray& u, const std::string& path, std::size_t max_side) {
  if (!png_available()) {
    throw LogicError(ErrorInfo{
        .what = fmt::format("cannot write '{}': this skein-heat was built without libpng", path),
        .call = "skein-heat --png",
        .hint = "install libpng-dev (tools/install-deps.sh does) and rebuild, or leave out --png"});
  }
  const std::size_t ny = u.layout().rows(), nx = u.layout().row_size();
  ImageInfo info;
  // One scale for both axes keeps the grid's aspect ratio.
  const double scale =
      std::min(1.0, static_cast<double>(max_side) / static_cast<double>(std::max(nx, ny)));
  info.width = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::lround(static_cast<double>(nx) * scale)));
  info.height = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::lround(static_cast<double>(ny) * scale)));
  info.downsampled = info.width < nx || info.height < ny;

  // Each pixel row comes from exactly one rank (the owner of its grid row); the others leave 0,
  // so a sum over ranks assembles the image.
  std::vector<double> image(info.width * info.height, 0.0);
  for (const LocalBlock& b : u.blocks()) {
    for (std::size_t py = 0; py < info.height; ++py) {
      const std::size_t row = sample(py, info.height, ny);
      if (!b.rows.contains(row)) continue;
      const Array line = b.interior.slice(row - b.rows.begin, row - b.rows.begin + 1);
      std::vector<double> values(nx);
      if (u.dtype() == Dtype::float32) {
        const auto f = line.get<float>();
        std::copy(f.begin(), f.end(), values.begin());
      } else {
        values = line.get<double>();
      }
      for (std::size_t px = 0; px < info.width; ++px) {
        image[py * info.width + px] = values[sample(px, info.width, nx)];
      }
    }
  }
  const MPI_Comm comm = u.communicator().mpi_comm();
  const bool root = u.rank() == 0;
  MPI_Reduce(root ? MPI_IN_PLACE : image.data(), root ? image.data() : nullptr,
             static_cast<int>(image.size()), MPI_DOUBLE, MPI_SUM, 0, comm);

  int ok = 1;
  std::string failure;
  if (root) {
    const auto [lo, hi] = std::minmax_element(image.begin(), image.end());
    info.min = *lo;
    info.max = *hi;
    const double span = info.max > info.min ? info.max - info.min : 1.0;
    std::vector<std::uint8_t> rgb(image.size() * 3);
    for (std::size_t py = 0; py < info.height; ++py) {
      const std::size_t line = info.height - 1 - py;  // y grows upwards
      for (std::size_t px = 0; px < info.width; ++px) {
        const auto c = colour((image[py * info.width + px] - info.min) / span);
        std::copy(c.begin(), c.end(), &rgb[(line * info.width + px) * 3]);
      }
    }
#if SKEIN_HEAT_HAS_PNG
    // libpng's simplified API: no setjmp error handling to get wrong.
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(info.width);
    png.height = static_cast<png_uint_32>(info.height);
    png.format = PNG_FORMAT_RGB;
    if (png_image_write_to_file(&png, path.c_str(), 0, rgb.data(), 0, nullptr) == 0) {
      ok = 0;
      failure = png.message;
    }
    png_image_free(&png);
#endif
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) {
    throw RuntimeError(ErrorInfo{
        .what = root ? fmt::format("cannot write the image '{}': {}", path, failure)
                     : fmt::format("rank 0 could not write the image '{}' (see its message)", path),
        .call = "png_image_write_to_file",
        .hint = "check that the directory exists and can be written"});
  }
  MPI_Bcast(&info.min, 1, MPI_DOUBLE, 0, comm);
  MPI_Bcast(&info.max, 1, MPI_DOUBLE, 0, comm);
  return info;
}

}  // namespace skein::heat
