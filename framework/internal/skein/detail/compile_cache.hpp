// SPDX-License-Identifier: BSD-3-Clause
// The on-disk cache of compiled kernel binaries (NVRTC's cubin/PTX, OpenCL program binaries).
// Independent of the compilers: Program code hands over the key parts (source, options, device,
// compiler version, ...) and a callback that builds the binary on a miss.
//
// Layout: one file per entry, named by the SHA-256 hex of the key, in a private directory:
//   magic "SKEINCC\0" | format version (u32 LE) | reserved (u32, 0) | key hash (32 bytes)
//   | payload length (u64 LE) | payload SHA-256 (32 bytes) | payload
// Everything is verified on read; an entry that does not verify is a miss and is rewritten.
// Entries are written to a temporary file and renamed into place, so readers in other processes
// see a whole entry or none.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "skein/export.hpp"

namespace skein::detail {

class SKEIN_EXPORT CompileCache {
 public:
  // The process-wide cache, configured from the environment on first use:
  //   SKEIN_DISABLE_CACHE  "1"/"true"/"yes" disables, "0"/"false"/"no"/"" enables
  //   (case-insensitive);
  //                        anything else throws skein::LogicError.
  //   SKEIN_CACHE_DIR      the directory (absolute; a relative one throws skein::LogicError);
  //                        else $XDG_CACHE_HOME/skein (when absolute); else $HOME/.cache/skein.
  static CompileCache& instance();

  // What instance() does, with the environment's values passed in (nullptr for unset), so that
  // tests need no setenv.
  static CompileCache from_environment(const char* disable, const char* dir,
                                       const char* xdg_cache_home, const char* home);

  // A cache on `directory` (created with mode 0700 when missing), or a disabled one for
  // std::nullopt. A directory that is a symbolic link, group- or world-writable, or owned by
  // another user is refused: the cache is then off and one warning in the log says why.
  explicit CompileCache(std::optional<std::filesystem::path> directory);
  ~CompileCache();
  CompileCache(CompileCache&&) noexcept;
  CompileCache& operator=(CompileCache&&) noexcept;

  struct Result {
    std::vector<std::byte> binary;
    bool from_disk = false;
  };

  // The entry for the key, or what build() returns, stored under the key. Exceptions from build()
  // propagate and store nothing. Failing to store (disk full, permissions) is not an error: the
  // built binary is returned and one warning goes to the log. Threads asking for the same key
  // build it once; processes racing on the same key may each build, and both succeed.
  Result get_or_build(std::span<const std::string> key_parts,
                      const std::function<std::vector<std::byte>()>& build);

  bool enabled() const;  // false when disabled or when the directory was refused
  // The directory asked for (also when refused); empty for a cache made disabled.
  const std::filesystem::path& directory() const;
  const std::string& disabled_reason() const;  // why the cache is off; "" when on

  // The hex SHA-256 of the key: its parts in order, each prefixed with its length, so that
  // ("ab", "c") and ("a", "bc") differ. This is the entry's file name.
  static std::string key_hash(std::span<const std::string> key_parts);
  // Where the entry for the key lives (whether or not it exists); for tests and diagnostics.
  std::filesystem::path entry_path(std::span<const std::string> key_parts) const;

 private:
  struct Impl;
  CompileCache(std::optional<std::filesystem::path> directory, std::string reason_when_off);

  std::unique_ptr<Impl> impl_;
};

}  // namespace skein::detail
