// SPDX-License-Identifier: BSD-3-Clause
// IPC handles across processes (skein/memory.hpp) under mpirun with 2+ ranks on one node: rank 0
// exports a view of its buffer and an event, sends the handles' bytes with MPI; rank 1 opens them,
// waits for the event, reads the view and checks it against the host data, updates it in place
// with a kernel and answers with its own event, which rank 0 waits for before reading the result.
// Both ranks use device 0 of the backend SKEIN_API names (one GPU shared by two processes is what
// CUDA IPC needs at least). On OpenCL (CI's PoCL) every rank checks the typed refusal instead.
#include <gtest/gtest.h>

#include "mpi_support.hpp"
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <skein/memory.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

namespace {
namespace ipc_test {

using namespace skein;

using ::skein::test::hostname;
using ::skein::test::on_every_rank;
using ::skein::test::world_rank;
using ::skein::test::world_size;

// Device 0 of the first platform with devices of the API SKEIN_API names (any, if unset).
std::optional<Context> device_zero_context() {
  const char* api = std::getenv("SKEIN_API");
  for (const auto& a :
       Api::all_by_shortcut(api ? std::optional<std::string_view>(api) : std::nullopt)) {
    for (const auto& platform : Platform::all(a)) {
      auto devices = platform.devices();
      if (!devices.empty()) return Context::from_devices(devices.front());
    }
  }
  return std::nullopt;
}

bool ranks_0_and_1_share_a_host() {
  std::string mine = hostname();
  mine.resize(256, '\0');
  std::vector<char> all(256 * static_cast<std::size_t>(world_size()));
  MPI_Allgather(mine.data(), 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
  return std::string(all.data()) == std::string(all.data() + 256);
}

template <class T>
void send(const T& value, int to) {
  MPI_Send(&value, sizeof(T), MPI_BYTE, to, 0, MPI_COMM_WORLD);
}
template <class T>
T receive(int from) {
  T value{};
  MPI_Recv(&value, sizeof(T), MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return value;
}

// y[i] = 3 * x[i] + 1 (in place when y is x).
const char* kKernels = R"(
KERNEL void affine(GLOBAL_MEM int* y, GLOBAL_MEM const int* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = 3 * x[i] + 1;
}
)";

// What rank 0's buffer holds at first (rank 1 checks its view against it).
int initial(std::size_t i) { return static_cast<int>(i * 2654435761u % 1000003u) - 500000; }

// What rank 1 answers: its event's handle, and whether it got that far without a failure (so that
// rank 0 never waits for an event that was not recorded).
struct Answer {
  IpcEventHandle event{};
  int ok = 0;
};

TEST(Ipc, NeighbourReadsAndWritesAnExportedViewOrderedByEvents) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const bool same_host = ranks_0_and_1_share_a_host();
  if (!same_host) GTEST_SKIP() << "ranks 0 and 1 are on different hosts";
  auto ctx = device_zero_context();
  if (!on_every_rank(ctx.has_value())) GTEST_SKIP() << "no device on some rank";
  const bool cuda = ctx->api().id() == ApiId::cuda;
  if (!on_every_rank(cuda)) {
    // OpenCL: the typed refusal, on every rank.
    auto buffer = Buffer::allocate(*ctx, 0, 64);
    try {
      export_ipc_memory(buffer);
      ADD_FAILURE() << "export_ipc_memory worked on OpenCL";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("not supported on OpenCL"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(IpcEvent::create(*ctx, 0), LogicError);
    EXPECT_THROW(open_ipc_memory(*ctx, 0, IpcMemoryHandle{}), LogicError);
    return;
  }

  const int rank = world_rank();
  constexpr std::size_t kTotal = 300007;  // ints in rank 0's buffer
  constexpr std::size_t kSkip = 1001;     // the exported view starts here (bytes: 4004)
  constexpr std::size_t kCount = 200003;  // ints in the view
  Queue queue(*ctx);
  Program program(*ctx, kKernels);

  if (rank == 0) {
    std::vector<int> host(kTotal);
    for (std::size_t i = 0; i < kTotal; ++i) host[i] = initial(i);
    auto buffer = Buffer::allocate(*ctx, 0, kTotal * sizeof(int));
    buffer.set(queue, std::span<const int>(host), Sync::async);
    auto view = buffer.get_sub_region(kSkip * sizeof(int), kCount * sizeof(int));
    const IpcMemoryHandle handle = export_ipc_memory(view);
    EXPECT_EQ(handle.offset, kSkip * sizeof(int));
    auto written = IpcEvent::create(*ctx, 0);
    written.record(queue);  // after the upload: rank 1 waits for it on its own queue
    send(handle, 1);
    send(written.handle(), 1);
    // Also the last element alone: a one-int view at the buffer's end.
    send(export_ipc_memory(buffer.get_sub_region((kTotal - 1) * sizeof(int), sizeof(int))), 1);

    const auto answer = receive<Answer>(1);
    if (answer.ok == 1) {
      auto updated = IpcEvent::open(*ctx, 0, answer.event);
      queue.wait_for(updated.event());
      std::vector<int> got(kTotal);
      buffer.get(queue, std::span<int>(got));
      int wrong = 0;
      for (std::size_t i = 0; i < kTotal; ++i) {
        const bool in_view = i >= kSkip && i < kSkip + kCount;
        int expected = in_view ? 3 * initial(i) + 1 : initial(i);
        if (i == kTotal - 1) expected = -7;  // rank 1's write through the one-int view
        wrong += got[i] != expected;
      }
      EXPECT_EQ(wrong, 0);
    } else {
      ADD_FAILURE() << "rank 1 failed before recording its event";
    }
    // 1: rank 0 is done with rank 1's event; 2: rank 1 has closed its mappings of rank 0's memory
    // (which must outlive them).
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (rank == 1) {
    const auto handle = receive<IpcMemoryHandle>(0);
    const auto event_handle = receive<IpcEventHandle>(0);
    const auto last_handle = receive<IpcMemoryHandle>(0);
    Answer answer;
    {
      std::optional<IpcEvent> answered;
      Buffer peer;
      Buffer last;
      try {
        peer = open_ipc_memory(*ctx, 0, handle);
        EXPECT_EQ(peer.size(), kCount * sizeof(int));
        auto written = IpcEvent::open(*ctx, 0, event_handle);
        queue.wait_for(written.event());
        // A second opening of the same allocation: the same memory (the driver counts openings).
        auto again = open_ipc_memory(*ctx, 0, handle);
        std::vector<int> seen(kCount);
        again.get(queue, std::span<int>(seen));
        int wrong = 0;
        for (std::size_t i = 0; i < kCount; ++i) wrong += seen[i] != initial(kSkip + i);
        EXPECT_EQ(wrong, 0);
        again = Buffer{};  // closes one opening; `peer` stays mapped
        // In place on the peer's memory, then read back through an Array over it.
        program.kernel("affine")(queue, kCount, std::nullopt, peer, peer, static_cast<int>(kCount));
        Array a(queue, peer, Shape{kCount}, dtype_of<int>);
        a.get(std::span<int>(seen));
        wrong = 0;
        for (std::size_t i = 0; i < kCount; ++i) wrong += seen[i] != 3 * initial(kSkip + i) + 1;
        EXPECT_EQ(wrong, 0);
        last = open_ipc_memory(*ctx, 0, last_handle);
        EXPECT_EQ(last.size(), sizeof(int));
        int last_value = 0;
        last.get(queue, std::span<int>(&last_value, 1));
        EXPECT_EQ(last_value, initial(kTotal - 1));
        const int minus_seven = -7;
        last.set(queue, std::span<const int>(&minus_seven, 1));
        answered = IpcEvent::create(*ctx, 0);
        answered->record(queue);  // after the kernel and the write
        answer.event = answered->handle();
        answer.ok = 1;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
      send(answer, 0);
      MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has waited for `answered`
      queue.synchronize();
    }  // the mappings close, the event goes
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

}  // namespace ipc_test
}  // namespace
