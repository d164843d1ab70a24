#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A multi-node Slurm cluster on one machine: slurmctld and N slurmd "nodes" (default 2), each in a
# network, UTS and mount namespace of its own, joined by a bridge that this script creates; then
# slurm/multi-node.sbatch and slurm/multi-node-mpirun.sbatch run on it as a user would submit them.
#
#   bash tests/slurm/run-multinode-test.sh --skein-info PATH [--skein-heat PATH]
#        [--mpi-tests PATH [--gtest-filter FILTER]] [--nodes N] [--keep] [--time-limit SECONDS]
#
# What it checks (each part needs the program named; missing programs leave their part out):
#   placement    sbatch -N 2 --ntasks-per-node=2 multi-node.sbatch: skein-info --ranks puts ranks
#                0,1 on the first node and 2,3 on the second, local ranks 0 and 1 on each, devices
#                shared out per node; the same with multi-node-mpirun.sbatch
#   collectives  skein-mpi-tests (a subset: --gtest-filter) on those 4 ranks, MPI between the nodes
#                over TCP on the bridge (OMPI_MCA_btl=self,tcp; no path but the bridge exists)
#   restart      skein-heat 2 nodes x 2 ranks to step 10 with checkpoints in a directory shared by
#                the nodes, restarted on 1 node x 3 ranks to step 20: the field (h5dump -b of /u)
#                byte-identical (cmp, SHA-256) to an uninterrupted 2 x 2 run of 20 steps
#   dead node    during a 2-node skein-heat job (restarted from a checkpoint that a short job wrote),
#                the second node dies (its link goes down, then its
#                slurmd and every process in it are killed, as in a power loss): the ranks on the
#                surviving node must exit within SKEIN_COLLECTIVE_TIMEOUT plus a margin, the job
#                non-zero, with Skein's error naming the lost ranks; a restart from the newest checkpoint on the surviving node completes
#
# Needs root, Slurm (slurm-wlm), munge, Open MPI, iproute2 and util-linux (unshare, nsenter), and h5dump for
# the restart; installs nothing. Exits 77 (ctest's skip) when they are missing or when the machine
# does not allow network namespaces, bridges or veth pairs (an unprivileged container), 0 when
# every check passed, 1 otherwise. Whatever happens (trap on EXIT/INT/TERM): jobs cancelled,
# daemons stopped, every process of every node's namespace killed (the namespaces, their mounts
# and veths go with them), the bridge deleted; the work directory is kept on failure or --keep.
#
# Why namespaces: two slurmd on one host do not make two MPI nodes (tests/slurm/run-slurm-test.sh
# says why: PMIx's /tmp/spmix_appdir_<uid>_<job>.<step> and Open MPI's shared-memory segments
# named by host name collide). Here each node has its own host name (UTS), its own addresses
# (network: eth0 on the bridge, its own lo), and its own /tmp, /dev/shm and /etc/hosts (a private
# mount namespace with bind mounts); the work directory, under /var/tmp, is shared by all nodes as
# a cluster file system would be. slurmctld has a namespace of its own too, so no daemon listens in
# the machine's own network namespace; munged serves every namespace through its socket file.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SCRIPTS="$ROOT/slurm"
ME="run-multinode-test"

usage() {
  echo "usage: $0 --skein-info PATH [--skein-heat PATH] [--mpi-tests PATH [--gtest-filter F]]" \
       "[--nodes N] [--keep] [--time-limit SECONDS]" >&2
}

SKEIN_INFO="" SKEIN_HEAT="" MPI_TESTS="" GTEST_FILTER="*" NODES=2 KEEP=0 TIME_LIMIT=300
while (($# > 0)); do
  case "$1" in
    --skein-info) SKEIN_INFO="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --skein-heat) SKEIN_HEAT="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --mpi-tests) MPI_TESTS="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --gtest-filter) GTEST_FILTER="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --nodes) NODES="${2:-}"; shift 2 || { usage; exit 2; } ;;
    --keep) KEEP=1; shift ;;
    --time-limit) TIME_LIMIT="${2:-}"; shift 2 || { usage; exit 2; } ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$ME: unknown argument '$1'" >&2; usage; exit 2 ;;
  esac
done
for prog in "$SKEIN_INFO" "$SKEIN_HEAT" "$MPI_TESTS"; do
  if [[ -n "$prog" && ! -x "$prog" ]]; then
    echo "$ME: '$prog' is not an executable file" >&2
    exit 2
  fi
done
if [[ -z "$SKEIN_INFO" ]]; then
  echo "$ME: --skein-info must name the built skein-info program" >&2
  usage
  exit 2
fi
if ! [[ "$NODES" =~ ^[2-4]$ ]]; then
  echo "$ME: --nodes must be 2, 3 or 4 (got '$NODES')" >&2
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

# ---- what the machine must have and allow ------------------------------------------------------
((EUID == 0)) || skip "needs root (namespaces, a bridge, and slurmd running jobs as root)"
missing=()
for tool in munged munge unmunge slurmctld slurmd sbatch srun squeue sinfo scontrol scancel \
            unshare nsenter ip mpirun; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
((${#missing[@]} == 0)) || skip "missing: ${missing[*]} (bash tools/install-deps.sh installs them)"
if [[ -n "$SKEIN_HEAT" ]] && ! command -v h5dump >/dev/null 2>&1; then
  skip "h5dump is missing (hdf5-tools): the restart cannot be compared"
fi
ROOT_NS="$(readlink /proc/self/ns/net)"
if ! out="$(timeout 10 unshare --net --uts --mount --propagation private -- true 2>&1)"; then
  skip "this machine does not allow network/UTS/mount namespaces (unshare: $out)"
fi
PROBE_BR="skp$$"
if ! out="$(ip link add "$PROBE_BR" type bridge 2>&1)"; then
  skip "this machine does not allow creating a bridge (ip link add type bridge: $out)"
fi
ip link del "$PROBE_BR" 2>/dev/null

# A test started inside a Slurm job must not submit into that job's cluster or inherit its layout.
while read -r name; do
  case "$name" in SLURM_* | SBATCH_* | SRUN_* | SALLOC_*) unset "$name" ;; esac
done < <(compgen -e)

START=$SECONDS
elapsed() { echo $((SECONDS - START)); }
time_left() { echo $((TIME_LIMIT - (SECONDS - START))); }

# Not under /tmp: every node mounts a /tmp of its own over it.
WORK="$(mktemp -d /var/tmp/skein-multinode.XXXXXX)"
chmod 0711 "$WORK"  # munged wants every directory above its socket searchable by everyone
mkdir -p "$WORK"/{etc,log,state,spool,jobs,dev,prefix/bin,run,shared,nodes}
mkdir -m 0755 "$WORK/munge"

# A /24 of 10.x.y.0 that no route of this machine uses.
SUBNET=""
for _ in $(seq 50); do
  candidate="10.$((200 + RANDOM % 50)).$((RANDOM % 250))"
  if ! ip -4 route show | grep -q "^${candidate//./\\.}\."; then
    SUBNET="$candidate"
    break
  fi
done
BRIDGE="skbr$$"
CTL="skctl"
CTL_IP="$SUBNET.2"
declare -a NODE_NAMES=() NODE_IPS=()
for ((i = 1; i <= NODES; i++)); do
  NODE_NAMES+=("skn$i")
  NODE_IPS+=("$SUBNET.$((10 + i))")
done

declare -a DAEMON_NAMES=() DAEMON_PIDS=() JOB_IDS=()
declare -A NS_PID=() NS_ID=() VETH=()
BRIDGE_MADE=0
FAILED_CHECKS=0
PASSED_CHECKS=0

# The processes in the network namespace $1 (an id as readlink /proc/PID/ns/net gives it).
ns_pids() {
  local ns="$1" p
  [[ -n "$ns" && "$ns" != "$ROOT_NS" ]] || return 0
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/ns/net" 2>/dev/null)" == "$ns" ]] && echo "${p#/proc/}"
  done
}

# Kills every process of namespace-host $1 (a node or the controller) with signal $2.
kill_ns() {
  local host="$1" sig="$2" pids
  pids="$(ns_pids "${NS_ID[$host]:-}")"
  [[ -n "$pids" ]] && kill "-$sig" $pids 2>/dev/null
  return 0
}

stop_daemon() {
  local name="$1" pid="$2"
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
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
    tail -n 20 "$f"
  done
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if ((${#JOB_IDS[@]} > 0)) && daemon_alive slurmctld; then
    timeout 20 scancel "${JOB_IDS[@]}" >/dev/null 2>&1
    for _ in $(seq 30); do
      [[ -z "$(timeout 5 squeue -h -t R,CG,PD -j "$(IFS=,; echo "${JOB_IDS[*]}")" 2>/dev/null)" ]] && break
      sleep 0.5
    done
  fi
  # Daemons in reverse order of starting (slurmd's, slurmctld, munged), then whatever is left in
  # the namespaces (job steps, the namespaces' holders): the namespaces, their mounts and their
  # veth ends go when their last process does.
  for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
    stop_daemon "${DAEMON_NAMES[$i]}" "${DAEMON_PIDS[$i]}"
  done
  local host left
  for host in "${!NS_PID[@]}"; do kill_ns "$host" KILL; done
  for host in "${!NS_PID[@]}"; do
    for _ in $(seq 50); do
      left="$(ns_pids "${NS_ID[$host]}")"
      [[ -z "$left" ]] && break
      kill -KILL $left 2>/dev/null
      sleep 0.1
    done
    [[ -z "$left" ]] || echo "$ME: processes still in $host's namespace: $left"
  done
  if ((BRIDGE_MADE)); then
    for host in "${!VETH[@]}"; do ip link del "${VETH[$host]}" >/dev/null 2>&1; done
    ip link del "$BRIDGE" >/dev/null 2>&1 || echo "$ME: could not delete bridge $BRIDGE"
  fi
  ((status != 0)) && show_logs
  if ((status == 0 && KEEP == 0)); then
    rm -rf "$WORK"
  else
    echo "$ME: the configuration, daemon logs and job outputs are in $WORK"
  fi
  echo "$ME: ended after $(elapsed) s with status $status"
  exit "$status"
}
trap cleanup EXIT
trap 'echo "$ME: interrupted"; exit 130' INT
trap 'echo "$ME: terminated"; exit 143' TERM

die() {
  echo "$ME: FAIL: $*" >&2
  exit 1
}

# start_daemon NAME COMMAND...: a background job of this script, so its pid is known exactly
# (nsenter execs the daemon: it forks only to enter a PID namespace).
start_daemon() {
  local name="$1"
  shift
  "$@" >"$WORK/log/$name.out" 2>&1 &
  DAEMON_NAMES+=("$name")
  DAEMON_PIDS+=("$!")
}

daemon_pid() {
  local i
  for i in "${!DAEMON_NAMES[@]}"; do
    [[ "${DAEMON_NAMES[$i]}" == "$1" ]] && { echo "${DAEMON_PIDS[$i]}"; return 0; }
  done
  return 1
}
daemon_alive() {
  local pid
  pid="$(daemon_pid "$1")" && kill -0 "$pid" 2>/dev/null
}

[[ -n "$SUBNET" ]] || die "found no free 10.x.y.0/24 for the bridge"

# ---- network: the bridge, and a namespace per host ----------------------------------------------
ip link add "$BRIDGE" type bridge || die "could not create bridge $BRIDGE"
BRIDGE_MADE=1
ip addr add "$SUBNET.1/24" dev "$BRIDGE" && ip link set "$BRIDGE" up || die "could not bring up $BRIDGE"

{
  echo "127.0.0.1 localhost"
  echo "$CTL_IP $CTL"
  for i in "${!NODE_NAMES[@]}"; do echo "${NODE_IPS[$i]} ${NODE_NAMES[$i]}"; done
} >"$WORK/etc/hosts"

# What of the real /tmp the nodes still see: the top directories under /tmp that hold the source
# tree and the programs (a clone in /tmp/... in CI), bound at the same paths inside each node's
# own /tmp.
KEEP_IN_TMP=()
for path in "$ROOT" "$SKEIN_INFO" "$SKEIN_HEAT" "$MPI_TESTS"; do
  [[ -n "$path" ]] || continue
  real="$(readlink -f "$path")"
  if [[ "$real" == /tmp/?* ]]; then
    top="/tmp/$(cut -d/ -f3 <<<"$real")"
    [[ " ${KEEP_IN_TMP[*]} " == *" $top "* ]] || KEEP_IN_TMP+=("$top")
  fi
done

# make_host NAME IP: a process holding a new network + UTS + mount namespace, with host name NAME,
# its own /tmp (with KEEP_IN_TMP bound into it), /dev/shm and /etc/hosts, and eth0 = IP/24 on the
# bridge.
make_host() {
  local name="$1" ip="$2" n="${#NS_PID[@]}"
  mkdir -p "$WORK/nodes/$name/tmp"
  chmod 1777 "$WORK/nodes/$name/tmp"
  # unshare execs bash, which execs sleep: $! is the process inside the namespaces. The sleep
  # bounds its life even if this script is killed with SIGKILL.
  # Started from a subshell, so that it is not a job of this script (bash would report its death
  # by SIGKILL at the end as "Killed"); it is found and ended through its namespace.
  NS_PID[$name]="$(
  unshare --net --uts --mount --propagation private -- bash -c '
      set -e
      name="$1" work="$2" sleep_for="$3"
      shift 3
      hostname "$name"
      node_tmp="$work/nodes/$name/tmp"
      # The kept directories of the real /tmp, bound into this node own /tmp before it hides the
      # real one (the binds live in this mount namespace only).
      for keep in "$@"; do
        mkdir -p "$node_tmp/${keep#/tmp/}"
        mount --bind "$keep" "$node_tmp/${keep#/tmp/}"
      done
      mount --rbind "$node_tmp" /tmp
      mount -t tmpfs -o mode=1777 tmpfs /dev/shm
      mount --bind "$work/etc/hosts" /etc/hosts
      ip link set lo up
      touch "$work/nodes/$name/ready"
      exec sleep "$sleep_for"' make_host "$name" "$WORK" $((TIME_LIMIT + 300)) "${KEEP_IN_TMP[@]}" \
      >"$WORK/log/ns-$name.out" 2>&1 </dev/null &
  echo $!)"
  local ns=""
  for _ in $(seq 100); do
    if [[ -e "$WORK/nodes/$name/ready" ]]; then
      ns="$(readlink "/proc/${NS_PID[$name]}/ns/net" 2>/dev/null)"
      break
    fi
    kill -0 "${NS_PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$ns" && "$ns" != "$ROOT_NS" ]] ||
    die "could not make the namespaces of $name ($(cat "$WORK/log/ns-$name.out"))"
  NS_ID[$name]="$ns"
  VETH[$name]="skv$$h$n"
  ip link add "${VETH[$name]}" type veth peer name "skv$$p$n" &&
    ip link set "skv$$p$n" netns "${NS_PID[$name]}" &&
    ip link set "${VETH[$name]}" master "$BRIDGE" &&
    ip link set "${VETH[$name]}" up &&
    nsenter -t "${NS_PID[$name]}" -n ip link set "skv$$p$n" name eth0 &&
    nsenter -t "${NS_PID[$name]}" -n ip addr add "$ip/24" dev eth0 &&
    nsenter -t "${NS_PID[$name]}" -n ip link set eth0 up ||
    die "could not connect $name to $BRIDGE"
}

# in_host NAME COMMAND...: runs COMMAND in NAME's namespaces.
in_host() {
  local name="$1"
  shift
  nsenter -t "${NS_PID[$name]}" --net --uts --mount -- "$@"
}

make_host "$CTL" "$CTL_IP"
for i in "${!NODE_NAMES[@]}"; do make_host "${NODE_NAMES[$i]}" "${NODE_IPS[$i]}"; done
echo "$ME: bridge $BRIDGE $SUBNET.1/24; $CTL $CTL_IP; nodes:" \
     "$(for i in "${!NODE_NAMES[@]}"; do printf '%s %s ' "${NODE_NAMES[$i]}" "${NODE_IPS[$i]}"; done)"

# ---- munge -------------------------------------------------------------------------------------
MUNGE_SOCKET="$WORK/munge/munge.socket"
MUNGE_KEY="$WORK/munge/munge.key"
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$MUNGE_KEY" >"$WORK/log/mungekey.out" 2>&1 || die "mungekey failed"
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
# From a node's namespaces too: the socket file is what connects them.
in_host "${NODE_NAMES[0]}" bash -c "munge -n -S '$MUNGE_SOCKET' | unmunge -S '$MUNGE_SOCKET'" \
  >"$WORK/log/unmunge.out" 2>&1 || die "munge does not work from ${NODE_NAMES[0]}: $(head -3 "$WORK/log/unmunge.out")"

# ---- slurm.conf --------------------------------------------------------------------------------
CTLD_PORT=6817
SLURMD_PORT=6818  # every node has its own addresses: the standard ports collide with nothing
GPUS=4
CPUS=4
for ((i = 0; i < GPUS; i++)); do ln -s /dev/null "$WORK/dev/nvidia$i"; done
export SLURM_CONF="$WORK/etc/slurm.conf"
{
  cat <<EOF
# Written by tests/slurm/run-multinode-test.sh: ${NODES} nodes in namespaces of one machine.
ClusterName=skeinmulti
SlurmctldHost=${CTL}(${CTL_IP})
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${MUNGE_SOCKET}
StateSaveLocation=${WORK}/state
SlurmdSpoolDir=${WORK}/spool/%n
SlurmctldPidFile=${WORK}/run/slurmctld.pid
SlurmdPidFile=${WORK}/run/slurmd-%n.pid
SlurmctldLogFile=${WORK}/log/slurmctld.log
SlurmdLogFile=${WORK}/log/slurmd-%n.log
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
# A node that stops answering is DOWN after 40 s (pinged every ~13 s): after Skein's error in the
# dead-node job, naming the lost ranks, so that it comes first; srun then still waits for the dead
# node's tasks until Slurm has marked it DOWN. Skein's timeout there is 5 s (and 2 s of roll call),
# but the call that times out began long after the node went: with 20 s here, one CI run saw Slurm
# cancel the job 24 s after the node went (NODE_FAIL) with no Skein error yet, and others ended
# 33-36 s after it with the error. Jobs on a failed node are not requeued: the test restarts from
# the checkpoint, as a user would. The test marks the node DOWN itself once the surviving ranks
# have exited (as a site's node health check would), so that the 40 s are not spent waiting.
SlurmdTimeout=40
JobRequeue=0
SlurmdParameters=config_overrides
GresTypes=gpu
EOF
  for i in "${!NODE_NAMES[@]}"; do
    echo "NodeName=${NODE_NAMES[$i]} NodeAddr=${NODE_IPS[$i]} NodeHostname=${NODE_NAMES[$i]} CPUs=${CPUS} Gres=gpu:${GPUS} State=UNKNOWN"
  done
  echo "PartitionName=test Nodes=skn[1-${NODES}] Default=YES MaxTime=30 State=UP"
} >"$SLURM_CONF"
cat >"$WORK/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=skn[1-${NODES}] Name=gpu File=${WORK}/dev/nvidia[0-$((GPUS - 1))]
EOF

# ---- slurmctld, slurmd's -------------------------------------------------------------------------
start_daemon slurmctld nsenter -t "${NS_PID[$CTL]}" --net --uts --mount -- slurmctld -D -c -f "$SLURM_CONF"
for n in "${NODE_NAMES[@]}"; do
  mkdir -p "$WORK/spool/$n"
  start_daemon "slurmd-$n" nsenter -t "${NS_PID[$n]}" --net --uts --mount -- slurmd -D -N "$n" -f "$SLURM_CONF"
done

idle=0
while (($(elapsed) < 90)); do
  daemon_alive slurmctld || die "slurmctld exited while starting"
  for n in "${NODE_NAMES[@]}"; do daemon_alive "slurmd-$n" || die "slurmd of $n exited while starting"; done
  idle="$(timeout 10 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)"
  ((idle == NODES)) && break
  sleep 0.5
done
if ((idle != NODES)); then
  timeout 10 sinfo -N 2>&1 | sed 's/^/  /'
  die "${idle} of ${NODES} nodes idle $(elapsed) s after the daemons started"
fi
echo "$ME: ${NODES} nodes idle after $(elapsed) s:"
timeout 10 sinfo -N -o '%N %T %c %G' | sed 's/^/  /'

# ---- the jobs' environment ---------------------------------------------------------------------
ln -s "$(readlink -f "$SKEIN_INFO")" "$WORK/prefix/bin/skein-info"
[[ -n "$SKEIN_HEAT" ]] && ln -s "$(readlink -f "$SKEIN_HEAT")" "$WORK/prefix/bin/skein-heat"
[[ -n "$MPI_TESTS" ]] && ln -s "$(readlink -f "$MPI_TESTS")" "$WORK/prefix/bin/skein-mpi-tests"
export SKEIN_PREFIX="$WORK/prefix"
export SKEIN_API=opencl
export POCL_DEVICES="pthread pthread pthread pthread"
export SKEIN_CACHE_DIR="$WORK/shared/cache"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# MPI between the nodes over TCP on the bridge: no shared memory (each node has its own /dev/shm
# anyway), and only the bridge's subnet for MPI's and mpirun's own connections.
export OMPI_MCA_btl=self,tcp
export OMPI_MCA_btl_tcp_if_include="$SUBNET.0/24" OMPI_MCA_oob_tcp_if_include="$SUBNET.0/24"
unset SKEIN_DEVICE SKEIN_DEVICES SKEIN_DEVICES_PER_RANK SKEIN_SHARE_DEVICES SHOW_PLACEMENT TMPDIR
cd "$WORK" || die "cannot enter $WORK"

declare -A JOB_OF=() STATE_OF=() EXIT_OF=() END_OF=()

# submit NAME [ENV=VALUE...] -- SBATCH_ARGS... : sbatch as a user types it, output in jobs/NAME.out.
submit() {
  local name="$1" out id
  shift
  local -a vars=()
  while (($# > 0)) && [[ "$1" != -- ]]; do vars+=("$1"); shift; done
  shift
  echo "$ME: ${vars[*]}${vars[*]:+ }sbatch $*"
  if ! out="$(env "${vars[@]}" timeout 30 sbatch --parsable --export=ALL --time=5 --job-name="$name" \
                --output="$WORK/jobs/$name.out" "$@" 2>&1)"; then
    STATE_OF[$name]="NOT-SUBMITTED"
    echo "$ME: sbatch refused $name: $out"
    return 1
  fi
  id="${out%%;*}"
  JOB_OF[$name]="$id"
  JOB_IDS+=("$id")
}

terminal() {
  case "$1" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | \
      DEADLINE | NOT-SUBMITTED) return 0 ;;
  esac
  return 1
}

# wait_job NAME LIMIT: waits (at most LIMIT s, and within the test's time limit) for the job to end.
wait_job() {
  local name="$1" limit="$2" t0=$SECONDS info state
  [[ "${STATE_OF[$name]:-}" == NOT-SUBMITTED ]] && return 1
  while :; do
    info="$(timeout 10 scontrol -o show job "${JOB_OF[$name]}" 2>/dev/null)"
    state="$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2)"
    STATE_OF[$name]="${state:-UNKNOWN}"
    EXIT_OF[$name]="$(grep -o ' ExitCode=[0-9:]*' <<<"$info" | cut -d= -f2)"
    if terminal "$state"; then
      END_OF[$name]=$SECONDS
      echo "$ME: $name (job ${JOB_OF[$name]}) ended $state ${EXIT_OF[$name]} after $((SECONDS - t0)) s"
      return 0
    fi
    if ((SECONDS - t0 >= limit || $(time_left) <= 20)); then
      echo "$ME: $name (job ${JOB_OF[$name]}) is still $state after $((SECONDS - t0)) s"
      sed 's/^/  | /' "$WORK/jobs/$name.out" 2>/dev/null | tail -n 30
      return 1
    fi
    daemon_alive slurmctld || die "slurmctld exited while $name ran"
    sleep 0.5
  done
}

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
yes_no() { "$@" && echo 1 || echo 0; }
expect_state() {
  local name="$1" want="$2" want_exit="$3"
  check "$name" "ends $want with exit code $want_exit" \
    "$(yes_no test "${STATE_OF[$name]:-}" == "$want" -a "${EXIT_OF[$name]:-}" == "$want_exit")" \
    "${STATE_OF[$name]:-?} ${EXIT_OF[$name]:-?}"
}
expect_text() {
  local name="$1" text="$2"
  check "$name" "the output says '$text'" "$(yes_no grep -qF -- "$text" "$WORK/jobs/$name.out")"
}
show_output() {
  echo "---- output of $1 (job ${JOB_OF[$1]:-not submitted})"
  cat "$WORK/jobs/$1.out" 2>/dev/null || echo "(no output file)"
}

# Skein's placement table (skein-info --ranks), the first one in the output, as "rank host local
# devices" lines: devices as PoCL indices ("0,1").
placement() {
  awk '
    /^rank +host +local rank +devices$/ && !done { t = 1; next }
    t && /^[0-9]+ +[^ ]+ +[0-9]+ of [0-9]+ / {
      d = ""; s = $0
      while (match(s, /:opencl:[0-9]+:[0-9]+\]/)) {
        m = substr(s, RSTART, RLENGTH); sub(/\]$/, "", m); n = split(m, a, ":")
        d = d (d == "" ? "" : ",") a[n]; s = substr(s, RSTART + RLENGTH)
      }
      print $1, $2, $3 " " $4 " " $5, d; next
    }
    t { t = 0; done = 1 }' "$WORK/jobs/$1.out"
}

# ---- 1. placement and collectives on 2 nodes x 2 ranks, with srun and with mpirun ----------------
WANT_PLACEMENT="0 skn1 0 of 2 0,1
1 skn1 1 of 2 2,3
2 skn2 0 of 2 0,1
3 skn2 1 of 2 2,3"
export GTEST_COLOR=no  # mpirun hands its ranks a terminal-like output: no colour codes in the log
for variant in srun mpirun; do
  script=multi-node.sbatch
  filter="$GTEST_FILTER"
  if [[ $variant == mpirun ]]; then
    script=multi-node-mpirun.sbatch
    # A part of it, without the reductions that take most of its time (about 50 of 80 s on 2
    # cores with srun): mpirun's launch and its TCP wiring between the nodes are what differs.
    [[ "$filter" == "Layouts/Collectives.*" || "$filter" == "Layouts/Collectives.*/RuntimePlacement" ]] &&
      filter="Layouts/Collectives.AllGather*:*.Broadcast*:*.AllToAll*:*.SendRecv*:*.Group*"
  fi
  if [[ -n "$MPI_TESTS" ]]; then
    PROGRAM=(skein-mpi-tests "--gtest_filter=$filter")
  else
    PROGRAM=(hostname)
  fi
  name="collectives-$variant"
  submit "$name" -- -N 2 --ntasks-per-node=2 "$SCRIPTS/$script" "${PROGRAM[@]}"
  wait_job "$name" 240
  expect_state "$name" COMPLETED 0:0
  got="$(placement "$name")"
  echo "$ME: $name: placement (rank host local devices):"
  sed 's/^/    /' <<<"$got"
  check "$name" "ranks 0,1 on skn1 and 2,3 on skn2, local ranks 0 and 1 on each, PoCL devices 0,1 | 2,3" \
    "$(yes_no test "$got" == "$WANT_PLACEMENT")" "$(tr '\n' ';' <<<"$got")"
  if [[ -n "$MPI_TESTS" ]]; then
    summary="$(grep -E '^\[  PASSED  \] [0-9]+ test|^\[  FAILED  \] [0-9]+ test' "$WORK/jobs/$name.out" | head -n 2 | tr '\n' ' ')"
    echo "$ME: $name: skein-mpi-tests on 4 ranks of 2 nodes: $summary"
    check "$name" "skein-mpi-tests ($filter) passed on 4 ranks across 2 nodes" \
      "$(yes_no grep -qE '^\[  PASSED  \] [1-9][0-9]* test' "$WORK/jobs/$name.out")" "$summary"
    check "$name" "no test failed" "$(yes_no test -z "$(grep -E '^\[  FAILED  \]' "$WORK/jobs/$name.out")")"
  else
    check "$name" "hostname ran on both nodes" \
      "$(yes_no test "$(grep -cxE 'skn[12]' "$WORK/jobs/$name.out")" == 4)"
  fi
  [[ -n "${FAILED_CASE[$name]:-}" ]] && show_output "$name"
done

# ---- 2. checkpoints on 2 x 2, restart on 1 x 3: byte-identical to an uninterrupted run ----------
heat_field() {  # heat_field DIR BIN: the raw bytes of /u in DIR/heat.h5
  [[ -s "$1/heat.h5" ]] && h5dump -d /u -b LE -o "$2" "$1/heat.h5" >/dev/null 2>&1 && [[ -s "$2" ]]
}
if [[ -n "$SKEIN_HEAT" ]]; then
  GRID=(--nx 38 --ny 41)
  H="$WORK/shared"
  submit heat-reference -- -N 2 --ntasks-per-node=2 "$SCRIPTS/multi-node.sbatch" \
    skein-heat "${GRID[@]}" --steps 20 --out "$H/heat-reference"
  wait_job heat-reference 120
  expect_state heat-reference COMPLETED 0:0
  submit heat-part SHOW_PLACEMENT=0 -- -N 2 --ntasks-per-node=2 "$SCRIPTS/multi-node.sbatch" \
    skein-heat "${GRID[@]}" --steps 10 --checkpoint-every 5 --out "$H/heat-restart"
  wait_job heat-part 120
  expect_state heat-part COMPLETED 0:0
  check heat-part "checkpoint of step 10 written in the shared directory" \
    "$(yes_no test -e "$H/heat-restart/checkpoints/checkpoint-0000000010.done")"
  submit heat-restart -- -N 1 --ntasks-per-node=3 "$SCRIPTS/multi-node.sbatch" \
    skein-heat "${GRID[@]}" --steps 20 --restart --out "$H/heat-restart"
  wait_job heat-restart 120
  expect_state heat-restart COMPLETED 0:0
  got="$(placement heat-restart | awk '{print $2}' | sort -u | tr '\n' ' ')"
  check heat-restart "ran on 1 node with 3 ranks" "$(yes_no test "$(placement heat-restart | wc -l)" == 3 -a "$(wc -w <<<"$got")" == 1)" "$got"
  if heat_field "$H/heat-reference" "$WORK/reference.bin" && heat_field "$H/heat-restart" "$WORK/restart.bin"; then
    ref_sum="$(sha256sum <"$WORK/reference.bin" | cut -c1-16)"
    res_sum="$(sha256sum <"$WORK/restart.bin" | cut -c1-16)"
    echo "$ME: heat field /u: reference $(stat -c %s "$WORK/reference.bin") bytes sha256 $ref_sum..., restarted $(stat -c %s "$WORK/restart.bin") bytes sha256 $res_sum..."
    check heat-restart "final field byte-identical to the uninterrupted 2 x 2 run (cmp of h5dump -b)" \
      "$(yes_no cmp -s "$WORK/reference.bin" "$WORK/restart.bin")"
  else
    check heat-restart "both runs wrote heat.h5 with dataset /u" 0
  fi
  for name in heat-reference heat-part heat-restart; do
    [[ -n "${FAILED_CASE[$name]:-}" ]] && show_output "$name"
  done
fi

# ---- 3. a node that dies during a 2-node job ---------------------------------------------------
if [[ -n "$SKEIN_HEAT" ]]; then
  TIMEOUT_S=5
  D="$WORK/shared/heat-dead"
  # The job that loses a node restarts from a checkpoint of step 100, which a short job of the same
  # layout (heat-seed) writes first, and writes none of its own; the node is killed as soon as it
  # has reported step 200: the ranks are then in their steps' halo exchanges (the Communicator's
  # MPI backend). Its own checkpoints are pushed out of reach: with one every 4000 steps, thought
  # tens of seconds away, a CI run of 2026-11-30 (989 steps/s, the node killed 3 s later than in
  # the runs that passed) saw the survivors run on 60 s with no Skein error until Slurm ended the
  # job, likely inside that checkpoint. With a checkpoint every 500 steps (a few hundred steps a
  # second here) a CI run once killed the node after the ranks had begun the next checkpoint: they
  # hung inside HDF5's own MPI_Comm_dup in H5Fcreate (gdb), which no timeout of Skein's reaches
  # (docs/guide.md, Files), and Slurm cancelled the job 46 s later with no Skein error. The job
  # used to run from step 0 and was killed at its first checkpoint, step 4000: 4 busy ranks for
  # 11 s on 2 otherwise
  # idle cores, 45-50 s beside other work (CI's release phase has the sanitizer build beside its
  # tests); the seed costs a job of 3-10 s instead (the whole test alone: 66 s and 80 CPU-s ->
  # 57 s and 62 CPU-s; beside other builds: 132 -> 98 CPU-s).
  submit heat-seed SHOW_PLACEMENT=0 -- -N 2 --ntasks-per-node=2 "$SCRIPTS/multi-node.sbatch" \
    skein-heat --nx 64 --ny 64 --steps 100 --checkpoint-every 100 --keep 2 --report-every 0 --out "$D"
  wait_job heat-seed 120
  expect_state heat-seed COMPLETED 0:0
  # The seed's final field: the survivor's restart below must write its own.
  rm -f "$D/heat.h5"
  submit heat-dead SHOW_PLACEMENT=0 SKEIN_COLLECTIVE_TIMEOUT=$TIMEOUT_S -- -N 2 --ntasks-per-node=2 \
    "$SCRIPTS/multi-node.sbatch" skein-heat --nx 64 --ny 64 --steps 100000000 \
    --checkpoint-every 100000000 --keep 2 --report-every 100 --restart --out "$D"
  # The marker is looked for every 0.2 s; squeue, which takes a while on loaded cores, only every
  # 5 s.
  stepping() { grep -qE '^step +200/' "$WORK/jobs/heat-dead.out" 2>/dev/null; }
  t0=$SECONDS
  last_squeue=$SECONDS
  while ((SECONDS - t0 < 120)) && ! stepping; do
    if ((SECONDS - last_squeue >= 5)); then
      state="$(timeout 10 squeue -h -j "${JOB_OF[heat-dead]}" -o %T 2>/dev/null)"
      [[ -z "$state" ]] && break
      last_squeue=$SECONDS
    fi
    sleep 0.2
  done
  if ! stepping; then
    check heat-dead "the job restarted from step 100 and reported step 200 within 120 s" 0
    show_output heat-seed
    show_output heat-dead
  else
    victim="${NODE_NAMES[1]}"
    # A power loss: the link goes first (no FIN or RST reaches the other node), then every process.
    ip link set "${VETH[$victim]}" down
    kill_ns "$victim" KILL
    killed=$SECONDS
    # Reaped here, quietly (bash would report each as "Killed").
    { wait "$(daemon_pid "slurmd-$victim")"; } 2>/dev/null
    echo "$ME: killed node $victim (link down, slurmd and every process in it) at $(elapsed) s; newest checkpoint: $(ls "$D/checkpoints/" | grep done | tail -n 1)"
    # What Skein owes is that the ranks on the surviving node raise and exit: wait for their
    # processes to be gone. Slurm itself waits SlurmdTimeout (40 s, above) before it marks the
    # silent node DOWN and ends the job; the test then marks it DOWN at once, as a site's node
    # health check would, instead of sitting 40 s with both cores idle.
    survivor="${NODE_NAMES[0]}"
    while ((SECONDS - killed < TIMEOUT_S + 60)); do
      alive=0
      for p in $(ns_pids "${NS_ID[$survivor]:-}"); do
        [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == skein-heat ]] && alive=1 && break
      done
      ((alive == 0)) && break
      sleep 0.2
    done
    took=$((SECONDS - killed))
    echo "$ME: the ranks on $survivor $( ((alive == 0)) && echo "exited $took s" || echo "still ran $took s") after the node died (SKEIN_COLLECTIVE_TIMEOUT=$TIMEOUT_S)"
    timeout 10 scontrol update NodeName="$victim" State=DOWN Reason="killed by the test" >/dev/null 2>&1
    wait_job heat-dead 60
    grep -E "skein|rank|error" "$WORK/jobs/heat-dead.out" | grep -v '^multi-node.sbatch:' | head -n 12 | sed 's/^/  | /'
    check heat-dead "the ranks on the surviving node exited within SKEIN_COLLECTIVE_TIMEOUT + 60 s" \
      "$(yes_no test "$alive" -eq 0)" "$took s"
    check heat-dead "the job ended non-zero" "$(yes_no test -n "${EXIT_OF[heat-dead]:-}" -a "${EXIT_OF[heat-dead]:-0:0}" != 0:0)" "${STATE_OF[heat-dead]} ${EXIT_OF[heat-dead]:-}"
    # The roll call's list of ranks that did not answer may also hold a surviving rank that was
    # still inside a call of its own when the roll call closed (seen once in CI: "ranks 0, 2, 3 did
    # not", rank 0 on the surviving node): what is owed is that 2 and 3 are among them.
    check heat-dead "Skein's error names the lost ranks 2 and 3" \
      "$(yes_no grep -qE 'ranks? ([0-9]+, )*2, 3\b|rank 2\b.*rank 3\b|ranks? [23]\b' "$WORK/jobs/heat-dead.out")"
    newest="$(ls "$D/checkpoints/" | sed -n 's/^checkpoint-0*\([0-9]*\)\.done$/\1/p' | sort -n | tail -n 1)"
    submit heat-survivor -- -N 1 -w "${NODE_NAMES[0]}" --ntasks-per-node=2 "$SCRIPTS/multi-node.sbatch" \
      skein-heat --nx 64 --ny 64 --steps $((newest + 50)) --checkpoint-every 4000 --keep 2 --restart --out "$D"
    wait_job heat-survivor 120
    expect_state heat-survivor COMPLETED 0:0
    check heat-survivor "restarted from step $newest on ${NODE_NAMES[0]} and wrote heat.h5" \
      "$(yes_no test -s "$D/heat.h5")"
    for name in heat-seed heat-dead heat-survivor; do
      [[ -n "${FAILED_CASE[$name]:-}" ]] && show_output "$name"
    done
  fi
fi

echo "$ME: ${#JOB_IDS[@]} jobs in $(elapsed) s"
echo "slurm-multinode: ${PASSED_CHECKS} passed, ${FAILED_CHECKS} failed"
((FAILED_CHECKS == 0))
