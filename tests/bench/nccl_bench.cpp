// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-nccl: NCCL called directly, the way nccl-tests' inner loop calls it, so that a GPU
// run has nccl-tests' figure for Skein's collectives in the same run (nccl-tests itself is not
// on the GPU machines). One GPU per rank (the rank's local rank among the visible GPUs), or, with
// -g N, N GPUs per rank as nccl-tests' -g: one communicator per GPU, every call a group of N
// (ncclGroupStart/End) from the rank's one thread. Float, sum; for each size: warm-up calls, a
// barrier, `iters` calls on one stream per GPU and one synchronisation, the host time averaged
// over the ranks; out of place and in place.
//
//   mpirun -np 4 skein-bench-nccl --coll all_reduce -b 8 -e 1G -f 8 --json out.json
//   mpirun -np 1 skein-bench-nccl --coll all_reduce -g 4 -b 8 -e 1G -f 8 --json out.json
//
// Its table has nccl-tests' columns (no #wrong: the data is not checked here, only timed; Skein's
// benchmark checks its own results).
//
// --extra event records an untimed event on the call's stream after every call (one of a ring of
// 1024), as each Skein call returns one: what that costs NCCL's own loop (gpu-check's LAT_PARTS).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <skein_cli/cli.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "skein-bench-nccl: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::fprintf(stderr, "skein-bench-nccl: %s: %s\n", what, ncclGetErrorString(r));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

std::size_t parse_size(const std::string& text) {
  std::size_t idx = 0;
  const double v = std::stod(text, &idx);
  double mul = 1;
  if (idx < text.size()) {
    switch (text[idx]) {
      case 'K': case 'k': mul = 1024.0; break;
      case 'M': case 'm': mul = 1024.0 * 1024; break;
      case 'G': case 'g': mul = 1024.0 * 1024 * 1024; break;
      default: throw std::invalid_argument("bad size " + text);
    }
  }
  return static_cast<std::size_t>(v * mul);
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{"NCCL called directly (nccl-tests' inner loop), for same-run comparisons"};
  std::string coll = "all_reduce", min_text = "8", max_text = "1G", json_file;
  double factor = 8;
  int iters = 20, warmup = 5, gpus = 1;
  app.add_option("--coll", coll).one_of({"all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter"});
  app.add_option("-b,--minbytes", min_text);
  app.add_option("-e,--maxbytes", max_text);
  app.add_option("-f,--stepfactor", factor).range(1.0001, 1e9);
  app.add_option("-n,--iters", iters).range(1, 1 << 30);
  app.add_option("-w,--warmup_iters", warmup).range(0, 1 << 30);
  app.add_option("-g,--ngpus", gpus).range(1, 64);
  app.add_option("--json", json_file);
  std::string extra_text;
  app.add_option("--extra", extra_text).one_of({"", "event"});
  // The buffers: cudaMalloc (as Skein's arrays come from cuMemAlloc), or ncclMemAlloc (as
  // nccl-tests 2.19 allocates them with NCCL 2.19 and later).
  std::string alloc_text = "cuda";
  app.add_option("--alloc", alloc_text).one_of({"cuda", "nccl"});
  if (auto status = app.parse(argc, argv)) return *status;
  const bool extra_event = extra_text == "event";
  const bool nccl_alloc = alloc_text == "nccl";

  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0, ngpu = 0;
  MPI_Comm_rank(node, &local);
  check(cudaGetDeviceCount(&ngpu), "cudaGetDeviceCount");
  if (gpus > ngpu) {
    std::fprintf(stderr, "skein-bench-nccl: -g %d: this rank sees %d GPU(s)\n", gpus, ngpu);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // The communicator's members: this rank's GPUs, rank-major as nccl-tests numbers them.
  const int members = nranks * gpus;

  ncclUniqueId id;
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  std::vector<int> device(gpus);
  std::vector<ncclComm_t> comm(gpus);
  std::vector<cudaStream_t> stream(gpus);
  for (int g = 0; g < gpus; ++g) {
    device[g] = (local * gpus + g) % ngpu;
    check(cudaSetDevice(device[g]), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  check(ncclGroupStart(), "ncclGroupStart");
  for (int g = 0; g < gpus; ++g) {
    check(cudaSetDevice(device[g]), "cudaSetDevice");
    check(ncclCommInitRank(&comm[g], members, id, rank * gpus + g), "ncclCommInitRank");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");

  const std::size_t min_bytes = parse_size(min_text), max_bytes = parse_size(max_text);
  const bool blocks = coll == "all_gather" || coll == "reduce_scatter";
  const std::size_t max_count = max_bytes / sizeof(float) / (blocks ? members : 1);
  const std::size_t big = max_count * (blocks ? members : 1);
  std::vector<float*> send(gpus), recv(gpus);
  for (int g = 0; g < gpus; ++g) {
    check(cudaSetDevice(device[g]), "cudaSetDevice");
    if (nccl_alloc) {
      check(ncclMemAlloc(reinterpret_cast<void**>(&send[g]), big * sizeof(float) + 256), "ncclMemAlloc");
      check(ncclMemAlloc(reinterpret_cast<void**>(&recv[g]), big * sizeof(float) + 256), "ncclMemAlloc");
    } else {
      check(cudaMalloc(&send[g], big * sizeof(float) + 256), "cudaMalloc");
      check(cudaMalloc(&recv[g], big * sizeof(float) + 256), "cudaMalloc");
    }
    check(cudaMemset(send[g], 0, big * sizeof(float)), "cudaMemset");
  }

  auto issue_one = [&](int g, std::size_t count, bool in_place) {
    // In place as NCCL defines it: all_gather sends from the member's block of the output,
    // reduce_scatter receives into the member's block of the input.
    const int member = rank * gpus + g;
    float* out = in_place ? send[g] : recv[g];
    if (coll == "all_reduce") {
      check(ncclAllReduce(send[g], out, count, ncclFloat, ncclSum, comm[g], stream[g]),
            "ncclAllReduce");
    } else if (coll == "broadcast") {
      check(ncclBroadcast(send[g], out, count, ncclFloat, 0, comm[g], stream[g]), "ncclBroadcast");
    } else if (coll == "reduce") {
      check(ncclReduce(send[g], out, count, ncclFloat, ncclSum, 0, comm[g], stream[g]),
            "ncclReduce");
    } else if (coll == "all_gather") {
      const float* in = in_place ? send[g] + member * count : send[g];
      check(ncclAllGather(in, out, count, ncclFloat, comm[g], stream[g]), "ncclAllGather");
    } else {
      float* o = in_place ? send[g] + member * count : recv[g];
      check(ncclReduceScatter(send[g], o, count, ncclFloat, ncclSum, comm[g], stream[g]),
            "ncclReduceScatter");
    }
  };
  // One GPU: the call alone (as nccl-tests' -g 1 makes it); several: one group of them.
  // The extras' state: a ring of untimed events per GPU; the helper thread's queue of digests.
  constexpr std::size_t kRing = 1024;
  std::vector<std::vector<cudaEvent_t>> ring(gpus);
  std::size_t ring_at = 0;
  if (extra_event) {
    for (int g = 0; g < gpus; ++g) {
      check(cudaSetDevice(device[g]), "cudaSetDevice");
      ring[g].resize(kRing);
      for (auto& e : ring[g]) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  auto issue = [&](std::size_t count, bool in_place) {
    if (gpus == 1) {
      issue_one(0, count, in_place);
    } else {
      check(ncclGroupStart(), "ncclGroupStart");
      for (int g = 0; g < gpus; ++g) issue_one(g, count, in_place);
      check(ncclGroupEnd(), "ncclGroupEnd");
    }
    if (extra_event) {
      for (int g = 0; g < gpus; ++g) {
        if (gpus > 1) check(cudaSetDevice(device[g]), "cudaSetDevice");
        check(cudaEventRecord(ring[g][ring_at], stream[g]), "cudaEventRecord");
      }
      ring_at = (ring_at + 1) % kRing;
    }
  };
  auto synchronize = [&] {
    for (int g = 0; g < gpus; ++g) check(cudaStreamSynchronize(stream[g]), "cudaStreamSynchronize");
  };
  auto factor_of = [&](double n) {
    if (coll == "all_reduce") return 2 * (n - 1) / n;
    if (blocks) return (n - 1) / n;
    return 1.0;
  };

  nlohmann::json rows = nlohmann::json::array();
  if (rank == 0) {
    std::printf("# skein-bench-nccl: %s, NCCL called directly, %d rank(s), %d GPU(s) each%s%s\n",
                coll.c_str(), nranks, gpus, extra_text.empty() ? "" : ", per call also: ",
                extra_text.c_str());
    std::printf("# %10s  %12s  %7s  %6s  %6s  %7s  %6s  %6s\n", "size", "count", "oop time",
                "algbw", "busbw", "ip time", "algbw", "busbw");
  }
  std::size_t last = 0;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes);
       b = std::max(b * factor, b + 1)) {
    const std::size_t count = static_cast<std::size_t>(b) / sizeof(float) / (blocks ? members : 1);
    if (count == 0 || count == last) continue;
    last = count;
    const double bytes = static_cast<double>(count * sizeof(float) * (blocks ? members : 1));
    nlohmann::json row{{"size", bytes}, {"count", count}};
    double t[2];
    for (int ip = 0; ip < 2; ++ip) {
      for (int i = 0; i < warmup; ++i) issue(count, ip);
      synchronize();
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) issue(count, ip);
      synchronize();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
      MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      t[ip] = s / nranks;
      const double algbw = bytes / t[ip] / 1e9;
      row[ip ? "in_place" : "out_of_place"] = {{"time_us", t[ip] * 1e6},
                                               {"algbw_GBps", algbw},
                                               {"busbw_GBps", algbw * factor_of(members)}};
    }
    if (rank == 0) {
      const double a0 = bytes / t[0] / 1e9, a1 = bytes / t[1] / 1e9;
      std::printf("%12.0f  %12zu  %7.2f  %6.2f  %6.2f  %7.2f  %6.2f  %6.2f\n", bytes, count,
                  t[0] * 1e6, a0, a0 * factor_of(members), t[1] * 1e6, a1, a1 * factor_of(members));
      std::fflush(stdout);
    }
    rows.push_back(row);
  }
  if (rank == 0 && !json_file.empty()) {
    int version = 0;
    ncclGetVersion(&version);
    std::ofstream(json_file) << nlohmann::json{{"tool", "skein-bench-nccl"},
                                               {"collective", coll},
                                               {"nccl_version", version},
                                               {"ranks", nranks},
                                               {"members", members},
                                               {"gpus_per_rank", gpus},
                                               {"backend", "NCCL direct"},
                                               {"extra", extra_text},
                                               {"alloc", alloc_text},
                                               {"iters", iters},
                                               {"rows", rows}}
                                    .dump(2)
                             << "\n";
  }
  synchronize();
  for (int g = 0; g < gpus; ++g) {
    check(cudaSetDevice(device[g]), "cudaSetDevice");
    for (auto& e : ring[g]) cudaEventDestroy(e);
    ncclCommDestroy(comm[g]);
    if (nccl_alloc) {
      ncclMemFree(send[g]);
      ncclMemFree(recv[g]);
    } else {
      cudaFree(send[g]);
      cudaFree(recv[g]);
    }
  }
  MPI_Comm_free(&node);
  MPI_Finalize();
  return 0;
}
