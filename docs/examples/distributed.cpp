// SPDX-License-Identifier: BSD-3-Clause
// A distributed 2-D array over every device of every MPI rank: scatter from rank 0, one stencil
// step with halo rows, a global sum, a gather, and an all_reduce through the Communicator.
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md. Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./distributed
#include <skein/skein.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

// Each work item writes one interior element from the rows above and below it; the block seen by
// the kernel starts with one halo row, so interior row r is row r + 1 of `in`.
constexpr const char* kStencil = R"(
KERNEL void smooth(GLOBAL_MEM float* out, GLOBAL_MEM const float* in, int rows, int cols)
{
    const int i = get_global_id(0);
    if (i >= rows * cols) return;
    const int r = i / cols, c = i % cols;
    out[i] = 0.5f * (in[r * cols + c] + in[(r + 2) * cols + c]);
}
)";

int main(int argc, char** argv) try {
  // Initialises MPI (or adopts it) and picks this rank's devices (SKEIN_API, SKEIN_DEVICES...);
  // a bad setting raises here, caught by the outer handler at the end.
  skein::Runtime runtime(&argc, &argv);
  try {
    skein::Communicator comm(runtime);      // members: every device of every rank
    const std::size_t rows = 37, cols = 5;  // uneven blocks on purpose
    // One queue for both arrays: work on one queue runs in order, while arrays made without a
    // queue get one each, and work on different queues is not ordered.
    const skein::Queue queue(comm.context());
    // Blocks of rows over the members, u with one halo row above and below each block.
    skein::DistArray u(comm, queue,
                       skein::BlockLayout::over(comm, {rows, cols}, skein::RowSplit::even(),
                                                skein::Halo{.width = 1}),
                       skein::Dtype::float32);
    skein::DistArray v(comm, queue, skein::BlockLayout::over(comm, {rows, cols}),
                       skein::Dtype::float32);

    std::vector<float> global;  // only rank 0 needs the whole array
    if (runtime.rank() == 0) {
      global.resize(rows * cols);
      for (std::size_t i = 0; i < global.size(); ++i) global[i] = static_cast<float>(i % 11);
    }
    u.scatter(global, /*root_rank=*/0);
    u.exchange_halos();  // open boundaries: the outer halo rows stay zero

    // One launch over this rank's devices, with per-device sizes and arguments.
    const skein::Program program(comm.context(), kStencil);
    skein::MultiDevice<skein::WorkSize> sizes;
    skein::MultiDevice<std::int32_t> block_rows;
    for (const skein::LocalBlock& b : u.blocks()) {
      sizes.set(b.device_idx, (b.rows.size() * cols + 63) / 64 * 64);
      block_rows.set(b.device_idx, static_cast<std::int32_t>(b.rows.size()));
    }
    const auto smooth = program.kernel("smooth").prepare(queue, sizes, 64);
    smooth(v.local_arrays(), u.local_arrays(/*with_halo=*/true), block_rows,
           static_cast<std::int32_t>(cols));

    const double total = skein::dist::sum(v);              // on every rank
    const auto result = v.gather<float>(/*root_rank=*/0);  // whole array on rank 0

    // The members count themselves: each adds its communicator rank.
    std::vector<skein::Array> mine;
    for (std::size_t d = 0; d < comm.local_size(); ++d) {
      const std::vector<std::int64_t> one = {comm.rank_of(d)};
      mine.push_back(skein::Array::from_host(queue, one, {}, comm.device_idx(d)));
    }
    comm.all_reduce(queue, mine, mine, skein::ReduceOp::sum);  // in place
    const auto sum_of_ranks = mine.front().get<std::int64_t>().front();
    const auto m = static_cast<std::int64_t>(comm.size());

    bool ok = sum_of_ranks == m * (m - 1) / 2;
    if (runtime.rank() == 0) {  // the reference, on the host
      double expected_total = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
          const float up = r > 0 ? global[(r - 1) * cols + c] : 0.0f;
          const float down = r + 1 < rows ? global[(r + 1) * cols + c] : 0.0f;
          ok = ok && result[r * cols + c] == 0.5f * (up + down);
          expected_total += 0.5f * (up + down);
        }
      }
      ok = ok && std::abs(total - expected_total) <= 1e-6 * expected_total;
      std::cout << comm.size() << " members on " << runtime.size() << " rank(s), "
                << comm.backend_description() << ": " << (ok ? "ok" : "MISMATCH") << "\n";
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
