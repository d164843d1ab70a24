// SPDX-License-Identifier: BSD-3-Clause
// Enqueuing the kernels of a ReductionKernel's whole-array programs: the fast one's K_p1 and K_p2,
// the deterministic one's passes over tiles (K_dleaf, K_dmid) and K_dcombine, with their
// arguments packed as the generated sources declare them.
#include <fmt/format.h>

#include <algorithm>

#include "reduction_impl.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"

namespace skein::detail::red {

void pack_inputs(codegen::ArgPack& pack, const ReductionKernel::Impl& impl, const Resolved& r) {
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.is_array[k]) {
      pack.array(r.args[k].array());
    } else {
      pack.bytes(r.args[k].bytes_as(r.dtypes[k], fmt::format("argument '{}' of kernel '{}'",
                                                             impl.params[k].name, impl.name())));
    }
  }
}

void pack_strides(codegen::ArgPack& pack, const Resolved& r) {
  for (auto s : r.layout.shape) pack.value(s);
  for (const auto& strides : r.layout.strides) {
    for (auto s : strides) pack.value(s);
  }
}

// The device of the array inputs; with scalars only, the queue's first device.
std::size_t device_of(const Resolved& r, const Queue& queue) {
  return r.device ? *r.device : queue.device_idxs().front();
}

// The values p1 takes after its inputs: the size, then the vector loop's start and chunk count
// (contiguous) or the shape and strides.
std::vector<std::uint64_t> p1_tail(const ReductionKernel::Impl& impl, const Queue& queue,
                                   std::size_t d, const Resolved& r) {
  std::vector<std::uint64_t> tail{r.n};
  if (r.layout.contiguous) {
    std::uint64_t head = r.n, nchunks = 0;
    std::vector<const Array*> arrays;
    for (std::size_t k = 0; k < impl.params.size(); ++k) {
      if (r.layout_index[k] != npos) arrays.push_back(&r.args[k].array());
    }
    const bool aligned_buffers = queue.context().device(d).params().base_address_align >= 16 ||
                                 queue.context().api().id() == ApiId::cuda;
    if (aligned_buffers && !arrays.empty()) {
      if (auto h = codegen::common_vector_start(arrays); h && *h < r.n) {
        head = *h;
        nchunks = (r.n - head) / r.W;
      }
    }
    if (nchunks == 0) head = r.n;
    tail.push_back(head);
    tail.push_back(nchunks);
  } else {
    for (auto s : r.layout.shape) tail.push_back(s);
    for (const auto& strides : r.layout.strides) {
      for (auto s : strides) tail.push_back(s);
    }
  }
  return tail;
}

// The fast first pass on one device into `part` (groups partial values); returns the group count.
// With `finish`, the result goes post-mapped into that array too: from the one group, or (with
// `counter`, a program with the one-launch code) from the last of several.
std::size_t enqueue_p1(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                       const Resolved& r, const codegen::CompiledProgram& prog, const Buffer& part,
                       std::size_t part_offset, std::size_t groups, const Array* finish,
                       const Buffer* counter) {
  codegen::ArgPack pack;
  pack_inputs(pack, impl, r);
  for (std::uint64_t v : p1_tail(impl, queue, d, r)) pack.value(v);
  pack.buffer(part, part_offset);
  const P1Finish mode = !finish ? kPartials : groups == 1 ? kAlone : kLastGroup;
  if (mode == kLastGroup && !counter) {
    detail::raise_in<RuntimeError>(SKEIN_HERE, "ReductionKernel", "This is a bug in Skein.",
                                   "kernel '{}': a one-launch finish without a group counter",
                                   impl.name());
  }
  pack.value(std::int32_t{mode});
  if (finish) {
    pack.array(*finish);
  } else {
    pack.buffer(part, part_offset);
  }
  if (counter) {
    pack.buffer(*counter);
  } else {
    pack.buffer(part, part_offset);
  }
  codegen::launch(prog.kernel(impl.name() + "_p1"), queue, d, groups, prog.local_size[d], pack);
  return groups;
}

std::size_t p1_groups(const ReductionKernel::Impl& impl, const Resolved& r,
                      const codegen::CompiledProgram& prog, std::size_t d) {
  const std::size_t L = prog.local_size[d];
  const std::uint64_t work =
      r.layout.contiguous ? std::max<std::uint64_t>(ceil_div(r.n, r.W * r.U), 1) : r.n;
  return std::clamp<std::uint64_t>(ceil_div(work, L), 1, prog.resident(impl.name() + "_p1", d));
}

void enqueue_p2(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                const codegen::CompiledProgram& prog, const Buffer& in, std::size_t in_offset,
                std::uint64_t count, bool finish, const Buffer& part, std::size_t part_offset,
                const Array* y) {
  codegen::ArgPack pack;
  pack.buffer(in, in_offset);
  pack.value(count);
  pack.value(std::int32_t{finish ? 1 : 0});
  pack.buffer(part, part_offset);
  if (y) {
    pack.array(*y);
  } else {
    pack.buffer(part, part_offset);
  }
  codegen::launch(prog.kernel(impl.name() + "_p2"), queue, d, 1, prog.local_size[d], pack);
}

// Deterministic records of one piece: passes over tiles, into `recs` (cleared first).
void enqueue_records(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const Resolved& r, const codegen::CompiledProgram& prog, std::uint64_t offset,
                     std::uint64_t total, const Buffer& recs, std::size_t recs_offset,
                     const Buffer& scratch, std::size_t up_a, std::size_t up_b) {
  const std::uint32_t lmax = max_level(total);
  const std::size_t capacity = ReductionKernel::record_capacity(total);
  queue.device_queue(d).fill_zero(*recs.adapter(), recs.offset() + recs_offset,
                                  capacity * r.record_size);
  const std::uint64_t n = r.n;
  if (n == 0) return;
  const std::size_t L = prog.local_size[d];
  const DetGeometry g = det_geometry(r, L);

  std::uint64_t a = offset, b = offset + n, N = total;
  std::uint32_t lbase = 0;
  std::size_t in_off = 0, out_off = up_a;
  bool first = true;
  while (a < b) {
    const std::uint64_t S = first ? g.S0() : g.Sm();
    const unsigned s = log2_exact(S);
    const std::uint64_t tile0 = a / S, tiles = ceil_div(b, S) - tile0;
    const bool pass_up = N > S;
    const std::uint64_t A = ceil_div(a, S);
    const std::uint64_t B = (b == N) ? ceil_div(N, S) : b / S;
    codegen::ArgPack pack;
    if (first) {
      pack_inputs(pack, impl, r);
      pack.value(n);
      // 16-byte loads of the leaves need each input's element with a global index that is a
      // multiple of W at a 16-byte boundary.
      std::uint32_t vec = 0;
      if (r.layout.contiguous && (queue.context().device(d).params().base_address_align >= 16 ||
                                  queue.context().api().id() == ApiId::cuda)) {
        vec = 1;
        for (std::size_t k = 0; k < impl.params.size(); ++k) {
          if (r.layout_index[k] == npos) continue;
          const Array& arr = r.args[k].array();
          const std::uint64_t isz = arr.itemsize();
          if ((codegen::address_in_allocation(arr) % 16 + 16 - (offset * isz) % 16) % 16 != 0)
            vec = 0;
        }
      }
      pack.value(vec);
      if (!r.layout.contiguous) pack_strides(pack, r);
    } else {
      pack.buffer(scratch, in_off);
    }
    pack.value(a);
    pack.value(b);
    pack.value(N);
    pack.value(tile0);
    pack.buffer(scratch, out_off);
    pack.value(A);
    pack.value(std::uint32_t{pass_up ? 1u : 0u});
    pack.buffer(recs, recs_offset);
    pack.value(lmax);
    pack.value(lbase);
    codegen::launch(prog.kernel(impl.name() + (first ? "_dleaf" : "_dmid")), queue, d, tiles, L,
                    pack);
    if (!pass_up || A >= B) break;
    a = A;
    b = B;
    N = ceil_div(N, S);
    lbase += s;
    in_off = out_off;
    out_off = (out_off == up_a) ? up_b : up_a;
    first = false;
  }
}

// Scratch bytes for the up-arrays of a piece of n elements.
std::size_t up_bytes(const Resolved& r, std::size_t L) {
  const DetGeometry g = det_geometry(r, L);
  return (r.n / g.S0() + 2) * r.reduce_size;
}

void enqueue_combine(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const codegen::CompiledProgram& prog, const Buffer& recs,
                     std::size_t recs_offset, std::uint64_t count, std::uint64_t total,
                     const Array& y) {
  codegen::ArgPack pack;
  pack.buffer(recs, recs_offset);
  pack.value(count);
  pack.value(total);
  pack.array(y);
  codegen::launch(prog.kernel(impl.name() + "_dcombine"), queue, d, 1, 1, pack);
}

}  // namespace skein::detail::red
