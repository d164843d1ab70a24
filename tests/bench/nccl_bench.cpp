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
#include <optional>
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
      case 'K':
      case 'k': mul = 1024.0; break;
      case 'M':
      case 'm': mul = 1024.0 * 1024; break;
      case 'G':
      case 'g': mul = 1024.0 * 1024 * 1024; break;
      default: throw std::invalid_argument("bad size " + text);
    }
  }
  return static_cast<std::size_t>(v * mul);
}

// The command line, in nccl-tests' words.
struct BenchOptions {
  std::string coll = "all_reduce", min_text = "8", max_text = "1G", json_file;
  double factor = 8;
  int iters = 20, warmup = 5, gpus = 1;
  std::string extra_text;  // "" or "event"
  // The buffers: cudaMalloc (as Skein's arrays come from cuMemAlloc), or ncclMemAlloc (as
  // nccl-tests 2.19 allocates them with NCCL 2.19 and later).
  std::string alloc_text = "cuda";
};

std::optional<int> parse_options(int argc, char** argv, BenchOptions& o) {
  skein::cli::Parser app{"NCCL called directly (nccl-tests' inner loop), for same-run comparisons"};
  app.add_option("--coll", o.coll)
      .one_of({"all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter"});
  app.add_option("-b,--minbytes", o.min_text);
  app.add_option("-e,--maxbytes", o.max_text);
  app.add_option("-f,--stepfactor", o.factor).range(1.0001, 1e9);
  app.add_option("-n,--iters", o.iters).range(1, 1 << 30);
  app.add_option("-w,--warmup_iters", o.warmup).range(0, 1 << 30);
  app.add_option("-g,--ngpus", o.gpus).range(1, 64);
  app.add_option("--json", o.json_file);
  app.add_option("--extra", o.extra_text).one_of({"", "event"});
  app.add_option("--alloc", o.alloc_text).one_of({"cuda", "nccl"});
  return app.parse(argc, argv);
}

// This rank's GPUs, their NCCL communicators, streams and buffers (of --maxbytes), and the calls
// of the collective on them. Made after MPI_Init, gone before MPI_Finalize.
class NcclBench {
 public:
  // `local`: the rank's place among the ranks of its node (which GPUs it takes).
  NcclBench(const BenchOptions& o, int rank, int nranks, int local)
      : o_(o),
        rank_(rank),
        nranks_(nranks),
        gpus_(o.gpus),
        members_(nranks * o.gpus),
        blocks_(o.coll == "all_gather" || o.coll == "reduce_scatter"),
        extra_event_(o.extra_text == "event"),
        nccl_alloc_(o.alloc_text == "nccl"),
        device_(gpus_),
        comm_(gpus_),
        stream_(gpus_),
        send_(gpus_),
        recv_(gpus_),
        ring_(gpus_) {
    int ngpu = 0;
    check(cudaGetDeviceCount(&ngpu), "cudaGetDeviceCount");
    if (gpus_ > ngpu) {
      std::fprintf(stderr, "skein-bench-nccl: -g %d: this rank sees %d GPU(s)\n", gpus_, ngpu);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    init_communicators(local, ngpu);
    allocate_buffers();
    if (extra_event_) make_event_ring();
  }
  NcclBench(const NcclBench&) = delete;
  NcclBench& operator=(const NcclBench&) = delete;

  ~NcclBench() {
    synchronize();
    for (int g = 0; g < gpus_; ++g) {
      check(cudaSetDevice(device_[g]), "cudaSetDevice");
      for (auto& e : ring_[g]) cudaEventDestroy(e);
      ncclCommDestroy(comm_[g]);
      if (nccl_alloc_) {
        ncclMemFree(send_[g]);
        ncclMemFree(recv_[g]);
      } else {
        cudaFree(send_[g]);
        cudaFree(recv_[g]);
      }
    }
  }

  int members() const { return members_; }
  // all_gather and reduce_scatter move a block per member: nccl-tests' size is the whole array.
  bool blocks() const { return blocks_; }

  // One call of the collective on every GPU of the rank on `count` elements (a member's block
  // for the gathered and scattered collectives): one GPU, the call alone (as nccl-tests' -g 1
  // makes it); several, one group of them. With --extra event, then an untimed event on each
  // GPU's stream (one of a ring of kRing).
  void issue(std::size_t count, bool in_place) {
    if (gpus_ == 1) {
      issue_one(0, count, in_place);
    } else {
      check(ncclGroupStart(), "ncclGroupStart");
      for (int g = 0; g < gpus_; ++g) issue_one(g, count, in_place);
      check(ncclGroupEnd(), "ncclGroupEnd");
    }
    if (extra_event_) {
      for (int g = 0; g < gpus_; ++g) {
        if (gpus_ > 1) check(cudaSetDevice(device_[g]), "cudaSetDevice");
        check(cudaEventRecord(ring_[g][ring_at_], stream_[g]), "cudaEventRecord");
      }
      ring_at_ = (ring_at_ + 1) % kRing;
    }
  }

  void synchronize() const {
    for (int g = 0; g < gpus_; ++g)
      check(cudaStreamSynchronize(stream_[g]), "cudaStreamSynchronize");
  }

  // nccl-tests' bus bandwidth factor for n members.
  double factor_of(double n) const {
    if (o_.coll == "all_reduce") return 2 * (n - 1) / n;
    if (blocks_) return (n - 1) / n;
    return 1.0;
  }

  // Seconds per call, averaged over the ranks: `warmup` calls, a barrier, `iters` calls and one
  // synchronisation, timed on the host.
  double time_calls(std::size_t count, bool in_place) {
    for (int i = 0; i < o_.warmup; ++i) issue(count, in_place);
    synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) issue(count, in_place);
    synchronize();
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o_.iters;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s / nranks_;
  }

 private:
  static constexpr std::size_t kRing = 1024;

  // The communicator's members: this rank's GPUs, rank-major as nccl-tests numbers them.
  void init_communicators(int local, int ngpu) {
    ncclUniqueId id;
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int g = 0; g < gpus_; ++g) {
      device_[g] = (local * gpus_ + g) % ngpu;
      check(cudaSetDevice(device_[g]), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&stream_[g], cudaStreamNonBlocking), "cudaStreamCreate");
    }
    check(ncclGroupStart(), "ncclGroupStart");
    for (int g = 0; g < gpus_; ++g) {
      check(cudaSetDevice(device_[g]), "cudaSetDevice");
      check(ncclCommInitRank(&comm_[g], members_, id, rank_ * gpus_ + g), "ncclCommInitRank");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
  }

  void allocate_buffers() {
    const std::size_t max_bytes = parse_size(o_.max_text);
    const std::size_t max_count = max_bytes / sizeof(float) / (blocks_ ? members_ : 1);
    const std::size_t big = max_count * (blocks_ ? members_ : 1);
    for (int g = 0; g < gpus_; ++g) {
      check(cudaSetDevice(device_[g]), "cudaSetDevice");
      if (nccl_alloc_) {
        check(ncclMemAlloc(reinterpret_cast<void**>(&send_[g]), big * sizeof(float) + 256),
              "ncclMemAlloc");
        check(ncclMemAlloc(reinterpret_cast<void**>(&recv_[g]), big * sizeof(float) + 256),
              "ncclMemAlloc");
      } else {
        check(cudaMalloc(&send_[g], big * sizeof(float) + 256), "cudaMalloc");
        check(cudaMalloc(&recv_[g], big * sizeof(float) + 256), "cudaMalloc");
      }
      check(cudaMemset(send_[g], 0, big * sizeof(float)), "cudaMemset");
    }
  }

  // --extra event's ring of untimed events per GPU.
  void make_event_ring() {
    for (int g = 0; g < gpus_; ++g) {
      check(cudaSetDevice(device_[g]), "cudaSetDevice");
      ring_[g].resize(kRing);
      for (auto& e : ring_[g])
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    }
  }

  void issue_one(int g, std::size_t count, bool in_place) {
    // In place as NCCL defines it: all_gather sends from the member's block of the output,
    // reduce_scatter receives into the member's block of the input.
    const int member = rank_ * gpus_ + g;
    float* out = in_place ? send_[g] : recv_[g];
    const std::string& coll = o_.coll;
    if (coll == "all_reduce") {
      check(ncclAllReduce(send_[g], out, count, ncclFloat, ncclSum, comm_[g], stream_[g]),
            "ncclAllReduce");
    } else if (coll == "broadcast") {
      check(ncclBroadcast(send_[g], out, count, ncclFloat, 0, comm_[g], stream_[g]),
            "ncclBroadcast");
    } else if (coll == "reduce") {
      check(ncclReduce(send_[g], out, count, ncclFloat, ncclSum, 0, comm_[g], stream_[g]),
            "ncclReduce");
    } else if (coll == "all_gather") {
      const float* in = in_place ? send_[g] + member * count : send_[g];
      check(ncclAllGather(in, out, count, ncclFloat, comm_[g], stream_[g]), "ncclAllGather");
    } else {
      float* o = in_place ? send_[g] + member * count : recv_[g];
      check(ncclReduceScatter(send_[g], o, count, ncclFloat, ncclSum, comm_[g], stream_[g]),
            "ncclReduceScatter");
    }
  }

  const BenchOptions& o_;
  int rank_, nranks_, gpus_, members_;
  bool blocks_, extra_event_, nccl_alloc_;
  std::vector<int> device_;
  std::vector<ncclComm_t> comm_;
  std::vector<cudaStream_t> stream_;
  std::vector<float*> send_, recv_;
  std::vector<std::vector<cudaEvent_t>> ring_;
  std::size_t ring_at_ = 0;
};

// nccl-tests' table: every size from --minbytes to --maxbytes by --stepfactor, out of place and in
// place; printed by rank 0 as it goes. Returns the rows for --json.
nlohmann::json run_sizes(NcclBench& bench, const BenchOptions& o, int rank, int nranks) {
  const int members = bench.members();
  const bool blocks = bench.blocks();
  nlohmann::json rows = nlohmann::json::array();
  if (rank == 0) {
    std::printf("# skein-bench-nccl: %s, NCCL called directly, %d rank(s), %d GPU(s) each%s%s\n",
                o.coll.c_str(), nranks, o.gpus,
                o.extra_text.empty() ? "" : ", per call also: ", o.extra_text.c_str());
    std::printf("# %10s  %12s  %7s  %6s  %6s  %7s  %6s  %6s\n", "size", "count", "oop time",
                "algbw", "busbw", "ip time", "algbw", "busbw");
  }
  const std::size_t min_bytes = parse_size(o.min_text), max_bytes = parse_size(o.max_text);
  std::size_t last = 0;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes);
       b = std::max(b * o.factor, b + 1)) {
    const std::size_t count = static_cast<std::size_t>(b) / sizeof(float) / (blocks ? members : 1);
    if (count == 0 || count == last) continue;
    last = count;
    const double bytes = static_cast<double>(count * sizeof(float) * (blocks ? members : 1));
    nlohmann::json row{{"size", bytes}, {"count", count}};
    double t[2];
    for (int ip = 0; ip < 2; ++ip) {
      t[ip] = bench.time_calls(count, ip);
      const double algbw = bytes / t[ip] / 1e9;
      row[ip ? "in_place" : "out_of_place"] = {{"time_us", t[ip] * 1e6},
                                               {"algbw_GBps", algbw},
                                               {"busbw_GBps", algbw * bench.factor_of(members)}};
    }
    if (rank == 0) {
      const double a0 = bytes / t[0] / 1e9, a1 = bytes / t[1] / 1e9;
      std::printf("%12.0f  %12zu  %7.2f  %6.2f  %6.2f  %7.2f  %6.2f  %6.2f\n", bytes, count,
                  t[0] * 1e6, a0, a0 * bench.factor_of(members), t[1] * 1e6, a1,
                  a1 * bench.factor_of(members));
      std::fflush(stdout);
    }
    rows.push_back(row);
  }
  return rows;
}

void write_json(const BenchOptions& o, const nlohmann::json& rows, int nranks, int members) {
  int version = 0;
  ncclGetVersion(&version);
  std::ofstream(o.json_file) << nlohmann::json{{"tool", "skein-bench-nccl"},
                                               {"collective", o.coll},
                                               {"nccl_version", version},
                                               {"ranks", nranks},
                                               {"members", members},
                                               {"gpus_per_rank", o.gpus},
                                               {"backend", "NCCL direct"},
                                               {"extra", o.extra_text},
                                               {"alloc", o.alloc_text},
                                               {"iters", o.iters},
                                               {"rows", rows}}
                                    .dump(2)
                             << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  if (auto status = parse_options(argc, argv, o)) return *status;

  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  {
    NcclBench bench(o, rank, nranks, local);
    const nlohmann::json rows = run_sizes(bench, o, rank, nranks);
    if (rank == 0 && !o.json_file.empty()) write_json(o, rows, nranks, bench.members());
  }  // the buffers, events and communicators go here, after a last synchronisation
  MPI_Comm_free(&node);
  MPI_Finalize();
  return 0;
}
