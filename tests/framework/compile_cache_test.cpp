// SPDX-License-Identifier: BSD-3-Clause
// The on-disk compile cache (skein/detail/compile_cache.hpp, the framework's internal interface)
// and its SHA-256: entries, corruption, directory safety, environment parsing, and processes and
// threads racing on one key. Every test works in its own mkdtemp directory; builders count their
// calls.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <skein/error.hpp>
#include <string>
#include <thread>
#include <vector>

#include "skein/detail/compile_cache.hpp"
#include "skein/detail/sha256.hpp"

namespace skein::detail {
namespace {
namespace compile_cache_test {

namespace fs = std::filesystem;

// A fresh directory under /tmp, removed afterwards (permissions restored first so that removal
// works).
struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = "/tmp/skein-cache-test-XXXXXX";
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink() && it->is_directory()) ::chmod(it->path().c_str(), 0700);
    }
    fs::remove_all(path, ec);
  }
};

std::vector<std::byte> bytes(std::string_view text) {
  auto view = std::as_bytes(std::span(text.data(), text.size()));
  return {view.begin(), view.end()};
}

std::vector<std::byte> pattern(std::size_t size, std::uint32_t seed = 1) {
  std::vector<std::byte> out(size);
  std::uint32_t x = seed;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return out;
}

// A builder that counts how often the cache called it.
struct Builder {
  std::vector<std::byte> payload;
  std::atomic<int> calls{0};
  explicit Builder(std::vector<std::byte> p) : payload(std::move(p)) {}
  std::function<std::vector<std::byte>()> fn() {
    return [this] {
      ++calls;
      return payload;
    };
  }
};

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  return names;
}

unsigned mode_of(const fs::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0xffffffffu;
  return st.st_mode & 07777;
}

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::vector<char>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

const std::vector<std::string> kKey = {"__global__ void k() {}", "-arch=sm_90", "NVIDIA H100",
                                       "nvrtc 12.4"};
constexpr std::size_t kHeaderSize = 88;  // the entry format's header (compile_cache.hpp)

// ---- SHA-256 ------------------------------------------------------------------------------------

TEST(Sha256, PublishedTestVectors) {
  // FIPS 180-4 examples / NIST CAVS.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjkl"
                       "mnopqklmnopqrlmnopq"
                       "rsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 56- and 64-byte padding boundaries; reference digests from coreutils
  // sha256sum.
  const std::pair<std::size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
  };
  for (const auto& [length, digest] : cases)
    EXPECT_EQ(sha256_hex(std::string(length, 'a')), digest) << length;
}

TEST(Sha256, PiecesHashLikeTheWhole) {
  const auto data = pattern(1000);
  const auto whole = sha256(data);
  for (std::size_t piece : {1, 3, 63, 64, 65, 200}) {
    Sha256 hash;
    for (std::size_t at = 0; at < data.size(); at += piece) {
      hash.update(std::span(data).subspan(at, std::min(piece, data.size() - at)));
    }
    EXPECT_EQ(hash.finish(), whole) << "pieces of " << piece;
  }
}

// ---- hits and misses ----------------------------------------------------------------------------

TEST(CompileCache, MissBuildsThenHitReadsFromDisk) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  ASSERT_TRUE(cache.enabled()) << cache.disabled_reason();
  EXPECT_EQ(cache.disabled_reason(), "");
  EXPECT_EQ(cache.directory(), tmp.path);

  Builder b(pattern(10000));
  auto first = cache.get_or_build(kKey, b.fn());
  EXPECT_EQ(b.calls, 1);
  EXPECT_FALSE(first.from_disk);
  EXPECT_EQ(first.binary, b.payload);

  auto second = cache.get_or_build(kKey, b.fn());
  EXPECT_EQ(b.calls, 1);
  EXPECT_TRUE(second.from_disk);
  EXPECT_EQ(second.binary, b.payload);

  // The entry is named by the key's hash, and nothing else (no temporary files) is left behind.
  EXPECT_EQ(names_in(tmp.path), std::vector<std::string>{CompileCache::key_hash(kKey)});
  EXPECT_EQ(cache.entry_path(kKey), tmp.path / CompileCache::key_hash(kKey));
  EXPECT_EQ(fs::file_size(cache.entry_path(kKey)), kHeaderSize + b.payload.size());
}

TEST(CompileCache, AnotherCacheObjectOnTheDirectoryHits) {
  TempDir tmp;
  Builder b(pattern(4096));
  CompileCache(tmp.path).get_or_build(kKey, b.fn());
  // As another process would see it: a new object, nothing shared in memory.
  auto again = CompileCache(tmp.path).get_or_build(kKey, b.fn());
  EXPECT_EQ(b.calls, 1);
  EXPECT_TRUE(again.from_disk);
  EXPECT_EQ(again.binary, b.payload);
}

TEST(CompileCache, DifferentKeysAreDifferentEntries) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  Builder one(bytes("one")), two(bytes("two"));
  auto key2 = kKey;
  key2[1] = "-arch=sm_80";
  EXPECT_EQ(cache.get_or_build(kKey, one.fn()).binary, bytes("one"));
  EXPECT_EQ(cache.get_or_build(key2, two.fn()).binary, bytes("two"));
  EXPECT_EQ(one.calls, 1);
  EXPECT_EQ(two.calls, 1);
  EXPECT_EQ(cache.get_or_build(kKey, one.fn()).binary, bytes("one"));
  EXPECT_EQ(cache.get_or_build(key2, two.fn()).binary, bytes("two"));
  EXPECT_EQ(one.calls + two.calls, 2);
  EXPECT_EQ(names_in(tmp.path).size(), 2u);
}

TEST(CompileCache, KeyPartsAreLengthPrefixed) {
  const std::vector<std::string> ab_c = {"ab", "c"}, a_bc = {"a", "bc"}, abc = {"abc"},
                                 abc_empty = {"abc", ""};
  EXPECT_NE(CompileCache::key_hash(ab_c), CompileCache::key_hash(a_bc));
  EXPECT_NE(CompileCache::key_hash(ab_c), CompileCache::key_hash(abc));
  EXPECT_NE(CompileCache::key_hash(abc), CompileCache::key_hash(abc_empty));
  EXPECT_EQ(CompileCache::key_hash(ab_c),
            CompileCache::key_hash(std::vector<std::string>{"ab", "c"}));
  EXPECT_EQ(CompileCache::key_hash(ab_c).size(), 64u);

  TempDir tmp;
  CompileCache cache(tmp.path);
  Builder first(bytes("first")), second(bytes("second"));
  cache.get_or_build(ab_c, first.fn());
  auto other = cache.get_or_build(a_bc, second.fn());
  EXPECT_EQ(second.calls, 1);
  EXPECT_EQ(other.binary, bytes("second"));
}

TEST(CompileCache, EmptyPayload) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  Builder b({});
  EXPECT_TRUE(cache.get_or_build(kKey, b.fn()).binary.empty());
  auto hit = cache.get_or_build(kKey, b.fn());
  EXPECT_TRUE(hit.from_disk);
  EXPECT_TRUE(hit.binary.empty());
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(fs::file_size(cache.entry_path(kKey)), kHeaderSize);
}

TEST(CompileCache, BuildFailurePropagatesAndStoresNothing) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  EXPECT_THROW(cache.get_or_build(
                   kKey, []() -> std::vector<std::byte> { throw std::runtime_error("nvrtc"); }),
               std::runtime_error);
  EXPECT_TRUE(names_in(tmp.path).empty());
  Builder b(bytes("ok"));
  EXPECT_EQ(cache.get_or_build(kKey, b.fn()).binary, bytes("ok"));
  EXPECT_EQ(b.calls, 1);
}

// ---- corrupt entries ----------------------------------------------------------------------------

TEST(CompileCache, CorruptEntriesAreRebuiltAndRewritten) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  const auto payload = pattern(1000, 7);
  const auto other_key = std::vector<std::string>{"another kernel"};
  Builder other(bytes("other"));
  cache.get_or_build(other_key, other.fn());

  struct Corruption {
    const char* name;
    std::function<void(const fs::path&)> apply;
  };
  const std::vector<Corruption> corruptions = {
      {"payload byte flipped",
       [](const fs::path& p) {
         auto d = read_file(p);
         d.back() ^= 1;
         write_file(p, d);
       }},
      {"magic flipped",
       [](const fs::path& p) {
         auto d = read_file(p);
         d[0] ^= 0x20;
         write_file(p, d);
       }},
      {"version changed",
       [](const fs::path& p) {
         auto d = read_file(p);
         d[8] = 99;
         write_file(p, d);
       }},
      {"payload checksum flipped",
       [](const fs::path& p) {
         auto d = read_file(p);
         d[60] ^= 1;
         write_file(p, d);
       }},
      {"length claims more",
       [](const fs::path& p) {
         auto d = read_file(p);
         d[48] += 1;
         write_file(p, d);
       }},
      {"length claims 2^64-1",
       [](const fs::path& p) {
         auto d = read_file(p);
         std::memset(d.data() + 48, 0xff, 8);
         write_file(p, d);
       }},
      {"truncated by one byte",
       [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 1); }},
      {"truncated inside the header", [](const fs::path& p) { fs::resize_file(p, 10); }},
      {"empty file", [](const fs::path& p) { fs::resize_file(p, 0); }},
      {"garbage",
       [](const fs::path& p) {
         auto g = pattern(5000, 99);
         write_file(p, std::vector<char>(reinterpret_cast<const char*>(g.data()),
                                         reinterpret_cast<const char*>(g.data()) + g.size()));
       }},
      {"another key's entry under this name",
       [&](const fs::path& p) {
         fs::copy_file(cache.entry_path(other_key), p, fs::copy_options::overwrite_existing);
       }},
      {"a directory in its place",
       [](const fs::path& p) {
         fs::remove(p);
         fs::create_directory(p);
       }},
  };

  for (const auto& corruption : corruptions) {
    SCOPED_TRACE(corruption.name);
    Builder b(payload);
    cache.get_or_build(kKey, b.fn());
    const fs::path entry = cache.entry_path(kKey);
    corruption.apply(entry);

    testing::internal::CaptureStderr();
    auto rebuilt = cache.get_or_build(kKey, b.fn());
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(rebuilt.from_disk);
    EXPECT_EQ(rebuilt.binary, payload);
    if (std::string(corruption.name) == "a directory in its place") {
      // Cannot be written over: still a success, with the write warning. Clear it for the next
      // round.
      EXPECT_NE(err.find("cannot store"), std::string::npos) << err;
      fs::remove(entry);
      continue;
    }
    EXPECT_EQ(err, "") << "a corrupt entry is a miss, not an error";

    // Rewritten: valid again, and a hit.
    auto hit = cache.get_or_build(kKey, b.fn());
    EXPECT_TRUE(hit.from_disk);
    EXPECT_EQ(hit.binary, payload);
    EXPECT_EQ(b.calls, 2);
    EXPECT_EQ(fs::file_size(entry), kHeaderSize + payload.size());
    fs::remove(entry);
  }
  EXPECT_EQ(other.calls, 1);
}

// ---- the directory ------------------------------------------------------------------------------

TEST(CompileCache, MissingDirectoryIsCreatedPrivate) {
  TempDir tmp;
  const fs::path dir = tmp.path / "a" / "b" / "cache";
  CompileCache cache(dir.string() + "/");  // a trailing slash names the same directory
  ASSERT_TRUE(cache.enabled()) << cache.disabled_reason();
  EXPECT_EQ(cache.directory(), dir);
  EXPECT_EQ(mode_of(tmp.path / "a"), 0700u);
  EXPECT_EQ(mode_of(tmp.path / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(dir), 0700u);

  // Even under a umask that would take bits off, the directory ends up 0700 and entries 0600.
  const mode_t old_umask = ::umask(0277);
  CompileCache strict(tmp.path / "strict");
  Builder b(bytes("x"));
  strict.get_or_build(kKey, b.fn());
  ::umask(old_umask);
  EXPECT_EQ(mode_of(tmp.path / "strict"), 0700u);
  EXPECT_EQ(mode_of(strict.entry_path(kKey)), 0600u);
}

TEST(CompileCache, EntriesArePrivateFiles) {
  TempDir tmp;
  const mode_t old_umask = ::umask(0);  // 0600 must come from the cache, not from the umask
  CompileCache cache(tmp.path);
  Builder b(pattern(100));
  cache.get_or_build(kKey, b.fn());
  ::umask(old_umask);
  EXPECT_EQ(mode_of(cache.entry_path(kKey)), 0600u);
}

TEST(CompileCache, ExistingPrivateDirectoryIsKeptAsItIs) {
  TempDir tmp;
  ::chmod(tmp.path.c_str(), 0755);  // readable by others is fine; only writable is not
  CompileCache cache(tmp.path);
  EXPECT_TRUE(cache.enabled()) << cache.disabled_reason();
  EXPECT_EQ(mode_of(tmp.path), 0755u);
}

TEST(CompileCache, WorldWritableDirectoryIsRefused) {
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path.c_str(), 0777), 0);
  testing::internal::CaptureStderr();
  CompileCache cache(tmp.path);
  Builder b(pattern(100));
  for (int i = 0; i < 3; ++i) {
    auto r = cache.get_or_build(kKey, b.fn());
    EXPECT_FALSE(r.from_disk);
    EXPECT_EQ(r.binary, b.payload);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(b.calls, 3);
  EXPECT_TRUE(names_in(tmp.path).empty()) << "nothing is written into a refused directory";
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("world-writable"), std::string::npos) << err;
  EXPECT_NE(err.find("chmod 700 " + tmp.path.string()), std::string::npos) << err;
  EXPECT_NE(err.find("SKEIN_CACHE_DIR"), std::string::npos) << err;
  EXPECT_NE(cache.disabled_reason().find("world-writable"), std::string::npos);
  EXPECT_EQ(cache.directory(), tmp.path);
}

TEST(CompileCache, GroupWritableDirectoryIsRefused) {
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path.c_str(), 0770), 0);
  testing::internal::CaptureStderr();
  CompileCache cache(tmp.path);
  Builder b(bytes("x"));
  cache.get_or_build(kKey, b.fn());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.enabled());
  EXPECT_NE(err.find("group-writable"), std::string::npos) << err;
  EXPECT_TRUE(names_in(tmp.path).empty());
}

TEST(CompileCache, SymbolicLinkDirectoryIsRefused) {
  TempDir tmp;
  fs::create_directory(tmp.path / "real");
  ::chmod((tmp.path / "real").c_str(), 0700);
  fs::create_directory_symlink(tmp.path / "real", tmp.path / "link");
  testing::internal::CaptureStderr();
  CompileCache cache(tmp.path / "link");
  Builder b(bytes("x"));
  cache.get_or_build(kKey, b.fn());
  cache.get_or_build(kKey, b.fn());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(b.calls, 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  EXPECT_TRUE(names_in(tmp.path / "real").empty());
}

TEST(CompileCache, SymbolicLinkParentIsFine) {
  TempDir tmp;
  fs::create_directory(tmp.path / "real");
  fs::create_directory_symlink(tmp.path / "real", tmp.path / "link");
  CompileCache cache(tmp.path / "link" / "cache");
  ASSERT_TRUE(cache.enabled()) << cache.disabled_reason();
  Builder b(bytes("x"));
  cache.get_or_build(kKey, b.fn());
  EXPECT_TRUE(fs::exists(tmp.path / "real" / "cache" / CompileCache::key_hash(kKey)));
}

TEST(CompileCache, DirectoryOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  TempDir tmp;
  const fs::path dir = tmp.path / "theirs";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0700);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  testing::internal::CaptureStderr();
  CompileCache cache(dir);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.enabled());
  EXPECT_NE(err.find("owned by uid 65534"), std::string::npos) << err;
  Builder b(bytes("x"));
  cache.get_or_build(kKey, b.fn());
  EXPECT_TRUE(names_in(dir).empty());
}

TEST(CompileCache, PathThatIsAFileIsRefused) {
  TempDir tmp;
  write_file(tmp.path / "file", {'x'});
  testing::internal::CaptureStderr();
  CompileCache cache(tmp.path / "file");
  CompileCache below(tmp.path / "file" / "cache");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(below.enabled());
  EXPECT_EQ(count_lines(err), 2) << err;  // one per cache object
  Builder b(bytes("x"));
  EXPECT_EQ(below.get_or_build(kKey, b.fn()).binary, bytes("x"));
}

TEST(CompileCache, WriteFailureStillReturnsTheBinaryAndWarnsOnce) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  // A directory where the entries should go cannot be renamed over, even by root.
  auto key2 = kKey;
  key2[0] = "another source";
  fs::create_directory(cache.entry_path(kKey));
  fs::create_directory(cache.entry_path(key2));
  testing::internal::CaptureStderr();
  Builder b(pattern(300));
  for (int i = 0; i < 3; ++i) {
    auto r = cache.get_or_build(i == 1 ? key2 : kKey, b.fn());
    EXPECT_FALSE(r.from_disk);
    EXPECT_EQ(r.binary, b.payload);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(b.calls, 3);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("cannot store"), std::string::npos) << err;
  EXPECT_EQ(names_in(tmp.path).size(), 2u) << "temporary files are removed after a failure";
}

TEST(CompileCache, DisabledCacheBuildsEveryTime) {
  CompileCache cache(std::nullopt);
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.disabled_reason().empty());
  EXPECT_TRUE(cache.directory().empty());
  Builder b(bytes("x"));
  cache.get_or_build(kKey, b.fn());
  auto r = cache.get_or_build(kKey, b.fn());
  EXPECT_EQ(b.calls, 2);
  EXPECT_FALSE(r.from_disk);
}

// ---- the environment ----------------------------------------------------------------------------

TEST(CompileCache, EnvironmentDisableValues) {
  TempDir tmp;
  const std::string dir = (tmp.path / "c").string();
  for (const char* off : {"1", "true", "yes", "TRUE", "Yes"}) {
    auto cache = CompileCache::from_environment(off, dir.c_str(), nullptr, nullptr);
    EXPECT_FALSE(cache.enabled()) << off;
    EXPECT_NE(cache.disabled_reason().find("SKEIN_DISABLE_CACHE"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir)) << "a disabled cache creates nothing";
  for (const char* on : {"0", "false", "no", "", "NO"}) {
    auto cache = CompileCache::from_environment(on, dir.c_str(), nullptr, nullptr);
    EXPECT_TRUE(cache.enabled()) << on << ": " << cache.disabled_reason();
    EXPECT_EQ(cache.directory(), fs::path(dir));
  }
  EXPECT_TRUE(CompileCache::from_environment(nullptr, dir.c_str(), nullptr, nullptr).enabled());

  try {
    CompileCache::from_environment("maybe", dir.c_str(), nullptr, nullptr);
    ADD_FAILURE() << "SKEIN_DISABLE_CACHE=maybe must throw";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SKEIN_DISABLE_CACHE"), std::string::npos) << what;
    EXPECT_NE(what.find("maybe"), std::string::npos) << what;
    EXPECT_NE(what.find("true"), std::string::npos) << "names the accepted values: " << what;
  }
}

TEST(CompileCache, EnvironmentDirectoryChoice) {
  TempDir tmp;
  const std::string explicit_dir = (tmp.path / "explicit").string();
  const std::string xdg = (tmp.path / "xdg").string();
  const std::string home = (tmp.path / "home").string();

  EXPECT_EQ(CompileCache::from_environment(nullptr, explicit_dir.c_str(), xdg.c_str(), home.c_str())
                .directory(),
            fs::path(explicit_dir));
  EXPECT_EQ(CompileCache::from_environment(nullptr, nullptr, xdg.c_str(), home.c_str()).directory(),
            fs::path(xdg) / "skein");
  EXPECT_EQ(CompileCache::from_environment(nullptr, "", xdg.c_str(), home.c_str()).directory(),
            fs::path(xdg) / "skein");
  // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
  auto from_home = CompileCache::from_environment(nullptr, nullptr, "relative", home.c_str());
  EXPECT_TRUE(from_home.enabled()) << from_home.disabled_reason();
  EXPECT_EQ(from_home.directory(), fs::path(home) / ".cache" / "skein");
  EXPECT_EQ(mode_of(fs::path(home) / ".cache"), 0700u);

  testing::internal::CaptureStderr();
  auto nowhere = CompileCache::from_environment(nullptr, nullptr, nullptr, nullptr);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(nowhere.enabled());
  EXPECT_NE(nowhere.disabled_reason().find("SKEIN_CACHE_DIR"), std::string::npos);
  EXPECT_EQ(count_lines(err), 1) << err;

  try {
    CompileCache::from_environment(nullptr, "relative/dir", xdg.c_str(), home.c_str());
    ADD_FAILURE() << "a relative SKEIN_CACHE_DIR must throw";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SKEIN_CACHE_DIR"), std::string::npos) << what;
    EXPECT_NE(what.find("relative/dir"), std::string::npos) << what;
  }
}

// ---- concurrency --------------------------------------------------------------------------------

// Run in a forked child: build the key on `dir` with a slow builder of a large payload.
// Exit 0: built it; 1: found it on disk; anything else: a failure.
int child_builds(const fs::path& dir, int gate) {
  char c;
  while (::read(gate, &c, 1) < 0 && errno == EINTR) {
  }  // EOF when the parent closes its end: every child starts at once
  try {
    CompileCache cache(dir);
    if (!cache.enabled()) return 2;
    const auto expected = pattern(4 << 20, 42);
    auto r = cache.get_or_build(kKey, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return expected;
    });
    if (r.binary != expected) return 3;
    return r.from_disk ? 1 : 0;
  } catch (...) {
    return 4;
  }
}

TEST(CompileCache, ProcessesRacingOnOneKeyAllSucceed) {
  TempDir tmp;
  const fs::path dir = tmp.path / "shared" / "cache";  // the children also race to create it
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      ::_exit(child_builds(dir, gate[0]));  // _exit: no gtest or static teardown in the child
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  int built = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_LE(WEXITSTATUS(status), 1) << "child failed with " << WEXITSTATUS(status);
    built += WEXITSTATUS(status) == 0;
  }
  EXPECT_GE(built, 1);

  CompileCache cache(dir);
  Builder b({});
  auto r = cache.get_or_build(kKey, b.fn());
  EXPECT_EQ(b.calls, 0);
  EXPECT_TRUE(r.from_disk);
  EXPECT_EQ(r.binary, pattern(4 << 20, 42));
  EXPECT_EQ(names_in(dir), std::vector<std::string>{CompileCache::key_hash(kKey)})
      << "no temporary files left";
}

TEST(CompileCache, ThreadsShareOneBuildPerKey) {
  TempDir tmp;
  CompileCache cache(tmp.path);
  constexpr int kKeys = 3, kThreadsPerKey = 6;
  std::vector<std::unique_ptr<Builder>> builders;
  std::vector<std::vector<std::string>> keys;
  for (int k = 0; k < kKeys; ++k) {
    builders.push_back(std::make_unique<Builder>(pattern(1 << 20, k + 1)));
    keys.push_back({"kernel " + std::to_string(k)});
  }
  std::atomic<int> wrong{0}, from_disk{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kKeys * kThreadsPerKey; ++t) {
    threads.emplace_back([&, k = t % kKeys] {
      auto r = cache.get_or_build(keys[k], [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return builders[k]->fn()();
      });
      if (r.binary != builders[k]->payload) ++wrong;
      from_disk += r.from_disk;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(builders[k]->calls, 1) << "key " << k;
  EXPECT_EQ(from_disk, kKeys * (kThreadsPerKey - 1));
  EXPECT_EQ(names_in(tmp.path).size(), static_cast<std::size_t>(kKeys));
}

}  // namespace compile_cache_test
}  // namespace
}  // namespace skein::detail
