// SPDX-License-Identifier: BSD-3-Clause
#include "skein/runtime.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <exception>

#include "skein/detail/errors.hpp"
#include "skein/detail/leak_check.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/placement.hpp"
#if SKEIN_HAS_MPI
#include "skein/detail/mpi_util.hpp"
#endif

namespace skein {

namespace {

#if SKEIN_HAS_MPI
// How long Runtime's teardown waits for operations Skein gave up on.
constexpr double kAbandonedGrace = 3.0;
#endif

// Longer than any host name (HOST_NAME_MAX is 64 on Linux).
constexpr std::size_t kHostNameSize = 256;

std::string this_host() {
  char name[kHostNameSize] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// CUDA when it is usable and has a device, else OpenCL (SKEIN_API's documented default).
ApiId default_api() {
  for (const auto& api : Api::all_available()) {
    for (const auto& platform : api.platforms()) {
      if (!platform.devices().empty()) return api.id();
    }
  }
  return ApiId::opencl;
}

// Length-prefixed strings: the placement of one rank travels as one byte string.
void put(std::string& out, const std::string& s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

std::string take(const std::string& in, std::size_t& pos) {
  const auto colon = in.find(':', pos);
  const auto n = static_cast<std::size_t>(std::stoull(in.substr(pos, colon - pos)));
  std::string s = in.substr(colon + 1, n);
  pos = colon + 1 + n;
  return s;
}

std::string serialise(const RankPlacement& p) {
  std::string out;
  put(out, std::to_string(p.rank));
  put(out, p.host);
  put(out, std::to_string(p.local_rank));
  put(out, std::to_string(p.local_size));
  put(out, std::to_string(p.devices.size()));
  for (std::size_t i = 0; i < p.devices.size(); ++i) {
    put(out, p.devices[i]);
    put(out, p.device_ids[i]);
  }
  return out;
}

RankPlacement deserialise(const std::string& in) {
  RankPlacement p;
  std::size_t pos = 0;
  p.rank = std::stoi(take(in, pos));
  p.host = take(in, pos);
  p.local_rank = std::stoi(take(in, pos));
  p.local_size = std::stoi(take(in, pos));
  const auto n = std::stoull(take(in, pos));
  for (std::size_t i = 0; i < n; ++i) {
    p.devices.push_back(take(in, pos));
    p.device_ids.push_back(take(in, pos));
  }
  return p;
}

// A message without the "skein: " every Error starts with, to quote inside another message.
std::string quoted(const std::string& what) {
  constexpr std::string_view lead = "skein: ";
  return what.starts_with(lead) ? what.substr(lead.size()) : what;
}

}  // namespace

struct Runtime::Impl {
  // Puts back the log's rank as it was before the Runtime (set_prefix()). The first member, so
  // that it runs after the destructor's last line, whichever way that leaves: the lines logged
  // while the Runtime ends still carry the rank.
  struct LogRankRestore {
    detail::LogRank previous;
    bool set = false;
    ~LogRankRestore() {
      if (set) detail::set_log_rank(std::move(previous));
    }
  } log_rank_restore;
  bool uses_mpi = false;
  bool initialised_mpi = false;
#if SKEIN_HAS_MPI
  MPI_Comm comm = MPI_COMM_NULL;
  int thread_level = MPI_THREAD_SINGLE;
#endif
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string host;
  std::optional<Context> context;
  std::vector<RankPlacement> placement;
  RuntimeOptions effective;  // the settings in effect (options())
  std::string previous_error_prefix;
  bool prefix_set = false;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Also what runs when a constructor throws: the communicator is freed and MPI finalised if Skein
  // initialised it, so that a failed start still ends the job cleanly on every rank.
  ~Impl() {
    context.reset();
    if (prefix_set) detail::set_error_prefix(previous_error_prefix);
#if SKEIN_HAS_MPI
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (finalised) return;  // the application finalised MPI before dropping the runtime
    // Operations Skein gave up on after a timeout (MPI cannot cancel them) get a moment to
    // complete, since a late rank may still arrive, before their communicators go.
    std::vector<std::string> left;
    if (detail::any_abandoned()) left = detail::settle_abandoned(kAbandonedGrace);
    if (left.empty()) {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    } else {
      detail::log(LogLevel::warning, LogScope::rank,
                  "{} MPI operation(s) that Skein gave up on after an error are still outstanding "
                  "([{}]); their communicators are left to MPI_Finalize",
                  left.size(), fmt::join(left, "; "));
    }
    if (initialised_mpi) {
      detail::LeakCheckPause pause;  // what Open MPI keeps until exit (skein/detail/leak_check.hpp)
      MPI_Finalize();
    }
#endif
  }

  // Every rank's strings, in rank order (each rank gives one).
  std::vector<std::string> all_gather(const std::string& mine) const {
    if (!uses_mpi) return {mine};
#if SKEIN_HAS_MPI
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size));
    SKEIN_MPI_CHECK(MPI_Allgather, (&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm),
                    "the ranks' host names and devices");
    std::vector<int> offsets(lengths.size(), 0);
    for (std::size_t r = 1; r < lengths.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::string all(static_cast<std::size_t>(offsets.back() + lengths.back()), '\0');
    SKEIN_MPI_CHECK(
        MPI_Allgatherv,
        (mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm),
        "the ranks' host names and devices");
    std::vector<std::string> result;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      result.push_back(
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    }
    return result;
#else
    return {mine};
#endif
  }

  // Runs one start-up step on every rank; when it fails on some, every rank raises (the failing
  // ones their own error, the others a LogicError / RuntimeError quoting it) instead of the
  // others waiting forever in the next collective.
  template <class F>
  void collectively(const char* step, F&& f) {
    std::exception_ptr own;
    std::string message;
    try {
      f();
    } catch (const LogicError& e) {
      own = std::current_exception();
      message = "L" + quoted(e.what());
    } catch (const std::exception& e) {
      own = std::current_exception();
      message = "R" + quoted(e.what());
    }
    const auto all = all_gather(message);
    if (own) std::rethrow_exception(own);
    std::vector<int> failed;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (!all[r].empty()) failed.push_back(static_cast<int>(r));
    }
    if (failed.empty()) return;
    const auto& first = all[static_cast<std::size_t>(failed.front())];
    ErrorInfo info{.what = fmt::format("{} failed on rank(s) {}: {}", step, fmt::join(failed, ", "),
                                       first.substr(1)),
                   .call = "Runtime",
                   .location = SKEIN_HERE};
    if (first.front() == 'L') throw LogicError(info);
    throw RuntimeError(info);
  }

  // The rank in Skein's error messages and log lines (none on a single rank), and the rank the
  // log prints LogScope::collective messages on.
  void set_prefix() {
    log_rank_restore.previous = detail::log_rank();
    log_rank_restore.set = true;
    detail::set_log_rank({.rank = rank, .prefix = {}});
    if (size <= 1) return;
    previous_error_prefix = detail::error_prefix();
    prefix_set = true;
    std::string prefix = fmt::format("rank {}: ", rank);
#if SKEIN_HAS_MPI
    int world_rank = rank;
    int world_size = size;
    SKEIN_MPI_CHECK(MPI_Comm_rank, (MPI_COMM_WORLD, &world_rank));
    SKEIN_MPI_CHECK(MPI_Comm_size, (MPI_COMM_WORLD, &world_size));
    // On a sub-communicator the world rank is what mpirun's output and the job's logs show.
    if (world_size != size || world_rank != rank) {
      prefix = fmt::format("rank {} (world rank {}): ", rank, world_rank);
    }
#endif
    detail::set_error_prefix(prefix);
    detail::set_log_rank({.rank = rank, .prefix = prefix});
  }

#if SKEIN_HAS_MPI
  // Skein's duplicate of the user's communicator, whose MPI errors come back as codes (checked by
  // SKEIN_MPI_CHECK) rather than abort the job.
  void adopt(MPI_Comm user) {
    SKEIN_MPI_CHECK(MPI_Comm_dup, (user, &comm));
    SKEIN_MPI_CHECK(MPI_Comm_set_errhandler, (comm, MPI_ERRORS_RETURN));
  }

  // Rank, size, host name and the node-local rank, from `comm` (already Skein's duplicate).
  void locate() {
    SKEIN_MPI_CHECK(MPI_Comm_rank, (comm, &rank));
    SKEIN_MPI_CHECK(MPI_Comm_size, (comm, &size));
    set_prefix();

    // Every rank's host name reaches every rank with the gathered placement (place()).
    host = this_host();

    // Ranks that can share memory are the ones on one node: their order gives the local rank.
    MPI_Comm node = MPI_COMM_NULL;
    SKEIN_MPI_CHECK(MPI_Comm_split_type, (comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    SKEIN_MPI_CHECK(MPI_Comm_rank, (node, &local_rank));
    SKEIN_MPI_CHECK(MPI_Comm_size, (node, &local_size));
    SKEIN_MPI_CHECK(MPI_Comm_free, (&node));
  }
#endif

  // The settings (the log level first, so that what follows logs at it), this rank's devices,
  // the check that no two ranks share one, and the context.
  void place(const RuntimeOptions& given) {
    RankPlacement own{
        .rank = rank, .host = host, .local_rank = local_rank, .local_size = local_size};
    collectively("reading the log level", [&] {
      if (given.log_level) set_log_level(*given.log_level);
      (void)detail::read_log_level_from_environment("Runtime");
    });
    effective.log_level = log_level();
    PlacementOptions& options = effective.placement;
    std::vector<Device> devices;
    collectively("reading the placement options",
                 [&] { options = PlacementOptions::from_environment(given.placement); });
    collectively("choosing devices", [&] {
      const ApiId api_id = options.api ? *options.api : default_api();
      const Api api = Api::from_id(api_id);
      DeviceFilter filter;
      if (options.device_masks) filter.device_include_masks = *options.device_masks;
      const auto found = platforms_and_devices_by_mask(api, 1, filter);
      if (found.empty()) {
        detail::raise_in(SKEIN_HERE, "Runtime (device placement)",
                         "Run skein-info on that host, and check SKEIN_API, SKEIN_DEVICES and "
                         "CUDA_VISIBLE_DEVICES.",
                         "no {} devices{} on host {}", api.name(),
                         options.device_masks ? fmt::format(" match SKEIN_DEVICES='{}'",
                                                            fmt::join(*options.device_masks, ","))
                                              : std::string(),
                         host);
      }
      // The first platform with matching devices: a context lives on one platform.
      const auto& [platform, candidates] = found.front();
      detail::PlacementRequest request{
          .local_rank = local_rank, .local_size = local_size, .host = host};
      for (const auto& d : candidates) request.candidates.push_back(d.description());
      for (std::size_t i : detail::choose_devices(request, options)) {
        const Device& d = candidates[i];
        devices.push_back(d);
        own.devices.push_back(d.description());
        own.device_ids.push_back(
            detail::device_key(host, d.params().pci_bus_id, api_id, platform.index(), d.index()));
      }
    });

    placement.clear();
    for (const auto& text : all_gather(serialise(own))) placement.push_back(deserialise(text));

    // Every rank has the same gathered placement, so every rank reaches the same verdict.
    if (!options.share_devices.value_or(false)) {
      const auto shared = detail::shared_devices(placement);
      if (!shared.empty()) {
        detail::raise_in(SKEIN_HERE, "Runtime (device placement)",
                         "Set SKEIN_SHARE_DEVICES=1 if ranks may share a device, or give each "
                         "rank its own (SKEIN_DEVICE, SKEIN_DEVICES_PER_RANK, fewer ranks per "
                         "node).",
                         "two ranks on one host would use the same device: {}",
                         fmt::join(shared, "; "));
      }
    }
    collectively("creating the context", [&] { context = Context::from_devices(devices); });
  }
};

Runtime::Runtime(PlacementOptions options)
    : Runtime(WithOptions{}, RuntimeOptions{.placement = std::move(options)}) {}

Runtime::Runtime(WithOptions, const RuntimeOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->host = this_host();
  impl_->set_prefix();
  impl_->place(options);
}

#if SKEIN_HAS_MPI
Runtime::Runtime(int* argc, char*** argv, PlacementOptions options)
    : Runtime(WithOptions{}, argc, argv, RuntimeOptions{.placement = std::move(options)}) {}

Runtime::Runtime(MPI_Comm comm, PlacementOptions options)
    : Runtime(WithOptions{}, comm, RuntimeOptions{.placement = std::move(options)}) {}

Runtime::Runtime(WithOptions, int* argc, char*** argv, const RuntimeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  int initialised = 0, finalised = 0;
  SKEIN_MPI_CHECK(MPI_Initialized, (&initialised));
  SKEIN_MPI_CHECK(MPI_Finalized, (&finalised));
  if (finalised) {
    detail::raise_in(SKEIN_HERE, "Runtime", "Create the runtime before MPI_Finalize.",
                     "MPI has already been finalised and cannot be initialised again");
  }
  if (initialised) {
    SKEIN_MPI_CHECK(MPI_Query_thread, (&impl_->thread_level));
  } else {
    // MULTIPLE: a Communicator's watchdog thread compares the ranks' NCCL calls (the agreement
    // check) on a communicator of its own while the application goes on.
    {
      detail::LeakCheckPause pause;  // what Open MPI keeps until exit (skein/detail/leak_check.hpp)
      SKEIN_MPI_CHECK(MPI_Init_thread, (argc, argv, MPI_THREAD_MULTIPLE, &impl_->thread_level));
    }
    impl_->initialised_mpi = true;
  }
  impl_->uses_mpi = true;
  impl_->adopt(MPI_COMM_WORLD);
  impl_->locate();
  impl_->place(options);
}

Runtime::Runtime(WithOptions, MPI_Comm comm, const RuntimeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  int initialised = 0, finalised = 0;
  SKEIN_MPI_CHECK(MPI_Initialized, (&initialised));
  SKEIN_MPI_CHECK(MPI_Finalized, (&finalised));
  if (!initialised || finalised) {
    detail::raise_in(SKEIN_HERE, "Runtime(MPI_Comm)",
                     "Call MPI_Init (or MPI_Init_thread) first, or let Skein start MPI with "
                     "Runtime(&argc, &argv).",
                     "MPI is {}", finalised ? "already finalised" : "not initialised");
  }
  if (comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, "Runtime(MPI_Comm)",
                     "Pass a communicator this rank belongs to (MPI_Comm_split gives MPI_COMM_NULL "
                     "to ranks with MPI_UNDEFINED color).",
                     "the communicator is MPI_COMM_NULL");
  }
  SKEIN_MPI_CHECK(MPI_Query_thread, (&impl_->thread_level));
  impl_->uses_mpi = true;
  impl_->adopt(comm);
  impl_->locate();
  impl_->place(options);
}

MPI_Comm Runtime::comm() const { return impl_->uses_mpi ? impl_->comm : MPI_COMM_SELF; }
int Runtime::mpi_thread_level() const { return impl_->thread_level; }
#endif

Runtime::~Runtime() = default;

int Runtime::rank() const { return impl_->rank; }
int Runtime::size() const { return impl_->size; }
int Runtime::local_rank() const { return impl_->local_rank; }
int Runtime::local_size() const { return impl_->local_size; }
const std::string& Runtime::host() const { return impl_->host; }
bool Runtime::uses_mpi() const { return impl_->uses_mpi; }
bool Runtime::initialised_mpi() const { return impl_->initialised_mpi; }
const Context& Runtime::context() const { return *impl_->context; }
const std::vector<RankPlacement>& Runtime::placement() const { return impl_->placement; }
const RuntimeOptions& Runtime::options() const { return impl_->effective; }

std::string Runtime::placement_table() const {
  const std::vector<std::string> header{"rank", "host", "local rank", "devices"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : impl_->placement) {
    std::vector<std::string> devices;
    for (std::size_t i = 0; i < p.devices.size(); ++i) {
      devices.push_back(fmt::format("{} [{}]", p.devices[i], p.device_ids[i]));
    }
    rows.push_back({std::to_string(p.rank), p.host,
                    fmt::format("{} of {}", p.local_rank, p.local_size),
                    fmt::format("{}", fmt::join(devices, "; "))});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // The last column is not padded: no trailing blanks.
      out += c + 1 < cells.size() ? fmt::format("{:<{}}  ", cells[c], width[c]) : cells[c];
    }
    return out + "\n";
  };
  std::string table = line(header);
  for (const auto& row : rows) table += line(row);
  return table;
}

}  // namespace skein
