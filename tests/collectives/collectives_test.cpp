// SPDX-License-Identifier: BSD-3-Clause
// The Communicator under mpirun (1..4 ranks) on PoCL devices, with the MPI backend: every
// operation x every dtype x every reduction x in and out of place x sizes 0, 1, 7 and ~256 KiB
// (~2 MiB with NCCL), against host references computed from the input formulas
// (collectives_support.hpp, which also says what the two layouts are); the watchdog's reading of
// its oldest calls; groups, send/recv and split. Bad calls and the agreement check:
// collectives_errors_test.cpp; the environment variables: collectives_environment_test.cpp.
#include <gtest/gtest.h>

#include "collectives_support.hpp"
#include "skein/detail/watch_order.hpp"

namespace skein::test::collectives_test {
namespace {

INSTANTIATE_TEST_SUITE_P(Layouts, Collectives,
                         testing::Values(Layout::runtime, Layout::two_per_rank), layout_name);

// ---- the operations -----------------------------------------------------------------------------

TEST_P(Collectives, DescribesItsMembersAndBackend) {
  auto& c = *s_.comm;
  std::size_t total = 0;
  const unsigned long long local = c.local_size();
  unsigned long long sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  total = static_cast<std::size_t>(sum);
  EXPECT_EQ(c.size(), total);
  unsigned long long before = 0;
  MPI_Exscan(&local, &before, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank() == 0) before = 0;
  for (std::size_t l = 0; l < c.local_size(); ++l)
    EXPECT_EQ(c.rank_of(l), static_cast<int>(before + l));
  EXPECT_EQ(c.backend(), CollectiveBackend::mpi);  // PoCL devices: automatic chooses MPI
  EXPECT_NE(c.backend_description().find("MPI (staged through host memory"), std::string::npos)
      << c.backend_description();
  EXPECT_THROW(c.rank_of(c.local_size()), LogicError);
}

// The watchdog's reading of its oldest calls (detail::completed_front), on the host only: for
// every list of up to 40 calls, every length of the run of calls on the same streams as the first
// and every point where that run's calls stop being complete (they complete in order; calls
// after the run complete or not in any way), the calls reported finished are exactly the run's
// completed ones, no call outside the run is asked, and at most 1 + ceil(log2(run)) are.
TEST(CollectivesWatchdog, CompletedFrontFindsTheFinishedCallsWithFewQueries) {
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::size_t run = 1; run <= n; ++run) {
      for (std::size_t complete = 0; complete <= run; ++complete) {
        for (int after : {0, 1}) {
          std::size_t asked = 0;
          bool outside = false;
          const auto [finished, reported_run] = detail::completed_front(
              n, [&](std::size_t i) { return i < run; },
              [&](std::size_t i) {
                ++asked;
                if (i >= run) outside = true;
                return i < run ? i < complete : after == 1;
              });
          std::size_t bound = 1;
          while ((std::size_t{1} << (bound - 1)) < run) ++bound;
          ASSERT_EQ(finished, complete) << n << " " << run << " " << complete;
          ASSERT_EQ(reported_run, run) << n << " " << run << " " << complete;
          ASSERT_FALSE(outside) << n << " " << run << " " << complete;
          ASSERT_LE(asked, bound) << n << " " << run << " " << complete;
        }
      }
    }
  }
}

// The tiled inputs and references are the element-by-element formulas at every index (a check of
// the test's own generator, on the host only).
TEST(CollectivesReferenceData, TilingMatchesTheFormulaAtEveryElement) {
  const std::size_t n = 1000, first = 13;
  for (Dtype dtype : all_dtypes) {
    visit_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) {
        const Bytes input = reduction_bytes(dtype, op, 2, first, n);
        const Bytes reference = reduction_reference(dtype, op, 3, first, n);
        const Bytes moved = movement_bytes(dtype, 2, first, n);
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t k = first + i;
          const T v = make_value<T>(reduction_input(op, 2, k), reduction_imag(op, k));
          T acc = make_value<T>(reduction_input(op, 0, k), reduction_imag(op, k));
          for (std::size_t m = 1; m < 3; ++m) {
            acc = ref_combine(acc, make_value<T>(reduction_input(op, m, k), reduction_imag(op, k)),
                              op);
          }
          const T w = make_value<T>(movement_input(2, k), 0.0);
          ASSERT_EQ(std::memcmp(input.data() + i * sizeof(T), &v, sizeof(T)), 0)
              << name(dtype) << " " << i;
          ASSERT_EQ(std::memcmp(reference.data() + i * sizeof(T), &acc, sizeof(T)), 0)
              << name(dtype) << " " << i;
          ASSERT_EQ(std::memcmp(moved.data() + i * sizeof(T), &w, sizeof(T)), 0)
              << name(dtype) << " " << i;
        }
      }
    });
  }
}

TEST_P(Collectives, AllReduce) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        // Also either side of 96 bytes: up to that size the data travels in the agreement
        // check's exchange (the MPI backend, more than one rank).
        auto ns = sizes(dtype, 1, s_.comm->backend());
        ns.push_back(96 / itemsize(dtype));
        ns.push_back(96 / itemsize(dtype) + 1);
        for (std::size_t n : ns) {
          const std::string what = case_name("all_reduce", dtype, op, in_place, n);
          std::vector<Array> send, recv;
          for (std::size_t l = 0; l < L; ++l) {
            send.push_back(s_.upload(l, dtype, reduction_bytes(dtype, op, s_.member(l), 0, n)));
            recv.push_back(in_place ? send.back() : s_.make(l, dtype, n));
          }
          check_events(s_, s_.comm->all_reduce(*s_.queue, send, recv, op), L);
          const Bytes want = reduction_reference(dtype, op, M, 0, n);
          for (std::size_t l = 0; l < L; ++l)
            expect_bytes(Rig::download(recv[l]), want, dtype, what);
        }
      }
    }
  }
}

TEST_P(Collectives, Reduce) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
          const int root = static_cast<int>((n + static_cast<std::size_t>(op)) % M);
          const std::string what =
              case_name("reduce", dtype, op, in_place, n) + fmt::format(" root {}", root);
          std::vector<Array> send, recv;
          std::vector<Bytes> inputs;
          for (std::size_t l = 0; l < L; ++l) {
            inputs.push_back(reduction_bytes(dtype, op, s_.member(l), 0, n));
            send.push_back(s_.upload(l, dtype, inputs.back()));
            // Out of place, non-roots pass empty arrays (they are not written).
            const bool is_root = s_.member(l) == static_cast<std::size_t>(root);
            recv.push_back(in_place ? send.back() : s_.make(l, dtype, is_root ? n : 0));
          }
          check_events(s_, s_.comm->reduce(*s_.queue, send, recv, op, root), L);
          const Bytes want = reduction_reference(dtype, op, M, 0, n);
          for (std::size_t l = 0; l < L; ++l) {
            if (s_.member(l) == static_cast<std::size_t>(root)) {
              expect_bytes(Rig::download(recv[l]), want, dtype, what);
            } else {
              // Never written: in place, a non-root's data is still its input.
              expect_bytes(Rig::download(send[l]), inputs[l], dtype,
                           what + " (non-root untouched)");
            }
          }
        }
      }
    }
  }
}

TEST_P(Collectives, ReduceScatter) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (ReduceOp op : kReductions) {
      if (!supported(dtype, op)) continue;
      for (bool in_place : {false, true}) {
        for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
          const std::string what = case_name("reduce_scatter", dtype, op, in_place, n);
          std::vector<Array> send, recv;
          for (std::size_t l = 0; l < L; ++l) {
            send.push_back(s_.upload(l, dtype, reduction_bytes(dtype, op, s_.member(l), 0, M * n)));
            // In place (NCCL's definition): recv is the member's own block of send.
            const std::size_t m = s_.member(l);
            recv.push_back(in_place ? send.back().slice(m * n, (m + 1) * n) : s_.make(l, dtype, n));
          }
          check_events(s_, s_.comm->reduce_scatter(*s_.queue, send, recv, op), L);
          for (std::size_t l = 0; l < L; ++l) {
            const Bytes want = reduction_reference(dtype, op, M, s_.member(l) * n, n);
            expect_bytes(Rig::download(recv[l]), want, dtype, what);
          }
        }
      }
    }
  }
}

TEST_P(Collectives, AllGather) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (bool in_place : {false, true}) {
      for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
        const std::string what = case_name("all_gather", dtype, std::nullopt, in_place, n);
        std::vector<Array> send, recv;
        std::vector<Bytes> blocks;
        for (std::size_t m = 0; m < M; ++m) blocks.push_back(movement_bytes(dtype, m, 0, n));
        for (std::size_t l = 0; l < L; ++l) {
          const std::size_t m = s_.member(l);
          if (in_place) {
            // send is the member's own block of recv, already holding its data.
            Bytes start(M * n * itemsize(dtype), std::byte{0});
            std::copy(blocks[m].begin(), blocks[m].end(), start.begin() + m * n * itemsize(dtype));
            recv.push_back(s_.upload(l, dtype, start));
            send.push_back(recv.back().slice(m * n, (m + 1) * n));
          } else {
            send.push_back(s_.upload(l, dtype, blocks[m]));
            recv.push_back(s_.make(l, dtype, M * n));
          }
        }
        check_events(s_, s_.comm->all_gather(*s_.queue, send, recv), L);
        const Bytes want = concat(blocks);
        for (std::size_t l = 0; l < L; ++l) expect_bytes(Rig::download(recv[l]), want, dtype, what);
      }
    }
  }
}

TEST_P(Collectives, Broadcast) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
      const int root = static_cast<int>((n + static_cast<std::size_t>(dtype)) % M);
      const std::string what =
          case_name("broadcast", dtype, std::nullopt, true, n) + fmt::format(" root {}", root);
      std::vector<Array> data;
      for (std::size_t l = 0; l < L; ++l)
        data.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, n)));
      check_events(s_, s_.comm->broadcast(*s_.queue, data, root), L);
      const Bytes want = movement_bytes(dtype, static_cast<std::size_t>(root), 0, n);
      for (std::size_t l = 0; l < L; ++l) expect_bytes(Rig::download(data[l]), want, dtype, what);
    }
  }
}

TEST_P(Collectives, AllToAll) {
  const std::size_t M = s_.M(), L = s_.L();
  for (Dtype dtype : all_dtypes) {
    for (bool in_place : {false, true}) {
      for (std::size_t n : sizes(dtype, M, s_.comm->backend())) {
        const std::string what = case_name("all_to_all", dtype, std::nullopt, in_place, n);
        std::vector<Array> send, recv;
        for (std::size_t l = 0; l < L; ++l) {
          send.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, M * n)));
          recv.push_back(in_place ? send.back() : s_.make(l, dtype, M * n));
        }
        check_events(s_, s_.comm->all_to_all(*s_.queue, send, recv), L);
        for (std::size_t l = 0; l < L; ++l) {
          // Block i of member j's result is block j of member i's input.
          const std::size_t j = s_.member(l);
          std::vector<Bytes> blocks;
          for (std::size_t i = 0; i < M; ++i) blocks.push_back(movement_bytes(dtype, i, j * n, n));
          expect_bytes(Rig::download(recv[l]), concat(blocks), dtype, what);
        }
      }
    }
  }
}

TEST_P(Collectives, SendRecvRingInAGroup) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  for (Dtype dtype : {Dtype::int8, Dtype::float16, Dtype::float64, Dtype::complex64}) {
    for (std::size_t n : sizes(dtype, 1, s_.comm->backend())) {
      std::vector<Array> out, in;
      s_.comm->group_start();
      for (std::size_t l = 0; l < L; ++l) {
        const std::size_t m = s_.member(l);
        out.push_back(s_.upload(l, dtype, movement_bytes(dtype, m, 0, n)));
        in.push_back(s_.make(l, dtype, n));
        auto e1 = s_.comm->send(*s_.queue, l, out.back(), static_cast<int>((m + 1) % M));
        auto e2 = s_.comm->recv(*s_.queue, l, in.back(), static_cast<int>((m + M - 1) % M));
        EXPECT_EQ(e1.size(), 1u);
        EXPECT_EQ(e2.size(), 1u);
      }
      s_.comm->group_end();
      s_.queue->synchronize();
      for (std::size_t l = 0; l < L; ++l) {
        const std::size_t from = (s_.member(l) + M - 1) % M;
        expect_bytes(Rig::download(in[l]), movement_bytes(dtype, from, 0, n), dtype,
                     fmt::format("ring {} n={}", name(dtype), n));
      }
    }
  }
}

// Exchanges back to back with nothing waited for on the host between them, as a time loop does:
// each step passes on what the step before received (so a step's sends read what its receives'
// copies wrote), then steps of growing sizes (the backend's staging memory grows while earlier
// copies may still be in flight). Every result is checked once at the end.
TEST_P(Collectives, SendRecvRingPipelined) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  const Dtype dtype = Dtype::int32;
  const std::size_t n = 1000, steps = 7;
  std::vector<Array> a, b;
  for (std::size_t l = 0; l < L; ++l) {
    a.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), 0, n)));
    b.push_back(s_.make(l, dtype, n));
  }
  for (std::size_t k = 0; k < steps; ++k) {
    s_.comm->group_start();
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, a[l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, b[l], static_cast<int>((m + M - 1) % M));
    }
    s_.comm->group_end();
    std::swap(a, b);
  }
  // Growing messages: every send array is made first, then the exchanges run back to back.
  std::vector<std::vector<Array>> out(steps), in(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    for (std::size_t l = 0; l < L; ++l) {
      out[k].push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), k, (n << k) + k)));
      in[k].push_back(s_.make(l, dtype, (n << k) + k));
    }
  }
  for (std::size_t k = 0; k < steps; ++k) {
    s_.comm->group_start();
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, out[k][l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, in[k][l], static_cast<int>((m + M - 1) % M));
    }
    s_.comm->group_end();
  }
  s_.queue->synchronize();
  for (std::size_t l = 0; l < L; ++l) {
    const std::size_t m = s_.member(l);
    expect_bytes(Rig::download(a[l]), movement_bytes(dtype, (m + M * steps - steps) % M, 0, n),
                 dtype, fmt::format("after {} passes", steps));
    for (std::size_t k = 0; k < steps; ++k) {
      expect_bytes(Rig::download(in[k][l]), movement_bytes(dtype, (m + M - 1) % M, k, (n << k) + k),
                   dtype, fmt::format("growing step {}", k));
    }
  }
}

// CommunicatorGroup: a ring exchange in a guarded scope ended by end(); a scope left by an
// exception after its operations were issued (the destructor ends the group: the data still
// moves, and the communicator is usable for the next group); end() twice refused.
TEST_P(Collectives, GroupGuardEndsTheGroupOnEveryExit) {
  const std::size_t M = s_.M(), L = s_.L();
  if (M < 2) GTEST_SKIP() << "needs two members";
  const Dtype dtype = Dtype::int32;
  const std::size_t n = 777;
  auto ring = [&](std::size_t k, std::vector<Array>& in) {
    std::vector<Array> out;
    for (std::size_t l = 0; l < L; ++l) {
      out.push_back(s_.upload(l, dtype, movement_bytes(dtype, s_.member(l), k, n)));
      in.push_back(s_.make(l, dtype, n));
    }
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t m = s_.member(l);
      s_.comm->send(*s_.queue, l, out[l], static_cast<int>((m + 1) % M));
      s_.comm->recv(*s_.queue, l, in[l], static_cast<int>((m + M - 1) % M));
    }
    return out;
  };
  std::vector<Array> first, second, third;
  {
    CommunicatorGroup group(*s_.comm);
    auto kept = ring(0, first);
    group.end();
    EXPECT_TRUE(group.ended());
    try {
      group.end();
      ADD_FAILURE() << "end() twice: no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("already ended"), std::string::npos) << e.what();
    }
    s_.queue->synchronize();
  }
  std::vector<Array> kept;
  try {
    CommunicatorGroup group(*s_.comm);
    kept = ring(1, second);
    throw std::runtime_error("the user's code failed inside the group");
  } catch (const std::runtime_error&) {
    // What a code does next: another group on the same communicator.
  }
  {
    CommunicatorGroup group(*s_.comm);
    auto kept3 = ring(2, third);
    group.end();
    s_.queue->synchronize();
  }
  for (std::size_t l = 0; l < L; ++l) {
    const std::size_t from = (s_.member(l) + M - 1) % M;
    expect_bytes(Rig::download(first[l]), movement_bytes(dtype, from, 0, n), dtype,
                 "guarded, ended");
    expect_bytes(Rig::download(second[l]), movement_bytes(dtype, from, 1, n), dtype,
                 "left by an exception");
    expect_bytes(Rig::download(third[l]), movement_bytes(dtype, from, 2, n), dtype,
                 "the next group");
  }
}

TEST_P(Collectives, SendRecvBetweenRanksWithoutAGroup) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // Rank 0's first member sends to rank 1's first member: blocking calls on different ranks.
  const int rank = world_rank();
  const std::size_t n = 1000;
  // Every rank's first member; ranks 0 and 1 pair up, the others look on.
  int mine = s_.comm->rank_of(0);
  std::vector<int> first(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&mine, 1, MPI_INT, first.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const int peer_member = rank < 2 ? first[static_cast<std::size_t>(rank ^ 1)] : -1;
  if (rank == 0) {
    Array a = s_.upload(0, Dtype::int32, movement_bytes(Dtype::int32, 42, 0, n));
    check_events(s_, s_.comm->send(*s_.queue, 0, a, peer_member), 1);
  } else if (rank == 1) {
    Array a = s_.make(0, Dtype::int32, n);
    check_events(s_, s_.comm->recv(*s_.queue, 0, a, peer_member), 1);
    expect_bytes(Rig::download(a), movement_bytes(Dtype::int32, 42, 0, n), Dtype::int32, "recv");
  }
}

TEST_P(Collectives, GroupOfCollectivesAndBarrier) {
  const std::size_t M = s_.M(), L = s_.L();
  std::vector<Array> a, b;
  for (std::size_t l = 0; l < L; ++l) {
    a.push_back(s_.upload(l, Dtype::float32,
                          reduction_bytes(Dtype::float32, ReduceOp::sum, s_.member(l), 0, 100)));
    b.push_back(s_.upload(l, Dtype::int64,
                          reduction_bytes(Dtype::int64, ReduceOp::max, s_.member(l), 0, 50)));
  }
  s_.comm->group_start();
  auto e = s_.comm->all_reduce(*s_.queue, a, a, ReduceOp::sum);
  EXPECT_EQ(e.size(), L);
  s_.comm->all_reduce(*s_.queue, b, b, ReduceOp::max);
  s_.comm->group_end();
  s_.comm->barrier(*s_.queue);
  for (std::size_t l = 0; l < L; ++l) {
    expect_bytes(Rig::download(a[l]), reduction_reference(Dtype::float32, ReduceOp::sum, M, 0, 100),
                 Dtype::float32, "grouped sum");
    expect_bytes(Rig::download(b[l]), reduction_reference(Dtype::int64, ReduceOp::max, M, 0, 50),
                 Dtype::int64, "grouped max");
  }
  EXPECT_THROW(s_.comm->group_end(), LogicError);
}

TEST_P(Collectives, SplitByRankParity) {
  const int rank = world_rank();
  Communicator half = s_.comm->split(rank % 2, rank);
  unsigned long long local = s_.L(), in_color = 0;
  MPI_Comm parity;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity);
  MPI_Allreduce(&local, &in_color, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, parity);
  MPI_Comm_free(&parity);
  EXPECT_EQ(half.size(), in_color);
  std::vector<Array> a;
  for (std::size_t l = 0; l < s_.L(); ++l) {
    a.push_back(s_.upload(l, Dtype::int32,
                          reduction_bytes(Dtype::int32, ReduceOp::sum, half.rank_of(l), 0, 7)));
  }
  half.all_reduce(*s_.queue, a, a, ReduceOp::sum);
  for (auto& x : a) {
    expect_bytes(Rig::download(x),
                 reduction_reference(Dtype::int32, ReduceOp::sum, half.size(), 0, 7), Dtype::int32,
                 "split sum");
  }
}

}  // namespace
}  // namespace skein::test::collectives_test
