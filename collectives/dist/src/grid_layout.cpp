// SPDX-License-Identifier: BSD-3-Clause
// GridLayout: the arithmetic of a domain split over a Cartesian grid of members (no device work).
#include "skein/grid_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

#include "skein/detail/errors.hpp"
#include "skein/error.hpp"

namespace skein {

namespace {

constexpr const char* kCall = "GridLayout";

const char* kind_name(BoundaryKind k) {
  switch (k) {
    case BoundaryKind::open: return "open";
    case BoundaryKind::periodic: return "periodic";
    case BoundaryKind::reflect: return "reflect";
    case BoundaryKind::constant: return "constant";
  }
  return "?";
}

std::string boundary_text(const Boundary& b) {
  return b.kind == BoundaryKind::constant ? fmt::format("constant {}", b.value) : kind_name(b.kind);
}

// One value per axis from a per-axis vector that may also hold one value for all (or none: `none`).
template <class T>
std::vector<T> per_axis(const std::vector<T>& given, std::size_t ndim, const T& none,
                        const char* what) {
  if (given.empty()) return std::vector<T>(ndim, none);
  if (given.size() == 1) return std::vector<T>(ndim, given[0]);
  if (given.size() != ndim) {
    detail::raise_in(SKEIN_HERE, kCall, "Give one value per axis, or one value for every axis.",
                     "{} has {} entries for a shape of {} dimensions", what, given.size(), ndim);
  }
  return given;
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// How good a grid is for `shape` (smaller is better): members beyond the points of an axis first,
// then the faces of a block (the halo cells a block exchanges, per cell of width).
std::tuple<std::size_t, std::size_t> grid_cost(const std::vector<std::size_t>& g,
                                               const Shape& shape) {
  std::size_t excess = 0, faces = 0;
  for (std::size_t a = 0; a < g.size(); ++a) {
    if (g[a] > shape[a]) excess += g[a] - shape[a];
    std::size_t face = 1;
    for (std::size_t b = 0; b < g.size(); ++b) {
      if (b != a) face *= std::max<std::size_t>(ceil_div(shape[b], g[b]), 1);
    }
    faces += face;
  }
  return {excess, faces};
}

}  // namespace

std::vector<std::size_t> GridLayout::choose_grid(std::size_t members, const Shape& shape,
                                                 std::vector<std::size_t> given) {
  const std::size_t n = shape.size();
  if (given.empty()) given.assign(n, 0);
  if (given.size() != n) {
    detail::raise_in(SKEIN_HERE, kCall, "Give one member count per axis (0 to have it chosen).",
                     "the grid {} has {} axes, the shape {} has {}", fmt::join(given, " x "),
                     given.size(), to_string(shape), n);
  }
  std::size_t fixed = 1;
  for (auto g : given) fixed *= std::max<std::size_t>(g, 1);
  const bool free_axes = std::count(given.begin(), given.end(), 0u) > 0;
  if (members == 0 || (free_axes ? members % fixed != 0 : fixed != members)) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Give a grid whose counts multiply to the number of members (ranks x devices "
                     "per rank), or leave counts at 0 to have them chosen.",
                     "the grid {} {} {} member(s), but there are {} members",
                     fmt::join(given, " x "), free_axes ? "has a multiple of" : "multiplies to",
                     fixed, members);
  }
  std::vector<std::size_t> best, cur(n, 1);
  std::tuple<std::size_t, std::size_t> best_cost{};
  // Every ordered factorisation of members matching the given counts.
  std::function<void(std::size_t, std::size_t)> walk = [&](std::size_t a, std::size_t left) {
    if (a == n) {
      if (left != 1) return;
      const auto cost = grid_cost(cur, shape);
      // Ties: larger counts on the first axes (MPI_Dims_create's order).
      if (best.empty() || cost < best_cost || (cost == best_cost && cur > best)) {
        best = cur;
        best_cost = cost;
      }
      return;
    }
    if (given[a] != 0) {
      if (left % given[a] != 0) return;
      cur[a] = given[a];
      walk(a + 1, left / given[a]);
      return;
    }
    for (std::size_t d = 1; d <= left; ++d) {
      if (left % d != 0) continue;
      cur[a] = d;
      walk(a + 1, left / d);
    }
  };
  walk(0, members);
  return best;
}

GridLayout::GridLayout(Shape shape, std::vector<std::size_t> members_per_rank,
                       const GridOptions& options)
    : shape_(std::move(shape)), members_per_rank_(std::move(members_per_rank)) {
  if (shape_.empty() || shape_.size() > 3) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Give a shape of 1, 2 or 3 dimensions; values per point go in "
                     "GridOptions::components.",
                     "shape {} has {} dimensions", to_string(shape_), shape_.size());
  }
  if (members_per_rank_.empty()) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Pass one member count per rank (Communicator::local_size() of each rank), "
                     "or use GridLayout::over(comm, ...).",
                     "no ranks: members_per_rank is empty");
  }
  first_member_of_rank_.push_back(0);
  for (std::size_t r = 0; r < members_per_rank_.size(); ++r) {
    if (members_per_rank_[r] == 0) {
      detail::raise_in(SKEIN_HERE, kCall,
                       "Every rank of a communicator has at least one member; pass its "
                       "Communicator::local_size().",
                       "rank {} has no members (members_per_rank = [{}])", r,
                       fmt::join(members_per_rank_, ", "));
    }
    first_member_of_rank_.push_back(first_member_of_rank_.back() + members_per_rank_[r]);
  }
  if (options.components == 0) {
    detail::raise_in(SKEIN_HERE, kCall, "Give at least 1 component per point.",
                     "components is 0 (shape {})", to_string(shape_));
  }
  components_ = options.components;
  split_axes(options);
  set_halo(options);
  check_halo_sources();
}

void GridLayout::split_axes(const GridOptions& options) {
  const std::size_t n = shape_.size();
  if (!options.sizes.empty() && options.sizes.size() != n) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Give one list of sizes per axis (an empty list splits that axis evenly).",
                     "sizes has {} lists for a shape of {} dimensions", options.sizes.size(), n);
  }
  std::vector<std::size_t> given = options.grid;
  if (given.empty()) given.assign(n, 0);
  if (given.size() == n) {
    for (std::size_t a = 0; a < options.sizes.size(); ++a) {
      const auto& s = options.sizes[a];
      if (s.empty()) continue;
      if (given[a] == 0) given[a] = s.size();
      if (given[a] != s.size()) {
        detail::raise_in(SKEIN_HERE, kCall,
                         "Give one size per grid position along the axis (as many as the grid's "
                         "count there).",
                         "axis {} has {} sizes ({}) but {} grid positions", a, s.size(),
                         fmt::join(s, ", "), given[a]);
      }
    }
  }
  grid_ = choose_grid(members(), shape_, given);
  sizes_.resize(n);
  begin_.resize(n);
  for (std::size_t a = 0; a < n; ++a) {
    const std::size_t g = grid_[a], N = shape_[a];
    if (a < options.sizes.size() && !options.sizes[a].empty()) {
      sizes_[a] = options.sizes[a];
    } else {
      for (std::size_t p = 0; p < g; ++p) sizes_[a].push_back(N / g + (p < N % g ? 1 : 0));
    }
    begin_[a].assign(g + 1, 0);
    for (std::size_t p = 0; p < g; ++p) begin_[a][p + 1] = begin_[a][p] + sizes_[a][p];
    if (begin_[a][g] != N) {
      detail::raise_in(SKEIN_HERE, kCall,
                       "Make the sizes of each axis add up to its length in the shape.",
                       "the sizes of axis {} ({}) add up to {}, but shape {} has {} there", a,
                       fmt::join(sizes_[a], ", "), begin_[a][g], to_string(shape_), N);
    }
  }
}

void GridLayout::set_halo(const GridOptions& options) {
  const std::size_t n = shape_.size();
  halo_ = per_axis<std::size_t>(options.halo, n, 0, "the halo");
  stencil_ = options.stencil;
  lower_ = per_axis<Boundary>(options.lower, n, Boundary::open(), "lower (the boundaries)");
  upper_ = per_axis<Boundary>(options.upper, n, Boundary::open(), "upper (the boundaries)");
  for (std::size_t a = 0; a < n; ++a) {
    const bool lp = lower_[a].kind == BoundaryKind::periodic,
               up = upper_[a].kind == BoundaryKind::periodic;
    if (lp != up) {
      detail::raise_in(SKEIN_HERE, kCall, "Make both sides of a periodic axis periodic.",
                       "axis {} is periodic on one side only (lower {}, upper {})", a,
                       boundary_text(lower_[a]), boundary_text(upper_[a]));
    }
  }
}

// A halo is filled from one block along each axis: every block some halo takes cells from must be
// at least as wide as the halo there.
void GridLayout::check_halo_sources() const {
  for (std::size_t a = 0; a < shape_.size(); ++a) {
    const std::size_t h = halo_[a];
    if (h == 0) continue;
    std::vector<std::size_t> with_points;
    for (std::size_t p = 0; p < grid_[a]; ++p) {
      if (sizes_[a][p] > 0) with_points.push_back(p);
    }
    if (with_points.empty()) continue;
    const bool lower_source =
        lower_[a].kind == BoundaryKind::periodic || lower_[a].kind == BoundaryKind::reflect;
    const bool upper_source =
        upper_[a].kind == BoundaryKind::periodic || upper_[a].kind == BoundaryKind::reflect;
    if (with_points.size() < 2 && !lower_source && !upper_source) continue;
    for (std::size_t p : with_points) {
      if (sizes_[a][p] < h) {
        detail::raise_in(SKEIN_HERE, kCall,
                         "Use a halo no wider than the narrowest block along that axis (blocks "
                         "without points do not count), or split the axis so that every block "
                         "has at least the halo's width.",
                         "halo width {} on axis {} is wider than grid position {}'s block there "
                         "({} point(s), [{}, {})), which a halo is filled from ({})",
                         h, a, p, sizes_[a][p], begin_[a][p], begin_[a][p + 1], describe());
      }
    }
  }
}

GridLayout GridLayout::over(Communicator& comm, Shape shape, const GridOptions& options) {
  return GridLayout(std::move(shape), communicator_ranks(comm).members_per_rank, options);
}

Shape GridLayout::global_shape() const {
  Shape s = shape_;
  if (components_ > 1) s.push_back(components_);
  return s;
}

void GridLayout::check_member(std::size_t member, const char* call) const {
  if (member >= members()) {
    detail::raise_in(SKEIN_HERE, call, "Pass a member (communicator rank) below members().",
                     "member {} does not exist (the layout has {} members)", member, members());
  }
}

void GridLayout::check_rank(int rank, const char* call) const {
  if (rank < 0 || rank >= ranks()) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass an MPI rank of the communicator's group (0 to ranks() - 1).",
                     "rank {} does not exist (the layout has {} ranks)", rank, ranks());
  }
}

void GridLayout::check_axis(std::size_t axis, const char* call) const {
  if (axis >= ndim()) {
    detail::raise_in(SKEIN_HERE, call, "Pass an axis below ndim().",
                     "axis {} does not exist (the shape {} has {} dimensions)", axis,
                     to_string(shape_), ndim());
  }
}

const std::vector<std::size_t>& GridLayout::sizes(std::size_t axis) const {
  check_axis(axis, "GridLayout::sizes");
  return sizes_[axis];
}

std::size_t GridLayout::halo(std::size_t axis) const {
  check_axis(axis, "GridLayout::halo");
  return halo_[axis];
}

const Boundary& GridLayout::lower(std::size_t axis) const {
  check_axis(axis, "GridLayout::lower");
  return lower_[axis];
}

const Boundary& GridLayout::upper(std::size_t axis) const {
  check_axis(axis, "GridLayout::upper");
  return upper_[axis];
}

bool GridLayout::periodic(std::size_t axis) const {
  return lower(axis).kind == BoundaryKind::periodic;
}

std::size_t GridLayout::members_of_rank(int rank) const {
  check_rank(rank, "GridLayout::members_of_rank");
  return members_per_rank_[static_cast<std::size_t>(rank)];
}

std::size_t GridLayout::first_member_of_rank(int rank) const {
  check_rank(rank, "GridLayout::first_member_of_rank");
  return first_member_of_rank_[static_cast<std::size_t>(rank)];
}

MemberLocation GridLayout::location(std::size_t member) const {
  check_member(member, "GridLayout::location");
  const auto it =
      std::upper_bound(first_member_of_rank_.begin(), first_member_of_rank_.end(), member);
  const auto rank = static_cast<std::size_t>(it - first_member_of_rank_.begin()) - 1;
  return {member, static_cast<int>(rank), member - first_member_of_rank_[rank]};
}

std::size_t GridLayout::member_of(int rank, std::size_t local_device) const {
  check_rank(rank, "GridLayout::member_of");
  const auto r = static_cast<std::size_t>(rank);
  if (local_device >= members_per_rank_[r]) {
    detail::raise_in(SKEIN_HERE, "GridLayout::member_of",
                     "Pass a local device below members_of_rank(rank).",
                     "rank {} has {} member(s); local device {} does not exist", rank,
                     members_per_rank_[r], local_device);
  }
  return first_member_of_rank_[r] + local_device;
}

std::vector<std::size_t> GridLayout::coords(std::size_t member) const {
  check_member(member, "GridLayout::coords");
  std::vector<std::size_t> c(ndim());
  for (std::size_t a = ndim(); a-- > 0;) {
    c[a] = member % grid_[a];
    member /= grid_[a];
  }
  return c;
}

std::size_t GridLayout::member_at(std::span<const std::size_t> coords) const {
  if (coords.size() != ndim()) {
    detail::raise_in(SKEIN_HERE, "GridLayout::member_at", "Pass one coordinate per axis.",
                     "{} coordinates for a grid of {} axes", coords.size(), ndim());
  }
  std::size_t m = 0;
  for (std::size_t a = 0; a < ndim(); ++a) {
    if (coords[a] >= grid_[a]) {
      detail::raise_in(SKEIN_HERE, "GridLayout::member_at", "Pass grid coordinates below grid().",
                       "coordinate {} on axis {} is outside the grid {}", coords[a], a,
                       fmt::join(grid_, " x "));
    }
    m = m * grid_[a] + coords[a];
  }
  return m;
}

GridBlock GridLayout::block(std::size_t member) const {
  const auto c = coords(member);
  GridBlock b;
  bool empty = false;
  for (std::size_t a = 0; a < ndim(); ++a) {
    b.offset.push_back(begin_[a][c[a]]);
    b.extent.push_back(sizes_[a][c[a]]);
    empty = empty || b.extent.back() == 0;
  }
  if (empty) std::fill(b.extent.begin(), b.extent.end(), 0);
  return b;
}

std::size_t GridLayout::offset(std::size_t member, std::size_t axis) const {
  check_axis(axis, "GridLayout::offset");
  return block(member).offset[axis];
}

std::size_t GridLayout::extent(std::size_t member, std::size_t axis) const {
  check_axis(axis, "GridLayout::extent");
  return block(member).extent[axis];
}

std::size_t GridLayout::owner(std::span<const std::size_t> point) const {
  if (point.size() != ndim()) {
    detail::raise_in(SKEIN_HERE, "GridLayout::owner", "Pass one coordinate per axis.",
                     "{} coordinates for a shape of {} dimensions", point.size(), ndim());
  }
  std::vector<std::size_t> c(ndim());
  for (std::size_t a = 0; a < ndim(); ++a) {
    if (point[a] >= shape_[a]) {
      detail::raise_in(SKEIN_HERE, "GridLayout::owner", "Pass a point inside shape().",
                       "coordinate {} on axis {} is outside shape {}", point[a], a,
                       to_string(shape_));
    }
    // The last position starting at or before the point: empty ones before it share its start.
    const auto it = std::upper_bound(begin_[a].begin(), begin_[a].end(), point[a]);
    c[a] = static_cast<std::size_t>(it - begin_[a].begin()) - 1;
  }
  return member_at(c);
}

Shape GridLayout::block_shape(std::size_t member, bool with_halo) const {
  const GridBlock b = block(member);
  Shape s = b.extent;
  if (with_halo && !b.empty()) {
    for (std::size_t a = 0; a < ndim(); ++a) s[a] += 2 * halo_[a];
  }
  if (components_ > 1) s.push_back(components_);
  return s;
}

long long GridLayout::next_position(std::size_t axis, std::size_t pos, int side) const {
  const auto g = static_cast<long long>(grid_[axis]);
  long long p = static_cast<long long>(pos);
  for (long long step = 0; step < g; ++step) {
    p += side;
    if (p < 0 || p >= g) {
      if (!periodic(axis)) return -1;
      p = (p + g) % g;
    }
    if (sizes_[axis][static_cast<std::size_t>(p)] > 0) return p;
  }
  return -1;  // unreachable for a position with points: the walk comes back to it
}

long long GridLayout::neighbour(std::size_t member, std::size_t axis, int side) const {
  check_axis(axis, "GridLayout::neighbour");
  if (side != -1 && side != 1) {
    detail::raise_in(SKEIN_HERE, "GridLayout::neighbour", "Pass side -1 (lower) or +1 (upper).",
                     "side {} is neither", side);
  }
  if (block(member).empty()) return -1;
  auto c = coords(member);
  const long long p = next_position(axis, c[axis], side);
  if (p < 0) return -1;
  c[axis] = static_cast<std::size_t>(p);
  return static_cast<long long>(member_at(c));
}

std::string GridLayout::describe() const {
  std::vector<std::string> axes;
  for (std::size_t a = 0; a < ndim(); ++a) {
    axes.push_back(fmt::format("axis {}: {} (halo {}, {} / {})", a, fmt::join(sizes_[a], " "),
                               halo_[a], boundary_text(lower_[a]), boundary_text(upper_[a])));
  }
  return fmt::format(
      "shape {}{} over grid {} ({} members on {} ranks: {}); {}; {} stencil", to_string(shape_),
      components_ > 1 ? fmt::format(" x {} components", components_) : "", fmt::join(grid_, " x "),
      members(), ranks(), fmt::join(members_per_rank_, ", "), fmt::join(axes, "; "),
      stencil_ == Stencil::star ? "star" : "box");
}

bool operator==(const GridLayout& a, const GridLayout& b) {
  return a.shape_ == b.shape_ && a.components_ == b.components_ && a.grid_ == b.grid_ &&
         a.sizes_ == b.sizes_ && a.members_per_rank_ == b.members_per_rank_ && a.halo_ == b.halo_ &&
         a.stencil_ == b.stencil_ && a.lower_ == b.lower_ && a.upper_ == b.upper_;
}

}  // namespace skein
