// SPDX-License-Identifier: BSD-3-Clause
// skein-bench-collectives: nccl-tests' performance tests, over Skein's Communicator. Same
// options where they mean the same thing, same table, same bandwidth definitions, so that a
// Skein row and an nccl-tests (or tools/peer-collectives.py) row can be read side by side.
//
//   mpirun -np 4 skein-bench-collectives --coll all_reduce -b 8 -e 1G -f 2
//
// One difference: nccl-tests builds one binary per collective (all_reduce_perf, ...); here
// `--coll` picks it, and `-o/--op` is the reduction, as in nccl-tests.
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <skein_cli/cli.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <skein/communicator.hpp>
#include <skein/runtime.hpp>
#include <skein/skein.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using skein::Array;
using skein::Dtype;
using skein::ReduceOp;

// --- one small description per collective ------------------------------------------------------

enum class Coll { all_reduce, all_gather, broadcast, reduce, reduce_scatter };

struct CollInfo {
  Coll coll;
  const char* name;
  bool has_op;    // the redop column says "none" otherwise
  bool has_root;  // the root column says -1 otherwise
  // The gathered / scattered collectives move n blocks: nccl-tests' size is the whole array and
  // its count one member's block.
  bool blocks;
  // nccl-tests' bus bandwidth factor: what each member's links carry relative to the size.
  double (*bus_factor)(double n);
};

const CollInfo kColls[] = {
    {Coll::all_reduce, "all_reduce", true, false, false, [](double n) { return 2 * (n - 1) / n; }},
    {Coll::all_gather, "all_gather", false, false, true, [](double n) { return (n - 1) / n; }},
    {Coll::broadcast, "broadcast", false, true, false, [](double) { return 1.0; }},
    {Coll::reduce, "reduce", true, true, false, [](double) { return 1.0; }},
    {Coll::reduce_scatter, "reduce_scatter", true, false, true,
     [](double n) { return (n - 1) / n; }},
};

// nccl-tests' type names, and Skein's for convenience.
const std::map<std::string, Dtype> kTypes = {
    {"int8", Dtype::int8},         {"uint8", Dtype::uint8},     {"int32", Dtype::int32},
    {"uint32", Dtype::uint32},     {"int64", Dtype::int64},     {"uint64", Dtype::uint64},
    {"half", Dtype::float16},      {"float", Dtype::float32},   {"double", Dtype::float64},
    {"bfloat16", Dtype::bfloat16}, {"float16", Dtype::float16}, {"float32", Dtype::float32},
    {"float64", Dtype::float64}};

std::string nccl_tests_type_name(Dtype t) {
  switch (t) {
    case Dtype::float16: return "half";
    case Dtype::float32: return "float";
    case Dtype::float64: return "double";
    default: return std::string(skein::name(t));
  }
}

const std::map<std::string, ReduceOp> kOps = {{"sum", ReduceOp::sum},
                                              {"prod", ReduceOp::prod},
                                              {"min", ReduceOp::min},
                                              {"max", ReduceOp::max},
                                              {"avg", ReduceOp::avg}};

const std::map<std::string, skein::CollectiveBackend> kBackends = {
    {"automatic", skein::CollectiveBackend::automatic},
    {"nccl", skein::CollectiveBackend::nccl},
    {"mpi", skein::CollectiveBackend::mpi}};

// "8", "64K", "1M", "1G": nccl-tests' sizes (binary multiples).
std::size_t parse_size(const std::string& text) {
  std::size_t pos = 0;
  const double value = std::stod(text, &pos);
  std::size_t scale = 1;
  if (pos < text.size()) {
    switch (text[pos]) {
      case 'k':
      case 'K': scale = std::size_t(1) << 10; break;
      case 'm':
      case 'M': scale = std::size_t(1) << 20; break;
      case 'g':
      case 'G': scale = std::size_t(1) << 30; break;
      default: throw std::invalid_argument("size: bad size '" + text + "' (e.g. 8, 64K, 1M, 1G)");
    }
  }
  return static_cast<std::size_t>(value * static_cast<double>(scale));
}

// --- values that make every result exact ------------------------------------------------------
//
// Small integers, exact in every type down to int8 and bfloat16, whose sums over the members stay
// small; for prod, exactly one member contributes a 2 to each element (the rest 1), so no
// product overflows. Only avg on floating types is not exact (NCCL multiplies by 1/n before
// summing), and is checked with a tolerance of a few units in the last place.

double input_value(ReduceOp op, std::size_t member, std::size_t element, std::size_t n) {
  if (op == ReduceOp::prod) return (member + element) % n == 0 ? 2.0 : 1.0;
  return static_cast<double>((member * 7 + element * 3) % 5);
}

double expected_reduction(ReduceOp op, std::size_t element, std::size_t n, Dtype t) {
  double acc = input_value(op, 0, element, n);
  for (std::size_t r = 1; r < n; ++r) {
    const double v = input_value(op, r, element, n);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += v; break;
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::avg) {
    acc /= static_cast<double>(n);
    if (skein::is_integer(t)) acc = std::floor(acc);  // integer average truncates
  }
  return acc;
}

void store(Dtype t, std::byte* p, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case Dtype::int8: put(static_cast<std::int8_t>(v)); break;
    case Dtype::uint8: put(static_cast<std::uint8_t>(v)); break;
    case Dtype::int32: put(static_cast<std::int32_t>(v)); break;
    case Dtype::uint32: put(static_cast<std::uint32_t>(v)); break;
    case Dtype::int64: put(static_cast<std::int64_t>(v)); break;
    case Dtype::uint64: put(static_cast<std::uint64_t>(v)); break;
    case Dtype::float16: put(skein::float16(static_cast<float>(v))); break;
    case Dtype::bfloat16: put(skein::bfloat16(static_cast<float>(v))); break;
    case Dtype::float32: put(static_cast<float>(v)); break;
    case Dtype::float64: put(v); break;
    default: throw std::invalid_argument("unsupported dtype");
  }
}

double load(Dtype t, const std::byte* p) {
  auto get = [p]<class T>(T) {
    T x;
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case Dtype::int8: return get(std::int8_t{});
    case Dtype::uint8: return get(std::uint8_t{});
    case Dtype::int32: return get(std::int32_t{});
    case Dtype::uint32: return get(std::uint32_t{});
    case Dtype::int64: return static_cast<double>(get(std::int64_t{}));
    case Dtype::uint64: return static_cast<double>(get(std::uint64_t{}));
    case Dtype::float16: return static_cast<float>(get(skein::float16{}));
    case Dtype::bfloat16: return static_cast<float>(get(skein::bfloat16{}));
    case Dtype::float32: return get(float{});
    case Dtype::float64: return get(double{});
    default: throw std::invalid_argument("unsupported dtype");
  }
}

bool matches(double got, double want, Dtype t, ReduceOp op) {
  if (op != ReduceOp::avg || !skein::is_floating(t)) return got == want;
  const double tolerance = t == Dtype::float16    ? 4e-3
                           : t == Dtype::bfloat16 ? 3e-2
                           : t == Dtype::float32  ? 1e-6
                                                  : 1e-14;
  return std::abs(got - want) <= tolerance * std::max(1.0, std::abs(want));
}

// --- the harness ----------------------------------------------------------------------------

struct Options {
  const CollInfo* coll = &kColls[0];
  std::size_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  double step_factor = 2;
  int iters = 20, warmup = 5, check = 1, root = 0;
  Dtype dtype = Dtype::float32;
  std::string type_name = "float";
  ReduceOp op = ReduceOp::sum;
  std::string op_name = "sum";
  skein::CollectiveBackend backend = skein::CollectiveBackend::automatic;
  std::optional<std::size_t> devices_per_rank;
  std::string json_file;
  // Also time the staging floor of an all_reduce through host MPI (see Bench::measure_floor).
  bool floor = false;
  // > 0: measure the agreement check's cost instead (see bench_agreement_cost), in this many
  // alternating rounds.
  int agreement_rounds = 0;
};

// The MPI datatype of a host buffer of `t`, for the staging floor's MPI_Allreduce.
MPI_Datatype mpi_type(Dtype t) {
  switch (t) {
    case Dtype::int8: return MPI_INT8_T;
    case Dtype::uint8: return MPI_UINT8_T;
    case Dtype::int32: return MPI_INT32_T;
    case Dtype::uint32: return MPI_UINT32_T;
    case Dtype::int64: return MPI_INT64_T;
    case Dtype::uint64: return MPI_UINT64_T;
    case Dtype::float32: return MPI_FLOAT;
    case Dtype::float64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::prod: return MPI_PROD;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    default: return MPI_OP_NULL;
  }
}

struct Measurement {
  double time_us = 0, algbw = 0, busbw = 0;
  long long wrong = 0;  // -1: not checked
};

class Bench {
 public:
  Bench(const Options& o, const skein::Runtime& runtime, skein::Communicator& comm)
      : o_(o),
        runtime_(runtime),
        comm_(comm),
        queue_(runtime.context()),
        n_(comm.size()),
        local_(comm.local_size()) {}

  // One size, out of place or in place.
  Measurement measure(std::size_t count, bool in_place) {
    allocate(count, in_place);
    fill_inputs(in_place);
    for (int i = 0; i < o_.warmup; ++i) issue();
    queue_.synchronize();

    // Timed from the same moment on every rank; the host clock around the iterations with one
    // final synchronisation, as nccl-tests does, averaged over the ranks.
    comm_.barrier(queue_);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) issue();
    queue_.synchronize();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        std::max(o_.iters, 1);
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, runtime_.comm());
    seconds /= runtime_.size();

    Measurement m;
    m.time_us = seconds * 1e6;
    const double bytes = static_cast<double>(size_bytes(count));
    m.algbw = seconds > 0 ? bytes / seconds / 1e9 : 0;
    m.busbw = m.algbw * o_.coll->bus_factor(static_cast<double>(n_));
    m.wrong = -1;
    if (o_.check) {
      // The timed iterations destroyed in-place inputs (and accumulate); start again from the
      // known values for one checked run.
      fill_inputs(in_place);
      issue();
      queue_.synchronize();
      long long wrong = count_wrong(count);
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, runtime_.comm());
      m.wrong = wrong;
    }
    return m;
  }

  // The floor of an all_reduce staged through the host, timed like measure(): per iteration,
  // device->host copy of the input into page-locked memory, MPI_Allreduce in place on the host,
  // host->device copy into the output, each step waited for. Any all_reduce that goes through
  // host MPI does at least this work. One device per rank (the host reduction is MPI's alone).
  double measure_floor(std::size_t count) {
    allocate(count, false);
    fill_inputs(false);
    const std::size_t bytes = count * skein::itemsize(o_.dtype);
    const skein::HostBuffer host = skein::HostBuffer::allocate(runtime_.context(), bytes);
    const auto one = [&] {
      send_[0].get(host.bytes(), skein::Sync::async);
      queue_.synchronize();
      MPI_Allreduce(MPI_IN_PLACE, host.data(), static_cast<int>(count), mpi_type(o_.dtype),
                    mpi_op(o_.op), runtime_.comm());
      recv_[0].set(std::span<const std::byte>(host.bytes()), skein::Sync::async);
      queue_.synchronize();
    };
    for (int i = 0; i < o_.warmup; ++i) one();
    MPI_Barrier(runtime_.comm());
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) one();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        std::max(o_.iters, 1);
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_SUM, runtime_.comm());
    return seconds / runtime_.size() * 1e6;
  }

  // nccl-tests' size column: the whole gathered / scattered array for those collectives.
  std::size_t size_bytes(std::size_t count) const {
    return count * (o_.coll->blocks ? n_ : 1) * skein::itemsize(o_.dtype);
  }

  std::size_t count_for(std::size_t bytes) const {
    return bytes / (skein::itemsize(o_.dtype) * (o_.coll->blocks ? n_ : 1));
  }

 private:
  std::size_t send_elems(std::size_t count) const {
    return o_.coll->coll == Coll::reduce_scatter ? count * n_ : count;
  }
  std::size_t recv_elems(std::size_t count) const {
    return o_.coll->coll == Coll::all_gather ? count * n_ : count;
  }

  void allocate(std::size_t count, bool in_place) {
    send_.clear();
    recv_.clear();
    for (std::size_t d = 0; d < local_; ++d) {
      const std::size_t idx = comm_.device_idx(d);
      const auto r = static_cast<std::size_t>(comm_.rank_of(d));
      // In place, one array. For all_gather and reduce_scatter (as in NCCL and nccl-tests) the
      // smaller side is this member's block of the larger: all_gather sends from the block where
      // it receives its own contribution, reduce_scatter leaves its result in its own block.
      if (in_place || o_.coll->coll == Coll::broadcast) {
        const std::size_t elems = std::max(send_elems(count), recv_elems(count));
        Array a = Array::empty(queue_, {elems}, o_.dtype, idx);
        Array block = o_.coll->blocks ? a.view(r * count, {count}) : a;
        send_.push_back(o_.coll->coll == Coll::all_gather ? block : a);
        recv_.push_back(o_.coll->coll == Coll::reduce_scatter ? block : a);
      } else {
        send_.push_back(Array::empty(queue_, {send_elems(count)}, o_.dtype, idx));
        recv_.push_back(Array::empty(queue_, {recv_elems(count)}, o_.dtype, idx));
      }
    }
  }

  // Member r's input element j is input_value(r, j); for broadcast only the root's matters, and
  // the others start from values that differ from it.
  void fill_inputs(bool in_place) {
    const std::size_t item = skein::itemsize(o_.dtype);
    for (std::size_t d = 0; d < local_; ++d) {
      const auto r = static_cast<std::size_t>(comm_.rank_of(d));
      // Gathered arrays start zeroed (in place, around this member's block), so that a block
      // that was never written counts as wrong.
      if (o_.coll->coll == Coll::all_gather) recv_[d].fill_zero();
      std::vector<std::byte> host(send_[d].size() * item);
      for (std::size_t j = 0; j < send_[d].size(); ++j) {
        double v = input_value(o_.op, r, j, n_);
        if (o_.coll->coll == Coll::broadcast && r != static_cast<std::size_t>(o_.root)) v = 9;
        store(o_.dtype, host.data() + j * item, v);
      }
      send_[d].set(std::span<const std::byte>(host));
      if (!in_place && o_.coll->coll != Coll::broadcast && o_.coll->coll != Coll::all_gather) {
        recv_[d].fill_zero();
      }
    }
    queue_.synchronize();
  }

  void issue() {
    std::span<const Array> send(send_), recv(recv_);
    switch (o_.coll->coll) {
      case Coll::all_reduce: comm_.all_reduce(queue_, send, recv, o_.op); break;
      case Coll::all_gather: comm_.all_gather(queue_, send, recv); break;
      case Coll::broadcast: comm_.broadcast(queue_, recv, o_.root); break;
      case Coll::reduce: comm_.reduce(queue_, send, recv, o_.op, o_.root); break;
      case Coll::reduce_scatter: comm_.reduce_scatter(queue_, send, recv, o_.op); break;
    }
  }

  long long count_wrong(std::size_t count) {
    const std::size_t item = skein::itemsize(o_.dtype);
    long long wrong = 0;
    for (std::size_t d = 0; d < local_; ++d) {
      const auto r = static_cast<std::size_t>(comm_.rank_of(d));
      if (o_.coll->coll == Coll::reduce && r != static_cast<std::size_t>(o_.root)) continue;
      std::vector<std::byte> host(recv_[d].size() * item);
      recv_[d].get(std::span<std::byte>(host));
      const std::size_t checked = o_.coll->coll == Coll::all_gather ? count * n_ : count;
      for (std::size_t i = 0; i < checked; ++i) {
        double want = 0;
        switch (o_.coll->coll) {
          case Coll::all_reduce:
          case Coll::reduce: want = expected_reduction(o_.op, i, n_, o_.dtype); break;
          case Coll::all_gather: want = input_value(o_.op, i / count, i % count, n_); break;
          case Coll::broadcast:
            want = input_value(o_.op, static_cast<std::size_t>(o_.root), i, n_);
            break;
          case Coll::reduce_scatter:
            want = expected_reduction(o_.op, r * count + i, n_, o_.dtype);
            break;
        }
        if (!matches(load(o_.dtype, host.data() + i * item), want, o_.dtype, o_.op)) ++wrong;
      }
    }
    return wrong;
  }

  const Options& o_;
  const skein::Runtime& runtime_;
  skein::Communicator& comm_;
  skein::Queue queue_;
  std::size_t n_, local_;
  std::vector<Array> send_, recv_;
};

// nccl-tests prints times with fewer decimals as they grow, keeping the column 7 wide.
std::string format_time(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string format_column(const Measurement& m) {
  const std::string wrong = m.wrong < 0 ? "  N/A" : fmt::format("{:5d}", m.wrong);
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {}", format_time(m.time_us), m.algbw, m.busbw, wrong);
}

nlohmann::json measurement_json(const Measurement& m) {
  nlohmann::json j{{"time_us", m.time_us}, {"algbw_GBps", m.algbw}, {"busbw_GBps", m.busbw}};
  j["wrong"] = m.wrong < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.wrong);
  return j;
}

// The "Using devices" block: one line per member, in communicator order.
void print_devices(const skein::Runtime& runtime) {
  const int pid = static_cast<int>(getpid());
  std::vector<int> pids(static_cast<std::size_t>(runtime.size()));
  MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, runtime.comm());
  if (runtime.rank() != 0) return;
  std::printf("#\n# Using devices\n");
  int member = 0;
  for (const auto& p : runtime.placement()) {
    for (std::size_t d = 0; d < p.devices.size(); ++d, ++member) {
      const std::string id = d < p.device_ids.size() ? p.device_ids[d] : "";
      std::printf("#  Rank %2d Group  0 Pid %6d on %10s device %2zu [%s] %s\n", member,
                  pids[static_cast<std::size_t>(p.rank)], p.host.c_str(), d, id.c_str(),
                  p.devices[d].c_str());
    }
  }
}

int bench_all_sizes(const Options& o, const skein::Runtime& runtime) {
  skein::Communicator comm(runtime, o.backend);
  const bool printer = runtime.rank() == 0;
  const std::size_t n = comm.size();
  if (o.root < 0 || static_cast<std::size_t>(o.root) >= n) {
    if (printer)
      std::fprintf(stderr, "skein-bench-collectives: root %d is not a member (0..%zu)\n", o.root,
                   n - 1);
    return 2;
  }
  if (o.floor && (o.coll->coll != Coll::all_reduce || comm.local_size() != 1 ||
                  mpi_type(o.dtype) == MPI_DATATYPE_NULL || mpi_op(o.op) == MPI_OP_NULL)) {
    if (printer) {
      std::fprintf(stderr,
                   "skein-bench-collectives: --floor times an all_reduce with one device per rank, "
                   "an integer, float or double type and sum, prod, min or max\n");
    }
    return 2;
  }

  if (printer) {
    std::printf("# skein-bench-collectives (Skein %s): %s over %s, %zu member(s) on %d rank(s)\n",
                SKEIN_VERSION_STRING, o.coll->name, comm.backend_description().c_str(), n,
                runtime.size());
    std::printf(
        "# nThread 1 nGpus %zu minBytes %zu maxBytes %zu step: %g(factor) warmup iters: "
        "%d iters: %d agg iters: 1 validation: %d graph: 0\n",
        comm.local_size(), o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.check);
    if (o.coll->coll == Coll::broadcast) {
      std::printf("# broadcast takes one array: both columns run in place\n");
    }
  }
  print_devices(runtime);
  if (printer) {
    std::printf("#\n");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place         "
        " \n",
        "", "", "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    std::fflush(stdout);
  }

  Bench bench(o, runtime, comm);
  nlohmann::json rows = nlohmann::json::array();
  long long wrong_total = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  const std::string redop = o.coll->has_op ? o.op_name : "none";
  const int root = o.coll->has_root ? o.root : -1;
  std::size_t last_count = 0;
  struct FloorRow {
    std::size_t size;
    double skein_us, floor_us;
  };
  std::vector<FloorRow> floor_rows;
  for (double bytes = static_cast<double>(o.min_bytes); bytes <= static_cast<double>(o.max_bytes);
       bytes = std::max(bytes * o.step_factor, bytes + 1)) {
    const std::size_t count = bench.count_for(static_cast<std::size_t>(bytes));
    if (count == 0 || count == last_count) continue;  // below one element per member, or repeated
    last_count = count;
    const Measurement out = bench.measure(count, false);
    const Measurement in = bench.measure(count, true);
    for (const auto* m : {&out, &in}) {
      wrong_total += std::max(m->wrong, 0LL);
      busbw_sum += m->busbw;
      ++busbw_count;
    }
    if (printer) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d%s%s\n", bench.size_bytes(count), count,
                  o.type_name.c_str(), redop.c_str(), root, format_column(out).c_str(),
                  format_column(in).c_str());
      std::fflush(stdout);
    }
    rows.push_back({{"size", bench.size_bytes(count)},
                    {"count", count},
                    {"type", o.type_name},
                    {"redop", redop},
                    {"root", root},
                    {"out_of_place", measurement_json(out)},
                    {"in_place", measurement_json(in)}});
    if (o.floor) {
      floor_rows.push_back({bench.size_bytes(count), out.time_us, bench.measure_floor(count)});
      rows.back()["staging_floor_us"] = floor_rows.back().floor_us;
    }
  }
  const double avg_busbw = busbw_count > 0 ? busbw_sum / busbw_count : 0;
  if (printer) {
    std::printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n#\n", avg_busbw);
    if (o.floor) {
      std::printf(
          "# Staging floor of the same run: device->host copy + host MPI_Allreduce + "
          "host->device copy\n");
      std::printf("# %10s  %12s  %12s  %11s\n", "size (B)", "skein (us)", "floor (us)",
                  "skein/floor");
      for (const auto& r : floor_rows) {
        std::printf("# %10zu  %12.2f  %12.2f  %11.3f\n", r.size, r.skein_us, r.floor_us,
                    r.floor_us > 0 ? r.skein_us / r.floor_us : 0.0);
      }
      std::printf("#\n");
    }
    if (!o.json_file.empty()) {
      nlohmann::json out{{"tool", "skein-bench-collectives"},
                         {"skein_version", SKEIN_VERSION_STRING},
                         {"collective", o.coll->name},
                         {"backend", comm.backend_description()},
                         {"ranks", runtime.size()},
                         {"members", n},
                         {"devices_per_rank", comm.local_size()},
                         {"iters", o.iters},
                         {"warmup_iters", o.warmup},
                         {"check", o.check},
                         {"rows", rows},
                         {"out_of_bounds", wrong_total},
                         {"avg_busbw_GBps", avg_busbw}};
      std::ofstream(o.json_file) << out.dump(2) << "\n";
    }
  }
  return wrong_total ? 1 : 0;
}

// The agreement check's cost: the collective at --minbytes over two communicators of the same
// ranks and devices, one with the check on (SKEIN_CHECK_COLLECTIVES=1, the default) and one with it
// off, timed in alternating rounds (each round: warm-up, then --iters calls, as a table row) in
// one run. Rank 0 prints every round and the medians; the JSON file gets them too.
int bench_agreement_cost(const Options& o, const skein::Runtime& runtime) {
  setenv("SKEIN_CHECK_COLLECTIVES", "1", 1);
  skein::Communicator on(runtime, o.backend);
  setenv("SKEIN_CHECK_COLLECTIVES", "0", 1);
  skein::Communicator off(runtime, o.backend);
  unsetenv("SKEIN_CHECK_COLLECTIVES");
  Bench bench_on(o, runtime, on), bench_off(o, runtime, off);
  const std::size_t count = std::max<std::size_t>(bench_on.count_for(o.min_bytes), 1);
  const bool printer = runtime.rank() == 0;
  if (printer) {
    std::printf(
        "# skein-bench-collectives --agreement-cost: %s of %zu B over %s, %zu member(s) on "
        "%d rank(s), %d rounds of %d calls (after %d warm-up calls), check on and off "
        "alternating\n",
        o.coll->name, bench_on.size_bytes(count), on.backend_description().c_str(), on.size(),
        runtime.size(), o.agreement_rounds, o.iters, o.warmup);
    std::printf("# %5s  %12s  %12s  %12s\n", "round", "on (us)", "off (us)", "on - off (us)");
  }
  std::vector<double> t_on, t_off;
  long long wrong = 0;
  for (int r = 0; r < o.agreement_rounds; ++r) {
    // Which goes first alternates, so that neither always follows the other.
    Measurement a, b;
    if (r % 2 == 0) {
      a = bench_on.measure(count, false);
      b = bench_off.measure(count, false);
    } else {
      b = bench_off.measure(count, false);
      a = bench_on.measure(count, false);
    }
    wrong += std::max(a.wrong, 0LL) + std::max(b.wrong, 0LL);
    t_on.push_back(a.time_us);
    t_off.push_back(b.time_us);
    if (printer) {
      std::printf("  %5d  %12.3f  %12.3f  %12.3f\n", r, a.time_us, b.time_us,
                  a.time_us - b.time_us);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  const double m_on = median(t_on), m_off = median(t_off);
  if (printer) {
    std::printf(
        "# median: check on %.3f us, off %.3f us per call: the check costs %.3f us "
        "(#wrong %lld)\n",
        m_on, m_off, m_on - m_off, wrong);
    if (!o.json_file.empty()) {
      nlohmann::json out{{"benchmark", "agreement-cost"},
                         {"collective", o.coll->name},
                         {"bytes", bench_on.size_bytes(count)},
                         {"backend", on.backend_description()},
                         {"members", on.size()},
                         {"ranks", runtime.size()},
                         {"iters", o.iters},
                         {"rounds_on_us", t_on},
                         {"rounds_off_us", t_off},
                         {"median_on_us", m_on},
                         {"median_off_us", m_off},
                         {"cost_us", m_on - m_off},
                         {"wrong", wrong}};
      std::ofstream(o.json_file) << out.dump(2) << "\n";
    }
  }
  return wrong ? 1 : 0;
}

int run(const Options& o, int* argc, char*** argv) {
  skein::PlacementOptions placement;
  placement.devices_per_rank = o.devices_per_rank;
  skein::Runtime runtime(argc, argv, placement);
  try {
    return o.agreement_rounds > 0 ? bench_agreement_cost(o, runtime) : bench_all_sizes(o, runtime);
  } catch (const std::exception& e) {
    // One rank failing must end the job, not leave the others waiting in a collective (or in
    // MPI_Finalize, which the runtime's destructor would call next).
    std::fprintf(stderr, "skein-bench-collectives: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(runtime.comm(), 1);
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  skein::cli::Parser app{
      "nccl-tests' performance tests over Skein's Communicator: run under mpirun; rank 0 prints "
      "nccl-tests' table. The collective is --coll; -o/--op is the reduction, as in nccl-tests."};
  Options o;
  std::string coll = "all_reduce", min_bytes = "32M", max_bytes = "32M", type = "float", op = "sum",
              backend = "automatic";
  std::size_t devices_per_rank = 0;
  std::vector<std::string> coll_names;
  for (const auto& c : kColls) coll_names.push_back(c.name);
  auto keys = [](const auto& map) {
    std::vector<std::string> k;
    for (const auto& [name, _] : map) k.push_back(name);
    return k;
  };
  app.add_option("--coll", coll, "Collective").one_of(coll_names);
  app.add_option("-b,--minbytes", min_bytes, "Smallest size in bytes (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", max_bytes, "Largest size in bytes (K, M, G suffixes)");
  app.add_option("-f,--stepfactor", o.step_factor, "Size multiplier between rows")
      .range(1.0001, 1e9);
  app.add_option("-n,--iters", o.iters, "Timed iterations per size").range(1, 1 << 30);
  app.add_option("-w,--warmup_iters", o.warmup, "Untimed iterations first").range(0, 1 << 30);
  app.add_option("-c,--check", o.check, "Check results (0 or 1)").range(0, 1);
  app.add_option("-d,--datatype", type, "Element type").one_of(keys(kTypes));
  app.add_option("-o,--op", op, "Reduction").one_of(keys(kOps));
  app.add_option("-r,--root", o.root, "Root member (broadcast, reduce)");
  app.add_option("--backend", backend, "Communicator backend").one_of(keys(kBackends));
  app.add_option("--devices-per-rank", devices_per_rank,
                 "Devices each rank drives (default: SKEIN_DEVICES_PER_RANK, else an even share)");
  app.add_option("--json", o.json_file, "Also write every row to this JSON file (rank 0)");
  app.add_flag("--floor", o.floor,
               "all_reduce only, one device per rank: also time its floor through host MPI "
               "(device->host copy, MPI_Allreduce, host->device copy) and print Skein's "
               "out-of-place time against it");
  app.add_option("--agreement-cost", o.agreement_rounds,
                 "Instead of the table: time the collective at --minbytes with the agreement "
                 "check on and off (SKEIN_CHECK_COLLECTIVES=1 / 0, set by the program) in this "
                 "many alternating rounds, and print the medians")
      .range(1, 1000);
  app.version_flag("--version", SKEIN_VERSION_STRING);
  if (auto status = app.parse(argc, argv)) return *status;

  for (const auto& c : kColls) {
    if (coll == c.name) o.coll = &c;
  }
  try {
    o.min_bytes = parse_size(min_bytes);
    o.max_bytes = parse_size(max_bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skein-bench-collectives: %s\n", e.what());
    return 2;
  }
  o.dtype = kTypes.at(type);
  o.type_name = nccl_tests_type_name(o.dtype);
  o.op = kOps.at(op);
  o.op_name = op;
  o.backend = kBackends.at(backend);
  if (devices_per_rank > 0) o.devices_per_rank = devices_per_rank;

  try {
    return run(o, &argc, &argv);
  } catch (const std::exception& e) {
    // The runtime itself failed (placement, MPI): every rank sees that on its own.
    std::fprintf(stderr, "skein-bench-collectives: %s\n", e.what());
    return 1;
  }
}
