// SPDX-License-Identifier: BSD-3-Clause
// Domains of 1, 2 or 3 dimensions split over a Cartesian grid of a Communicator's members.
//
// A GridLayout splits a global shape along every axis over a process grid of members (the
// communicator's (rank, local device) pairs, numbered rank by rank as for BlockLayout): grid
// position (c_0, ..., c_{n-1}) is member c_0 * g_1 * ... * g_{n-1} + ... + c_{n-1} (C order, the
// last axis varies fastest), so the members of one rank, which are consecutive, lie next to each
// other along the last axes and most of their faces stay inside the rank. Along each axis the
// points are split evenly (the first N % g positions get one point more) or by explicit sizes; a
// member may own no points. An optional trailing axis of `components` values per point is never
// split. The layout also says how halos are filled (GridArray::exchange_halos): a halo width per
// axis, a star (faces only) or box (faces, edges and corners) stencil, and a boundary on each
// side of the domain.
//
// Halo cells, defined cell by cell: a ghost cell lies at global coordinates outside its block.
// Along an axis where it lies inside the domain, it takes that coordinate; where it lies beyond a
// side of the domain, that side's boundary says: periodic wraps around (N + i or i - N), reflect
// mirrors the interior (ghost i cells beyond the wall is the interior cell i - 1 cells inside it,
// the ghost cells of a zero-flux wall), constant gives the side's value, open leaves the cell as
// it is. A cell beyond an open side on any axis is left as it is; else one beyond a constant side
// takes the value of the first such axis; else it takes the global array's value at the mapped
// coordinates. A star stencil fills only the cells outside the block along one axis; after its
// exchange the cells outside along more than one axis (edges and corners) are unspecified, as with
// PETSc DMDA's STAR stencil: an exchange may leave them or overwrite them (GridArray's moves a face
// along axis 0 as whole ghost planes, carrying the neighbour's own ghost values into them).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "skein/array.hpp"
#include "skein/communicator.hpp"
#include "skein/dist_array.hpp"
#include "skein/export.hpp"

namespace skein {

// Which ghost cells an exchange fills: star, those beside a face of the block (outside it along
// one axis only; those beside its edges and corners are then unspecified); box, also those beside
// its edges and corners.
enum class Stencil { star, box };

enum class BoundaryKind { open, periodic, reflect, constant };

// What fills the halo beyond one side of the domain (see the top of this file).
struct Boundary {
  BoundaryKind kind = BoundaryKind::open;
  double value = 0;  // for constant: converted to the array's dtype

  static Boundary open() { return {}; }
  static Boundary periodic() { return {BoundaryKind::periodic, 0}; }
  static Boundary reflect() { return {BoundaryKind::reflect, 0}; }
  static Boundary constant(double v) { return {BoundaryKind::constant, v}; }
  friend bool operator==(const Boundary&, const Boundary&) = default;
};

// How a GridLayout is cut. Per-axis vectors take one entry per axis, or (halo, lower, upper) one
// entry for every axis.
struct GridOptions {
  // Members along each axis; 0 (or an empty vector) leaves an axis's count to be chosen: the
  // grid whose blocks have the smallest faces, with no more members along an axis than points
  // where that is possible; ties go to larger counts first (so an equal-sided domain gets
  // MPI_Dims_create's grid).
  std::vector<std::size_t> grid{};
  // Points of each grid position along each axis (they add up to the axis's size); an empty
  // vector (or none for an axis) splits evenly.
  std::vector<std::vector<std::size_t>> sizes{};
  // Values per point: a trailing axis of the blocks, never split (1: no such axis).
  std::size_t components = 1;
  // Ghost cells on each side of a block, per axis (empty: none).
  std::vector<std::size_t> halo{};
  Stencil stencil = Stencil::star;
  // Boundaries below index 0 and above the last index of each axis (empty: open).
  std::vector<Boundary> lower{};
  std::vector<Boundary> upper{};
};

// A member's block: global offset and extent per axis (extents all 0 for a member without
// points, offsets then where its block would start).
struct GridBlock {
  std::vector<std::size_t> offset{};
  std::vector<std::size_t> extent{};
  std::size_t points() const {
    std::size_t n = 1;
    for (auto e : extent) n *= e;
    return n;
  }
  bool empty() const { return points() == 0; }
  friend bool operator==(const GridBlock&, const GridBlock&) = default;
};

// Which member owns which block of a global 1-, 2- or 3-D shape. A value type: build the same
// layout on every rank (a GridArray checks that they agree). Bad input raises LogicError: a grid
// that does not multiply to the members, sizes that do not add up to the shape, a halo wider than
// a block it is filled from, periodic on one side of an axis only.
//
// Neighbours: members that own no points take no part in halo exchanges. Along an axis, the
// neighbour of a member with points on one side is the nearest member that way (same position on
// the other axes) whose block has points along that axis, wrapping around on a periodic axis
// (possibly to itself); none at any other edge. Every block some halo is filled from must be at
// least as wide as the halo along that axis.
class SKEIN_EXPORT GridLayout {
 public:
  // `members_per_rank[r]`: how many members (devices) MPI rank r has, as for BlockLayout.
  GridLayout(Shape shape, std::vector<std::size_t> members_per_rank,
             const GridOptions& options = {});
  // The same over the members of `comm`. Collective (it learns how many members each rank has).
  static GridLayout over(Communicator& comm, Shape shape, const GridOptions& options = {});
  // The grid chosen for `members` over `shape` with some counts given (0: choose), as above.
  // Raises LogicError when the given counts cannot be completed to `members`.
  static std::vector<std::size_t> choose_grid(std::size_t members, const Shape& shape,
                                              std::vector<std::size_t> given = {});

  const Shape& shape() const { return shape_; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t components() const { return components_; }
  std::size_t points() const { return shape_size(shape_); }
  // Global elements: points() * components().
  std::size_t size() const { return points() * components_; }
  // The full array's shape: shape(), then components() when it is above 1.
  Shape global_shape() const;
  const std::vector<std::size_t>& grid() const { return grid_; }
  // Points of each grid position along `axis`.
  const std::vector<std::size_t>& sizes(std::size_t axis) const;
  const std::vector<std::size_t>& halo() const { return halo_; }
  std::size_t halo(std::size_t axis) const;
  Stencil stencil() const { return stencil_; }
  const Boundary& lower(std::size_t axis) const;
  const Boundary& upper(std::size_t axis) const;
  bool periodic(std::size_t axis) const;

  std::size_t members() const { return first_member_of_rank_.back(); }
  int ranks() const { return static_cast<int>(members_per_rank_.size()); }
  const std::vector<std::size_t>& members_per_rank() const { return members_per_rank_; }
  std::size_t members_of_rank(int rank) const;
  std::size_t first_member_of_rank(int rank) const;
  MemberLocation location(std::size_t member) const;
  std::size_t member_of(int rank, std::size_t local_device) const;

  // Grid position of a member, and the member at a grid position.
  std::vector<std::size_t> coords(std::size_t member) const;
  std::size_t member_at(std::span<const std::size_t> coords) const;
  GridBlock block(std::size_t member) const;
  std::size_t offset(std::size_t member, std::size_t axis) const;
  std::size_t extent(std::size_t member, std::size_t axis) const;
  // The member owning a global point (never one without points).
  std::size_t owner(std::span<const std::size_t> point) const;
  // The shape of a member's block: its extents (each + 2 * halo(axis) with_halo, for a member
  // with points), then components() when above 1.
  Shape block_shape(std::size_t member, bool with_halo = false) const;

  // The neighbour on side -1 (lower) or +1 (upper) along `axis` (see above); -1 when none.
  long long neighbour(std::size_t member, std::size_t axis, int side) const;

  // "40 x 36 over grid 2 x 2 (4 members on 2 ranks: 2, 2); axis 0: 20 20; axis 1: 18 18; ..."
  std::string describe() const;
  friend SKEIN_EXPORT bool operator==(const GridLayout& a, const GridLayout& b);

 private:
  void check_member(std::size_t member, const char* call) const;
  void check_rank(int rank, const char* call) const;
  void check_axis(std::size_t axis, const char* call) const;
  void split_axes(const GridOptions& options);
  void set_halo(const GridOptions& options);
  void check_halo_sources() const;
  // Position along `axis` of the nearest non-empty position from `pos` going `side` (wrapping
  // when periodic); -1 when none.
  long long next_position(std::size_t axis, std::size_t pos, int side) const;

  Shape shape_;
  std::size_t components_ = 1;
  std::vector<std::size_t> grid_;
  std::vector<std::vector<std::size_t>> sizes_;  // per axis, per grid position
  std::vector<std::vector<std::size_t>> begin_;  // per axis, grid_[a] + 1 prefix sums
  std::vector<std::size_t> members_per_rank_;
  std::vector<std::size_t> first_member_of_rank_;  // ranks() + 1 entries
  std::vector<std::size_t> halo_;
  Stencil stencil_ = Stencil::star;
  std::vector<Boundary> lower_, upper_;
};

}  // namespace skein
