// SPDX-License-Identifier: BSD-3-Clause
// Checkpoints of distributed arrays (see <skein/checkpoint.hpp> for the protocol on disk).
//
// The HDF5 file is written by every rank through hdf5::File; everything else (the directory,
// fsync, rename, checksums, markers, pruning, choosing a checkpoint to restart from) is done by
// rank 0 alone, which then tells the others the outcome: its result as JSON, or its error, which
// every rank raises. So the ranks never disagree about which checkpoint exists or is used.
//
// Why the order of the steps is safe against a kill at any point:
//   - the file gets its final name only once it is complete and synced, by rename(), which is
//     atomic: a crash leaves the old state or the new one, never a half-written checkpoint-N.h5;
//   - the marker, which alone makes a checkpoint complete, is written after that, again through
//     a synced temporary and rename(), and holds the file's size and SHA-256, so that a file
//     damaged later is recognised;
//   - the directory is fsync()ed after each rename, so that the renames survive a power loss;
//   - pruning removes a marker before its file: at no moment does a marker name a missing file.
#include "skein/checkpoint.hpp"

#include "checkpoint_arrays.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <set>

#include "skein/detail/checkpoint_stages.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/trace.hpp"
#include "skein/detail/sha256.hpp"
#include "skein/communicator.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <nlohmann/json.hpp>

#include "skein/detail/agreement.hpp"
#include "skein/detail/mpi_util.hpp"
#endif

namespace skein {

std::string_view name(CheckpointStage stage) {
  switch (stage) {
    case CheckpointStage::created: return "created";
    case CheckpointStage::written: return "written";
    case CheckpointStage::renamed: return "renamed";
    case CheckpointStage::marked: return "marked";
  }
  return "?";
}

namespace detail {
namespace {
struct StageObserver {
  std::mutex mutex;
  CheckpointStageObserver observer;
};
StageObserver& stage_observer() {
  static StageObserver s;
  return s;
}
}  // namespace

CheckpointStageObserver set_checkpoint_stage_observer(CheckpointStageObserver observer) {
  auto& s = stage_observer();
  std::lock_guard lock(s.mutex);
  std::swap(s.observer, observer);
  return observer;
}
}  // namespace detail

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kCorruptHint =
    "Restart from an older checkpoint (list() shows them; verify() checks one, restore() reads "
    "it), set CheckpointOptions::on_corrupt = OnCorrupt::fall_back to take the newest good one, "
    "or move the damaged files out of the directory.";

std::string padded(std::int64_t step) { return fmt::format("{:010}", step); }
std::string data_name(std::int64_t step) { return "checkpoint-" + padded(step) + ".h5"; }
std::string marker_name(std::int64_t step) { return "checkpoint-" + padded(step) + ".done"; }
std::string temp_name(std::int64_t step) { return ".checkpoint-" + padded(step) + ".h5.tmp"; }
std::string marker_temp_name(std::int64_t step) {
  return ".checkpoint-" + padded(step) + ".done.tmp";
}

// The step of "checkpoint-<digits><suffix>", or nullopt for any other name.
std::optional<std::int64_t> step_of(const std::string& file, std::string_view suffix) {
  constexpr std::string_view prefix = "checkpoint-";
  if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string digits =
      file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

[[noreturn]] void raise_errno(int error, const std::string& what, const std::string& call) {
  throw RuntimeError(ErrorInfo{.what = fmt::format("{}: {}", what, std::strerror(error)),
                               .call = call,
                               .code = error,
                               .has_code = true,
                               .hint = "Check that the checkpoint directory exists, is writable "
                                       "and has space."});
}

// fsync() of a file or a directory (after a rename, the directory's entry is what must last).
void sync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) raise_errno(errno, fmt::format("opening '{}' to sync it", path.string()), "open");
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    raise_errno(error, fmt::format("syncing '{}'", path.string()), "fsync");
  }
  ::close(fd);
}

void rename_path(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    raise_errno(errno, fmt::format("renaming '{}' to '{}'", from.string(), to.string()), "rename");
  }
}

// Removes a file if it is there (a missing one is fine: pruning may race a manual clean-up).
void remove_file(const fs::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    raise_errno(errno, fmt::format("removing '{}'", path.string()), "unlink");
  }
}

struct Digest {
  std::uint64_t bytes = 0;
  std::string sha256;
};

Digest digest_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    raise_errno(errno, fmt::format("opening '{}' to compute its SHA-256", path.string()), "open");
  detail::Sha256 hash;
  std::vector<char> buffer(std::size_t{4} << 20);
  Digest d;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    hash.update(std::as_bytes(std::span(buffer.data(), n)));
    d.bytes += n;
  }
  if (in.bad()) raise_errno(errno, fmt::format("reading '{}'", path.string()), "read");
  const auto sum = hash.finish();
  d.sha256 = detail::to_hex(sum);
  return d;
}

// Writes `text` durably as `final`: a synced temporary renamed over it, then the directory synced.
void write_durably(const fs::path& temp, const fs::path& final, const std::string& text) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise_errno(errno, fmt::format("creating '{}'", temp.string()), "open");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      raise_errno(error, fmt::format("writing '{}'", temp.string()), "write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    raise_errno(error, fmt::format("syncing '{}'", temp.string()), "fsync");
  }
  if (::close(fd) != 0) raise_errno(errno, fmt::format("closing '{}'", temp.string()), "close");
  rename_path(temp, final);
  sync_path(final.parent_path(), true);
}

std::string time_bits(double t) { return fmt::format("{:016x}", std::bit_cast<std::uint64_t>(t)); }

json info_to_json(const CheckpointInfo& info) {
  json arrays = json::object();
  for (const auto& [n, a] : info.arrays) {
    arrays[n] = {{"dtype", std::string(name(a.dtype))},
                 {"shape", a.shape},
                 {"kind", std::string(detail::checkpoint_kind(a))}};
  }
  json j{{"format", "skein checkpoint marker"},
         {"format_version", checkpoint_format_version},
         {"skein_version", SKEIN_VERSION_STRING},
         {"step", info.step},
         {"time_bits", time_bits(info.time)},
         {"file", info.file.filename().string()},
         {"bytes", info.bytes},
         {"sha256", info.sha256},
         {"ranks", info.ranks},
         {"arrays", arrays}};
  // For people reading the marker; time_bits is what is read back (JSON has no NaN or inf).
  j["time"] = std::isfinite(info.time) ? json(info.time) : json(fmt::format("{}", info.time));
  return j;
}

// The info a marker describes. Throws CheckpointError saying what is wrong with it.
CheckpointInfo info_from_marker(const json& j, const fs::path& marker) {
  auto fail = [&](const std::string& what) -> CheckpointError {
    return CheckpointError(
        ErrorInfo{.what = fmt::format("checkpoint marker '{}' {}", marker.string(), what),
                  .call = "CheckpointManager",
                  .hint = kCorruptHint});
  };
  if (!j.is_object() || j.value("format", "") != "skein checkpoint marker") {
    throw fail("is not a Skein checkpoint marker (no \"format\": \"skein checkpoint marker\")");
  }
  if (j.value("format_version", 0) > checkpoint_format_version) {
    throw fail(fmt::format("has format version {}, newer than this Skein's {}: use a newer Skein",
                           j.value("format_version", 0), checkpoint_format_version));
  }
  CheckpointInfo info;
  try {
    info.step = j.at("step").get<std::int64_t>();
    info.time =
        std::bit_cast<double>(std::stoull(j.at("time_bits").get<std::string>(), nullptr, 16));
    info.file = marker.parent_path() / j.at("file").get<std::string>();
    info.marker = marker;
    info.bytes = j.at("bytes").get<std::uint64_t>();
    info.sha256 = j.at("sha256").get<std::string>();
    info.ranks = j.at("ranks").get<int>();
    for (const auto& [n, a] : j.at("arrays").items()) {
      info.arrays[n] = detail::checkpoint_entry_of_kind(
          a.at("kind").get<std::string>(), dtype_from_name(a.at("dtype").get<std::string>()),
          a.at("shape").get<Shape>());
    }
  } catch (const std::exception& e) {
    throw fail(fmt::format("is incomplete or malformed ({})", e.what()));
  }
  if (info.file.filename() != data_name(info.step) || marker.filename() != marker_name(info.step)) {
    throw fail(fmt::format("names file '{}' for step {}; expected '{}'",
                           info.file.filename().string(), info.step, data_name(info.step)));
  }
  return info;
}

CheckpointInfo read_marker(const fs::path& marker) {
  std::ifstream in(marker, std::ios::binary);
  if (!in) {
    throw CheckpointError(ErrorInfo{.what = fmt::format("checkpoint marker '{}' cannot be read: {}",
                                                        marker.string(), std::strerror(errno)),
                                    .call = "CheckpointManager",
                                    .hint = kCorruptHint});
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw CheckpointError(ErrorInfo{
        .what =
            fmt::format("checkpoint marker '{}' is not valid JSON ({})", marker.string(), e.what()),
        .call = "CheckpointManager",
        .hint = kCorruptHint});
  }
  return info_from_marker(j, marker);
}

// Checks a complete checkpoint's file against its marker; the marker's info when they match.
CheckpointInfo check_checkpoint(const fs::path& marker) {
  CheckpointInfo info = read_marker(marker);
  auto fail = [&](const std::string& what) -> CheckpointError {
    return CheckpointError(
        ErrorInfo{.what = what, .call = "CheckpointManager", .hint = kCorruptHint});
  };
  std::error_code ec;
  const auto size = fs::file_size(info.file, ec);
  if (ec) {
    throw fail(
        fmt::format("checkpoint file '{}' of step {} cannot be read ({}), although its marker "
                    "'{}' says it is complete",
                    info.file.string(), info.step, ec.message(), marker.string()));
  }
  if (size != info.bytes) {
    throw fail(
        fmt::format("checkpoint file '{}' of step {} has {} bytes, but its marker '{}' records "
                    "{} (truncated or changed after it was written)",
                    info.file.string(), info.step, size, marker.string(), info.bytes));
  }
  const Digest d = digest_of(info.file);
  if (d.sha256 != info.sha256) {
    throw fail(
        fmt::format("checkpoint file '{}' of step {} has SHA-256 {}, but its marker '{}' "
                    "records {} (changed or damaged after it was written)",
                    info.file.string(), info.step, d.sha256, marker.string(), info.sha256));
  }
  return info;
}

// What the directory holds, by step.
struct Scan {
  std::set<std::int64_t> markers, data;
  std::vector<fs::path> temporaries;
};

Scan scan(const fs::path& dir) {
  Scan s;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string n = entry.path().filename().string();
    if (auto step = step_of(n, ".done"))
      s.markers.insert(*step);
    else if (auto step = step_of(n, ".h5"))
      s.data.insert(*step);
    else if (n.rfind(".checkpoint-", 0) == 0 && n.size() > 4 &&
             n.compare(n.size() - 4, 4, ".tmp") == 0) {
      s.temporaries.push_back(entry.path());
    }
  }
  if (ec)
    raise_errno(ec.value(), fmt::format("listing checkpoint directory '{}'", dir.string()),
                "opendir");
  return s;
}

}  // namespace

struct CheckpointManager::Impl {
  // The ranks' own duplicate of the caller's communicator, with its deadlines (agreement.hpp).
  detail::Agreement agreement;
  MPI_Comm comm = MPI_COMM_NULL;  // agreement.comm()
  int rank = 0;
  int size = 1;
  fs::path dir;
  CheckpointOptions options;

  std::string broadcast_string(const std::string& call, const std::string& text, int root) {
    return agreement.broadcast_string(call, text, root);
  }

  void share_failure(std::exception_ptr mine, const std::string& call) {
    agreement.share_failure<CheckpointError>(
        std::move(mine), call, fmt::format("(checkpoint directory '{}')", dir.string()));
  }

  // Runs `f` on rank 0, shares its failure, and returns its result on every rank.
  template <class F>
  std::string on_rank0(const std::string& call, F&& f) {
    std::string result;
    std::exception_ptr failure;
    if (rank == 0) {
      try {
        result = f();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    share_failure(failure, call);
    return broadcast_string(call, result, 0);
  }

  // Runs `f` on every rank and shares any failure.
  template <class F>
  void everywhere(const std::string& call, F&& f) {
    std::exception_ptr failure;
    try {
      f();
    } catch (...) {
      failure = std::current_exception();
    }
    share_failure(failure, call);
  }

  void agree_on_call(const std::string& call, const std::string& description) {
    agreement.agree_on_call(call, description);
  }

  // A stage boundary: the tests' observer (skein/detail/checkpoint_stages.hpp) on every rank, and
  // rank 0's hook.
  void stage_done(CheckpointStage stage, std::int64_t step) {
    detail::CheckpointStageObserver observer;
    {
      auto& s = detail::stage_observer();
      std::lock_guard lock(s.mutex);
      observer = s.observer;
    }
    if (observer) observer({.stage = stage, .step = step, .rank = rank, .directory = dir.string()});
    if (rank != 0) return;
    if (options.after_stage) options.after_stage(stage, step);
  }

  // Rank 0: the newest complete checkpoint that matches its marker (see OnCorrupt), or nullopt.
  std::optional<CheckpointInfo> choose_latest() const {
    const Scan s = scan(dir);
    std::optional<CheckpointInfo> chosen;
    for (auto it = s.markers.rbegin(); it != s.markers.rend() && !chosen; ++it) {
      try {
        chosen = check_checkpoint(dir / marker_name(*it));
      } catch (const CheckpointError& e) {
        if (options.on_corrupt == OnCorrupt::refuse) throw;
        detail::log(LogLevel::warning, LogScope::rank,
                    "checkpoint of step {} is not used: {}; falling back to an older one "
                    "(OnCorrupt::fall_back)",
                    *it, e.info().what);
      }
    }
    // Incomplete ones newer than the choice: a job killed while writing them. Said, not used.
    const std::int64_t newest = chosen ? chosen->step : -1;
    for (std::int64_t step : s.data) {
      if (step > newest && !s.markers.count(step)) {
        detail::log(
            LogLevel::warning, LogScope::rank,
            "checkpoint file '{}' has no completion marker (its write did not finish): not used",
            (dir / data_name(step)).string());
      }
    }
    return chosen;
  }

  // Rank 0, after a checkpoint is complete: keeps the newest `keep` complete ones and removes
  // what killed writes left (temporaries, unmarked files).
  void prune() const {
    const Scan s = scan(dir);
    for (const auto& t : s.temporaries) remove_file(t);
    for (std::int64_t step : s.data) {
      if (!s.markers.count(step)) remove_file(dir / data_name(step));
    }
    if (options.keep > 0 && s.markers.size() > options.keep) {
      std::size_t kept = 0;
      for (auto it = s.markers.rbegin(); it != s.markers.rend(); ++it) {
        if (kept++ < options.keep) continue;
        remove_file(dir / marker_name(*it));  // the marker first: never one naming a missing file
        remove_file(dir / data_name(*it));
      }
    }
    sync_path(dir, true);
  }
};

namespace {

json infos_to_json(const std::vector<CheckpointInfo>& infos) {
  json j = json::array();
  for (const auto& i : infos) j.push_back(info_to_json(i));
  return j;
}

CheckpointInfo info_from_broadcast(const json& j, const fs::path& dir) {
  return info_from_marker(j, dir / marker_name(j.at("step").get<std::int64_t>()));
}

std::string describe_arrays(const CheckpointArrays& arrays) {
  return detail::describe_checkpoint_arrays(arrays);
}

std::string describe_attributes(const hdf5::Attributes& attributes) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : attributes) parts.push_back(k + "=" + hdf5::to_string(v));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

CheckpointManager::CheckpointManager(Communicator& comm, std::filesystem::path directory,
                                     CheckpointOptions options)
    : CheckpointManager(comm.mpi_comm(), std::move(directory), std::move(options)) {}

CheckpointManager::CheckpointManager(MPI_Comm comm, std::filesystem::path directory,
                                     CheckpointOptions options)
    : impl_(std::make_unique<Impl>()) {
  const std::string call = "CheckpointManager";
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    detail::raise_in(SKEIN_HERE, call, "Create a skein::Runtime first, or call MPI_Init.",
                     "MPI is not initialised");
  }
  if (comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, call, "Pass the arrays' communicator.",
                     "the MPI communicator is MPI_COMM_NULL");
  }
  Impl& m = *impl_;
  m.agreement = detail::Agreement(
      comm, fmt::format("checkpoint directory '{}'", directory.string()),
      "Make every rank call the CheckpointManager in the same order with the same "
      "arguments (step, time, array names, shapes, dtypes, attribute values).",
      call);
  m.comm = m.agreement.comm();
  m.rank = m.agreement.rank();
  m.size = m.agreement.size();
  m.dir = std::move(directory);
  m.options = std::move(options);
  m.agree_on_call(call, fmt::format("CheckpointManager '{}' keep {} on_corrupt {}", m.dir.string(),
                                    m.options.keep, static_cast<int>(m.options.on_corrupt)));
  m.on_rank0(call, [&] {
    if (m.dir.empty()) {
      detail::raise_in(SKEIN_HERE, call, "Pass the directory to keep checkpoints in.",
                       "the directory is empty");
    }
    std::error_code ec;
    fs::create_directories(m.dir, ec);
    if (ec || !fs::is_directory(m.dir)) {
      detail::raise_in<RuntimeError>(SKEIN_HERE, call,
                                     "Pass a directory that can be created and written (on a file "
                                     "system every rank sees).",
                                     "checkpoint directory '{}' cannot be created: {}",
                                     m.dir.string(),
                                     ec ? ec.message() : "a file of that name is in the way");
    }
    return std::string();
  });
}

CheckpointManager::~CheckpointManager() = default;
CheckpointManager::CheckpointManager(CheckpointManager&&) noexcept = default;
CheckpointManager& CheckpointManager::operator=(CheckpointManager&&) noexcept = default;

const std::filesystem::path& CheckpointManager::directory() const { return impl_->dir; }
const CheckpointOptions& CheckpointManager::options() const { return impl_->options; }

CheckpointInfo CheckpointManager::write(std::int64_t step, double time,
                                        const CheckpointArrays& arrays,
                                        const hdf5::Attributes& attributes) {
  static const detail::TraceName trace_name = detail::trace_name("checkpoint write");
  detail::TraceRange trace(trace_name);
  const std::string call = "CheckpointManager::write";
  Impl& m = *impl_;
  m.agree_on_call(
      call, fmt::format("write step {} time {} arrays {{{}}} attributes {{{}}}", step,
                        time_bits(time), describe_arrays(arrays), describe_attributes(attributes)));
  m.everywhere(call, [&] {
    if (step < 0) {
      detail::raise_in(SKEIN_HERE, call, "Pass a step number of 0 or more.", "step {} is negative",
                       step);
    }
    for (const auto& [n, a] : arrays) {
      if (n.empty() || n.front() == '/') {
        detail::raise_in(SKEIN_HERE, call, "Name arrays like \"u\" or \"fields/u\".",
                         "array name '{}' is empty or starts with '/'", n);
      }
    }
    for (const auto& [k, v] : attributes) {
      if (k.empty() || k.rfind("skein_", 0) == 0) {
        detail::raise_in(
            SKEIN_HERE, call,
            "Name user attributes without the skein_ prefix (Skein's own attributes use it).",
            "attribute name '{}' is {}", k, k.empty() ? "empty" : "reserved for Skein");
      }
    }
  });
  const fs::path temp = m.dir / temp_name(step);
  const fs::path final = m.dir / data_name(step);
  const fs::path marker = m.dir / marker_name(step);

  // A checkpoint of this step being replaced stops being complete first.
  m.on_rank0(call, [&] {
    std::error_code ec;
    fs::create_directories(m.dir, ec);
    if (fs::exists(marker)) {
      remove_file(marker);
      sync_path(m.dir, true);
    }
    return std::string();
  });

  CheckpointInfo info;
  info.step = step;
  info.time = time;
  info.file = final;
  info.marker = marker;
  info.ranks = m.size;
  info.attributes = attributes;
  for (const auto& [n, a] : arrays) info.arrays[n] = detail::checkpoint_entry(a);

  {
    hdf5::File file = hdf5::File::create(m.comm, temp.string(), m.options.file);
    file.set_attribute("/", "skein_checkpoint_step", std::int64_t{step});
    file.set_attribute("/", "skein_checkpoint_time", time);
    for (const auto& [k, v] : attributes) file.set_attribute("/", k, v);
    m.everywhere(call, [&] { m.stage_done(CheckpointStage::created, step); });
    hdf5::WriteOptions wo = m.options.write;
    wo.step = step;
    wo.time = time;
    wo.attributes.clear();
    wo.overwrite = false;
    for (const auto& [n, a] : arrays) {
      std::visit([&](const auto& x) { file.write(n, x, wo); }, a);
    }
    m.everywhere(call, [&] { m.stage_done(CheckpointStage::written, step); });
    file.flush();
    file.close();
  }

  const std::string result = m.on_rank0(call, [&] {
    sync_path(temp, false);
    const Digest d = digest_of(temp);
    info.bytes = d.bytes;
    info.sha256 = d.sha256;
    rename_path(temp, final);
    sync_path(m.dir, true);
    m.stage_done(CheckpointStage::renamed, step);
    write_durably(m.dir / marker_temp_name(step), marker, info_to_json(info).dump(2) + "\n");
    m.stage_done(CheckpointStage::marked, step);
    m.prune();
    return info_to_json(info).dump();
  });
  CheckpointInfo out = info_from_broadcast(json::parse(result), m.dir);
  out.attributes = attributes;
  return out;
}

std::vector<CheckpointInfo> CheckpointManager::list() {
  const std::string call = "CheckpointManager::list";
  Impl& m = *impl_;
  m.agree_on_call(call, "list");
  const json j = json::parse(m.on_rank0(call, [&] {
    std::vector<CheckpointInfo> infos;
    for (std::int64_t step : scan(m.dir).markers) {
      try {
        infos.push_back(read_marker(m.dir / marker_name(step)));
      } catch (const CheckpointError&) {
        // An unreadable marker is not a complete checkpoint; latest_complete() reports it.
      }
    }
    return infos_to_json(infos).dump();
  }));
  std::vector<CheckpointInfo> out;
  for (const auto& i : j) out.push_back(info_from_broadcast(i, m.dir));
  return out;
}

std::optional<CheckpointInfo> CheckpointManager::latest_complete() {
  const std::string call = "CheckpointManager::latest_complete";
  Impl& m = *impl_;
  m.agree_on_call(call, "latest_complete");
  const json j = json::parse(m.on_rank0(call, [&] {
    const auto chosen = m.choose_latest();
    return chosen ? info_to_json(*chosen).dump() : std::string("null");
  }));
  if (j.is_null()) return std::nullopt;
  return info_from_broadcast(j, m.dir);
}

CheckpointInfo CheckpointManager::verify(std::int64_t step) {
  const std::string call = "CheckpointManager::verify";
  Impl& m = *impl_;
  m.agree_on_call(call, fmt::format("verify {}", step));
  return info_from_broadcast(
      json::parse(m.on_rank0(call,
                             [&] {
                               const fs::path marker = m.dir / marker_name(step);
                               if (!fs::exists(marker)) {
                                 throw CheckpointError(
                                     ErrorInfo{.what = fmt::format(
                                                   "checkpoint of step {} has no completion marker "
                                                   "'{}' (it was never completed, or was pruned)",
                                                   step, marker.string()),
                                               .call = call,
                                               .hint = "list() shows the complete checkpoints."});
                               }
                               return info_to_json(check_checkpoint(marker)).dump();
                             })),
      m.dir);
}

CheckpointInfo CheckpointManager::restore(const CheckpointInfo& checkpoint,
                                          const CheckpointArrays& arrays) {
  static const detail::TraceName trace_name = detail::trace_name("checkpoint restore");
  detail::TraceRange trace(trace_name);
  const std::string call = "CheckpointManager::restore";
  Impl& m = *impl_;
  m.agree_on_call(call, fmt::format("restore step {} file {} arrays {{{}}}", checkpoint.step,
                                    checkpoint.file.string(), describe_arrays(arrays)));
  m.everywhere(call, [&] { detail::check_restore_targets(checkpoint, arrays, call); });
  m.on_rank0(call, [&] {
    std::error_code ec;
    const auto size = fs::file_size(checkpoint.file, ec);
    if (ec || size != checkpoint.bytes) {
      throw CheckpointError(ErrorInfo{
          .what =
              ec ? fmt::format("checkpoint file '{}' of step {} cannot be read ({})",
                               checkpoint.file.string(), checkpoint.step, ec.message())
                 : fmt::format(
                       "checkpoint file '{}' of step {} has {} bytes, but its marker records {}",
                       checkpoint.file.string(), checkpoint.step, size, checkpoint.bytes),
          .call = call,
          .hint = kCorruptHint});
    }
    return std::string();
  });
  hdf5::File file =
      hdf5::File::open(m.comm, checkpoint.file.string(), hdf5::Access::read_only, m.options.file);
  hdf5::Attributes all = file.attributes("/");
  m.everywhere(call, [&] {
    const auto it = all.find("skein_checkpoint_step");
    const auto* step = it == all.end() ? nullptr : std::get_if<std::int64_t>(&it->second);
    if (!step || *step != checkpoint.step) {
      throw CheckpointError(ErrorInfo{
          .what = fmt::format("checkpoint file '{}' holds step {}, but its marker says step {}",
                              checkpoint.file.string(), step ? std::to_string(*step) : "(none)",
                              checkpoint.step),
          .call = call,
          .hint = kCorruptHint});
    }
  });
  for (const auto& [n, a] : arrays) {
    std::visit([&](const auto& x) { file.read(n, x); }, a);
  }
  file.close();
  CheckpointInfo out = checkpoint;
  out.attributes.clear();
  for (const auto& [k, v] : all) {
    if (k.rfind("skein_", 0) != 0) out.attributes[k] = v;
  }
  return out;
}

std::optional<CheckpointInfo> CheckpointManager::restore_latest(const CheckpointArrays& arrays) {
  const auto latest = latest_complete();
  if (!latest) return std::nullopt;
  return restore(*latest, arrays);
}

#else  // no HDF5 or no MPI

namespace {
[[noreturn]] void raise_unavailable(const std::string& call) {
  detail::raise_in<RuntimeError>(
      SKEIN_HERE, call, "Rebuild Skein with HDF5 and MPI (SKEIN_WITH_HDF5=ON, SKEIN_WITH_MPI=ON).",
      "this build of Skein has no HDF5 I/O, which checkpoints are written with");
}
}  // namespace

struct CheckpointManager::Impl {
  std::filesystem::path dir;
  CheckpointOptions options;
};

CheckpointManager::CheckpointManager(Communicator&, std::filesystem::path, CheckpointOptions) {
  raise_unavailable("CheckpointManager");
}
#if SKEIN_HAS_MPI
CheckpointManager::CheckpointManager(MPI_Comm, std::filesystem::path, CheckpointOptions) {
  raise_unavailable("CheckpointManager");
}
#endif
CheckpointManager::~CheckpointManager() = default;
CheckpointManager::CheckpointManager(CheckpointManager&&) noexcept = default;
CheckpointManager& CheckpointManager::operator=(CheckpointManager&&) noexcept = default;
const std::filesystem::path& CheckpointManager::directory() const { return impl_->dir; }
const CheckpointOptions& CheckpointManager::options() const { return impl_->options; }
CheckpointInfo CheckpointManager::write(std::int64_t, double, const CheckpointArrays&,
                                        const hdf5::Attributes&) {
  raise_unavailable("CheckpointManager::write");
}
std::vector<CheckpointInfo> CheckpointManager::list() {
  raise_unavailable("CheckpointManager::list");
}
std::optional<CheckpointInfo> CheckpointManager::latest_complete() {
  raise_unavailable("CheckpointManager::latest_complete");
}
CheckpointInfo CheckpointManager::verify(std::int64_t) {
  raise_unavailable("CheckpointManager::verify");
}
CheckpointInfo CheckpointManager::restore(const CheckpointInfo&, const CheckpointArrays&) {
  raise_unavailable("CheckpointManager::restore");
}
std::optional<CheckpointInfo> CheckpointManager::restore_latest(const CheckpointArrays&) {
  raise_unavailable("CheckpointManager::restore_latest");
}

#endif

}  // namespace skein
