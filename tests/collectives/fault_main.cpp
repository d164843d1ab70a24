// SPDX-License-Identifier: BSD-3-Clause
// Fault scenarios of the Communicator and the Runtime, one per run under mpirun, each under a
// hard time limit (check_fault.cmake runs them; see tests/CMakeLists.txt). They run as a user's
// program does: a skein::Runtime starts MPI and places the devices, in the default build
// configuration, with the default agreement check unless a scenario's environment says otherwise.
//   count, dtype, reduction, root, operation
//             the ranks make different collective calls (rank 1 differs): every rank must raise
//             LogicError naming what differs ("count differs: ..."); nothing is corrupted, and
//             afterwards the MPI backend's communicator still computes a right all_reduce (an
//             asynchronous backend, NCCL, is aborted instead and says so)
//   read_count, read_dtype, read_reduction, read_root, read_operation
//             the same mismatches (count 1000 against 1001 here), after one agreeing call, each
//             followed only by what a
//             user's code does next, queue.synchronize() and a get() of the array: every rank must
//             raise the LogicError naming what differs within 2 s, from the call itself (the MPI
//             backend's check, before data moves) or from the synchronize (NCCL's calls return
//             once enqueued), and no rank may read a value, not even by a get() after catching it
//   read_skip rank 1 skips an all_reduce, then every rank synchronizes and reads: the others raise
//             TimeoutError within SKEIN_COLLECTIVE_TIMEOUT plus a margin; rank 1, which made no
//             call, reads its own array unchanged
//   skip      rank 1 skips an all_reduce: the others must raise TimeoutError within
//             SKEIN_COLLECTIVE_TIMEOUT plus a margin
//   skip_code:SECONDS
//             `skip` with the timeout given in code (CommunicatorOptions::timeout_seconds): the
//             others raise TimeoutError within SKEIN_COLLECTIVE_TIMEOUT plus a margin when the
//             variable is set (it overrides the code), else within SECONDS plus a margin
//   skip_sum  the same for a dist::sum, which must raise itself rather than return a value (with
//             the MPI backend its ranks' values meet in one MPI exchange on the host; over NCCL
//             ranks it is an all_reduce, as `skip`, whose result the host reads after waiting)
//   late      rank 1 creates its Communicator 2 x SKEIN_COLLECTIVE_TIMEOUT late: every rank raises
//             TimeoutError naming SKEIN_COLLECTIVE_TIMEOUT, and the job ends without a crash
//   tiny      SKEIN_COLLECTIVE_TIMEOUT=0.000001: creating a Communicator times out (or works) on
//             every rank alike and the job ends without a crash
//   shared    the ranks share one device (SKEIN_SHARE_DEVICES=1 and one device): the automatic
//             choice is MPI, and an all_reduce is right; SKEIN_BACKEND=nccl is refused with
//             LogicError on every rank before NCCL is called
//   kill      rank 1 SIGKILLs itself while the others are in an all_reduce: the job must end
//             (non-zero) instead of hanging (check_fault.cmake with EXPECT=nonzero)
//   checkpoint_skip
//             rank 1 writes checkpoint 1, then never comes to checkpoint 2: the others raise
//             TimeoutError naming CheckpointManager::write, SKEIN_COLLECTIVE_TIMEOUT and rank 1
//             within the timeout plus a margin; checkpoint 1 stays complete
//   badenv[:VARIABLE]
//             a bad value of VARIABLE (set by the test; SKEIN_COLLECTIVE_TIMEOUT by default): the
//             objects a program makes, from the Runtime on; the one that reads it raises
//             LogicError naming it, on every rank, and the program ends normally
// Exit status 0 when this rank saw what it should.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <skein/checkpoint.hpp>
#include <skein/communicator.hpp>
#include <skein/hdf5.hpp>
#include <skein/skein.hpp>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

namespace {

using namespace skein;

int g_rank = 0;

int report(bool ok, const std::string& what) {
  std::printf("[rank %d] %s: %s\n", g_rank, ok ? "ok" : "WRONG", what.c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The timeout the scenario's calls have: SKEIN_COLLECTIVE_TIMEOUT when set (it overrides the
// code), else the one given in code, else the default.
double timeout_seconds(std::optional<double> in_code = std::nullopt) {
  const char* text = std::getenv("SKEIN_COLLECTIVE_TIMEOUT");
  if (text != nullptr && *text != '\0') return std::atof(text);
  return in_code.value_or(300.0);
}

std::vector<float> ramp(std::size_t n, int rank) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i % 97) + 1000 * (rank + 1));
  return v;
}

// After a mismatch: the MPI backend's communicator still works and gives the right sum; an
// asynchronous backend's was aborted and says so.
bool still_right(Communicator& comm, const Queue& queue, int ranks) {
  const std::size_t n = 257;
  Array a = Array::from_host(queue, ramp(n, g_rank));
  try {
    for (const Event& e : comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum))
      e.wait();
  } catch (const RuntimeError& e) {
    return comm.backend() != CollectiveBackend::mpi && contains(e.what(), "aborted");
  }
  if (comm.backend() != CollectiveBackend::mpi) return false;
  const auto got = a.get<float>();
  for (std::size_t i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 0; r < ranks; ++r) want += static_cast<double>((i % 97) + 1000 * (r + 1));
    if (got[i] != static_cast<float>(want)) return false;
  }
  return true;
}

// The array of a mismatched call: rank 1's differs in size (`count`: `odd_count` elements against
// 1000) or dtype (float64 against float32) when `field` says so.
Array mismatch_array(const Queue& queue, const std::string& field, std::size_t odd_count) {
  const bool odd = g_rank == 1;
  const std::size_t n = field == "count" && odd ? odd_count : 1000;
  const Dtype dtype = field == "dtype" && odd ? Dtype::float64 : Dtype::float32;
  return Array::zeros(queue, {n}, dtype);
}

// The call in which rank 1 differs in `field` (root, operation, reduction, or the array's count or
// dtype); for "skip", rank 1 makes none.
void mismatched_call(Communicator& comm, const Queue& queue, Array& a, const std::string& field) {
  const bool odd = g_rank == 1;
  if (field == "root") {
    comm.broadcast(queue, std::span(&a, 1), odd ? 1 : 0);
  } else if (field == "operation" && odd) {
    comm.broadcast(queue, std::span(&a, 1), 0);
  } else if (!(field == "skip" && odd)) {
    comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1),
                    field == "reduction" && odd ? ReduceOp::max : ReduceOp::sum);
  }
}

// One mismatched call (rank 1 differs in `field`), then a barrier: an asynchronous backend
// reports the mismatch there at the latest.
int mismatch(const Runtime& runtime, const std::string& field) {
  Communicator comm(runtime);
  Queue queue(comm.context());
  Array a = mismatch_array(queue, field, 4000);
  const auto start = std::chrono::steady_clock::now();
  try {
    mismatched_call(comm, queue, a, field);
    comm.barrier(queue);
  } catch (const LogicError& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    const bool named = contains(what, field + " differs") && contains(what, "rank 1 has");
    const bool fast = waited < 0.5 * timeout_seconds();
    const bool after = still_right(comm, queue, runtime.size());
    return report(named && fast && after,
                  "LogicError after " + std::to_string(waited) + " s" +
                      (after ? "" : " (but the communicator was left in a wrong state)") + ": " +
                      what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

// Reads the array's bytes (what a user's a.get<T>() does).
std::vector<std::byte> read_back(const Array& a) {
  std::vector<std::byte> out(a.nbytes());
  a.get(std::span<std::byte>(out));
  return out;
}

// A mismatched call (rank 1 differs in `field`; "skip": rank 1 makes none), then only
// queue.synchronize() and a read of the array, as a user's code does next.
int read_after(const Runtime& runtime, const std::string& field) {
  Communicator comm(runtime);
  Queue queue(comm.context());
  const bool odd = g_rank == 1;
  Array a = mismatch_array(queue, field, 1001);
  // An agreeing call first, as a simulation makes many before the one that differs (NCCL also
  // sets up its connections on the first call).
  Array warm = Array::zeros(queue, {8}, Dtype::float32);
  comm.all_reduce(queue, std::span(&warm, 1), std::span(&warm, 1), ReduceOp::sum);
  queue.synchronize();
  const std::string backend = std::string(name(comm.backend()));
  const auto start = std::chrono::steady_clock::now();
  auto waited = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::string step = "the call";
  try {
    mismatched_call(comm, queue, a, field);
    step = "queue.synchronize()";
    queue.synchronize();
    step = "get()";
    const auto bytes = read_back(a);
    if (field == "skip" && odd) {
      // No call on this rank: its array is its own, zeros.
      const bool zeros =
          std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
      return report(zeros, "made no call and read its own array back (" + backend + ")");
    }
    return report(false, "read " + std::to_string(bytes.size()) + " bytes after " +
                             std::to_string(waited()) + " s with no error (" + backend + ")");
  } catch (const Error& e) {
    const double t = waited();
    const std::string what = e.what();
    bool ok = false;
    if (field == "skip") {
      const double limit = timeout_seconds();
      ok = dynamic_cast<const TimeoutError*>(&e) != nullptr &&
           contains(what, "SKEIN_COLLECTIVE_TIMEOUT") && t < limit + 10;
    } else {
      ok = dynamic_cast<const LogicError*>(&e) != nullptr && contains(what, field + " differs") &&
           contains(what, "rank 1 has") && t < 2.0;
    }
    // Reading after catching it: where the call itself refused (before any data moved), the
    // array is as it was (zeros); where the call went ahead, nothing can be read.
    std::string after;
    try {
      const auto bytes = read_back(a);
      const bool zeros =
          std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
      ok = ok && step == "the call" && zeros;
      after = step == "the call" ? (zeros ? "the array was untouched" : "the array was CHANGED")
                                 : "a get() after it RETURNED the data";
    } catch (const Error& again) {
      ok = ok && step != "the call" && typeid(again) == typeid(e);
      after = "a get() after it raised too";
    }
    return report(ok, std::string(dynamic_cast<const LogicError*>(&e) ? "LogicError" : "an error") +
                          " from " + step + " after " + std::to_string(t) + " s (" + backend +
                          "); " + after + ": " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception from ") + step + ": " + e.what());
  }
}

// `sum`: the call skipped is a dist::sum, else an all_reduce. `in_code`: the timeout given in code.
int skip(const Runtime& runtime, bool sum, std::optional<double> in_code = std::nullopt) {
  Communicator comm(runtime, CommunicatorOptions{.timeout_seconds = in_code});
  const double limit = timeout_seconds(in_code);
  if (comm.options().timeout_seconds != limit) {
    return report(false, "the Communicator's timeout in effect is " +
                             std::to_string(*comm.options().timeout_seconds) + " s, not " +
                             std::to_string(limit) + " s");
  }
  Queue queue(comm.context());
  Array a = Array::zeros(queue, {1000}, Dtype::float32);
  DistArray d(comm, {1000}, Dtype::float32);
  dist::fill(d, 1.0f);
  if (g_rank == 1) return report(true, sum ? "skipped the dist::sum" : "skipped the all_reduce");
  const auto start = std::chrono::steady_clock::now();
  try {
    if (sum) {
      // dist::sum itself must raise: a value returned here would be one the other ranks never
      // contributed to.
      const double v = dist::sum(d);
      return report(false,
                    "dist::sum returned " + std::to_string(v) + " although rank 1 skipped it");
    } else {
      for (const Event& e :
           comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum))
        e.wait();
    }
    comm.barrier(queue);
  } catch (const TimeoutError& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    bool ok =
        contains(what, "SKEIN_COLLECTIVE_TIMEOUT") && waited >= 0.9 * limit && waited < limit + 10;
    // The communicator is unusable afterwards, and says so.
    try {
      comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum);
      ok = false;
    } catch (const RuntimeError& again) {
      ok = ok && contains(again.what(), "aborted");
    }
    return report(ok, "TimeoutError after " + std::to_string(waited) + " s: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

int late(const Runtime& runtime) {
  const double limit = timeout_seconds();
  if (g_rank == 1) std::this_thread::sleep_for(std::chrono::duration<double>(2 * limit));
  const auto start = std::chrono::steady_clock::now();
  try {
    Communicator comm(runtime);
  } catch (const TimeoutError& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    return report(contains(what, "SKEIN_COLLECTIVE_TIMEOUT=") && contains(what, "Communicator") &&
                      waited < limit + 10,
                  "TimeoutError after " + std::to_string(waited) + " s: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

int tiny(const Runtime& runtime) {
  try {
    Communicator comm(runtime);
    Queue queue(comm.context());
    Array a = Array::from_host(queue, ramp(64, g_rank));
    comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum);
    comm.barrier(queue);
    return report(true, "the calls finished within the tiny timeout");
  } catch (const TimeoutError& e) {
    return report(contains(e.what(), "SKEIN_COLLECTIVE_TIMEOUT="),
                  std::string("TimeoutError: ") + e.what());
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
}

int shared(const Runtime& runtime) {
  const char* forced = std::getenv("SKEIN_BACKEND");
  if (forced != nullptr && std::string(forced) == "nccl") {
    try {
      Communicator comm(runtime);
    } catch (const LogicError& e) {
      const std::string what = e.what();
      // A CUDA machine: the GPU is shared; elsewhere: the devices are not CUDA devices.
      const bool named = contains(what, "share a GPU") || contains(what, "needs CUDA devices") ||
                         contains(what, "no NCCL backend");
      return report(named && contains(what, "SKEIN_BACKEND"), "LogicError: " + what);
    } catch (const std::exception& e) {
      return report(false, std::string("unexpected exception: ") + e.what());
    }
    return report(false, "no exception");
  }
  Communicator comm(runtime);
  Queue queue(comm.context());
  if (comm.backend() != CollectiveBackend::mpi) {
    return report(
        false, "ranks sharing a device got the " + std::string(name(comm.backend())) + " backend");
  }
  return report(
      still_right(comm, queue, runtime.size()),
      "all_reduce over ranks sharing one device (" + comm.context().device(0).description() + ")");
}

int kill_one(const Runtime& runtime) {
  Communicator comm(runtime);
  Queue queue(comm.context());
  Array a = Array::zeros(queue, {1 << 20}, Dtype::float32);
  comm.barrier(queue);
  if (g_rank == 1) {
    // Die while the others are inside the all_reduce.
    usleep(200000);
    raise(SIGKILL);
  }
  try {
    // NCCL returns once the work is enqueued: wait for it, as a simulation code would.
    for (const Event& e :
         comm.all_reduce(queue, std::span(&a, 1), std::span(&a, 1), ReduceOp::sum)) {
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

// Rank 1 writes checkpoint 1 with the others, then never comes to checkpoint 2 (it ends): the
// others must raise TimeoutError within SKEIN_COLLECTIVE_TIMEOUT plus a margin, naming the call,
// the variable and rank 1; checkpoint 1 stays complete and 2 never starts.
int checkpoint_skip(const Runtime& runtime) {
  namespace fs = std::filesystem;
  Communicator comm(runtime);
  const fs::path dir = fs::current_path() / "fault-checkpoint-skip";
  if (g_rank == 0) fs::remove_all(dir);
  comm.barrier(Queue(comm.context()));
  DistArray u(comm, Shape{37, 5}, Dtype::float64);
  CheckpointManager m(comm, dir);
  m.write(1, 0.5, {{"u", u}});
  if (g_rank == 1) return report(true, "wrote checkpoint 1 and skipped checkpoint 2");
  const auto start = std::chrono::steady_clock::now();
  try {
    m.write(2, 1.0, {{"u", u}});
  } catch (const TimeoutError& e) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string what = e.what();
    const double limit = timeout_seconds();
    bool ok =
        contains(what, "CheckpointManager::write") && contains(what, "SKEIN_COLLECTIVE_TIMEOUT=") &&
        contains(what, "rank 1 did not arrive") && waited >= 0.9 * limit && waited < limit + 10;
    ok = ok && fs::exists(dir / "checkpoint-0000000001.done") &&
         !fs::exists(dir / "checkpoint-0000000002.done");
    // The manager is unusable afterwards, and says so at once.
    try {
      (void)m.latest_complete();
      ok = false;
    } catch (const TimeoutError& again) {
      ok = ok && contains(again.what(), "timed out");
    }
    return report(ok, "TimeoutError after " + std::to_string(waited) + " s: " + what);
  } catch (const std::exception& e) {
    return report(false, std::string("unexpected exception: ") + e.what());
  }
  return report(false, "no exception");
}

// A bad value of `name` (set by the test): the objects a program makes, in the order a simulation
// makes them, the Runtime first; the one that reads the variable must raise LogicError naming it,
// before anything after it is made; then the program goes on to end normally (what a user's code
// does after reporting the error). Every rank alike.
int badenv(int& argc, char**& argv, const std::string& name) {
  std::string step = "the Runtime";
  std::unique_ptr<Runtime> runtime;
  try {
    runtime = std::make_unique<Runtime>(&argc, &argv);
    g_rank = runtime->rank();
    step = "the Communicator";
    Communicator comm(*runtime);
    step = "a Queue and a kernel";
    const Context& context = runtime->context();
    Queue queue(context, {0});
    Program program(context,
                    "KERNEL void twice(GLOBAL_MEM float* x) { x[get_global_id(0)] *= 2.0f; }");
    Array a = Array::from_host(queue, std::vector<float>(64, 1.5f));
    program.kernel("twice")(queue, 64, std::nullopt, a);
    if (a.get<float>() != std::vector<float>(64, 3.0f))
      return report(false, "the kernel computed a wrong value");
#if SKEIN_HAS_HDF5
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("skein-badenv-" + std::to_string(getppid()));
    if (g_rank == 0) fs::create_directories(dir);
    const Queue everywhere(comm.context());
    comm.barrier(everywhere);
    step = "an HDF5 file";
    { auto file = hdf5::File::create(comm, (dir / "badenv.h5").string()); }
    step = "a CheckpointManager";
    { CheckpointManager m(comm, dir / "checkpoints"); }
    comm.barrier(everywhere);
    if (g_rank == 0) fs::remove_all(dir);
#endif
  } catch (const LogicError& e) {
    const std::string what = e.what();
    const bool named = contains(what, name);
    // Refused by the Runtime itself: the rank from MPI, where it was started.
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    runtime.reset();
    return report(named, "LogicError from " + step + ": " + what);
  } catch (const std::exception& e) {
    return report(false, "unexpected exception from " + step + ": " + e.what());
  }
  return report(false, "no exception: every object was made with " + name + " set to '" +
                           std::string(std::getenv(name.c_str()) ? std::getenv(name.c_str()) : "") +
                           "'");
}

int run(const std::string& mode, const Runtime& runtime) {
  if (mode == "count" || mode == "dtype" || mode == "reduction" || mode == "root" ||
      mode == "operation") {
    return mismatch(runtime, mode);
  }
  if (mode == "skip" || mode == "skip_sum") return skip(runtime, mode == "skip_sum");
  if (mode.rfind("skip_code:", 0) == 0)
    return skip(runtime, false, std::atof(mode.substr(10).c_str()));
  if (mode.rfind("read_", 0) == 0) return read_after(runtime, mode.substr(5));
  if (mode == "late") return late(runtime);
  if (mode == "tiny") return tiny(runtime);
  if (mode == "shared") return shared(runtime);
  if (mode == "kill") return kill_one(runtime);
  if (mode == "checkpoint_skip") return checkpoint_skip(runtime);
  std::fprintf(stderr, "unknown scenario '%s'\n", mode.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  // "badenv" or "badenv:VARIABLE" (default SKEIN_COLLECTIVE_TIMEOUT): the variable the test set,
  // which the Runtime itself may read.
  if (mode.rfind("badenv", 0) == 0) {
    const int rc =
        badenv(argc, argv, mode.size() > 7 ? mode.substr(7) : "SKEIN_COLLECTIVE_TIMEOUT");
    // A Runtime that refused its settings may have started MPI first: end it as a program would.
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
    return rc;
  }
  int rc = 1;
  try {
    // One device per rank (the scenarios pass one array per call).
    PlacementOptions placement;
    placement.devices_per_rank = 1;
    Runtime runtime(&argc, &argv, placement);
    g_rank = runtime.rank();
    rc = run(mode, runtime);
  } catch (const std::exception& e) {
    rc = report(false, std::string("exception outside the scenario: ") + e.what());
  }
  return rc;
}
