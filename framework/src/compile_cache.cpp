// SPDX-License-Identifier: BSD-3-Clause
#include "skein/detail/compile_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string_view>
#include <system_error>
#include <utility>

#include "skein/detail/errors.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/sha256.hpp"

namespace skein::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::array<char, 8> kMagic = {'S', 'K', 'E', 'I', 'N', 'C', 'C', '\0'};
constexpr std::uint32_t kFormatVersion = 1;
// magic | version | reserved | key hash | payload length | payload hash
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kKeyHashOffset = 16;
constexpr std::size_t kLengthOffset = 48;
constexpr std::size_t kPayloadHashOffset = 56;
constexpr std::size_t kHeaderSize = 88;
using Header = std::array<std::uint8_t, kHeaderSize>;
using Digest = std::array<std::uint8_t, 32>;

std::string errno_message(int err) { return std::generic_category().message(err); }

// Owns a file descriptor; closing on every early return keeps the error paths short.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// False on end of file or error: either way the entry is not whole.
bool read_exactly(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t got = ::read(fd, p, size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

// 0, or the errno of the failure.
int write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t put = ::write(fd, p, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return errno;
    if (put == 0) return EIO;
    p += put;
    size -= static_cast<std::size_t>(put);
  }
  return 0;
}

// Integers are stored little-endian whatever the host, so that a cache directory shared between
// machines (an NFS home) never misreads an entry.
void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

Digest key_digest(std::span<const std::string> key_parts) {
  Sha256 hash;
  // The tag ties file names to this format: a later format gets new names rather than tripping
  // over (and rewriting) the entries of an older Skein that shares the directory.
  hash.update(std::string_view("skein compile cache key, format 1"));
  for (const auto& part : key_parts) {
    // The length prefix makes the encoding unambiguous: ("ab","c") and ("a","bc") differ.
    std::array<std::uint8_t, 8> length;
    put_u64(length.data(), part.size());
    hash.update(std::as_bytes(std::span(length)));
    hash.update(part);
  }
  return hash.finish();
}

// The cache's notes are warnings of this rank's own: the directory is the node's, and another
// node's may be fine.
void print_line(const std::string& line) { log_message(LogLevel::warning, line); }

// An opened cache directory, or why it was refused (then fd is closed).
struct OpenedDirectory {
  Fd fd;
  std::string refusal;
};

// Creates what is missing of `dir` with mode 0700, then opens it and checks that only this user
// can write to it. Entries are binaries that Skein loads and runs on the GPU; a directory that
// someone else can write to would let them plant or swap code, so it is refused outright.
OpenedDirectory open_private_directory(const fs::path& dir) {
  OpenedDirectory out;
  const std::string shown = dir.string();
  const std::string elsewhere =
      "or set SKEIN_CACHE_DIR to a directory of your own (SKEIN_DISABLE_CACHE=1 turns the cache "
      "off)";

  bool created_final = false;
  fs::path partial;
  for (const auto& component : dir) {
    partial /= component;
    created_final = false;
    struct stat st;
    // stat, not lstat: a parent that is a symbolic link to a directory is fine.
    if (::stat(partial.c_str(), &st) == 0) continue;
    int err = errno;
    if (err == ENOENT) {
      if (::mkdir(partial.c_str(), 0700) == 0) {
        created_final = true;
        continue;
      }
      err = errno;
      if (err == EEXIST) continue;  // another process made it just now
    }
    out.refusal = fmt::format("cannot create {}: {}; fix that {}", partial.string(),
                              errno_message(err), elsewhere);
    return out;
  }

  // lstat for the final component: a symbolic link there could be pointed anywhere later on.
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    out.refusal = fmt::format("cannot use {}: {}; {}", shown, errno_message(errno), elsewhere);
    return out;
  }
  if (S_ISLNK(st.st_mode)) {
    out.refusal =
        fmt::format("{} is a symbolic link; replace it with a real directory (mkdir -m 700) {}",
                    shown, elsewhere);
    return out;
  }
  if (!S_ISDIR(st.st_mode)) {
    out.refusal = fmt::format("{} is not a directory; remove it {}", shown, elsewhere);
    return out;
  }
  // O_NOFOLLOW, and the checks below on what was opened rather than on the path, so that a swap
  // between the lstat and here is caught. All later I/O is relative to this descriptor.
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    out.refusal = fmt::format("cannot open {}: {}; {}", shown, errno_message(errno), elsewhere);
    return out;
  }
  if (::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    out.refusal = fmt::format("cannot use {}: it changed while being opened; {}", shown, elsewhere);
    return out;
  }
  if (st.st_uid != ::geteuid()) {
    out.refusal = fmt::format("{} is owned by uid {}, not by this user (uid {}); {}", shown,
                              st.st_uid, ::geteuid(), elsewhere);
    return out;
  }
  // A directory made here is exactly 0700 whatever the umask took off.
  if (created_final && (st.st_mode & 07777) != 0700 && ::fchmod(fd.get(), 0700) == 0)
    ::fstat(fd.get(), &st);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    out.refusal = fmt::format("{} is {}-writable (mode {:04o}); fix with chmod 700 {} {}", shown,
                              (st.st_mode & S_IWOTH) ? "world" : "group", st.st_mode & 07777, shown,
                              elsewhere);
    return out;
  }
  out.fd = std::move(fd);
  return out;
}

// The payload if the entry is there and verifies in full; otherwise nothing (a miss).
std::optional<std::vector<std::byte>> read_entry(int dir_fd, const std::string& name,
                                                 const Digest& key) {
  // O_NONBLOCK: a FIFO in place of an entry must not hang the process (no effect on files).
  Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < static_cast<off_t>(kHeaderSize)) {
    return std::nullopt;
  }
  Header header;
  if (!read_exactly(fd.get(), header.data(), header.size())) return std::nullopt;
  if (std::memcmp(header.data(), kMagic.data(), kMagic.size()) != 0) return std::nullopt;
  if (get_u32(header.data() + kVersionOffset) != kFormatVersion) return std::nullopt;
  if (std::memcmp(header.data() + kKeyHashOffset, key.data(), key.size()) != 0) return std::nullopt;
  // The length must account for the whole file: a truncated entry, or garbage that claims a huge
  // payload, is turned away before anything is allocated.
  const std::uint64_t length = get_u64(header.data() + kLengthOffset);
  if (length != static_cast<std::uint64_t>(st.st_size) - kHeaderSize) return std::nullopt;
  std::vector<std::byte> payload(static_cast<std::size_t>(length));
  if (!read_exactly(fd.get(), payload.data(), payload.size())) return std::nullopt;
  const Digest sum = sha256(payload);
  if (std::memcmp(header.data() + kPayloadHashOffset, sum.data(), sum.size()) != 0)
    return std::nullopt;
  return payload;
}

// Unique among processes (pid), threads (counter) and hosts sharing the directory over NFS
// (random bits); O_EXCL settles any collision that remains. The leading dot and the "tmp" keep it
// apart from entry names, which are 64 hex digits.
std::string temp_name() {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t random = 0;
  try {
    std::random_device device;
    random = (std::uint64_t{device()} << 32) | device();
  } catch (const std::exception&) {
    // No entropy source: pid and counter still make the name unique on this host.
  }
  return fmt::format(".tmp-{}-{}-{:016x}", ::getpid(), counter.fetch_add(1), random);
}

// Writes the entry to a temporary file in the directory and renames it over the entry's name:
// rename() is atomic, so a reader sees the old entry, the new one or none, never a part. Returns
// "" or what failed.
std::string write_entry(int dir_fd, const std::string& name, const Digest& key,
                        std::span<const std::byte> payload) {
  Header header{};
  std::memcpy(header.data(), kMagic.data(), kMagic.size());
  put_u32(header.data() + kVersionOffset, kFormatVersion);
  std::memcpy(header.data() + kKeyHashOffset, key.data(), key.size());
  put_u64(header.data() + kLengthOffset, payload.size());
  const Digest sum = sha256(payload);
  std::memcpy(header.data() + kPayloadHashOffset, sum.data(), sum.size());

  std::string temp;
  Fd fd;
  for (int attempt = 0; attempt < 16 && !fd; ++attempt) {
    temp = temp_name();
    fd = Fd(
        ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd && errno != EEXIST)
      return fmt::format("cannot create a file there: {}", errno_message(errno));
  }
  if (!fd) return "cannot find a free temporary file name";

  auto fail = [&](const char* step, int err) {
    fd.reset();
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return fmt::format("{} failed: {}", step, errno_message(err));
  };
  // Exactly 0600 whatever the umask: the entry is private like its directory.
  if (::fchmod(fd.get(), 0600) != 0) return fail("fchmod", errno);
  if (int err = write_all(fd.get(), header.data(), header.size())) return fail("write", err);
  if (int err = write_all(fd.get(), payload.data(), payload.size())) return fail("write", err);
  // Data on disk before the rename makes the name point at it: otherwise a crash could leave an
  // entry with the right name and no contents (the checksum would catch it, at a rebuild's cost).
  if (::fsync(fd.get()) != 0) return fail("fsync", errno);
  // close() can report a deferred write error (NFS), so it is checked too.
  if (::close(fd.release()) != 0) return fail("close", errno);
  if (::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) return fail("rename", errno);
  // The directory is not fsync'ed: losing a fresh entry in a crash costs only a rebuild.
  return {};
}

}  // namespace

struct CompileCache::Impl {
  fs::path directory;
  std::string disabled_reason;
  Fd dir_fd;  // open while the cache is on
  // One mutex per key being looked up or built, so that threads asking for the same key build it
  // once (the later ones find the entry on disk) while different keys build in parallel.
  std::mutex in_flight_mutex;
  std::map<std::string, std::shared_ptr<std::mutex>> in_flight;
  std::atomic<bool> warned_about_writes{false};
};

CompileCache::CompileCache(std::optional<fs::path> directory)
    : CompileCache(std::move(directory), "the cache was made without a directory") {}

CompileCache::CompileCache(std::optional<fs::path> directory, std::string reason_when_off)
    : impl_(std::make_unique<Impl>()) {
  if (!directory) {
    impl_->disabled_reason = std::move(reason_when_off);
    return;
  }
  fs::path dir = std::move(*directory);
  // "/x/cache/" and "/x/cache" are the same directory; the last component is what gets checked.
  if (!dir.has_filename() && dir.has_relative_path()) dir = dir.parent_path();
  if (dir.is_relative()) dir = fs::absolute(dir);
  impl_->directory = dir;
  OpenedDirectory opened = open_private_directory(dir);
  if (!opened.refusal.empty()) {
    impl_->disabled_reason = std::move(opened.refusal);
    // Printed here, once per cache object: the process-wide instance() is built once, so that is
    // once per process. Nothing is ever written to a refused directory.
    print_line("compile cache disabled: " + impl_->disabled_reason);
    return;
  }
  impl_->dir_fd = std::move(opened.fd);
}

CompileCache::~CompileCache() = default;
CompileCache::CompileCache(CompileCache&&) noexcept = default;
CompileCache& CompileCache::operator=(CompileCache&&) noexcept = default;

CompileCache CompileCache::from_environment(const char* disable, const char* dir,
                                            const char* xdg_cache_home, const char* home) {
  const auto off = parse_env_flag("SKEIN_DISABLE_CACHE",
                                  disable ? std::optional<std::string>(disable) : std::nullopt,
                                  "compile cache", "turn the compile cache off");
  if (off.value_or(false)) return CompileCache(std::nullopt, "turned off by SKEIN_DISABLE_CACHE");
  if (dir && *dir) {
    if (!fs::path(dir).is_absolute()) {
      // A relative directory would follow the working directory around, one cache per folder.
      raise_in(SKEIN_HERE, "compile cache",
               "Give an absolute path, or unset it to use ~/.cache/skein.",
               "SKEIN_CACHE_DIR is \"{}\", a relative path", dir);
    }
    return CompileCache(fs::path(dir));
  }
  // The XDG base directory spec says a relative XDG_CACHE_HOME is invalid and to be ignored.
  if (xdg_cache_home && *xdg_cache_home && fs::path(xdg_cache_home).is_absolute()) {
    return CompileCache(fs::path(xdg_cache_home) / "skein");
  }
  if (home && *home && fs::path(home).is_absolute())
    return CompileCache(fs::path(home) / ".cache" / "skein");
  std::string reason =
      "no cache directory: SKEIN_CACHE_DIR, XDG_CACHE_HOME and HOME are unset or not absolute; set "
      "SKEIN_CACHE_DIR (SKEIN_DISABLE_CACHE=1 turns the cache off)";
  print_line("compile cache disabled: " + reason);
  return CompileCache(std::nullopt, std::move(reason));
}

CompileCache& CompileCache::instance() {
  // A throw (a bad SKEIN_DISABLE_CACHE) leaves it unbuilt, so every later call reports it again.
  static CompileCache cache = [] {
    const auto disable = env_value("SKEIN_DISABLE_CACHE"), dir = env_value("SKEIN_CACHE_DIR"),
               xdg = env_value("XDG_CACHE_HOME"), home = env_value("HOME");
    auto c_str = [](const std::optional<std::string>& v) { return v ? v->c_str() : nullptr; };
    return from_environment(c_str(disable), c_str(dir), c_str(xdg), c_str(home));
  }();
  return cache;
}

bool CompileCache::enabled() const { return static_cast<bool>(impl_->dir_fd); }
const fs::path& CompileCache::directory() const { return impl_->directory; }
const std::string& CompileCache::disabled_reason() const { return impl_->disabled_reason; }

std::string CompileCache::key_hash(std::span<const std::string> key_parts) {
  return to_hex(key_digest(key_parts));
}

fs::path CompileCache::entry_path(std::span<const std::string> key_parts) const {
  return impl_->directory / key_hash(key_parts);
}

CompileCache::Result CompileCache::get_or_build(
    std::span<const std::string> key_parts, const std::function<std::vector<std::byte>()>& build) {
  // Off (disabled or refused): build every time. Program code keeps what it loaded in memory.
  if (!enabled()) return {build(), false};

  const Digest key = key_digest(key_parts);
  const std::string name = to_hex(key);

  std::shared_ptr<std::mutex> key_mutex;
  {
    std::lock_guard lock(impl_->in_flight_mutex);
    auto& slot = impl_->in_flight[name];
    if (!slot) slot = std::make_shared<std::mutex>();
    key_mutex = slot;
  }
  // Drops the key's mutex from the map when no other thread holds it, also when build() throws.
  struct Release {
    Impl& impl;
    const std::string& name;
    std::shared_ptr<std::mutex>& key_mutex;
    ~Release() {
      std::lock_guard lock(impl.in_flight_mutex);
      key_mutex.reset();
      // Copies are only taken under the lock, so a count of one means nobody else has it.
      if (auto it = impl.in_flight.find(name);
          it != impl.in_flight.end() && it->second.use_count() == 1) {
        impl.in_flight.erase(it);
      }
    }
  } release{*impl_, name, key_mutex};
  std::lock_guard key_lock(*key_mutex);  // released before `release` runs

  if (auto payload = read_entry(impl_->dir_fd.get(), name, key)) return {std::move(*payload), true};

  // A miss, or an entry that did not verify: build, and write over whatever is there.
  std::vector<std::byte> binary = build();
  std::string failure = write_entry(impl_->dir_fd.get(), name, key, binary);
  if (!failure.empty() && !impl_->warned_about_writes.exchange(true)) {
    print_line(
        fmt::format("compile cache: cannot store entries in {}: {}; kernels still work but are "
                    "compiled again next time. "
                    "Free some space or fix its permissions, set SKEIN_CACHE_DIR elsewhere, or "
                    "SKEIN_DISABLE_CACHE=1",
                    impl_->directory.string(), failure));
  }
  return {std::move(binary), false};
}

}  // namespace skein::detail
