#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the guide's example programs (target docs-examples) as a user who copied them would:
#   - as they are, each must end with status 0 and print "ok";
#   - with an environment value Skein rejects, each must print Skein's error (naming the value) on
#     stderr and end with a non-zero status of its own: not in std::terminate ("terminate
#     called", SIGABRT, status 134), not killed by any other signal, no core dump.
# distributed, domains, stencils, cg, interop and settings run under mpirun with 2 ranks (domains, stencils and cg also with 1); distributed's bad SKEIN_API is refused by
# the Runtime's constructor, its bad SKEIN_DISABLE_CACHE later (when it compiles its kernel);
# settings' bad SKEIN_LOG_LEVEL by the Runtime's constructor.
#
#   bash docs/check-examples.sh EXAMPLES_DIR [MPIEXEC]    (ctest docs.examples runs it)
# Exit 0: all good; 1: a failure (each one printed with the program's output).
set -u
dir=${1:?usage: check-examples.sh EXAMPLES_DIR [MPIEXEC]}
mpiexec=${2:-}
failures=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# run NAME EXPECT WORD [ENV=VALUE...] -- COMMAND...
#   EXPECT: ok (status 0, "ok" on stdout) or error (status 1..127, WORD on stderr)
run() {
  local name=$1 expect=$2 word=$3
  shift 3
  local -a env_args=()
  while [[ $1 != -- ]]; do env_args+=("$1"); shift; done
  shift
  local out="$scratch/out" err="$scratch/err" status problem=""
  # ulimit -c 0: a crash must show in the status, not fill the disk.
  (ulimit -c 0; env "${env_args[@]}" timeout 120 "$@") >"$out" 2>"$err"
  status=$?
  if grep -qE 'terminate called|core dumped|Aborted|signal 6|SIGABRT' "$out" "$err"; then
    problem="std::terminate or an abort"
  elif ((status == 124)); then
    problem="timed out"
  elif [[ $expect == ok ]]; then
    if ((status != 0)); then problem="status $status, expected 0"
    elif ! grep -qw ok "$out"; then problem="no 'ok' on stdout"
    fi
  else
    if ((status == 0)); then problem="status 0, expected an error"
    elif ((status >= 128)); then problem="status $status (a signal), expected an error status"
    elif ! grep -qF -- "$word" "$err"; then problem="stderr does not say '$word'"
    fi
  fi
  if [[ -n $problem ]]; then
    echo "FAIL $name: $problem"
    echo "--- stdout:"; tail -20 "$out"
    echo "--- stderr:"; tail -20 "$err"
    failures=$((failures + 1))
  else
    echo "ok   $name (status $status)"
  fi
}

four="POCL_DEVICES=pthread pthread pthread pthread"
for example in quickstart kernels seeds; do
  [[ -x $dir/$example ]] || { echo "FAIL $example: $dir/$example is missing (build target docs-examples)"; failures=$((failures + 1)); continue; }
  run "$example" ok "" "$four" -- "$dir/$example"
done
# PoCL without devices: Skein finds no device for quickstart; kernels looks for them itself.
run "quickstart, POCL_DEVICES=nonsense" error "skein: select_devices: no OpenCL platform has" \
  "POCL_DEVICES=nonsense" -- "$dir/quickstart"
run "kernels, POCL_DEVICES=nonsense" error "no device here" "POCL_DEVICES=nonsense" -- "$dir/kernels"
run "seeds, POCL_DEVICES=nonsense" error "skein: select_devices: no OpenCL platform has" \
  "POCL_DEVICES=nonsense" -- "$dir/seeds"
run "kernels, SKEIN_DISABLE_CACHE=nonsense" error "SKEIN_DISABLE_CACHE='nonsense' is not valid" "$four" "SKEIN_DISABLE_CACHE=nonsense" \
  -- "$dir/kernels"

if [[ -n $mpiexec ]]; then
  if [[ -x $dir/distributed ]]; then
    mpi=("$mpiexec" -n 2 --oversubscribe "$dir/distributed")
    run "distributed on 2 ranks" ok "" "$four" -- "${mpi[@]}"
    run "distributed on 2 ranks, SKEIN_API=nonsense" error "SKEIN_API='nonsense' is not valid" "$four" "SKEIN_API=nonsense" -- "${mpi[@]}"
    run "distributed on 2 ranks, SKEIN_DISABLE_CACHE=nonsense" error "SKEIN_DISABLE_CACHE='nonsense' is not valid" "$four" \
      "SKEIN_DISABLE_CACHE=nonsense" -- "${mpi[@]}"
    if [[ -x $dir/domains ]]; then
      run "domains on 2 ranks" ok "" "$four" -- "$mpiexec" -n 2 --oversubscribe "$dir/domains"
      run "domains on 1 rank" ok "" "$four" -- "$mpiexec" -n 1 --oversubscribe "$dir/domains"
    else
      echo "FAIL domains: $dir/domains is missing (build target docs-examples)"
      failures=$((failures + 1))
    fi
    if [[ -x $dir/stencils ]]; then
      run "stencils on 2 ranks" ok "" "$four" -- "$mpiexec" -n 2 --oversubscribe "$dir/stencils"
      run "stencils on 1 rank" ok "" "$four" -- "$mpiexec" -n 1 --oversubscribe "$dir/stencils"
    else
      echo "FAIL stencils: $dir/stencils is missing (build target docs-examples)"
      failures=$((failures + 1))
    fi
    if [[ -x $dir/cg ]]; then
      run "cg on 2 ranks" ok "" "$four" -- "$mpiexec" -n 2 --oversubscribe "$dir/cg"
      run "cg on 1 rank" ok "" "$four" -- "$mpiexec" -n 1 --oversubscribe "$dir/cg"
    else
      echo "FAIL cg: $dir/cg is missing (build target docs-examples)"
      failures=$((failures + 1))
    fi
    if [[ -x $dir/settings ]]; then
      run "settings on 2 ranks" ok "" "$four" -- "$mpiexec" -n 2 --oversubscribe "$dir/settings"
      run "settings on 2 ranks, SKEIN_LOG_LEVEL=nonsense" error "SKEIN_LOG_LEVEL='nonsense' is not valid" "$four" \
        "SKEIN_LOG_LEVEL=nonsense" -- "$mpiexec" -n 2 --oversubscribe "$dir/settings"
    else
      echo "FAIL settings: $dir/settings is missing (build target docs-examples)"
      failures=$((failures + 1))
    fi
    # interop writes interop.h5 where it runs: in the scratch directory.
    if [[ -x $dir/interop ]]; then
      pushd "$scratch" >/dev/null || exit 1
      run "interop on 2 ranks" ok "" "$four" -- "$mpiexec" -n 2 --oversubscribe "$dir/interop"
      popd >/dev/null || exit 1
    else
      echo "FAIL interop: $dir/interop is missing (build target docs-examples)"
      failures=$((failures + 1))
    fi
    # Without mpirun (one rank, MPI started by the Runtime).
    run "distributed alone, SKEIN_API=nonsense" error "SKEIN_API='nonsense' is not valid" "$four" "SKEIN_API=nonsense" -- "$dir/distributed"
  else
    echo "FAIL distributed: $dir/distributed is missing (build target docs-examples)"
    failures=$((failures + 1))
  fi
fi

if ((failures > 0)); then
  echo "check-examples: $failures failure(s)"
  exit 1
fi
echo "check-examples: every example ends cleanly, with Skein's message when the environment is bad"
