// SPDX-License-Identifier: BSD-3-Clause
// Creating a Communicator: its settings (the code's, overridden by the environment), the members,
// the choice of backend, its own MPI communicators, each step under the creation's deadline.
#include "communicator_impl.hpp"

#include <cmath>

#include "skein/detail/env.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/placement.hpp"
#include "skein/device.hpp"

namespace skein {

namespace {

// The Communicator's variables (detail::env_*: unset or empty is nullopt).
std::optional<bool> agreement_check_from_environment() {
  return detail::parse_env_flag("SKEIN_CHECK_COLLECTIVES",
                                detail::env_value("SKEIN_CHECK_COLLECTIVES"), "Communicator",
                                "check that the ranks make the same collective calls; the default");
}

std::optional<CollectiveBackend> backend_from_environment() {
  return detail::env_choice<CollectiveBackend>(
      "SKEIN_BACKEND", "Communicator",
      {{"auto", CollectiveBackend::automatic,
        "NCCL when every rank has CUDA devices of its own, else MPI"},
       {"nccl", CollectiveBackend::nccl, "NCCL"},
       {"mpi", CollectiveBackend::mpi, "MPI, staged through host memory"}});
}

// SKEIN_COLLECTIVE_TIMEOUT: seconds; 0 waits forever.
std::optional<double> timeout_from_environment() {
  return detail::parse_env_seconds("SKEIN_COLLECTIVE_TIMEOUT",
                                   detail::env_value("SKEIN_COLLECTIVE_TIMEOUT"), "Communicator",
                                   "waits forever");
}

// The settings in effect: each variable that is set overrides the code's value, which overrides the
// default; a backend the request pins wins over SKEIN_BACKEND. Every variable is read (and a bad
// value refused) whatever the code sets, so that a wrong one fails here on every rank alike.
struct CommunicatorSettings {
  CommunicatorOptions options;          // every field set; backend as requested (maybe automatic)
  bool backend_by_environment = false;  // SKEIN_BACKEND chose nccl or mpi (for the hints)
};

CommunicatorSettings resolve_settings(const detail::CommunicatorRequest& request) {
  const CommunicatorOptions& code = request.options;
  if (code.timeout_seconds &&
      !(std::isfinite(*code.timeout_seconds) && *code.timeout_seconds >= 0)) {
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Pass a number of seconds >= 0 (0: no limit), or leave it empty.",
                     "CommunicatorOptions::timeout_seconds is {}", *code.timeout_seconds);
  }
  (void)detail::call_profile();
  const auto check = agreement_check_from_environment();
  const auto timeout = timeout_from_environment();
  const auto blocking = detail::nccl_blocking_from_environment();
  const auto backend = backend_from_environment();
  CommunicatorSettings s;
  s.options.check_agreement = check.value_or(code.check_agreement.value_or(true));
  s.options.timeout_seconds =
      timeout.value_or(code.timeout_seconds.value_or(detail::kDefaultCollectiveTimeout));
  s.options.nccl_blocking = blocking.value_or(code.nccl_blocking.value_or(true));
  const CollectiveBackend coded = code.backend.value_or(CollectiveBackend::automatic);
  if (backend && !(request.backend_pinned && coded != CollectiveBackend::automatic)) {
    s.options.backend = *backend;
    s.backend_by_environment = *backend != CollectiveBackend::automatic;
  } else {
    s.options.backend = coded;
  }
  return s;
}

}  // namespace

#if SKEIN_HAS_MPI
namespace {

// A Communicator made without a Runtime: the log learns the rank from MPI_COMM_WORLD, so that its
// lines carry it and LogScope::collective prints once (a Runtime sets it before, and wins).
void learn_log_rank() {
  if (detail::log_rank().rank) return;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  detail::set_log_rank(
      {.rank = rank, .prefix = size > 1 ? fmt::format("rank {}: ", rank) : std::string()});
}

constexpr const char* kCreationHint =
    "Every rank of the MPI communicator must create the Communicator; another rank is late, "
    "failed, "
    "or took another path. Raise SKEIN_COLLECTIVE_TIMEOUT if a rank is legitimately slow to get "
    "here.";

// A communicator-creation step's MPI request, waited on against the creation's one `deadline`
// (agreement.hpp's wait_or_abandon: on a timeout `keep` is kept until exit and the TimeoutError
// names the step, the variable and what to do).
void wait_creation_step(MPI_Request& request, CollectiveClock::time_point deadline,
                        double timeout_s, const char* step, std::shared_ptr<void> keep) {
  detail::wait_or_abandon(request, deadline, timeout_s, "Communicator",
                          fmt::format("creating a Communicator: {}", step), std::move(keep),
                          kCreationHint);
}

// A duplicate of `parent` (MPI_Comm_idup) against the creation's deadline.
MPI_Comm duplicate(MPI_Comm parent, CollectiveClock::time_point deadline, double timeout_s,
                   const char* step) {
  return detail::duplicate_comm(parent, deadline, timeout_s, "Communicator",
                                fmt::format("creating a Communicator: {}", step), kCreationHint);
}

// What can be checked before any collective, the same on every rank: MPI is up, the communicator
// is one, each device is listed once (every device of the context when none is), and this build
// has the backend asked for. Returns the devices.
std::vector<std::size_t> check_request(MPI_Comm user_comm, const Context& context,
                                       std::vector<std::size_t> device_idxs,
                                       CollectiveBackend requested, bool by_environment) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    detail::raise_in(SKEIN_HERE, "Communicator", "Create a skein::Runtime first, or call MPI_Init.",
                     "MPI is not initialised");
  }
  if (user_comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, "Communicator", "Pass a valid communicator, e.g. MPI_COMM_WORLD.",
                     "the MPI communicator is MPI_COMM_NULL");
  }
  if (device_idxs.empty()) {
    for (std::size_t i = 0; i < context.num_devices(); ++i) device_idxs.push_back(i);
  }
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    detail::check_device_idx(context, device_idxs[i], "Communicator");
    for (std::size_t j = 0; j < i; ++j) {
      if (device_idxs[i] == device_idxs[j]) {
        detail::raise_in(SKEIN_HERE, "Communicator", "List each device once.",
                         "device {} is listed twice in the communicator's devices ({})",
                         device_idxs[i], fmt::join(device_idxs, ", "));
      }
    }
  }
#if !SKEIN_HAS_NCCL
  if (requested == CollectiveBackend::nccl) {
    detail::raise_in(
        SKEIN_HERE, "Communicator",
        by_environment
            ? "Set SKEIN_BACKEND=mpi or auto, or build Skein with NCCL."
            : "Use CollectiveBackend::mpi or automatic (CommunicatorOptions::backend), or "
              "build Skein with NCCL.",
        "this build of Skein has no NCCL backend{}",
        by_environment ? " (SKEIN_BACKEND=nccl asks for it)" : "");
  }
#else
  (void)requested, (void)by_environment;
#endif
  return device_idxs;
}

// Every rank's members (impl.map, impl.first_member), from each rank's count; returns the ranks
// whose devices are not CUDA devices.
std::vector<int> gather_members(Communicator::Impl& impl, CollectiveClock::time_point deadline) {
  const bool cuda = impl.context.api().id() == ApiId::cuda;
  MPI_Request request = MPI_REQUEST_NULL;
  // On the heap: after a timeout MPI may still use the buffers, which are then kept until exit.
  auto exchange =
      std::make_shared<std::vector<int>>(2 + 2 * static_cast<std::size_t>(impl.mpi_size));
  int* mine = exchange->data();
  mine[0] = static_cast<int>(impl.device_idxs.size());
  mine[1] = cuda ? 1 : 0;
  SKEIN_MPI_CHECK(MPI_Iallgather, (mine, 2, MPI_INT, mine + 2, 2, MPI_INT, impl.comm, &request));
  wait_creation_step(request, deadline, impl.timeout_s, "MPI_Iallgather of the members", exchange);
  const int* all = mine + 2;
  auto& map = impl.map;
  std::vector<int> non_cuda_ranks;
  for (int r = 0; r < impl.mpi_size; ++r) {
    const auto count = static_cast<std::size_t>(all[2 * static_cast<std::size_t>(r)]);
    map.first_member_of_rank.push_back(map.member_rank.size());
    map.members_of_rank.push_back(count);
    for (std::size_t i = 0; i < count; ++i) map.member_rank.push_back(r);
    if (!all[2 * r + 1]) non_cuda_ranks.push_back(r);
  }
  impl.first_member = map.first_member_of_rank[static_cast<std::size_t>(impl.mpi_rank)];
  return non_cuda_ranks;
}

// Ranks that share a physical device (its host and PCI bus id, where the driver gives one), which
// NCCL refuses (one rank per GPU).
struct SharedDevices {
  std::vector<std::string> pairs;  // "ranks a and b", the same on every rank
  std::string text;                // in words, with this rank's shared devices
};

SharedDevices find_shared_devices(const Communicator::Impl& impl,
                                  CollectiveClock::time_point deadline) {
  const auto& map = impl.map;
  const auto& device_idxs = impl.device_idxs;
  const Context& context = impl.context;
  auto keys =
      std::make_shared<std::vector<std::uint64_t>>(device_idxs.size() + map.member_rank.size());
  char host_name[256] = {};
  const std::string host =
      gethostname(host_name, sizeof(host_name) - 1) == 0 ? host_name : "unknown-host";
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    const Device& d = context.device(device_idxs[i]);
    (*keys)[i] = detail::agreement_hash(
        fmt::format("{}|{}", host,
                    detail::device_key(host, d.params().pci_bus_id, context.api().id(),
                                       d.platform().index(), d.index())));
  }
  std::vector<int> counts, displs;
  for (int r = 0; r < impl.mpi_size; ++r) {
    counts.push_back(static_cast<int>(map.members_of_rank[static_cast<std::size_t>(r)]));
    displs.push_back(static_cast<int>(map.first_member_of_rank[static_cast<std::size_t>(r)]));
  }
  std::uint64_t* base = keys->data();
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Iallgatherv, (base, static_cast<int>(device_idxs.size()), MPI_UINT64_T,
                                    base + device_idxs.size(), counts.data(), displs.data(),
                                    MPI_UINT64_T, impl.comm, &request));
  wait_creation_step(request, deadline, impl.timeout_s, "MPI_Iallgatherv of the devices", keys);
  const std::uint64_t* all_keys = keys->data() + device_idxs.size();
  SharedDevices out;
  std::vector<std::string> mine_shared;
  for (std::size_t a = 0; a < map.member_rank.size(); ++a) {
    for (std::size_t b = a + 1; b < map.member_rank.size(); ++b) {
      if (all_keys[a] != all_keys[b] || map.member_rank[a] == map.member_rank[b]) continue;
      out.pairs.push_back(fmt::format("ranks {} and {}", map.member_rank[a], map.member_rank[b]));
      for (std::size_t m : {a, b}) {
        if (map.member_rank[m] == impl.mpi_rank) {
          mine_shared.push_back(context.device(device_idxs[m - impl.first_member]).description());
        }
      }
    }
  }
  std::sort(mine_shared.begin(), mine_shared.end());
  mine_shared.erase(std::unique(mine_shared.begin(), mine_shared.end()), mine_shared.end());
  if (!out.pairs.empty()) {
    out.text = fmt::format("{} share a device{}", fmt::join(out.pairs, ", "),
                           mine_shared.empty()
                               ? std::string()
                               : fmt::format(" (this rank's: {})", fmt::join(mine_shared, ", ")));
  }
  return out;
}

// The backend, from what was asked for and what the ranks gathered; NCCL where it cannot run is
// refused on every rank alike (the facts were gathered), so that no rank waits in NCCL's set-up.
CollectiveBackend choose_backend(const Communicator::Impl& impl, CollectiveBackend requested,
                                 bool by_environment, const std::vector<int>& non_cuda_ranks,
                                 const SharedDevices& shared) {
  if (requested == CollectiveBackend::automatic) {
    if (!SKEIN_HAS_NCCL || !non_cuda_ranks.empty()) return CollectiveBackend::mpi;
    if (shared.pairs.empty()) return CollectiveBackend::nccl;
    // Said once per process, and the same on every rank (from what they gathered): rank 0 says it.
    static std::once_flag said;
    std::call_once(said, [&] {
      detail::log(
          LogLevel::warning, LogScope::collective,
          "Communicator: {}; NCCL allows one rank per GPU, so the collectives use the MPI "
          "backend (staged through host memory). SKEIN_BACKEND=mpi chooses it without this note.",
          shared.text);
    });
    return CollectiveBackend::mpi;
  }
  if (requested == CollectiveBackend::nccl && !non_cuda_ranks.empty()) {
    std::vector<std::string> mine_described;
    for (auto idx : impl.device_idxs)
      mine_described.push_back(impl.context.device(idx).description());
    const bool me = std::find(non_cuda_ranks.begin(), non_cuda_ranks.end(), impl.mpi_rank) !=
                    non_cuda_ranks.end();
    detail::raise_in(
        SKEIN_HERE, "Communicator",
        by_environment
            ? "Set SKEIN_BACKEND=mpi or auto (MPI works with any device), or give "
              "every rank CUDA devices."
            : "Use CollectiveBackend::mpi or automatic (CommunicatorOptions::backend; MPI "
              "works with any device), or give every rank CUDA devices.",
        "the NCCL backend{} needs CUDA devices, but {} {} other devices{}",
        by_environment ? " (SKEIN_BACKEND=nccl)" : "", ranks_list(non_cuda_ranks),
        non_cuda_ranks.size() == 1 ? "has" : "have",
        me ? fmt::format(" (this rank's: {})", fmt::join(mine_described, ", ")) : "");
  }
  if (requested == CollectiveBackend::nccl && !shared.pairs.empty()) {
    // Before NCCL would refuse it ("Duplicate GPU detected").
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Use the MPI backend (SKEIN_BACKEND=mpi, or CollectiveBackend::mpi or "
                     "automatic in the code), or give each rank a GPU of its own.",
                     "the NCCL backend{} cannot run on ranks that share a GPU: {}; NCCL allows one "
                     "rank per GPU",
                     by_environment ? " (SKEIN_BACKEND=nccl)" : "", shared.text);
  }
  return requested;
}

}  // namespace

namespace detail {
std::shared_ptr<Communicator::Impl> make_communicator_impl(MPI_Comm user_comm,
                                                           const Context& context,
                                                           std::vector<std::size_t> device_idxs,
                                                           const CommunicatorRequest& asked) {
  // Everything that can fail locally fails before the first collective, identically on every
  // rank that has the same environment and code. Every variable a Communicator reads is read here,
  // before anything is made, whichever backend it gets: a bad value raises LogicError from the
  // constructor, never later from a call, a thread or a destructor.
  const CommunicatorSettings settings = resolve_settings(asked);
  const double timeout_s = *settings.options.timeout_seconds;
  const CollectiveBackend requested = *settings.options.backend;
  device_idxs = check_request(user_comm, context, std::move(device_idxs), requested,
                              settings.backend_by_environment);

  learn_log_rank();
  auto impl = std::make_unique<Communicator::Impl>(context);
  impl->options = settings.options;
  impl->check_agreement = *settings.options.check_agreement;
  impl->timeout_s = timeout_s;
  impl->device_idxs = device_idxs;
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&thread_level);
  impl->thread_multiple = thread_level == MPI_THREAD_MULTIPLE;
  const auto deadline = impl->deadline();

  // Skein's own communicator: its traffic never mixes with the user's, and MPI errors on it
  // come back as codes (raised as exceptions) instead of aborting the job.
  impl->comm = duplicate(user_comm, deadline, timeout_s, "MPI_Comm_idup");
  SKEIN_MPI_CHECK(MPI_Comm_set_errhandler, (impl->comm, MPI_ERRORS_RETURN));
  SKEIN_MPI_CHECK(MPI_Comm_rank, (impl->comm, &impl->mpi_rank));
  SKEIN_MPI_CHECK(MPI_Comm_size, (impl->comm, &impl->mpi_size));

  const std::vector<int> non_cuda_ranks = gather_members(*impl, deadline);
  const SharedDevices shared = find_shared_devices(*impl, deadline);
  const CollectiveBackend chosen =
      choose_backend(*impl, requested, settings.backend_by_environment, non_cuda_ranks, shared);

  // The agreement check's communicators: the digests (posted by the watchdog of an asynchronous
  // backend) and the fingerprints after a mismatch, each apart from the data's traffic.
  if (impl->checks()) {
    impl->fp_comm =
        duplicate(impl->comm, deadline, timeout_s, "MPI_Comm_idup (the agreement check)");
    impl->diag_comm =
        duplicate(impl->comm, deadline, timeout_s, "MPI_Comm_idup (the agreement check)");
    if (chosen != CollectiveBackend::nccl) impl->make_persistent();
  }
  // The reductions of host values (detail::all_reduce_host): their own, so that a rank that made
  // another call at that point never pairs a gather with a backend's data traffic.
  if (impl->mpi_size > 1) {
    impl->host_comm =
        duplicate(impl->comm, deadline, timeout_s, "MPI_Comm_idup (reductions of host values)");
  }

  const int first = static_cast<int>(impl->first_member);
#if SKEIN_HAS_NCCL
  if (chosen == CollectiveBackend::nccl) {
    impl->backend = detail::make_nccl_backend(impl->comm, impl->map, first, context, device_idxs,
                                              timeout_s, *settings.options.nccl_blocking);
  }
#endif
  if (chosen == CollectiveBackend::mpi) {
    impl->backend =
        detail::make_mpi_backend(impl->comm, impl->map, first, context, device_idxs, timeout_s);
  }
  impl->options.backend = chosen;
  detail::log(
      LogLevel::info, LogScope::collective,
      "Communicator: {} over {} member(s) on {} rank(s); collective timeout {}, agreement check {}",
      impl->backend->description(), impl->map.member_rank.size(), impl->mpi_size,
      timeout_s > 0 ? fmt::format("{} s", timeout_s) : std::string("none"),
      impl->checks() ? "on"
                     : (impl->check_agreement ? "on (nothing to compare on one rank)" : "off"));
  impl->async_agreement = impl->asynchronous();
  if (impl->asynchronous()) impl->start_watchdog();
  std::shared_ptr<Communicator::Impl> made = std::move(impl);
  made->results->owner = made;
  return made;
}
}  // namespace detail
#endif

}  // namespace skein
