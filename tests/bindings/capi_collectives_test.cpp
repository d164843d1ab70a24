// SPDX-License-Identifier: BSD-3-Clause
// The C API's collectives on array handles and on native pointers, over every dtype, against
// references computed on the host (small integers: exact in every dtype, float16 and bfloat16
// included, for up to 4 members).
#include <memory>
#include <vector>

#include "capi_support.hpp"

namespace {
namespace capi_collectives_test {

using namespace skein::test::capi;

constexpr std::size_t kN = 6;  // elements per member

// Member m's reduction input at element i: (m + 1) * (i % 7 + 1), or 1s and 2s for prod.
double input(skein_reduce_op op, std::size_t m, std::size_t i) {
  if (op == SKEIN_PROD) return 1.0 + static_cast<double>((m + i) % 2);
  return static_cast<double>((m + 1) * (i % 7 + 1));
}

double imag(skein_reduce_op op, std::size_t i) { return op == SKEIN_PROD ? 0.0 : double(i % 3); }

// The reduction over `members` members, as the dtype computes it (integer avg truncates).
Bytes reference(skein_dtype d, skein_reduce_op op, std::size_t members, std::size_t n) {
  std::vector<double> re(n), im(n);
  for (std::size_t i = 0; i < n; ++i) {
    double acc = input(op, 0, i);
    for (std::size_t m = 1; m < members; ++m) {
      const double v = input(op, m, i);
      acc = op == SKEIN_PROD  ? acc * v
            : op == SKEIN_MIN ? std::min(acc, v)
            : op == SKEIN_MAX ? std::max(acc, v)
                              : acc + v;
    }
    im[i] = imag(op, i) * (op == SKEIN_SUM ? double(members) : 1.0);
    if (op == SKEIN_AVG) {
      acc /= double(members);
      if (is_integer(d)) acc = std::trunc(acc);
    }
    re[i] = acc;
  }
  return encode(d, re, im);
}

Bytes member_input(skein_dtype d, skein_reduce_op op, std::size_t m, std::size_t n) {
  std::vector<double> re(n), im(n);
  for (std::size_t i = 0; i < n; ++i) re[i] = input(op, m, i), im[i] = imag(op, i);
  return encode(d, re, im);
}

// Data-moving inputs: (key * 13 + i * 7) % 101 + 1.
Bytes movement(skein_dtype d, std::size_t key, std::size_t n) {
  std::vector<double> re(n);
  for (std::size_t i = 0; i < n; ++i) re[i] = double((key * 13 + i * 7) % 101 + 1);
  return encode(d, re);
}

// Arrays of `n` elements, one per local member, destroyed with the object.
struct Arrays {
  std::vector<skein_array*> a;
  ~Arrays() {
    for (auto* x : a) skein_array_destroy(x);
  }
};

class CApiCollectives : public CApi {
 protected:
  void make(Arrays& out, skein_dtype d, std::size_t n) {
    out.a.assign(s.local, nullptr);
    for (std::size_t l = 0; l < s.local; ++l) {
      CAPI_OK(skein_array_create(s.queue, l, d, 1, &n, SKEIN_ORDER_C, &out.a[l]));
    }
  }
  Bytes get(skein_array* a) {
    std::size_t n = 0;
    skein_dtype d{};
    EXPECT_EQ(skein_array_size(a, &n), SKEIN_SUCCESS);
    EXPECT_EQ(skein_array_dtype(a, &d), SKEIN_SUCCESS);
    Bytes out(n * skein_dtype_size(d));
    EXPECT_EQ(skein_array_to_host(a, out.data(), out.size()), SKEIN_SUCCESS)
        << skein_last_error_message();
    return out;
  }
  void set(skein_array* a, const Bytes& b) {
    ASSERT_EQ(skein_array_from_host(a, b.data(), b.size()), SKEIN_SUCCESS)
        << skein_last_error_message();
  }
  // Whether the backend reduces the dtype: NCCL has no 16-bit integers, and Skein refuses complex
  // reductions there rather than half-support them (collectives/comm/nccl/communicator.cpp).
  bool reduces(skein_dtype d) {
    skein_backend b{};
    EXPECT_EQ(skein_communicator_backend(s.comm, &b), SKEIN_SUCCESS);
    return b != SKEIN_BACKEND_NCCL || !(d == SKEIN_INT16 || d == SKEIN_UINT16 || is_complex(d));
  }
  // A reduction the backend refuses: INVALID_ARGUMENT on every rank, naming the reason, with
  // `out` (the arrays it would have written) as they were, so no wrong value reaches the host.
  template <class Call>
  void expect_refused(Call call, const std::vector<skein_array*>& out) {
    std::vector<Bytes> before;
    for (skein_array* a : out) before.push_back(get(a));
    EXPECT_EQ(nothrow(call), SKEIN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(skein_last_error_message()).find("does not support"), std::string::npos)
        << skein_last_error_message();
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(get(out[i]), before[i]) << "a refused reduction wrote its output";
    }
  }
};

TEST_P(CApiCollectives, AllReduceEveryOpAndDtype) {
  for (const skein_dtype d : kAllDtypes) {
    for (const skein_reduce_op op : {SKEIN_SUM, SKEIN_PROD, SKEIN_MIN, SKEIN_MAX, SKEIN_AVG}) {
      if (is_complex(d) && (op == SKEIN_MIN || op == SKEIN_MAX)) continue;  // no order
      SCOPED_TRACE(std::string(skein_dtype_name(d)) + " op " + std::to_string(int(op)));
      Arrays send, recv;
      make(send, d, kN);
      make(recv, d, kN);
      for (std::size_t l = 0; l < s.local; ++l) set(send.a[l], member_input(d, op, member(l), kN));
      if (!reduces(d)) {
        expect_refused(
            [&] {
              return skein_all_reduce(s.comm, s.queue, send.a.data(), recv.a.data(), s.local, op);
            },
            recv.a);
        continue;
      }
      CAPI_OK(skein_all_reduce(s.comm, s.queue, send.a.data(), recv.a.data(), s.local, op));
      CAPI_OK(skein_queue_synchronize(s.queue));
      const Bytes expected = reference(d, op, s.members, kN);
      for (std::size_t l = 0; l < s.local; ++l) EXPECT_EQ(get(recv.a[l]), expected);
    }
  }
}

TEST_P(CApiCollectives, DataMovementEveryDtype) {
  const std::size_t M = s.members;
  for (const skein_dtype d : kAllDtypes) {
    SCOPED_TRACE(skein_dtype_name(d));
    Arrays send, gathered, big, scattered, all;
    make(send, d, kN);
    make(gathered, d, M * kN);
    make(big, d, M * kN);
    make(scattered, d, kN);
    make(all, d, M * kN);
    for (std::size_t l = 0; l < s.local; ++l) set(send.a[l], movement(d, member(l), kN));
    // all_gather: every member's block in member order.
    CAPI_OK(skein_all_gather(s.comm, s.queue, send.a.data(), gathered.a.data(), s.local));
    Bytes expected_gather;
    for (std::size_t m = 0; m < M; ++m) {
      const Bytes b = movement(d, m, kN);
      expected_gather.insert(expected_gather.end(), b.begin(), b.end());
    }
    for (std::size_t l = 0; l < s.local; ++l) EXPECT_EQ(get(gathered.a[l]), expected_gather);
    // broadcast from the last member, in place.
    const int root = static_cast<int>(M) - 1;
    CAPI_OK(skein_broadcast(s.comm, s.queue, send.a.data(), s.local, root));
    for (std::size_t l = 0; l < s.local; ++l) EXPECT_EQ(get(send.a[l]), movement(d, M - 1, kN));
    // all_to_all: member m's block j is key m * M + j; member r receives block r of each.
    for (std::size_t l = 0; l < s.local; ++l) {
      Bytes b;
      for (std::size_t j = 0; j < M; ++j) {
        const Bytes part = movement(d, member(l) * M + j, kN);
        b.insert(b.end(), part.begin(), part.end());
      }
      set(big.a[l], b);
    }
    CAPI_OK(skein_all_to_all(s.comm, s.queue, big.a.data(), all.a.data(), s.local));
    for (std::size_t l = 0; l < s.local; ++l) {
      Bytes expected;
      for (std::size_t i = 0; i < M; ++i) {
        const Bytes part = movement(d, i * M + member(l), kN);
        expected.insert(expected.end(), part.begin(), part.end());
      }
      EXPECT_EQ(get(all.a[l]), expected);
    }
    // reduce_scatter (sum): member r gets the sum over members of their block r.
    for (std::size_t l = 0; l < s.local; ++l) {
      Bytes b;
      for (std::size_t j = 0; j < M; ++j) {
        const Bytes part = member_input(d, SKEIN_SUM, member(l), kN);
        b.insert(b.end(), part.begin(), part.end());
      }
      set(big.a[l], b);
    }
    if (!reduces(d)) {
      expect_refused(
          [&] {
            return skein_reduce_scatter(s.comm, s.queue, big.a.data(), scattered.a.data(), s.local,
                                        SKEIN_SUM);
          },
          scattered.a);
      expect_refused(
          [&] {
            return skein_reduce(s.comm, s.queue, big.a.data(), big.a.data(), s.local, SKEIN_SUM, 0);
          },
          big.a);
      CAPI_OK(skein_barrier(s.comm, s.queue));
      continue;
    }
    CAPI_OK(skein_reduce_scatter(s.comm, s.queue, big.a.data(), scattered.a.data(), s.local,
                                 SKEIN_SUM));
    for (std::size_t l = 0; l < s.local; ++l) {
      EXPECT_EQ(get(scattered.a[l]), reference(d, SKEIN_SUM, M, kN));
    }
    // reduce (max) to member 0.
    for (std::size_t l = 0; l < s.local; ++l)
      set(send.a[l], member_input(d, SKEIN_SUM, member(l), kN));
    if (!is_complex(d)) {
      CAPI_OK(
          skein_reduce(s.comm, s.queue, send.a.data(), scattered.a.data(), s.local, SKEIN_MAX, 0));
      for (std::size_t l = 0; l < s.local; ++l) {
        if (member(l) == 0) {
          EXPECT_EQ(get(scattered.a[l]), reference(d, SKEIN_MAX, M, kN));
        }
      }
    }
    CAPI_OK(skein_barrier(s.comm, s.queue));
  }
}

TEST_P(CApiCollectives, SendRecvBetweenRanks) {
  if (s.size < 2) GTEST_SKIP() << "needs two ranks";
  // The first member of rank 0 and the last member (on the last rank) swap blocks.
  const int last = static_cast<int>(s.members) - 1;
  for (const skein_dtype d : kAllDtypes) {
    Arrays data;
    make(data, d, kN);
    if (s.rank == 0) {
      set(data.a[0], movement(d, 0, kN));
      CAPI_OK(skein_send(s.comm, s.queue, 0, data.a[0], last));
      CAPI_OK(skein_recv(s.comm, s.queue, 0, data.a[0], last));
      EXPECT_EQ(get(data.a[0]), movement(d, 7, kN));
    } else if (s.rank == s.size - 1) {
      const std::size_t l = s.local - 1;
      set(data.a[l], movement(d, 7, kN));
      Arrays in;
      make(in, d, kN);
      CAPI_OK(skein_recv(s.comm, s.queue, l, in.a[l], 0));
      CAPI_OK(skein_send(s.comm, s.queue, l, data.a[l], 0));
      EXPECT_EQ(get(in.a[l]), movement(d, 0, kN));
    }
  }
}

// A ring inside a group: every member sends its block to the next member and receives the
// previous one's, devices of one rank included (without the group they would wait on each other).
TEST_P(CApiCollectives, RingInAGroup) {
  const std::size_t M = s.members;
  if (M < 2) GTEST_SKIP() << "needs two members";
  for (const skein_dtype d : {SKEIN_FLOAT64, SKEIN_INT16}) {
    SCOPED_TRACE(skein_dtype_name(d));
    Arrays out, in;
    make(out, d, kN);
    make(in, d, kN);
    for (std::size_t l = 0; l < s.local; ++l) set(out.a[l], movement(d, member(l), kN));
    CAPI_OK(skein_group_start(s.comm));
    for (std::size_t l = 0; l < s.local; ++l) {
      const int next = static_cast<int>((member(l) + 1) % M);
      const int previous = static_cast<int>((member(l) + M - 1) % M);
      CAPI_OK(skein_send(s.comm, s.queue, l, out.a[l], next));
      CAPI_OK(skein_recv(s.comm, s.queue, l, in.a[l], previous));
    }
    CAPI_OK(skein_group_end(s.comm));
    for (std::size_t l = 0; l < s.local; ++l) {
      EXPECT_EQ(get(in.a[l]), movement(d, (member(l) + M - 1) % M, kN));
    }
  }
  // A NULL communicator: refused, nothing started.
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_group_start(nullptr));
  CAPI_STATUS(SKEIN_ERROR_INVALID_ARGUMENT, skein_group_end(nullptr));
}

// The native forms on the native memory of Skein's own arrays (allocated whole, offset 0: the
// native forms take no offset).
TEST_P(CApiCollectives, NativeFormsEveryDtype) {
  const std::size_t M = s.members;
  for (const skein_dtype d : kAllDtypes) {
    SCOPED_TRACE(skein_dtype_name(d));
    Arrays send, recv, gathered, big;
    make(send, d, kN);
    make(recv, d, kN);
    make(gathered, d, M * kN);
    make(big, d, M * kN);
    auto natives = [&](Arrays& a) {
      std::vector<void*> p(s.local);
      for (std::size_t l = 0; l < s.local; ++l) {
        std::size_t offset = 1;
        EXPECT_EQ(skein_array_native(a.a[l], &p[l], &offset), SKEIN_SUCCESS)
            << skein_last_error_message();
        EXPECT_EQ(offset, 0u) << "the native forms need memory at offset 0";
        EXPECT_NE(p[l], nullptr);
      }
      return p;
    };
    const auto ps = natives(send), pr = natives(recv), pg = natives(gathered), pb = natives(big);
    for (std::size_t l = 0; l < s.local; ++l)
      set(send.a[l], member_input(d, SKEIN_SUM, member(l), kN));
    if (!reduces(d)) {
      expect_refused(
          [&] {
            return skein_all_reduce_native(s.comm, s.queue, ps.data(), pr.data(), s.local, kN, d,
                                           SKEIN_SUM);
          },
          recv.a);
      expect_refused(
          [&] {
            return skein_reduce_scatter_native(s.comm, s.queue, pb.data(), pr.data(), s.local, kN,
                                               d, SKEIN_SUM);
          },
          recv.a);
      continue;  // all_gather and broadcast move every dtype: the other backends test them.
    }
    CAPI_OK(
        skein_all_reduce_native(s.comm, s.queue, ps.data(), pr.data(), s.local, kN, d, SKEIN_SUM));
    CAPI_OK(skein_queue_synchronize(s.queue));
    for (std::size_t l = 0; l < s.local; ++l)
      EXPECT_EQ(get(recv.a[l]), reference(d, SKEIN_SUM, M, kN));
    // In place (the same pointers).
    for (std::size_t l = 0; l < s.local; ++l)
      set(recv.a[l], member_input(d, SKEIN_SUM, member(l), kN));
    CAPI_OK(
        skein_all_reduce_native(s.comm, s.queue, pr.data(), pr.data(), s.local, kN, d, SKEIN_SUM));
    CAPI_OK(skein_queue_synchronize(s.queue));
    for (std::size_t l = 0; l < s.local; ++l)
      EXPECT_EQ(get(recv.a[l]), reference(d, SKEIN_SUM, M, kN));
    CAPI_OK(skein_all_gather_native(s.comm, s.queue, ps.data(), pg.data(), s.local, kN, d));
    Bytes expected_gather;
    for (std::size_t m = 0; m < M; ++m) {
      const Bytes b = member_input(d, SKEIN_SUM, m, kN);
      expected_gather.insert(expected_gather.end(), b.begin(), b.end());
    }
    for (std::size_t l = 0; l < s.local; ++l) EXPECT_EQ(get(gathered.a[l]), expected_gather);
    CAPI_OK(skein_broadcast_native(s.comm, s.queue, ps.data(), s.local, kN, d, 0));
    for (std::size_t l = 0; l < s.local; ++l)
      EXPECT_EQ(get(send.a[l]), member_input(d, SKEIN_SUM, 0, kN));
    for (std::size_t l = 0; l < s.local; ++l)
      set(send.a[l], member_input(d, SKEIN_SUM, member(l), kN));
    CAPI_OK(
        skein_reduce_native(s.comm, s.queue, ps.data(), pr.data(), s.local, kN, d, SKEIN_SUM, 0));
    for (std::size_t l = 0; l < s.local; ++l) {
      if (member(l) == 0) {
        EXPECT_EQ(get(recv.a[l]), reference(d, SKEIN_SUM, M, kN));
      }
    }
    for (std::size_t l = 0; l < s.local; ++l) set(big.a[l], expected_gather);
    CAPI_OK(skein_reduce_scatter_native(s.comm, s.queue, pb.data(), pr.data(), s.local, kN, d,
                                        SKEIN_SUM));
    for (std::size_t l = 0; l < s.local; ++l) {
      // Block r of every member is member r's input: the sum is M times it.
      std::vector<double> re(kN), im(kN);
      for (std::size_t i = 0; i < kN; ++i) {
        re[i] = double(M) * input(SKEIN_SUM, member(l), i);
        im[i] = double(M) * imag(SKEIN_SUM, i);
      }
      EXPECT_EQ(get(recv.a[l]), encode(d, re, im));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Apis, CApiCollectives, testing::ValuesIn(apis()), ApiName());

}  // namespace capi_collectives_test
}  // namespace
