// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-halo: GridArray's halo exchange (skein::exchange_halos) of 3-D float64 fields against
// its floor, measured in the same run and the same rounds:
//   exchange   exchange_halos(fields): the call as an application makes it
//   floor      exactly the same transfers of the same bytes for each pair of members: a face along
//              axis 0 between members on different devices, with a star stencil or no halo on the
//              other axes, moves as whole ghost planes (h planes of the block with halo, its full
//              extent along the other axes: a little more than the face), one transfer per field;
//              every other region between the two goes in one message holding every field's
//              regions, each rounded up to 16 bytes as the exchange's segments are. Here already
//              contiguous, moved by plain calls and nothing else: a device copy (Array::set) where
//              both members are on this rank (a peer copy between two GPUs), grouped Communicator
//              send/recv between ranks (NCCL where that is the backend); no packing, no unpacking
//   sendrecv   one plain send/recv of one face's bytes as the exchange moves them (every field's
//              face, whole planes where the face moves so): each member sends it to the next
//              member and receives it from the one before, in one group (NCCL inside a rank too):
//              the reference of small faces
// Each is timed as host wall time per call of a loop of --iters calls, every rank synchronized
// before and after (the slowest rank's time), after --warmup calls; the three alternate in every
// one of --rounds rounds, and the medians of the rounds are reported, with floor / exchange and
// exchange - sendrecv. Issue 35's bounds (tools/compare-halo.py judges the JSON): floor /
// exchange >= 0.9 for faces of 1 MiB and more; exchange - sendrecv <= 2 us for small faces.
//
//   skein-bench-halo [--edges 32,64,...] [--block AxBxC | --shape AxBxC] [--grid AxBxC]
//                    [--halo 1] [--stencil star|box] [--fields 1] [--periodic]
//                    [--iters 50] [--warmup 5] [--rounds 5] [--devices-per-rank N] [--json FILE]
//
// Sizes: --edges gives cubic blocks per member (the default sweep, faces of 8 KiB to 4.5 MiB of
// float64), --block one block shape per member, --shape one global shape. The grid is chosen as
// exchange_halos' layouts choose it (GridLayout::choose_grid) unless --grid gives it (0: choose
// that axis). Sides of the domain are open unless --periodic.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/skein.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace skein;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// "AxBxC" (or one number) as sizes.
std::vector<std::size_t> parse_dims(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) out.push_back(static_cast<std::size_t>(std::stoull(part)));
  return out;
}

constexpr std::size_t kAlign = 16;  // exchange_halos' segments are rounded up to this

// The transfers of one exchange, from the layout's public geometry and the rules of grid_array.hpp
// alone (not from Skein's plan): for every member with points and every ghost region the stencil
// has (faces; with a box also edges and corners), the member across it (wrapped where periodic,
// none beyond an open side) and the region's size. Per (source, destination) pair: one message of
// every field's regions, and one transfer per field of the whole ghost planes of each face that
// moves so (along axis 0, between members on different devices, star or no halo off axis 0).
struct Messages {
  struct Pair {
    std::size_t message = 0;          // bytes of the packed message (0: none)
    std::vector<std::size_t> planes;  // bytes of each whole-plane transfer
  };
  std::map<std::pair<std::size_t, std::size_t>, Pair> pairs;
  std::size_t face_bytes = 0;  // the largest face region of one field
  std::size_t face_moved =
      0;  // what one field's largest face moves (whole planes where it moves so)
};

// `same_device(a, b)`: members a and b are on one device.
template <class SameDevice>
Messages messages_of(const GridLayout& l, std::size_t fields, std::size_t itemsize,
                     SameDevice&& same_device) {
  Messages out;
  bool other_halos = false;
  for (std::size_t a = 1; a < l.ndim(); ++a) other_halos = other_halos || l.halo(a) > 0;
  const bool planes_allowed = l.stencil() == Stencil::star || !other_halos;
  const std::size_t n = l.ndim();
  std::size_t directions = 1;
  for (std::size_t a = 0; a < n; ++a) directions *= 3;
  for (std::size_t dst = 0; dst < l.members(); ++dst) {
    const GridBlock b = l.block(dst);
    if (b.empty()) continue;
    const auto c = l.coords(dst);
    for (std::size_t code = 0; code < directions; ++code) {
      std::vector<std::size_t> src_coords(n);
      std::size_t cells = l.components(), nonzero = 0;
      bool skip = false;
      for (std::size_t a = 0, k = code; a < n; ++a, k /= 3) {
        const long d = static_cast<long>(k % 3) - 1;
        const long g = static_cast<long>(l.grid()[a]);
        long s = static_cast<long>(c[a]) + d;
        if (d != 0) ++nonzero;
        if (d != 0 && l.halo(a) == 0) skip = true;
        if (s < 0 || s >= g) {
          if (!l.periodic(a)) skip = true;
          s = (s + g) % g;
        }
        src_coords[a] = static_cast<std::size_t>(s);
        cells *= d == 0 ? b.extent[a] : l.halo(a);
      }
      if (nonzero == 0 || skip || (l.stencil() == Stencil::star && nonzero > 1)) continue;
      const std::size_t src = l.member_at(src_coords);
      const std::size_t region = cells * itemsize;
      const bool along0 = nonzero == 1 && code % 3 != 1;  // the direction along axis 0 is not 0
      std::size_t moved = region;
      if (along0 && planes_allowed && src != dst && !same_device(src, dst)) {
        const Shape full = l.block_shape(dst, true);
        moved = l.halo(0) * itemsize;
        for (std::size_t a = 1; a < full.size(); ++a) moved *= full[a];
        for (std::size_t f = 0; f < fields; ++f) out.pairs[{src, dst}].planes.push_back(moved);
      } else {
        out.pairs[{src, dst}].message += fields * ((region + kAlign - 1) / kAlign * kAlign);
      }
      if (nonzero == 1) {
        out.face_bytes = std::max(out.face_bytes, region);
        out.face_moved = std::max(out.face_moved, moved);
      }
    }
  }
  return out;
}

struct Options {
  std::vector<std::size_t> edges = {32, 64, 128, 256, 384, 512, 768};
  std::string block, shape, grid;
  std::size_t halo = 1, fields = 1, iters = 50, warmup = 5, rounds = 5, devices_per_rank = 0;
  std::string stencil = "star", json;
  bool periodic = false;
};

struct Row {
  Shape shape, block;
  std::vector<std::size_t> grid;
  // Into member 0 per exchange: every byte and transfer, and those of whole planes among them.
  std::size_t face_bytes = 0, message_bytes = 0, messages = 0, plane_bytes = 0, plane_transfers = 0;
  double exchange_us = 0, floor_us = 0, sendrecv_us = 0;
};

// One size: its layout, fields, the floor's buffers, and the three timed loops.
class HaloCase {
 public:
  HaloCase(Runtime& runtime, Communicator& comm, const Options& o, const Shape& shape,
           const std::vector<std::size_t>& grid)
      : runtime_(runtime),
        comm_(comm),
        o_(o),
        queue_(comm.context()),
        layout_(
            GridLayout::over(comm, shape,
                             {.grid = grid,
                              .halo = {o.halo},
                              .stencil = o.stencil == "box" ? Stencil::box : Stencil::star,
                              .lower = {o.periodic ? Boundary::periodic() : Boundary::open()},
                              .upper = {o.periodic ? Boundary::periodic() : Boundary::open()}})),
        first_(layout_.first_member_of_rank(runtime.rank())),
        messages_(messages_of(layout_, o.fields, sizeof(double), [&](std::size_t a, std::size_t b) {
          return is_local(a) && is_local(b) &&
                 comm.device_idx(local_of(a)) == comm.device_idx(local_of(b));
        })) {
    for (std::size_t f = 0; f < o.fields; ++f)
      fields_.emplace_back(comm, queue_, layout_, Dtype::float64);
    for (const auto& [pair, p] : messages_.pairs) {
      const auto [src, dst] = pair;
      std::vector<std::size_t> sizes = p.planes;
      if (p.message > 0) sizes.insert(sizes.begin(), p.message);
      for (const std::size_t bytes : sizes) {
        if (is_local(src)) send_[pair].push_back(buffer(src, bytes));
        if (is_local(dst)) recv_[pair].push_back(buffer(dst, bytes));
      }
    }
    const std::size_t M = comm.size(), face = messages_.face_moved * o.fields;
    for (std::size_t l = 0; l < comm.local_size() && M > 1 && face > 0; ++l) {
      ring_send_.push_back(buffer(first_ + l, face));
      ring_recv_.push_back(buffer(first_ + l, face));
    }
  }

  Row measure() {
    for (std::size_t i = 0; i < o_.warmup; ++i) {
      exchange();
      floor();
      sendrecv();
    }
    std::vector<double> ex, fl, sr;
    for (std::size_t r = 0; r < o_.rounds; ++r) {
      ex.push_back(timed([&] { exchange(); }));
      fl.push_back(timed([&] { floor(); }));
      sr.push_back(timed([&] { sendrecv(); }));
    }
    Row row{.shape = layout_.shape(), .grid = layout_.grid(), .face_bytes = messages_.face_bytes};
    row.block = layout_.block_shape(0);
    for (const auto& [pair, p] : messages_.pairs) {
      if (pair.second != 0) continue;
      row.message_bytes += p.message;
      row.messages += p.message > 0 ? 1 : 0;
      for (const std::size_t bytes : p.planes) {
        row.plane_bytes += bytes;
        ++row.plane_transfers;
      }
    }
    row.message_bytes += row.plane_bytes;
    row.messages += row.plane_transfers;
    row.exchange_us = median(ex);
    row.floor_us = median(fl);
    row.sendrecv_us = ring_send_.empty() ? 0 : median(sr);
    return row;
  }

 private:
  bool is_local(std::size_t m) const { return m >= first_ && m < first_ + comm_.local_size(); }
  std::size_t local_of(std::size_t m) const { return m - first_; }
  Array buffer(std::size_t member, std::size_t bytes) const {
    return Array::zeros(queue_, {bytes}, Dtype::uint8, comm_.device_idx(local_of(member)));
  }

  void exchange() const { exchange_halos(fields_); }

  void floor() {
    for (const auto& [pair, from] : send_) {
      if (!is_local(pair.second)) continue;
      const auto& to = recv_.at(pair);
      for (std::size_t i = 0; i < from.size(); ++i) to[i].set(from[i]);  // a device (peer) copy
    }
    bool remote = false;
    for (const auto& [pair, p] : messages_.pairs)
      remote = remote || is_local(pair.first) != is_local(pair.second);
    if (!remote) return;
    comm_.group_start();
    for (const auto& [pair, data] : send_) {
      if (is_local(pair.second)) continue;
      for (const Array& a : data)
        comm_.send(queue_, local_of(pair.first), a, static_cast<int>(pair.second));
    }
    for (const auto& [pair, data] : recv_) {
      if (is_local(pair.first)) continue;
      for (const Array& a : data)
        comm_.recv(queue_, local_of(pair.second), a, static_cast<int>(pair.first));
    }
    comm_.group_end();
  }

  void sendrecv() {
    if (ring_send_.empty()) return;
    const std::size_t M = comm_.size();
    comm_.group_start();
    for (std::size_t l = 0; l < ring_send_.size(); ++l) {
      const std::size_t m = first_ + l;
      comm_.send(queue_, l, ring_send_[l], static_cast<int>((m + 1) % M));
      comm_.recv(queue_, l, ring_recv_[l], static_cast<int>((m + M - 1) % M));
    }
    comm_.group_end();
  }

  // Host seconds per call of f over --iters calls, every rank synchronized before and after; the
  // slowest rank's figure, in microseconds.
  template <class F>
  double timed(F&& f) {
    queue_.synchronize();
    MPI_Barrier(runtime_.comm());
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < o_.iters; ++i) f();
    queue_.synchronize();
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(o_.iters);
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, runtime_.comm());
    return us;
  }

  Runtime& runtime_;
  Communicator& comm_;
  const Options& o_;
  Queue queue_;
  GridLayout layout_;
  std::size_t first_ = 0;
  Messages messages_;
  std::vector<GridArray> fields_;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<Array>> send_, recv_;
  std::vector<Array> ring_send_, ring_recv_;
};

// The global shapes to measure and the grid each is split over.
std::vector<std::pair<Shape, std::vector<std::size_t>>> cases(const Options& o,
                                                              std::size_t members) {
  std::vector<std::size_t> given = o.grid.empty() ? std::vector<std::size_t>{} : parse_dims(o.grid);
  std::vector<std::pair<Shape, std::vector<std::size_t>>> out;
  if (!o.shape.empty()) {
    const Shape shape = parse_dims(o.shape);
    out.emplace_back(shape, GridLayout::choose_grid(members, shape, given));
    return out;
  }
  std::vector<Shape> blocks;
  if (!o.block.empty()) {
    blocks.push_back(parse_dims(o.block));
  } else {
    for (std::size_t e : o.edges) blocks.push_back({e, e, e});
  }
  for (const Shape& b : blocks) {
    // The grid for blocks of this shape: chosen over a domain of `members` such blocks per axis.
    const Shape proxy = {b[0] * members, b[1] * members, b[2] * members};
    const auto grid = GridLayout::choose_grid(members, proxy, given);
    out.emplace_back(Shape{b[0] * grid[0], b[1] * grid[1], b[2] * grid[2]}, grid);
  }
  return out;
}

int run(int argc, char** argv) {
  Options o;
  cli::Parser app{
      "GridArray's halo exchange against the same messages moved by plain copies and send/recv"};
  app.add_option("--edges", o.edges, "Cubic blocks per member of these edges (a sweep)")
      .delimiter(',');
  app.add_option("--block", o.block, "One block shape per member, AxBxC");
  app.add_option("--shape", o.shape, "One global shape, AxBxC");
  app.add_option("--grid", o.grid,
                 "Process grid, AxBxC (0: chosen for that axis; default: chosen)");
  app.add_option("--halo", o.halo, "Halo width on every axis").range(1, 64);
  app.add_option("--stencil", o.stencil, "star (faces) or box (edges and corners too)")
      .one_of({"star", "box"});
  app.add_option("--fields", o.fields, "float64 fields exchanged in one call").range(1, 64);
  app.add_flag("--periodic", o.periodic, "Periodic sides (default: open)");
  app.add_option("--iters", o.iters, "Calls per timed loop").range(1, 1000000);
  app.add_option("--warmup", o.warmup, "Untimed calls of each kind before the rounds");
  app.add_option("--rounds", o.rounds, "Alternating rounds (the medians are reported)")
      .range(1, 1000);
  app.add_option("--devices-per-rank", o.devices_per_rank,
                 "Devices each rank drives (default: SKEIN_DEVICES_PER_RANK, else an even share)");
  app.add_option("--json", o.json, "Write the results to this file (rank 0)");
  if (auto status = app.parse(argc, argv)) return *status;

  PlacementOptions placement;
  if (o.devices_per_rank > 0) placement.devices_per_rank = o.devices_per_rank;
  Runtime runtime(&argc, &argv, placement);
  Communicator comm(runtime);
  const bool root = runtime.rank() == 0;
  if (root) {
    fmt::print(
        "skein-bench-halo: {} rank(s), {} member(s), {} per rank, backend {}, {} float64 field(s), "
        "halo {}, "
        "{}, {} sides\n",
        runtime.size(), comm.size(), comm.local_size(), name(comm.backend()), o.fields, o.halo,
        o.stencil, o.periodic ? "periodic" : "open");
    // Into member 0 per exchange: KiB moved (whole planes included) and transfers (of which
    // planes).
    fmt::print("{:>16} {:>8} {:>11} {:>11} {:>4} {:>6} {:>12} {:>12} {:>8} {:>12} {:>10}\n",
               "shape", "grid", "face KiB", "moved KiB", "n", "planes", "exchange us", "floor us",
               "floor/ex", "sendrecv us", "ex-sr us");
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [shape, grid] : cases(o, comm.size())) {
    HaloCase c(runtime, comm, o, shape, grid);
    const Row r = c.measure();
    if (!root) continue;
    const double ratio = r.exchange_us > 0 ? r.floor_us / r.exchange_us : 0;
    fmt::print(
        "{:>16} {:>8} {:>11.1f} {:>11.1f} {:>4} {:>6} {:>12.2f} {:>12.2f} {:>8.3f} {:>12.2f} "
        "{:>10.2f}\n",
        fmt::format("{}", fmt::join(r.shape, "x")), fmt::format("{}", fmt::join(r.grid, "x")),
        static_cast<double>(r.face_bytes) / 1024, static_cast<double>(r.message_bytes) / 1024,
        r.messages, r.plane_transfers, r.exchange_us, r.floor_us, ratio, r.sendrecv_us,
        r.exchange_us - r.sendrecv_us);
    rows.push_back({{"shape", r.shape},
                    {"block", r.block},
                    {"grid", r.grid},
                    {"face_bytes", r.face_bytes},
                    {"message_bytes_member0", r.message_bytes},
                    {"messages_member0", r.messages},
                    {"plane_bytes_member0", r.plane_bytes},
                    {"plane_transfers_member0", r.plane_transfers},
                    {"exchange_us", r.exchange_us},
                    {"floor_us", r.floor_us},
                    {"floor_over_exchange", ratio},
                    {"sendrecv_us", r.sendrecv_us},
                    {"exchange_minus_sendrecv_us", r.exchange_us - r.sendrecv_us}});
  }
  if (root && !o.json.empty()) {
    nlohmann::json doc = {{"bench", "halo"},
                          {"ranks", runtime.size()},
                          {"members", comm.size()},
                          {"devices_per_rank", comm.local_size()},
                          {"backend", std::string(name(comm.backend()))},
                          {"api", std::string(comm.context().api().name())},
                          {"device", comm.context().device(0).name()},
                          {"fields", o.fields},
                          {"halo", o.halo},
                          {"stencil", o.stencil},
                          {"periodic", o.periodic},
                          {"iters", o.iters},
                          {"rounds", o.rounds},
                          {"rows", rows}};
    std::ofstream(o.json) << doc.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try { return run(argc, argv); } catch (const skein::Error& e) {
  fmt::print(stderr, "skein-bench-halo: {}\n", e.what());
  return 1;
}
