// SPDX-License-Identifier: BSD-3-Clause
// The Communicator's refusals under mpirun (1..4 ranks, both layouts of collectives_support.hpp):
// argument errors raised before anything is sent (every rank makes the same bad call, and a good
// call works afterwards), and the agreement check of the calls' fingerprints, done with the call
// or alongside it (a mismatch raises on every rank; matching calls go through).
#include <gtest/gtest.h>

#include <skein/records.hpp>

#include "collectives_support.hpp"
#include "scoped_env.hpp"
#include "skein/detail/backend.hpp"

namespace skein::test::collectives_test {
namespace {

using ScopedEnv = ::skein::test::ScopedEnv;

// ---- errors -------------------------------------------------------------------------------------

// Every rank makes the same bad call: each must raise LogicError before anything is sent, and
// the communicator must still work (no rank left inside a collective).
template <class F>
void expect_logic_error(const Rig& s, F&& bad, const std::vector<std::string>& words) {
  try {
    bad();
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    for (const auto& w : words)
      EXPECT_NE(what.find(w), std::string::npos) << "'" << w << "' not in: " << what;
  }
  std::vector<Array> ok;
  for (std::size_t l = 0; l < s.L(); ++l)
    ok.push_back(
        s.upload(l, Dtype::int32, reduction_bytes(Dtype::int32, ReduceOp::sum, s.member(l), 0, 3)));
  s.comm->all_reduce(*s.queue, ok, ok, ReduceOp::sum);
  for (auto& a : ok) {
    expect_bytes(Rig::download(a), reduction_reference(Dtype::int32, ReduceOp::sum, s.M(), 0, 3),
                 Dtype::int32, "after the error");
  }
}

TEST_P(Collectives, BadCallsRaiseBeforeAnythingIsSent) {
  const std::size_t M = s_.M(), L = s_.L();
  auto arrays = [&](Dtype dtype, std::size_t n) {
    std::vector<Array> v;
    for (std::size_t l = 0; l < L; ++l) v.push_back(s_.make(l, dtype, n));
    return v;
  };
  const std::string rank_word = fmt::format("rank {}", world_rank());
  // Wrong span size.
  auto send = arrays(Dtype::float32, 10);
  std::vector<Array> too_many = send;
  too_many.push_back(send[0]);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, too_many, too_many, ReduceOp::sum); },
                     {rank_word, "all_reduce", "member"});
  // Different dtypes.
  auto recv_int = arrays(Dtype::int32, 10);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, send, recv_int, ReduceOp::sum); },
                     {rank_word, "all_reduce", "dtype", "int32", "float32"});
  // Different sizes.
  auto recv_small = arrays(Dtype::float32, 9);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, send, recv_small, ReduceOp::sum); },
                     {rank_word, "all_reduce", "9 elements"});
  // Bad root.
  expect_logic_error(s_, [&] { s_.comm->broadcast(*s_.queue, send, static_cast<int>(M)); },
                     {rank_word, "broadcast", "root"});
  expect_logic_error(s_, [&] { s_.comm->reduce(*s_.queue, send, send, ReduceOp::sum, -1); },
                     {rank_word, "reduce", "root"});
  // Too small recv for all_gather.
  auto gather_small = arrays(Dtype::float32, M * 10 - 1);
  expect_logic_error(s_, [&] { s_.comm->all_gather(*s_.queue, send, gather_small); },
                     {rank_word, "all_gather", "recv"});
  // reduce_scatter's send must be size() * recv.
  auto rs_send = arrays(Dtype::float32, M * 10 + 1);
  expect_logic_error(s_, [&] { s_.comm->reduce_scatter(*s_.queue, rs_send, send, ReduceOp::sum); },
                     {rank_word, "reduce_scatter", "send"});
  // Unsupported reduction for the dtype.
  auto cplx = arrays(Dtype::complex64, 4);
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, cplx, cplx, ReduceOp::max); },
                     {"Backend MPI does not support max with complex64"});
  // Record (struct) dtypes: refused by every collective, whatever it would do with the bytes.
  const Dtype rec =
      register_dtype(StructType{{"a", Dtype::float32}, {"b", Dtype::int32}}, "coll_rec");
  auto recs = arrays(rec, 4);
  expect_logic_error(s_, [&] { s_.comm->broadcast(*s_.queue, recs, 0); },
                     {rank_word, "broadcast", "coll_rec", "record"});
  expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, recs, recs, ReduceOp::sum); },
                     {rank_word, "all_reduce", "coll_rec", "record"});
  // A peer that is the member itself, or no member.
  expect_logic_error(s_, [&] { s_.comm->send(*s_.queue, 0, send[0], s_.comm->rank_of(0)); },
                     {rank_word, "send", "itself"});
  expect_logic_error(s_, [&] { s_.comm->recv(*s_.queue, 0, send[0], static_cast<int>(M)); },
                     {rank_word, "recv", "peer"});
  // An array on the wrong device (two members on one rank: swap them).
  if (on_every_rank(L >= 2)) {
    std::vector<Array> swapped = send;
    std::swap(swapped[0], swapped[1]);
    expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, swapped, swapped, ReduceOp::sum); },
                       {rank_word, "all_reduce", "device"});
  }
  // A queue without the members' devices.
  if (on_every_rank(s_.comm->context().num_devices() >= 2)) {
    const std::size_t other = s_.dev(0) == 0 ? 1 : 0;
    Queue partial(s_.comm->context(), {other});
    expect_logic_error(s_, [&] { s_.comm->all_reduce(partial, send, send, ReduceOp::sum); },
                       {rank_word, "all_reduce", "queue"});
  }
  // A non-contiguous array.
  if (on_every_rank(L == 1)) {
    Array strided = s_.make(0, Dtype::float32, 20).view(0, {10}, {8});
    std::vector<Array> v{strided};
    expect_logic_error(s_, [&] { s_.comm->all_reduce(*s_.queue, v, v, ReduceOp::sum); },
                       {rank_word, "contiguous"});
  }
}

TEST_P(Collectives, MismatchedCountsAreCaughtByTheAgreementCheck) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // The check is on by default, in every build.
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  const std::size_t n = world_rank() == 1 ? 999 : 1000;
  std::vector<Array> a;
  for (std::size_t l = 0; l < s.L(); ++l) a.push_back(s.make(l, Dtype::float32, n));
  try {
    s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all_reduce #1"), std::string::npos) << what;
    EXPECT_NE(what.find("count differs"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 has 999"), std::string::npos) << what;
  }
  // Nothing was sent: the communicator still works.
  for (std::size_t l = 0; l < s.L(); ++l) {
    a[l] = s.upload(l, Dtype::float32,
                    reduction_bytes(Dtype::float32, ReduceOp::sum, s.member(l), 0, 5));
  }
  s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
  for (auto& x : a) {
    expect_bytes(Rig::download(x), reduction_reference(Dtype::float32, ReduceOp::sum, s.M(), 0, 5),
                 Dtype::float32, "after the mismatch");
  }
}

// A small all_reduce's data travels in the agreement check's exchange (the MPI backend): ranks
// that differ still raise, whether both sides carry their data or one does not, and a rank that
// cannot carry its data (the call inside a group) makes the others send theirs as usual.
TEST_P(Collectives, SmallAllReduceCarriedByTheCheck) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
  Rig s = make_rig(GetParam());
  const bool odd = world_rank() == 1;
  auto run = [&](Dtype dtype, std::size_t n, ReduceOp op, bool grouped) {
    std::vector<Array> a;
    for (std::size_t l = 0; l < s.L(); ++l) {
      a.push_back(s.upload(l, dtype, reduction_bytes(dtype, op, s.member(l), 0, n)));
    }
    if (grouped) s.comm->group_start();
    s.comm->all_reduce(*s.queue, a, a, op);
    if (grouped) s.comm->group_end();
    return a;
  };
  auto expect_mismatch = [&](const char* field, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  // Both carry: 2 elements against 3; float32 against int32.
  expect_mismatch("count differs", [&] { run(Dtype::float32, odd ? 3 : 2, ReduceOp::sum, false); });
  expect_mismatch("dtype differs",
                  [&] { run(odd ? Dtype::int32 : Dtype::float32, 2, ReduceOp::sum, false); });
  // One carries (2 elements), the other does not (4000).
  expect_mismatch("count differs",
                  [&] { run(Dtype::float32, odd ? 4000 : 2, ReduceOp::sum, false); });
  // The same call, rank 1 inside a group: every rank gets the reduction.
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    auto a = run(Dtype::float64, 5, op, odd);
    for (auto& x : a) {
      expect_bytes(Rig::download(x), reduction_reference(Dtype::float64, op, s.M(), 0, 5),
                   Dtype::float64, fmt::format("{} with rank 1 in a group", name(op)));
    }
  }
  // Nothing was lost: the communicator still works, carried or not.
  for (const std::size_t n : {std::size_t(1), std::size_t(4000)}) {
    auto a = run(Dtype::int64, n, ReduceOp::sum, false);
    for (auto& x : a) {
      expect_bytes(Rig::download(x), reduction_reference(Dtype::int64, ReduceOp::sum, s.M(), 0, n),
                   Dtype::int64, fmt::format("after the mismatches, n={}", n));
    }
  }
}

// The path NCCL's calls take (they return once enqueued; the watchdog compares the fingerprints
// alongside), run over the MPI backend: many calls compared in flight, then a barrier.
// Both ways: the watchdog compares (MPI_THREAD_MULTIPLE, what the suite runs with), and the
// calling thread does at the next call (as below MULTIPLE).
TEST_P(Collectives, CallsComparedAlongsideAgree) {
  for (const bool by_watchdog : {true, false}) {
    SCOPED_TRACE(by_watchdog ? "compared by the watchdog" : "compared by the calling thread");
    ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
    Rig s = make_rig(GetParam());
    detail::compare_alongside_for_testing(*s.comm, by_watchdog);
    for (int round = 0; round < 40; ++round) {
      std::vector<Array> a;
      for (std::size_t l = 0; l < s.L(); ++l) {
        a.push_back(s.upload(l, Dtype::float32,
                             reduction_bytes(Dtype::float32, ReduceOp::sum, s.member(l), 0, 9)));
      }
      s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
      for (auto& x : a) {
        expect_bytes(Rig::download(x),
                     reduction_reference(Dtype::float32, ReduceOp::sum, s.M(), 0, 9),
                     Dtype::float32, fmt::format("round {}", round));
      }
    }
    EXPECT_NO_THROW(s.comm->barrier(*s.queue));
  }
}

// A mismatch on that path: the call itself returns, and the next call (here the barrier) raises
// the LogicError on every rank; the communicator is aborted afterwards.
TEST_P(Collectives, MismatchComparedAlongsideRaisesOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  for (const bool by_watchdog : {true, false}) {
    SCOPED_TRACE(by_watchdog ? "compared by the watchdog" : "compared by the calling thread");
    ScopedEnv check("SKEIN_CHECK_COLLECTIVES", std::nullopt);
    Rig s = make_rig(GetParam());
    detail::compare_alongside_for_testing(*s.comm, by_watchdog);
    // Sum on every rank but rank 1, which asks for max: the same sizes, so the data's exchange
    // itself is harmless; only the check can tell.
    const ReduceOp op = world_rank() == 1 ? ReduceOp::max : ReduceOp::sum;
    std::vector<Array> a;
    for (std::size_t l = 0; l < s.L(); ++l) a.push_back(s.make(l, Dtype::float32, 64));
    for (auto& x : a) x.fill_zero();
    s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);  // agreeing: #1
    s.comm->all_reduce(*s.queue, a, a, op);             // #2 differs
    try {
      s.comm->barrier(*s.queue);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("all_reduce #2"), std::string::npos) << what;
      EXPECT_NE(what.find("reduction differs"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 1 has max"), std::string::npos) << what;
    }
    try {
      s.comm->all_reduce(*s.queue, a, a, ReduceOp::sum);
      ADD_FAILURE() << "the aborted communicator took another call";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace skein::test::collectives_test
