#!/usr/bin/env bash
# An emulated cluster on one machine: N hosts, each a network namespace with its own hostname (UTS namespace),
# one shaped veth link to a switch (a bridge in a namespace of its own), an optional CPU quota (cgroup `cpu`),
# and optionally real Slurm daemons (munged, slurmctld, one slurmd per host). The hosts share the file system;
# only the network, the hostname and /etc/hosts are per host. For tests (ctest label `cluster`) and for users
# who want to rehearse a multi-node job before they submit it. Needs root (namespaces, tc, cgroups).
#
#   cluster.sh up N [--bandwidth RATE] [--latency DELAY] [--loss PCT] [--cpus C] [--slurm]
#   cluster.sh mpirun [ARGS...]            OpenMPI across the hosts, from node1 (ranks round-robin: --map-by node)
#   cluster.sh exec HOST -- CMD...         CMD on HOST, with the cluster's Slurm client environment
#   cluster.sh shape HOST [--bandwidth RATE] [--latency DELAY] [--loss PCT] [--down|--up] [--cpus C]
#   cluster.sh kill HOST [--signal SIG]    every process on HOST (default SIGKILL; STOP/CONT freeze/thaw it)
#   cluster.sh status                      the hosts, their addresses, links, quotas and processes
#   cluster.sh down                        removes everything (idempotent; also after a crash or kill of `up`)
#
# State lives in $HALOGEN_CLUSTER_DIR (default /tmp/halogen-cluster). Every kernel object is named after a
# short hash of that directory's path, so two clusters with different state directories never collide:
#   network namespaces  halogen-<id>-switch, halogen-<id>-node1 .. halogen-<id>-nodeN
#   cgroups             <cpu controller>/halogen-<id>-nodeK (only with --cpus)
# Addresses (10.101.0.K/24 for nodeK) exist only inside these namespaces: the switch has no address, there is
# no route out, no NAT, and nothing listens outside them.
#
# RATE is tc's syntax (10gbit, 100mbit). The link is shaped in both directions with `tbf` (the host's egress
# and the switch port's egress). --latency and --loss need the kernel's `netem` qdisc; where it is missing they
# exit 2 with one line saying so.
set -euo pipefail

readonly SUBNET=10.101.0
STATE=${HALOGEN_CLUSTER_DIR:-/tmp/halogen-cluster}
PROG=$(basename "$0")
SELF=$(realpath "${BASH_SOURCE[0]}")
# shellcheck source=slurm_common.sh
source "$(dirname "$SELF")/slurm_common.sh"

die() { echo "$PROG: error: $*" >&2; exit 2; }
note() { echo "$PROG: $*" >&2; }

usage() {
  sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, tc and cgroups)"
for tool in ip tc nsenter unshare sha1sum; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (iproute2 / util-linux)"
done

mkdir -p "$STATE"
STATE=$(realpath "$STATE")
ID=$(printf '%s' "$STATE" | sha1sum | cut -c1-6)
PREFIX="halogen-$ID"
SWITCH="$PREFIX-switch"

ns_of() { echo "$PREFIX-$1"; }
host_index() {
  [[ "$1" =~ ^node([1-9][0-9]*)$ ]] || die "unknown host '$1' (hosts are node1..nodeN)"
  echo "${BASH_REMATCH[1]}"
}
require_host() {
  local k
  k=$(host_index "$1")
  ip netns list 2>/dev/null | grep -qw "$(ns_of "$1")" || die "no host $1 in the cluster at $STATE (run: $PROG up N)"
  echo "$k"
}
num_hosts() { cat "$STATE/hosts.count" 2>/dev/null || echo 0; }

# The cgroup `cpu` directory of a host: v1 (/sys/fs/cgroup/cpu) or v2 (the unified hierarchy's root).
cgroup_dir() {
  if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then echo "/sys/fs/cgroup/cpu/$(ns_of "$1")"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    echo "/sys/fs/cgroup/$(ns_of "$1")"
  else echo ""; fi
}

check_cpus() {
  python3 -c "import sys; v = float(sys.argv[1]); sys.exit(0 if 0.01 <= v <= 4096 else 1)" "$1" 2>/dev/null ||
    die "--cpus $1: expected a positive number of cores (0.2, 1, 2)"
}

# Gives HOST a CPU quota of C cores (cgroup `cpu`): its processes now and every process that enters it later.
set_cpus() {
  local host=$1 cpus=$2 cg quota pid
  cg=$(cgroup_dir "$host")
  [ -n "$cg" ] || die "--cpus: no cgroup cpu controller here (neither /sys/fs/cgroup/cpu nor cgroup v2 with cpu)"
  mkdir -p "$cg"
  quota=$(python3 -c "import sys; print(max(1000, int(float(sys.argv[1]) * 100000)))" "$cpus")
  if [ -f "$cg/cpu.cfs_quota_us" ]; then
    echo 100000 >"$cg/cpu.cfs_period_us"; echo "$quota" >"$cg/cpu.cfs_quota_us"
  else
    echo "$quota 100000" >"$cg/cpu.max"
  fi
  echo "$cg" >"$STATE/cgroup.$host"
  echo "$cpus" >"$STATE/cpus.$host"
  for pid in $(ip netns pids "$(ns_of "$host")" 2>/dev/null); do echo "$pid" >"$cg/cgroup.procs" 2>/dev/null || true; done
}

have_netem() {
  # Probe in a scratch namespace of this cluster: adding netem to its loopback succeeds only with the module.
  local probe="$PREFIX-probe" ok=1
  ip netns add "$probe" 2>/dev/null || true
  ip -n "$probe" link set lo up 2>/dev/null || true
  tc -n "$probe" qdisc add dev lo root netem delay 1ms >/dev/null 2>&1 && ok=0
  ip netns del "$probe" 2>/dev/null || true
  return $ok
}

# Applies a qdisc for RATE / DELAY / LOSS to DEV in namespace NS (replacing what is there).
apply_qdisc() {
  local ns=$1 dev=$2 rate=$3 delay=$4 loss=$5
  tc -n "$ns" qdisc del dev "$dev" root >/dev/null 2>&1 || true
  if [ -n "$delay" ] || [ -n "$loss" ]; then
    local args=()
    [ -n "$delay" ] && args+=(delay "$delay")
    [ -n "$loss" ] && args+=(loss "$loss%")
    [ -n "$rate" ] && args+=(rate "$rate")
    tc -n "$ns" qdisc add dev "$dev" root netem "${args[@]}" limit 100000
  elif [ -n "$rate" ]; then
    # burst: at least rate x 1 ms (tbf needs rate/HZ bytes or more to reach its rate), 64 KiB minimum.
    local bits burst
    bits=$(python3 -c 'import re,sys
m = re.fullmatch(r"([0-9.]+)([kmgt]?)(bit|bps)?", sys.argv[1].lower())
if not m: sys.exit(1)
v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
print(int(v * (8 if m.group(3) == "bps" else 1)))' "$rate") || die "--bandwidth $rate: expected a tc rate such as 10gbit or 100mbit"
    burst=$((bits / 8 / 1000))
    [ "$burst" -lt 65536 ] && burst=65536
    tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms
  fi
}

# Writes the link settings of host K into the state and applies them to both ends.
shape_link() {
  local host=$1 rate=$2 delay=$3 loss=$4 k
  k=$(host_index "$host")
  apply_qdisc "$(ns_of "$host")" eth0 "$rate" "$delay" "$loss"
  apply_qdisc "$SWITCH" "port$k" "$rate" "$delay" "$loss"
  printf 'bandwidth=%s\nlatency=%s\nloss=%s\n' "$rate" "$delay" "$loss" >"$STATE/link.$host"
}

check_link_options() {
  local rate=$1 delay=$2 loss=$3
  if { [ -n "$delay" ] || [ -n "$loss" ]; } && ! have_netem; then
    die "--latency and --loss need the kernel's netem qdisc (sch_netem), which this kernel lacks; use --bandwidth only"
  fi
  if [ -n "$loss" ]; then [[ "$loss" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--loss $loss: expected a percentage such as 0.1"; fi
  if [ -n "$rate" ]; then [[ "$rate" =~ ^[0-9]+([.][0-9]+)?[kKmMgGtT]?(bit|bps)?$ ]] || die "--bandwidth $rate: expected a tc rate such as 10gbit"; fi
  return 0
}

# The command that enters a host: its network and UTS namespaces, a private mount namespace in which the
# cluster's hosts file is /etc/hosts and Slurm's TmpFS is the host's own directory (the PMIx plugin makes
# per-step directories there, whose names are the same on every host), its CPU cgroup, and the cluster's
# environment.
write_enter() {
  mkdir -p "$STATE/bin"
  cat >"$STATE/bin/enter" <<EOF
#!/usr/bin/env bash
# enter HOST CMD...: runs CMD on HOST of the emulated cluster at $STATE (written by cluster.sh up).
set -e
host=\$1; shift
[ -e "/run/netns/$PREFIX-\$host" ] || { echo "enter: no host \$host in the cluster at $STATE" >&2; exit 2; }
cg=\$(cat "$STATE/cgroup.\$host" 2>/dev/null || true)
[ -n "\$cg" ] && echo \$\$ >"\$cg/cgroup.procs"
[ -f "$STATE/env" ] && . "$STATE/env"
exec nsenter --net="/run/netns/$PREFIX-\$host" --uts="$STATE/uts/\$host" -- \\
  unshare --mount --propagation private -- \\
  bash -c 'mount --bind "$STATE/hosts" /etc/hosts &&
    if [ -d "$STATE/slurm/tmp" ]; then
      mkdir -p "$STATE/slurm/tmp-\$0" && mount --bind "$STATE/slurm/tmp-\$0" "$STATE/slurm/tmp"
    fi && exec "\$@"' "\$host" "\$@"
EOF
  chmod +x "$STATE/bin/enter"
  # OpenMPI's rsh agent: `rsh HOST CMD-WORDS...` runs the words as a shell command on HOST (as ssh would).
  cat >"$STATE/bin/rsh" <<EOF
#!/usr/bin/env bash
host=\$1; shift
exec "$STATE/bin/enter" "\$host" /bin/sh -c "\$*"
EOF
  chmod +x "$STATE/bin/rsh"
}

start_slurm() {
  local n=$1 cpus=$2 d="$STATE/slurm" k
  for tool in munged slurmctld slurmd sbatch sinfo; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (scripts/install-deps.sh installs slurm-wlm and munge)"
  done
  slurm_prepare_dir "$d"
  local slurm_cpus=$cpus
  [ -z "$slurm_cpus" ] && slurm_cpus=$(getconf _NPROCESSORS_ONLN)
  slurm_cpus=$(python3 -c "import math,sys; print(max(1, math.ceil(float(sys.argv[1]))))" "$slurm_cpus")
  cat >"$d/slurm.conf" <<CONF
# Generated by scripts/cluster/cluster.sh: $n hosts x $slurm_cpus CPUs, everything under $d.
ClusterName=halogen$ID
SlurmctldHost=node1($SUBNET.1)
SlurmctldPort=6817
SlurmdPort=6818
# task/none: the emulated hosts share the machine's CPUs, so binding each host's ranks to "its" cores would
# put ranks of different hosts on the same core.
$(slurm_conf_common "$d" task/none)
CONF
  for ((k = 1; k <= n; k++)); do
    echo "NodeName=node$k NodeAddr=$SUBNET.$k CPUs=$slurm_cpus RealMemory=1000 State=UNKNOWN" >>"$d/slurm.conf"
  done
  echo "PartitionName=cluster Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$d/slurm.conf"
  printf 'export SLURM_CONF=%q\n' "$d/slurm.conf" >>"$STATE/env"

  # munged and slurmctld on node1 (the head node), one slurmd per host; all inside the hosts, so that `kill`
  # and `down` find them there.
  slurm_munged_argv "$d"
  "$STATE/bin/enter" node1 setsid "${MUNGED_ARGV[@]}" >>"$d/log/munged.out" 2>&1 </dev/null &
  for _ in $(seq 1 50); do [ -S "$d/munge/munge.sock" ] && break; sleep 0.1; done
  [ -S "$d/munge/munge.sock" ] || { tail -n 20 "$d"/log/munged.*; die "munged did not start"; }
  "$STATE/bin/enter" node1 setsid slurmctld -D -i -f "$d/slurm.conf" >>"$d/log/slurmctld.out" 2>&1 </dev/null &
  for ((k = 1; k <= n; k++)); do
    mkdir -p "$d/spool/slurmd-node$k"
    "$STATE/bin/enter" "node$k" setsid slurmd -D -f "$d/slurm.conf" -N "node$k" \
      >>"$d/log/slurmd-node$k.out" 2>&1 </dev/null &
  done
  local idle=0
  for _ in $(seq 1 120); do
    idle=$("$STATE/bin/enter" node1 sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
    [ "$idle" -eq "$n" ] && break
    sleep 0.5
  done
  if [ "$idle" -ne "$n" ]; then
    "$STATE/bin/enter" node1 sinfo -N 2>&1 || true
    tail -n 20 "$d"/log/*.log 2>/dev/null || true
    die "Slurm: $idle of $n nodes idle after 60 s (logs in $d/log)"
  fi
  note "Slurm: $n nodes idle (partition 'cluster', SLURM_CONF=$d/slurm.conf)"
}

cmd_up() {
  local n="" rate="" delay="" loss="" cpus="" slurm=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --bandwidth) rate=${2:?--bandwidth needs a rate}; shift 2 ;;
      --latency) delay=${2:?--latency needs a delay}; shift 2 ;;
      --loss) loss=${2:?--loss needs a percentage}; shift 2 ;;
      --cpus) cpus=${2:?--cpus needs a number}; shift 2 ;;
      --slurm) slurm=1; shift ;;
      -h|--help) usage 0 ;;
      -*) die "up: unknown option $1" ;;
      *) [ -z "$n" ] || die "up: one host count, got '$n' and '$1'"; n=$1; shift ;;
    esac
  done
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 250 ] || die "up: expected a host count 1..250, got '${n}'"
  if [ -n "$cpus" ]; then check_cpus "$cpus"; fi
  check_link_options "$rate" "$delay" "$loss"
  if ip netns list 2>/dev/null | grep -q "^$PREFIX-"; then
    die "a cluster already runs with state $STATE (run '$PROG down' first, or set HALOGEN_CLUSTER_DIR)"
  fi
  rm -rf "${STATE:?}"/*
  mkdir -p "$STATE/uts"
  echo "$n" >"$STATE/hosts.count"
  : >"$STATE/env"
  printf 'export HALOGEN_CLUSTER_DIR=%q\n' "$STATE" >>"$STATE/env"
  {
    echo "127.0.0.1 localhost"
    for ((k = 1; k <= n; k++)); do echo "$SUBNET.$k node$k"; done
  } >"$STATE/hosts"
  trap 'note "up failed; removing what it made"; cmd_down >/dev/null 2>&1 || true' ERR

  ip netns add "$SWITCH"
  ip -n "$SWITCH" link set lo up
  ip -n "$SWITCH" link add switch type bridge
  ip -n "$SWITCH" link set switch up
  local k host ns cg
  for ((k = 1; k <= n; k++)); do
    host=node$k
    ns=$(ns_of "$host")
    ip netns add "$ns"
    ip link add "port$k" netns "$SWITCH" type veth peer name eth0 netns "$ns"
    ip -n "$SWITCH" link set "port$k" master switch up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET.$k/24" dev eth0
    ip -n "$ns" link set eth0 up
    # A dead peer is noticed by TCP after tcp_retries2 retransmissions of unacknowledged data: 15 (about 15
    # minutes) by default; 5 (about 13 s) here, as on HPC nodes tuned for failure detection. Without it, a
    # launcher with data in flight to a host behind a dead link waits for a quarter of an hour.
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_retries2=5 >/dev/null 2>&1 || true
    shape_link "$host" "$rate" "$delay" "$loss"
    touch "$STATE/uts/$host"
    unshare --uts="$STATE/uts/$host" hostname "$host"
    if [ -n "$cpus" ]; then set_cpus "$host" "$cpus"; fi
  done
  write_enter
  if [ "$slurm" -eq 1 ]; then start_slurm "$n" "$cpus"; fi
  trap - ERR
  for ((k = 1; k <= n; k++)); do echo "node$k"; done
  note "$n host(s) up (state $STATE, namespaces $PREFIX-*${rate:+, $rate links}${cpus:+, $cpus CPU(s) each})"
}

cmd_down() {
  local ns pid left
  # Every process in the cluster's namespaces (jobs, slurmd, slurmctld, munged), then the namespaces.
  for sig in TERM KILL; do
    left=0
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true); do
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -"$sig" "$pid" 2>/dev/null && left=1; done
    done
    [ "$left" -eq 0 ] && break
    [ "$sig" = TERM ] && for _ in $(seq 1 30); do
      left=0
      for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true); do
        [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && left=1
      done
      [ "$left" -eq 0 ] && break
      sleep 0.1
    done
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  local f cg
  for f in "$STATE"/uts/*; do
    [ -e "$f" ] || continue
    umount "$f" 2>/dev/null || true
  done
  for cg in /sys/fs/cgroup/cpu/"$PREFIX"-* /sys/fs/cgroup/"$PREFIX"-*; do
    [ -d "$cg" ] || continue
    # A process still in the cgroup (moved there by `enter` and not in a namespace) is ended too.
    for pid in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  done
  rm -rf "${STATE:?}"/* 2>/dev/null || true
  rmdir "$STATE" 2>/dev/null || true
  note "down: nothing of the cluster at $STATE is left"
}

cmd_mpirun() {
  local n cpus slots hostlist=() k
  n=$(num_hosts)
  [ "$n" -gt 0 ] || die "no cluster at $STATE (run: $PROG up N)"
  slots=$(getconf _NPROCESSORS_ONLN)  # not nproc: it follows OMP_NUM_THREADS
  for ((k = 1; k <= n; k++)); do hostlist+=("node$k:$slots"); done
  local hosts
  hosts=$(IFS=,; echo "${hostlist[*]}")
  # plm rsh with our agent (no ssh); TCP between hosts, shared memory only between ranks of one host; the
  # caller's OMPI_MCA_* (e.g. plm=isolated from a GPU bundle) do not apply to the cluster. Keepalives on
  # mpirun's own connections to its daemons (default: first probe after 300 s) let it notice an idle dead link.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  exec "$STATE/bin/enter" node1 env -u OMPI_MCA_plm -u OMPI_MCA_btl -u OMPI_MCA_pml -u OMPI_MCA_mtl \
    -u OMPI_MCA_btl_tcp_if_include -u OMPI_MCA_oob_tcp_if_include \
    mpirun --host "$hosts" --map-by node \
    --mca plm rsh --mca plm_rsh_agent "$STATE/bin/rsh" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    --mca mtl '^ofi' --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 \
    --mca oob_tcp_keepalive_probes 3 "$@"
}

cmd_exec() {
  [ $# -ge 1 ] || die "exec: expected HOST -- CMD..."
  local host=$1; shift
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || die "exec: no command (exec HOST -- CMD...)"
  require_host "$host" >/dev/null
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  exec "$STATE/bin/enter" "$host" "$@"
}

cmd_shape() {
  [ $# -ge 1 ] || die "shape: expected HOST [options]"
  local host=$1; shift
  local k
  k=$(require_host "$host")
  # Unchanged settings keep their values.
  local bandwidth="" latency="" loss="" updown=""
  # shellcheck disable=SC1090
  [ -f "$STATE/link.$host" ] && . "$STATE/link.$host"
  local rate=$bandwidth delay=$latency changed=0 cpus=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --cpus) cpus=${2:?}; check_cpus "$cpus"; shift 2 ;;
      --bandwidth) rate=${2:?}; changed=1; shift 2 ;;
      --latency) delay=${2:?}; changed=1; shift 2 ;;
      --loss) loss=${2:?}; changed=1; shift 2 ;;
      --down) updown=down; shift ;;
      --up) updown=up; shift ;;
      *) die "shape: unknown option $1" ;;
    esac
  done
  if [ "$changed" -eq 1 ]; then
    check_link_options "$rate" "$delay" "$loss"
    shape_link "$host" "$rate" "$delay" "$loss"
  fi
  if [ -n "$updown" ]; then
    # The switch's end of the link: the host keeps its address and routes and sees no error, but no packet
    # passes in either direction (a cable pulled at the switch).
    ip -n "$SWITCH" link set "port$k" "$updown"
  fi
  if [ -n "$cpus" ]; then set_cpus "$host" "$cpus"; fi
  note "$host: link ${updown:-as before}, bandwidth ${rate:-unshaped}${delay:+, latency $delay}${loss:+, loss $loss%}${cpus:+, $cpus CPU(s)}"
}

cmd_kill() {
  [ $# -ge 1 ] || die "kill: expected HOST"
  local host=$1; shift
  local sig=KILL
  while [ $# -gt 0 ]; do
    case "$1" in
      --signal) sig=${2:?}; shift 2 ;;
      *) die "kill: unknown option $1" ;;
    esac
  done
  require_host "$host" >/dev/null
  local pids
  pids=$(ip netns pids "$(ns_of "$host")" 2>/dev/null | tr '\n' ' ')
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -"$sig" $pids 2>/dev/null || true
  fi
  note "$host: SIG$sig to $(wc -w <<<"$pids") process(es)"
}

cmd_status() {
  local n k host ns
  n=$(num_hosts)
  if [ "$n" -eq 0 ]; then echo "no cluster at $STATE"; return 1; fi
  echo "cluster $STATE (namespaces $PREFIX-*), $n host(s):"
  for ((k = 1; k <= n; k++)); do
    host=node$k
    ns=$(ns_of "$host")
    if ! [ -e "/run/netns/$ns" ]; then echo "  $host  MISSING"; continue; fi
    local bandwidth="" latency="" loss="" state quota=""
    # shellcheck disable=SC1090
    [ -f "$STATE/link.$host" ] && . "$STATE/link.$host"
    state=$(ip -n "$SWITCH" -br link show "port$k" 2>/dev/null | awk '{print $2}')
    quota=$(cat "$STATE/cpus.$host" 2>/dev/null || true)
    printf '  %-7s %s.%-4s link %-5s bandwidth %-8s latency %-6s loss %-5s cpus %-5s processes %s\n' \
      "$host" "$SUBNET" "$k" "${state:-?}" "${bandwidth:-none}" "${latency:-none}" "${loss:-0}" \
      "${quota:-all}" "$(ip netns pids "$ns" 2>/dev/null | wc -l)"
  done
  if [ -f "$STATE/slurm/slurm.conf" ]; then "$STATE/bin/enter" node1 sinfo -N 2>/dev/null | sed 's/^/  /' || true; fi
}

[ $# -ge 1 ] || usage 2
verb=$1; shift
case "$verb" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  mpirun) cmd_mpirun "$@" ;;
  exec) cmd_exec "$@" ;;
  shape) cmd_shape "$@" ;;
  kill) cmd_kill "$@" ;;
  status) cmd_status "$@" ;;
  -h|--help|help) usage 0 ;;
  *) die "unknown verb '$verb' (up, mpirun, exec, shape, kill, status, down)" ;;
esac
