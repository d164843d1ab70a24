#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs slurm/*.sbatch for real on a one-node Slurm cluster that this script starts on localhost,
# and checks each job's output: which GPUs Slurm bound to each task, and which devices Skein placed
# on each rank.
#
#   bash tests/slurm/run-slurm-test.sh --skein-info PATH [--skein-heat PATH] [--keep]
#                                      [--time-limit SECONDS]
#
# Needs root and Debian's slurm-wlm and munge (tools/install-deps.sh installs them); it installs
# nothing. Exits 77 (ctest's skip) when they are missing, 0 when every check passed, 1 otherwise.
# Whatever happens, the jobs are cancelled and the daemons it started are stopped; the work
# directory (configuration, daemon logs, job outputs) is kept when a check failed, or with --keep.
#
# What one CI machine (one node, 2 cores, no GPU, no systemd) cannot be, and what stands in:
# - GPUs: the node declares 4 GPUs as GRES whose device files are links to /dev/null. Slurm only
#   books them and sets CUDA_VISIBLE_DEVICES for each task (no cgroup plugin opens or fences a
#   device), so the scripts' --gpus-per-task / --gpus-per-node directives run unmodified and the
#   binding they ask for is checked. Skein's placement is checked on 4 PoCL CPU devices
#   (SKEIN_API=opencl): every rank sees all four, as every rank sees all of a node's GPUs under
#   --gpus-per-node or mpirun. A rank that sees only its own GPU (--gpus-per-task=1) cannot be
#   imitated with PoCL, whose devices ignore CUDA_VISIBLE_DEVICES; there the checks are that
#   Slurm gave each task one GPU of its own and that Skein gives each rank one device of its own.
# - nodes: one, so the multi-node scripts run with --nodes=1 (local ranks come from
#   MPI_Comm_split_type, so each node of a larger job is placed the same way). Two slurmd on one
#   host (Debian's Slurm has MULTIPLE_SLURMD) do not make two nodes for an MPI job: both steps'
#   PMIx servers want /tmp/spmix_appdir_<uid>_<job>.<step> (the second fails to launch), and
#   Open MPI names its shared-memory segments by host name, so the two "nodes" ranks map the same
#   segments (a crash in btl/vader under mpirun).
# - CPUs: the node declares at least 4 (SlurmdParameters=config_overrides), because Slurm refuses
#   --ntasks-per-node above the node's CPU count even with --overcommit; Open MPI is allowed to
#   oversubscribe the real cores.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SCRIPTS="$ROOT/slurm"
ME="run-slurm-test"

usage() {
  echo "usage: $0 --skein-info PATH [--skein-heat PATH] [--keep] [--time-limit SECONDS]" >&2
}

SKEIN_INFO=""
SKEIN_HEAT=""
KEEP=0
TIME_LIMIT=300
while (($# > 0)); do
  case "$1" in
    --skein-info) SKEIN_INFO="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --skein-heat) SKEIN_HEAT="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --keep) KEEP=1; shift ;;
    --time-limit) TIME_LIMIT="${2:-}"; shift 2 || { usage; exit 2; } ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$ME: unknown argument '$1'" >&2; usage; exit 2 ;;
  esac
done
if [[ -z "$SKEIN_INFO" || ! -x "$SKEIN_INFO" ]]; then
  echo "$ME: --skein-info must name the built skein-info program (got '${SKEIN_INFO}')" >&2
  usage
  exit 2
fi
if [[ -n "$SKEIN_HEAT" && ! -x "$SKEIN_HEAT" ]]; then
  echo "$ME: --skein-heat '$SKEIN_HEAT' is not an executable file" >&2
  exit 2
fi
if ! [[ "$TIME_LIMIT" =~ ^[0-9]+$ ]] || ((TIME_LIMIT < 60)); then
  echo "$ME: --time-limit must be a whole number of seconds, at least 60 (got '$TIME_LIMIT')" >&2
  exit 2
fi

skip() {
  echo "$ME: SKIP: $*"
  exit 77
}

# ---- what the machine must have --------------------------------------------------------------
if ((EUID != 0)); then
  skip "needs root: slurmd starts jobs as their user and SlurmUser is root here (CI runs as root)"
fi
missing=()
for tool in munged munge unmunge slurmctld slurmd sbatch srun squeue sinfo scontrol scancel; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]} > 0)); then
  skip "Slurm is not installed (missing: ${missing[*]}); install Debian's slurm-wlm and munge" \
       "(bash tools/install-deps.sh) to run the batch scripts on a one-node cluster"
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "$ME: mpirun was not found on PATH, but Skein was built with MPI: install openmpi-bin" >&2
  exit 1
fi
for script in one-node.sbatch multi-node.sbatch multi-node-mpirun.sbatch; do
  if [[ ! -r "$SCRIPTS/$script" ]]; then
    echo "$ME: $SCRIPTS/$script is missing" >&2
    exit 1
  fi
done

# A test started inside a Slurm job must not submit into that job's cluster or inherit its layout.
while read -r name; do
  case "$name" in SLURM_* | SBATCH_* | SRUN_* | SALLOC_*) unset "$name" ;; esac
done < <(compgen -e)

START=$SECONDS
elapsed() { echo $((SECONDS - START)); }
time_left() { echo $((TIME_LIMIT - (SECONDS - START))); }

WORK="$(mktemp -d /tmp/skein-slurm.XXXXXX)"
# munged wants every directory above its socket searchable by everyone.
chmod 0711 "$WORK"
mkdir -p "$WORK"/{etc,log,state,spool,jobs,dev,prefix/bin,run}
mkdir -m 0755 "$WORK/munge"

NODE="$(hostname -s)"
HOST="$(hostname)"  # what gethostname() gives: the host column of Skein's placement table

declare -a DAEMON_NAMES=() DAEMON_PIDS=() JOB_IDS=()
FAILED_CHECKS=0
PASSED_CHECKS=0

stop_daemon() {
  local name="$1" pid="$2"
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$ME: $name (pid $pid) ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
}

show_logs() {
  local f
  for f in "$WORK"/log/*; do
    [[ -s "$f" ]] || continue
    echo "---- last lines of $f"
    tail -n 25 "$f"
  done
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if ((${#JOB_IDS[@]} > 0)); then
    # Cancelled jobs' steps end before slurmd does, so that no slurmstepd outlives the test.
    timeout 20 scancel "${JOB_IDS[@]}" >/dev/null 2>&1
    for _ in $(seq 40); do
      [[ -z "$(timeout 10 squeue -h -j "$(IFS=,; echo "${JOB_IDS[*]}")" 2>/dev/null)" ]] && break
      sleep 0.5
    done
  fi
  # Reverse order of starting: slurmd, slurmctld, munged.
  for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
    stop_daemon "${DAEMON_NAMES[$i]}" "${DAEMON_PIDS[$i]}"
  done
  if ((status != 0)); then
    show_logs
  fi
  if ((status == 0 && KEEP == 0)); then
    rm -rf "$WORK"
  else
    echo "$ME: the configuration, daemon logs and job outputs are in $WORK"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "$ME: interrupted"; exit 130' INT
trap 'echo "$ME: terminated"; exit 143' TERM

die() {
  echo "$ME: FAIL: $*" >&2
  exit 1
}

# Starts a daemon in the foreground mode of its own (-D / -F) as a background job of this script,
# so that its pid is known without trusting a pid file, and stopping it needs no name matching.
start_daemon() {
  local name="$1"
  shift
  "$@" >"$WORK/log/$name.out" 2>&1 &
  DAEMON_NAMES+=("$name")
  DAEMON_PIDS+=("$!")
}

daemon_alive() {
  local i
  for i in "${!DAEMON_NAMES[@]}"; do
    if [[ "${DAEMON_NAMES[$i]}" == "$1" ]]; then
      kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null
      return
    fi
  done
  return 1
}

# Whether some process listens on TCP port $1 (from /proc, so that no netstat/ss is needed).
port_in_use() {
  local hex
  hex="$(printf ':%04X' "$1")"
  awk -v p="$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
                   END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 30000))
    if ! port_in_use "$port" && [[ "$port" != "${1:-}" ]]; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# ---- munge -------------------------------------------------------------------------------------
MUNGE_SOCKET="$WORK/munge/munge.socket"
MUNGE_KEY="$WORK/munge/munge.key"
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$MUNGE_KEY" >"$WORK/log/mungekey.out" 2>&1 ||
    die "mungekey could not create $MUNGE_KEY ($(cat "$WORK/log/mungekey.out"))"
else
  dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none || die "could not write $MUNGE_KEY"
fi
chmod 0400 "$MUNGE_KEY"
start_daemon munged munged --foreground --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
  --pid-file="$WORK/run/munged.pid" --seed-file="$WORK/munge/munged.seed" \
  --log-file="$WORK/log/munged.log"
for _ in $(seq 50); do
  [[ -S "$MUNGE_SOCKET" ]] && break
  daemon_alive munged || break
  sleep 0.2
done
[[ -S "$MUNGE_SOCKET" ]] || die "munged did not create its socket $MUNGE_SOCKET within 10 s"
if ! munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" >"$WORK/log/unmunge.out" 2>&1; then
  die "munge credentials do not decode with the same munged ($(head -n 3 "$WORK/log/unmunge.out"))"
fi

# ---- slurm.conf --------------------------------------------------------------------------------
CTLD_PORT="$(free_port)" || die "no free TCP port for slurmctld"
SLURMD_PORT="$(free_port "$CTLD_PORT")" || die "no free TCP port for slurmd"
REAL_CPUS="$(nproc)"
CPUS=$((REAL_CPUS > 4 ? REAL_CPUS : 4))
GPUS=4
for ((i = 0; i < GPUS; i++)); do ln -s /dev/null "$WORK/dev/nvidia$i"; done

export SLURM_CONF="$WORK/etc/slurm.conf"
cat >"$SLURM_CONF" <<EOF
# Written by tests/slurm/run-slurm-test.sh: a one-node cluster on localhost, for one test run.
ClusterName=skeintest
SlurmctldHost=${NODE}(127.0.0.1)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCKET}
StateSaveLocation=${WORK}/state
SlurmdSpoolDir=${WORK}/spool
SlurmctldPidFile=${WORK}/run/slurmctld.pid
SlurmdPidFile=${WORK}/run/slurmd.pid
SlurmctldLogFile=${WORK}/log/slurmctld.log
SlurmdLogFile=${WORK}/log/slurmd.log
# No cgroups in a CI container: processes are tracked through /proc and tasks are not fenced.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
# ${CPUS} CPUs declared on ${REAL_CPUS} real ones: Slurm refuses more tasks per node than CPUs.
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=${CPUS} Gres=gpu:${GPUS} State=UNKNOWN
PartitionName=test Nodes=${NODE} Default=YES MaxTime=30 State=UP
EOF
# Read from slurm.conf's directory. The device files are links to /dev/null: Slurm books them and
# sets CUDA_VISIBLE_DEVICES, and without cgroup plugins nothing opens them.
cat >"$WORK/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=${NODE} Name=gpu File=${WORK}/dev/nvidia[0-$((GPUS - 1))]
EOF

# ---- slurmctld, slurmd -------------------------------------------------------------------------
echo "$ME: starting a one-node cluster: node ${NODE}, ${CPUS} CPUs (${REAL_CPUS} real)," \
     "${GPUS} GPU GRES on /dev/null, slurmctld port ${CTLD_PORT}, slurmd port ${SLURMD_PORT}," \
     "in ${WORK}"
start_daemon slurmctld slurmctld -D -c -f "$SLURM_CONF"
start_daemon slurmd slurmd -D -N "$NODE" -f "$SLURM_CONF"

state=""
while (($(elapsed) < 60)); do
  daemon_alive slurmctld || die "slurmctld exited while starting"
  daemon_alive slurmd || die "slurmd exited while starting"
  state="$(timeout 10 sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n 1)"
  [[ "$state" == idle ]] && break
  sleep 0.5
done
if [[ "$state" != idle ]]; then
  timeout 10 scontrol show node "$NODE" 2>&1 | sed 's/^/  /'
  die "node ${NODE} is '${state:-not reported}' instead of idle 60 s after the daemons started"
fi
echo "$ME: node ${NODE} is idle after $(elapsed) s"

mpi_plugins="$(timeout 20 srun --mpi=list 2>&1)"
if ! grep -qw pmix <<<"$mpi_plugins"; then
  die "srun --mpi=list shows no pmix plugin (slurm-wlm-basic-plugins has it; it loads libpmix.so" \
      "from libpmix-dev): ${mpi_plugins}"
fi

# ---- the jobs ----------------------------------------------------------------------------------
# Every job finds its programs through the scripts' SKEIN_PREFIX, and places on PoCL devices.
ln -s "$(readlink -f "$SKEIN_INFO")" "$WORK/prefix/bin/skein-info"
# Through bash, so that the probe does not depend on the checkout keeping its execute bit.
printf '#!/bin/bash\nexec bash %q "$@"\n' "$HERE/probe.sh" >"$WORK/prefix/bin/skein-slurm-probe"
chmod 0755 "$WORK/prefix/bin/skein-slurm-probe"
if [[ -n "$SKEIN_HEAT" ]]; then ln -s "$(readlink -f "$SKEIN_HEAT")" "$WORK/prefix/bin/skein-heat"; fi
export SKEIN_PREFIX="$WORK/prefix"
export SKEIN_API=opencl
export POCL_DEVICES="pthread pthread pthread pthread"
export SKEIN_CACHE_DIR="$WORK/cache"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
unset SKEIN_DEVICE SKEIN_DEVICES SKEIN_DEVICES_PER_RANK SKEIN_SHARE_DEVICES SHOW_PLACEMENT
cd "$WORK" || die "cannot enter $WORK"

declare -A JOB_OF=() SCRIPT_OF=() STATE_OF=() EXIT_OF=()
declare -a CASES=()

# submit CASE SCRIPT [VAR=VALUE...] [-- SBATCH_OPTION...] [:: PROGRAM [ARGS...]]
submit() {
  local name="$1" script="$2"
  shift 2
  local -a vars=() opts=() program=()
  local part=vars
  while (($# > 0)); do
    case "$1" in
      --) part=opts ;;
      ::) part=program ;;
      *) eval "$part+=(\"\$1\")" ;;
    esac
    shift
  done
  local out id
  CASES+=("$name")
  SCRIPT_OF[$name]="$script"
  if ! out="$(env "${vars[@]}" timeout 60 sbatch --parsable --export=ALL --time=5 \
                --job-name="$name" --output="$WORK/jobs/$name.out" "${opts[@]}" \
                "$SCRIPTS/$script" "${program[@]}" 2>&1)"; then
    STATE_OF[$name]="NOT-SUBMITTED"
    echo "$ME: sbatch refused $name: $out"
    return
  fi
  id="${out%%;*}"
  JOB_OF[$name]="$id"
  JOB_IDS+=("$id")
  echo "$ME: submitted $name as job $id: ${vars[*]} sbatch ${opts[*]} $script ${program[*]}"
}

submit one-node one-node.sbatch SHOW_PLACEMENT=0 :: skein-slurm-probe --ranks
submit one-node-2gpus one-node.sbatch SHOW_PLACEMENT=0 -- --ntasks=2 --gpus-per-task=2 \
  :: skein-slurm-probe
submit one-node-2gpus-unbound one-node.sbatch SHOW_PLACEMENT=0 \
  -- --ntasks=2 --gpus-per-task=2 --gpu-bind=none :: skein-slurm-probe --ranks
submit one-node-too-many one-node.sbatch SKEIN_DEVICES_PER_RANK=2 :: skein-slurm-probe
submit multi-node multi-node.sbatch SHOW_PLACEMENT=0 -- --nodes=1 :: skein-slurm-probe --ranks
submit multi-node-2ranks multi-node.sbatch SHOW_PLACEMENT=0 -- --nodes=1 --ntasks-per-node=2 \
  :: skein-slurm-probe --ranks
submit multi-node-shared multi-node.sbatch SHOW_PLACEMENT=0 "POCL_DEVICES=pthread" \
  SKEIN_SHARE_DEVICES=1 -- --nodes=1 --ntasks-per-node=2 :: skein-slurm-probe --ranks
submit mpirun multi-node-mpirun.sbatch SHOW_PLACEMENT=0 -- --nodes=1 :: skein-slurm-probe --ranks
submit mpirun-2ranks-1each multi-node-mpirun.sbatch SHOW_PLACEMENT=0 SKEIN_DEVICES_PER_RANK=1 \
  -- --nodes=1 --ntasks-per-node=2 :: skein-slurm-probe --ranks
submit mpirun-no-program multi-node-mpirun.sbatch -- --nodes=1 :: skein-no-such-program --help
if [[ -n "$SKEIN_HEAT" ]]; then
  submit program multi-node.sbatch -- --nodes=1 \
    :: skein-heat --nx 64 --ny 64 --steps 20 --checkpoint-every 10 --out "$WORK/heat"
else
  submit program multi-node.sbatch -- --nodes=1 :: hostname
fi

# ---- waiting, under the time limit -------------------------------------------------------------
terminal() {
  case "$1" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | \
      DEADLINE | NOT-SUBMITTED) return 0 ;;
  esac
  return 1
}

pending=1
while ((pending)); do
  pending=0
  for name in "${CASES[@]}"; do
    terminal "${STATE_OF[$name]:-}" && continue
    info="$(timeout 10 scontrol -o show job "${JOB_OF[$name]}" 2>/dev/null)"
    state="$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2)"
    STATE_OF[$name]="${state:-UNKNOWN}"
    EXIT_OF[$name]="$(grep -o ' ExitCode=[0-9:]*' <<<"$info" | cut -d= -f2)"
    terminal "${STATE_OF[$name]}" || pending=1
  done
  ((pending)) || break
  if (($(time_left) <= 30)); then
    echo "$ME: FAIL: jobs still unfinished after $(elapsed) s (time limit ${TIME_LIMIT} s):"
    for name in "${CASES[@]}"; do
      terminal "${STATE_OF[$name]}" && continue
      echo "  $name (job ${JOB_OF[$name]}):"
      timeout 10 scontrol show job "${JOB_OF[$name]}" 2>&1 | grep -E 'JobState|Reason' | sed 's/^/    /'
    done
    exit 1
  fi
  daemon_alive slurmctld || die "slurmctld exited while jobs were running"
  daemon_alive slurmd || die "slurmd exited while jobs were running"
  sleep 1
done
echo "$ME: all ${#CASES[@]} jobs finished after $(elapsed) s"

# ---- checks ------------------------------------------------------------------------------------
declare -A FAILED_CASE=()
check() {
  local name="$1" what="$2" ok="$3" got="${4:-}"
  if ((ok)); then
    PASSED_CHECKS=$((PASSED_CHECKS + 1))
    echo "ok    $name: $what"
  else
    FAILED_CHECKS=$((FAILED_CHECKS + 1))
    FAILED_CASE[$name]=1
    echo "FAIL  $name: $what${got:+ (got: $got)}"
  fi
}

# The job's output parsed into:
#   PROBE_LOCAL/HOST/CVD/SDEV/SDPR[rank]  one probe line per rank
#   PLACE_LOCAL/HOST/DEVS[rank]           Skein's placement table (devices: PoCL indices, "0,1")
#   PROBE_COUNT, PROBE_DUPLICATES, PLACE_ROWS, PLACE_HEADER
declare -A PROBE_LOCAL PROBE_HOST PROBE_CVD PROBE_SDEV PROBE_SDPR PLACE_LOCAL PLACE_HOST PLACE_DEVS
parse_output() {
  local file="$1" line in_table=0 rank devs rest
  PROBE_LOCAL=() PROBE_HOST=() PROBE_CVD=() PROBE_SDEV=() PROBE_SDPR=()
  PLACE_LOCAL=() PLACE_HOST=() PLACE_DEVS=()
  PROBE_COUNT=0 PROBE_DUPLICATES=0 PLACE_ROWS=0 PLACE_HEADER=""
  [[ -r "$file" ]] || return
  local probe_re='^slurm-probe rank=([^ ]*) local=([^ ]*) host=([^ ]*) cuda_visible_devices=([^ ]*) skein_device=([^ ]*) skein_devices_per_rank=([^ ]*)$'
  local row_re='^([0-9]+) +([^ ]+) +([0-9]+ of [0-9]+) +(.*)$'
  local key_re='\[[^]]*:opencl:[0-9]+:([0-9]+)\](.*)$'
  while IFS= read -r line; do
    if [[ "$line" =~ $probe_re ]]; then
      rank="${BASH_REMATCH[1]}"
      [[ -n "${PROBE_HOST[$rank]+set}" ]] && PROBE_DUPLICATES=$((PROBE_DUPLICATES + 1))
      PROBE_LOCAL[$rank]="${BASH_REMATCH[2]}"
      PROBE_HOST[$rank]="${BASH_REMATCH[3]}"
      PROBE_CVD[$rank]="${BASH_REMATCH[4]}"
      PROBE_SDEV[$rank]="${BASH_REMATCH[5]}"
      PROBE_SDPR[$rank]="${BASH_REMATCH[6]}"
      PROBE_COUNT=$((PROBE_COUNT + 1))
      continue
    fi
    # Only the first table counts: the scripts' placement step prints it before the program,
    # which may print its own.
    if [[ -z "$PLACE_HEADER" && "$line" =~ ^Skein\ .*:\ ([0-9]+)\ rank\(s\)$ ]]; then
      PLACE_HEADER="$line"
      continue
    fi
    if ((PLACE_ROWS == 0)) && [[ "$line" =~ ^rank\ +host\ +local\ rank\ +devices$ ]]; then
      in_table=1
      continue
    fi
    if ((in_table)) && [[ "$line" =~ $row_re ]]; then
      rank="${BASH_REMATCH[1]}"
      PLACE_HOST[$rank]="${BASH_REMATCH[2]}"
      PLACE_LOCAL[$rank]="${BASH_REMATCH[3]}"
      rest="${BASH_REMATCH[4]}"
      devs=""
      while [[ "$rest" =~ $key_re ]]; do
        devs="${devs:+$devs,}${BASH_REMATCH[1]}"
        rest="${BASH_REMATCH[2]}"
      done
      PLACE_DEVS[$rank]="$devs"
      PLACE_ROWS=$((PLACE_ROWS + 1))
      continue
    fi
    in_table=0
  done <"$file"
}

expect_state() {
  local name="$1" want_state="$2" want_exit="$3"
  check "$name" "job ${JOB_OF[$name]:-?} ends ${want_state} with exit code ${want_exit}" \
    "$([[ "${STATE_OF[$name]}" == "$want_state" && "${EXIT_OF[$name]}" == "$want_exit" ]] && echo 1 || echo 0)" \
    "${STATE_OF[$name]} ${EXIT_OF[$name]:-}"
}

expect_text() {
  local name="$1" text="$2" file="$WORK/jobs/$1.out"
  check "$name" "output says: $text" "$(grep -qF -- "$text" "$file" 2>/dev/null && echo 1 || echo 0)"
}

expect_no_text() {
  local name="$1" text="$2" what="$3" file="$WORK/jobs/$1.out"
  check "$name" "$what" "$(grep -qF -- "$text" "$file" 2>/dev/null && echo 0 || echo 1)"
}

# One probe line for each of ranks 0..n-1, each on this host with local rank = rank (one node).
expect_probes() {
  local name="$1" n="$2" r ok=1 got=""
  ((PROBE_COUNT == n && PROBE_DUPLICATES == 0)) || { ok=0; got="$PROBE_COUNT lines, $PROBE_DUPLICATES repeated"; }
  for ((r = 0; r < n; r++)); do
    if [[ "${PROBE_HOST[$r]:-}" != "$HOST" || "${PROBE_LOCAL[$r]:-}" != "$r" ]]; then
      ok=0
      got+="${got:+; }rank $r: host=${PROBE_HOST[$r]:-missing} local=${PROBE_LOCAL[$r]:-missing}"
    fi
  done
  check "$name" "one task line for each of ranks 0..$((n - 1)), on ${HOST}, local rank = rank" "$ok" "$got"
}

# Slurm bound k GPUs of its own to each task: the tasks' CUDA_VISIBLE_DEVICES are disjoint sets of
# k indices that together are all the node's GPUs.
expect_bound_gpus() {
  local name="$1" n="$2" k="$3" r all="" got="" ok=1
  for ((r = 0; r < n; r++)); do
    local cvd="${PROBE_CVD[$r]:-unset}"
    got+="${got:+ }$r:$cvd"
    [[ "$cvd" =~ ^[0-9]+(,[0-9]+)*$ ]] || { ok=0; continue; }
    local -a ids
    IFS=, read -ra ids <<<"$cvd"
    ((${#ids[@]} == k)) || ok=0
    all+="${all:+ }${ids[*]}"
  done
  local sorted expected
  sorted="$(tr ' ' '\n' <<<"$all" | sort -n | tr '\n' ' ')"
  expected="$(seq 0 $((GPUS - 1)) | tr '\n' ' ')"
  [[ "$sorted" == "$expected" ]] || ok=0
  check "$name" "Slurm bound ${k} GPU(s) of its own to each task (CUDA_VISIBLE_DEVICES)" "$ok" "$got"
}

# Every task sees all the node's GPUs: CUDA_VISIBLE_DEVICES lists them all, or (with "unset")
# Slurm leaves it unset, and CUDA shows every GPU that the job may use.
expect_all_gpus() {
  local name="$1" n="$2" all="${3:-}" r got="" ok=1
  [[ -n "$all" ]] || all="$(seq -s, 0 $((GPUS - 1)))"
  for ((r = 0; r < n; r++)); do
    got+="${got:+ }$r:${PROBE_CVD[$r]:-missing}"
    [[ "${PROBE_CVD[$r]:-}" == "$all" ]] || ok=0
  done
  check "$name" "every task sees all the node's GPUs (CUDA_VISIBLE_DEVICES=$all)" "$ok" "$got"
}

# The SKEIN_DEVICE / SKEIN_DEVICES_PER_RANK every rank ran with.
expect_rank_env() {
  local name="$1" n="$2" device="$3" per_rank="$4" r got="" ok=1
  for ((r = 0; r < n; r++)); do
    got+="${got:+ }$r:${PROBE_SDEV[$r]:-?}/${PROBE_SDPR[$r]:-?}"
    [[ "${PROBE_SDEV[$r]:-}" == "$device" && "${PROBE_SDPR[$r]:-}" == "$per_rank" ]] || ok=0
  done
  check "$name" "every rank runs with SKEIN_DEVICE=$device SKEIN_DEVICES_PER_RANK=$per_rank" "$ok" "$got"
}

# Skein's table: rank r on this host, local rank "r of n", PoCL devices as given ("0,1|2,3").
expect_placement() {
  local name="$1" n="$2" devices="$3" r ok=1 got=""
  local -a want
  IFS='|' read -ra want <<<"$devices"
  [[ "$PLACE_HEADER" == *": $n rank(s)" && "$PLACE_ROWS" == "$n" ]] || {
    ok=0
    got="header '${PLACE_HEADER:-missing}', $PLACE_ROWS row(s)"
  }
  for ((r = 0; r < n; r++)); do
    local row="${PLACE_HOST[$r]:-missing} ${PLACE_LOCAL[$r]:-missing} [${PLACE_DEVS[$r]:-}]"
    got+="${got:+; }rank $r: $row"
    [[ "$row" == "$HOST $r of $n [${want[$r]}]" ]] || ok=0
  done
  check "$name" "Skein placed rank r (local rank r of $n) on PoCL device(s) ${devices//|/ | }" "$ok" "$got"
}

for name in "${CASES[@]}"; do
  parse_output "$WORK/jobs/$name.out"
  case "$name" in
    one-node)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "one-node.sbatch: job ${JOB_OF[$name]} on 1 node(s)"
      expect_text "$name" "GPUs per task: 1, launcher: srun --mpi=pmix"
      expect_probes "$name" 4
      expect_bound_gpus "$name" 4 1
      # One GPU per task needs no setting: a rank that sees one device uses it.
      expect_rank_env "$name" 4 unset unset
      expect_placement "$name" 4 "0|1|2|3"
      ;;
    one-node-2gpus)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "GPUs per task: 2, launcher: srun --mpi=pmix"
      expect_text "$name" "one-node.sbatch:   SKEIN_DEVICES_PER_RANK=2"
      expect_probes "$name" 2
      expect_bound_gpus "$name" 2 2
      # Each rank sees only its own two GPUs and takes both: the first and the one after it.
      expect_rank_env "$name" 2 0 2
      ;;
    one-node-2gpus-unbound)
      # A site's --gpu-bind=none undoes the per-task binding: Slurm leaves CUDA_VISIBLE_DEVICES
      # unset, both ranks see all four GPUs (and the four PoCL devices), both take the first two,
      # and Skein refuses to let two ranks share a device rather than run slowly on half the GPUs.
      expect_state "$name" FAILED 1:0
      expect_probes "$name" 2
      expect_all_gpus "$name" 2 unset
      expect_rank_env "$name" 2 0 2
      expect_text "$name" "two ranks on one host would use the same device"
      expect_text "$name" "Set SKEIN_SHARE_DEVICES=1 if ranks may share a device"
      ;;
    one-node-too-many)
      # Four ranks at two devices each need eight devices; the node has four.
      expect_state "$name" FAILED 1:0
      expect_text "$name" "4 devices for 4 ranks on host ${HOST} at 2 device(s) per rank"
      expect_text "$name" "Set SKEIN_SHARE_DEVICES=1, ask for fewer devices per rank"
      expect_no_text "$name" "slurm-probe" "the program did not start after the placement failed"
      ;;
    multi-node)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "4 rank(s), 4 per node, GPUs per node: 4, launcher: srun --mpi=pmix"
      expect_probes "$name" 4
      expect_all_gpus "$name" 4
      expect_placement "$name" 4 "0|1|2|3"
      ;;
    multi-node-2ranks)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "2 rank(s), 2 per node, GPUs per node: 4, launcher: srun --mpi=pmix"
      expect_probes "$name" 2
      expect_all_gpus "$name" 2
      expect_placement "$name" 2 "0,1|2,3"
      ;;
    multi-node-shared)
      # One device on the node and SKEIN_SHARE_DEVICES=1 from the submitting environment: both
      # ranks use it.
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "multi-node.sbatch:   SKEIN_SHARE_DEVICES=1"
      expect_probes "$name" 2
      expect_placement "$name" 2 "0|0"
      ;;
    mpirun)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "4 rank(s), 4 per node, GPUs per node: 4, launcher: mpirun -n 4 --map-by ppr:4:node"
      expect_probes "$name" 4
      expect_all_gpus "$name" 4
      expect_placement "$name" 4 "0|1|2|3"
      ;;
    mpirun-2ranks-1each)
      expect_state "$name" COMPLETED 0:0
      expect_text "$name" "launcher: mpirun -n 2 --map-by ppr:2:node"
      expect_text "$name" "multi-node-mpirun.sbatch:   SKEIN_DEVICES_PER_RANK=1"
      expect_probes "$name" 2
      expect_all_gpus "$name" 2
      expect_rank_env "$name" 2 unset 1
      expect_placement "$name" 2 "0|1"
      ;;
    mpirun-no-program)
      expect_state "$name" FAILED 2:0
      expect_text "$name" "'skein-no-such-program' was not found on PATH"
      expect_text "$name" "Set SKEIN_PREFIX to Skein's install prefix"
      ;;
    program)
      # The scripts' own placement step (SHOW_PLACEMENT=1, the default), then the program.
      expect_state "$name" COMPLETED 0:0
      expect_placement "$name" 4 "0|1|2|3"
      if [[ -n "$SKEIN_HEAT" ]]; then
        expect_text "$name" "multi-node.sbatch: running skein-heat --nx 64"
        # skein-heat checks its field against the analytic solution and writes --out DIR.
        expect_text "$name" "on 4 device(s) of 4 rank(s)"
        expect_text "$name" ", tolerance"
        expect_text "$name" ": passed"
        check "$name" "skein-heat wrote heat.h5 and the checkpoint of step 20" \
          "$([[ -s "$WORK/heat/heat.h5" && -s "$WORK/heat/checkpoints/checkpoint-0000000020.done" ]] && echo 1 || echo 0)" \
          "$(ls -R "$WORK/heat" 2>&1 | tr '\n' ' ')"
      else
        expect_text "$name" "multi-node.sbatch: running hostname"
        check "$name" "the program ran on each of the 4 ranks" \
          "$([[ "$(grep -cxF "$HOST" "$WORK/jobs/$name.out")" == 4 ]] && echo 1 || echo 0)" \
          "$(grep -cxF "$HOST" "$WORK/jobs/$name.out") line(s) '$HOST'"
      fi
      ;;
  esac
done

for name in "${!FAILED_CASE[@]}"; do
  echo "---- output of $name (job ${JOB_OF[$name]:-not submitted}, ${SCRIPT_OF[$name]})"
  cat "$WORK/jobs/$name.out" 2>/dev/null || echo "(no output file)"
done

echo "$ME: ${#CASES[@]} jobs in $(elapsed) s"
echo "slurm: ${PASSED_CHECKS} passed, ${FAILED_CHECKS} failed"
((FAILED_CHECKS == 0))
