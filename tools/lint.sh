#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Skein's static checks, as CI runs them (the tests lint.format and lint.tidy):
#
#   bash tools/lint.sh format [--fix]     clang-format: every C and C++ source of the tree is
#                                         formatted as .clang-format says (--fix rewrites them)
#   bash tools/lint.sh tidy [BUILD_DIR]   clang-tidy with .clang-tidy's checks on the libraries'
#                                         sources (framework/, collectives/), as BUILD_DIR compiles
#                                         them (its compile_commands.json; build/ by default)
#
# Both exit non-zero on any finding. One version of each tool, so that every machine formats and
# checks alike: LLVM 16 (Debian 12's clang-format-16 and clang-tidy-16: `bash tools/install-deps.sh
# --lint` installs them, as CI's deps phase does). LLVM 14, Debian 12's default, cannot read libstdc++ 12's
# <source_location>.
# CLANG_FORMAT and CLANG_TIDY name other binaries; JOBS sets clang-tidy's parallel runs (one per
# core by default).
#
# clang-tidy reads what the build compiled: a build with SKEIN_UNITY_BUILD=ON (CI's) gives it a few
# batches of sources to parse, each header once per batch (about 200 CPU-s here for the
# libraries); a file-by-file build gives it each source alone (about 650 CPU-s).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLANG_FORMAT="${CLANG_FORMAT:-clang-format-16}"
CLANG_TIDY="${CLANG_TIDY:-clang-tidy-16}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "lint: '$1' is not installed: bash tools/install-deps.sh --lint installs clang-format-16" \
         "and clang-tidy-16 (or set $2 to another binary of LLVM 16)." >&2
    exit 2
  fi
}

# The tree's C and C++ sources: what git tracks or would, or every file when the tree is not a git
# clone.
sources() {
  local patterns=('*.c' '*.h' '*.cpp' '*.hpp' '*.cu')
  if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files and new ones not yet added (not the ignored): a file about to be committed is
    # checked before it is.
    git -C "$ROOT" ls-files -z --cached --others --exclude-standard -- "${patterns[@]}"
  else
    (cd "$ROOT" && find framework collectives apps tests docs tools -type f \
      \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \) -print0)
  fi
}

run_format() {
  need "$CLANG_FORMAT" CLANG_FORMAT
  cd "$ROOT"
  if [[ "${1:-}" == --fix ]]; then
    sources | xargs -0 -r "$CLANG_FORMAT" -i
    echo "lint: formatted the tree with $("$CLANG_FORMAT" --version)"
    return 0
  fi
  local status=0
  sources | xargs -0 -r "$CLANG_FORMAT" --dry-run --Werror || status=$?
  if ((status != 0)); then
    echo "lint: the files above are not formatted as .clang-format says; run" \
         "'bash tools/lint.sh format --fix' and commit the result." >&2
    return 1
  fi
  echo "lint: every source is formatted ($("$CLANG_FORMAT" --version))"
}

run_tidy() {
  need "$CLANG_TIDY" CLANG_TIDY
  local build="${1:-$ROOT/build}"
  local db="$build/compile_commands.json"
  if [[ ! -f "$db" ]]; then
    echo "lint: $db does not exist; configure the build first (tools/build.sh writes it)." >&2
    return 2
  fi
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  # The libraries' translation units, without the precompiled header: clang cannot read GCC's, and
  # the header it stands for is included by every source anyway.
  python3 - "$db" "$ROOT" "$work" <<'PY'
import json, os, re, sys
db, root, work = sys.argv[1:4]
entries = json.load(open(db))
units = []
for e in entries:
    f = e["file"]
    if "cmake_pch" in f:
        continue
    command = e.get("command") or " ".join(e["arguments"])
    # A library's own sources: a file under framework/ or collectives/ of the tree, or a unity
    # batch of a library target (skein_framework, skein_comm, ...; not the tests' programs).
    rel = os.path.relpath(f, root)
    own = re.match(r"(framework|collectives|bindings)/", rel) is not None and \
        not rel.endswith((".f90", ".F90"))  # the Fortran module's sources are gfortran's
    batch = re.search(r"/CMakeFiles/skein_(framework|comm|dist|io|c)\.dir/Unity/", f) is not None
    if not (own or batch):
        continue
    command = re.sub(r"-include \S*cmake_pch\.hxx", "", command).replace("-Winvalid-pch", "")
    # GCC's warnings are GCC's to report (SKEIN_WARNINGS_AS_ERRORS builds with -Werror): with it,
    # clang would turn its own warnings, and GCC-only options it does not know
    # (-Wno-subobject-linkage), into errors that are no finding of .clang-tidy's checks.
    command = re.sub(r"(^| )-Werror(?=( |$))", " ", command)
    e = dict(e, command=command)
    e.pop("arguments", None)
    units.append(e)
json.dump(units, open(os.path.join(work, "compile_commands.json"), "w"))
open(os.path.join(work, "files"), "w").write("\n".join(u["file"] for u in units) + "\n")
PY
  local count
  count=$(wc -l <"$work/files")
  echo "lint: clang-tidy on $count translation units of the libraries ($("$CLANG_TIDY" --version | grep -m1 version | sed 's/^ *//'), $JOBS at a time)"
  local status=0
  # --header-filter: findings in the libraries' headers and in the sources of a unity batch (each
  # is a header to the batch), not in system or third-party headers.
  xargs -P "$JOBS" -n 1 "$CLANG_TIDY" -p "$work" --quiet --config-file="$ROOT/.clang-tidy" \
    --extra-arg=-Wno-unknown-warning-option \
    --header-filter="^$ROOT/(framework|collectives|bindings)/" <"$work/files" >"$work/out" 2>&1 || status=$?
  # Each header's findings come once per batch that includes it: print each once.
  grep -E '^[^ ].*(warning|error):' "$work/out" | sort -u >"$work/findings" || true
  if ((status != 0)) || [[ -s "$work/findings" ]]; then
    if [[ -s "$work/findings" ]]; then
      # The whole report (with the code lines) for the first findings, then the list.
      head -n 200 "$work/out"
      echo "lint: clang-tidy found $(wc -l <"$work/findings") problem(s):"
      cat "$work/findings"
    else
      cat "$work/out"
    fi
    echo "lint: fix them (or, for a finding that is wrong, a NOLINT(check) comment saying why)." >&2
    return 1
  fi
  echo "lint: clang-tidy found nothing in $count translation units"
}

case "${1:-}" in
  format) shift; run_format "$@" ;;
  tidy) shift; run_tidy "$@" ;;
  *)
    echo "usage: $0 format [--fix] | tidy [BUILD_DIR]" >&2
    exit 2
    ;;
esac
