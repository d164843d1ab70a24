// SPDX-License-Identifier: BSD-3-Clause
// A 2-D domain over a process grid of every device of every MPI rank: two fields scattered from
// rank 0, their halos filled in one exchange (reflecting walls along the rows, periodic along the
// columns), one stencil step over every block, and a gather checked against the host.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md. Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./domains
#include <skein/skein.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

// One work item per point of a block; the blocks seen by the kernel have one halo cell on every
// side, so point (r, c) is (r + 1, c + 1) of a block `cols + 2` wide.
constexpr const char* kStep = R"(
KERNEL void sum_neighbours(GLOBAL_MEM double* out, GLOBAL_MEM const double* u, GLOBAL_MEM const double* w,
                 int rows, int cols)
{
    const int i = get_global_id(0);
    if (i >= rows * cols) return;
    const int r = i / cols + 1, c = i % cols + 1, pitch = cols + 2;
    out[r * pitch + c] = u[(r - 1) * pitch + c] + u[(r + 1) * pitch + c]
                       + w[r * pitch + c - 1] + w[r * pitch + c + 1];
}
)";

int main(int argc, char** argv) try {
  skein::Runtime runtime(&argc, &argv);
  try {
    skein::Communicator comm(runtime);
    const std::size_t rows = 36, cols = 40;
    // The grid is chosen for the members (2 x 2 for four); each block has one ghost
    // cell on every side.
    const skein::GridLayout layout = skein::GridLayout::over(
        comm, {rows, cols},
        {.halo = {1},
         .stencil = skein::Stencil::star,
         .lower = {skein::Boundary::reflect(), skein::Boundary::periodic()},
         .upper = {skein::Boundary::reflect(), skein::Boundary::periodic()}});
    const skein::Queue queue(comm.context());
    const std::vector<skein::GridArray> fields = {
        skein::GridArray(comm, queue, layout, skein::Dtype::float64),   // u
        skein::GridArray(comm, queue, layout, skein::Dtype::float64)};  // w
    const skein::GridArray out(comm, queue, layout, skein::Dtype::float64);

    std::vector<double> u0, w0;  // only rank 0 needs the whole arrays
    if (runtime.rank() == 0) {
      for (std::size_t i = 0; i < rows * cols; ++i) {
        u0.push_back(static_cast<double>(i % 13));
        w0.push_back(static_cast<double>(i % 7));
      }
    }
    fields[0].scatter(u0, /*root_rank=*/0);
    fields[1].scatter(w0, /*root_rank=*/0);
    skein::exchange_halos(fields);  // both fields in one call

    const skein::Program program(comm.context(), kStep);
    skein::MultiDevice<skein::WorkSize> sizes;
    skein::MultiDevice<std::int32_t> block_rows, block_cols;
    for (const skein::LocalGridBlock& b : out.blocks()) {
      const std::size_t points = b.block.points();
      sizes.set(b.device_idx, (points + 63) / 64 * 64 + (points == 0 ? 64 : 0));
      block_rows.set(b.device_idx, static_cast<std::int32_t>(b.block.extent[0]));
      block_cols.set(b.device_idx, static_cast<std::int32_t>(b.block.extent[1]));
    }
    program.kernel("sum_neighbours")
        .prepare(queue, sizes, 64)(out.local_arrays(), fields[0].local_arrays(),
                                   fields[1].local_arrays(), block_rows, block_cols);
    const auto result = out.gather<double>(/*root_rank=*/0);

    // The dist:: operations take grid arrays as they take DistArrays, on the points only (the
    // halos are neither read nor written); reductions give every rank the same value.
    skein::dist::axpy(2.0, fields[0], fields[1], fields[1]);  // w = 2 u + w
    const double total = skein::dist::sum(out), dot = skein::dist::dot(fields[0], fields[1]);
    const auto w1 = fields[1].gather<double>(/*root_rank=*/0);

    bool ok = true;
    if (runtime.rank() == 0) {  // the reference: mirrored rows, wrapped columns
      auto at = [&](const std::vector<double>& f, long r, long c) {
        const long R = static_cast<long>(rows), C = static_cast<long>(cols);
        r = r < 0 ? -r - 1 : (r >= R ? 2 * R - 1 - r : r);
        c = (c + C) % C;
        return f[static_cast<std::size_t>(r * C + c)];
      };
      for (long r = 0; r < static_cast<long>(rows); ++r) {
        for (long c = 0; c < static_cast<long>(cols); ++c) {
          const double want =
              at(u0, r - 1, c) + at(u0, r + 1, c) + at(w0, r, c - 1) + at(w0, r, c + 1);
          ok = ok &&
               result[static_cast<std::size_t>(r) * cols + static_cast<std::size_t>(c)] == want;
        }
      }
      double want_total = 0, want_dot = 0;
      for (std::size_t i = 0; i < rows * cols; ++i) {
        ok = ok && w1[i] == 2 * u0[i] + w0[i];
        want_total += result[i];
        want_dot += u0[i] * (2 * u0[i] + w0[i]);
      }
      ok = ok && total == want_total && dot == want_dot;  // small integers: exact in any order
      std::cout << "grid " << layout.grid()[0] << " x " << layout.grid()[1] << " of " << comm.size()
                << " members: " << (ok ? "ok" : "MISMATCH") << "\n";
    }
    return ok ? 0 : 1;
  } catch (const skein::Error& e) {  // every rank reports its own error, before MPI ends
    std::cerr << e.what() << "\n";
    return 1;
  }
} catch (const skein::Error& e) {  // the Runtime could not start (MPI, devices, environment)
  std::cerr << e.what() << "\n";
  return 1;
}
