// Fault scenarios of the Communicator, one per run under mpirun (ctest gives each a hard time
// limit; see tests/CMakeLists.txt):
//   mismatch  ranks call all_reduce with different counts, the agreement check on: every rank
//             must raise LogicError naming the field ("count differs")
//   skip      rank 1 skips an all_reduce: the others must raise TimeoutError within
//             SKEIN_COLLECTIVE_TIMEOUT (set to 5 by the test) plus a margin (run with the
//             agreement check off and on: the wait is then in the check's MPI_Iallgather)
//   kill      rank 1 SIGKILLs itself while the others are in an all_reduce: the job must end
//             (non-zero) instead of hanging (check_fault_kill.cmake asserts that)
//   badenv    SKEIN_COLLECTIVE_TIMEOUT=abc (set by the test): every rank raises LogicError naming
//             the variable
// Exit status 0 when this rank saw what it should.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <skein/communicator.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

namespace {

using namespace skein;

int g_rank = 0;

int report(bool ok, const std::string& what) {
  std::printf("[rank %d] %s: %s\n", g_rank, ok ? "ok" : "WRONG", what.c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

// OpenCL (PoCL in CI) unless SKEIN_API=cuda: on a GPU machine the same scenarios run over NCCL.
Context rank_context() {
  const char* api = std::getenv("SKEIN_API");
  const ApiId id = api != nullptr && std::string(api) == "cuda" ? ApiId::cuda : ApiId::opencl;
  const auto found = platforms_and_devices_by_mask(Api::from_id(id), 1);
  const auto& devices = found.at(0).second;
  return Context::from_devices(devices[static_cast<std::size_t>(g_rank) % devices.size()]);
}

int mismatch() {
  setenv("SKEIN_CHECK_COLLECTIVES", "1", 1);
  const Context context = rank_context();
  Communicator comm(MPI_COMM_WORLD, context);
  Queue queue(context);
  const std::size_t n = g_rank == 1 ? 999 : 1000;
  Array a = Array::zeros(queue, {n}, Dtype::float32);
  try {
    comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum);
  } catch (const LogicError& e) {
    const std::string what = e.what();
    return report(what.find("count differs") != std::string::npos &&
                      what.find("rank 1 has 999") != std::string::npos,
                  "LogicError: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

int skip() {
  const Context context = rank_context();
  Communicator comm(MPI_COMM_WORLD, context);
  Queue queue(context);
  Array a = Array::zeros(queue, {1000}, Dtype::float32);
  if (g_rank == 1) return report(true, "skipped the all_reduce");
  const auto start = std::chrono::steady_clock::now();
  try {
    comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum);
  } catch (const TimeoutError& e) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    const char* limit_text = std::getenv("SKEIN_COLLECTIVE_TIMEOUT");
    const double limit = limit_text ? std::atof(limit_text) : 300.0;
    bool ok = what.find("all_reduce #1") != std::string::npos && waited >= 0.9 * limit &&
              waited < limit + 10;
    // The communicator is unusable afterwards, and says so.
    try {
      comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum);
      ok = false;
    } catch (const RuntimeError& again) {
      ok = ok && std::string(again.what()).find("aborted") != std::string::npos;
    }
    return report(ok, "TimeoutError after " + std::to_string(waited) + " s: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

int kill_one() {
  const Context context = rank_context();
  Communicator comm(MPI_COMM_WORLD, context);
  Queue queue(context);
  Array a = Array::zeros(queue, {1 << 20}, Dtype::float32);
  comm.barrier(queue);
  if (g_rank == 1) {
    // Die while the others are inside the all_reduce.
    usleep(200000);
    raise(SIGKILL);
  }
  try {
    // NCCL returns once the work is enqueued: wait for it, as a simulation code would.
    for (const Event& e : comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum)) {
      e.wait();
    }
    // After an abort by the watchdog the kernels end too: the next call says what happened.
    comm.barrier(queue);
  } catch (const std::exception& e) {
    report(true, std::string("raised: ") + e.what());
    return 2;  // the job fails either way; the wrapper checks that it ended, non-zero
  }
  return report(false, "the all_reduce completed without rank 1");
}

int badenv() {
  setenv("SKEIN_COLLECTIVE_TIMEOUT", "abc", 1);
  const Context context = rank_context();
  try {
    Communicator comm(MPI_COMM_WORLD, context);
  } catch (const LogicError& e) {
    const std::string what = e.what();
    return report(what.find("SKEIN_COLLECTIVE_TIMEOUT") != std::string::npos, "LogicError: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const std::string mode = argc > 1 ? argv[1] : "";
  int rc = 1;
  try {
    if (mode == "mismatch") rc = mismatch();
    else if (mode == "skip") rc = skip();
    else if (mode == "kill") rc = kill_one();
    else if (mode == "badenv") rc = badenv();
    else std::fprintf(stderr, "usage: %s mismatch|skip|kill|badenv\n", argv[0]);
  } catch (const std::exception& e) {
    rc = report(false, std::string("exception outside the scenario: ") + e.what());
  }
  MPI_Finalize();
  return rc;
}
