# The parts of a throw-away Slurm cluster that the emulated cluster (scripts/cluster/cluster.sh) and the
# one-node test cluster (tests/slurm/local_cluster.sh) share. Source it; it defines:
#
#   slurm_prepare_dir D     makes D/{munge,state,spool,log,run,tmp} and a munge key D/munge/munge.key
#   slurm_munged_argv D     sets MUNGED_ARGV: munged in the foreground with its key, socket, pid, seed and log
#                           files under D (the caller decides where and how it runs)
#   slurm_conf_common D TASK_PLUGIN
#                           prints the slurm.conf lines both clusters use (munge auth through D's socket, PMIx,
#                           no cgroups, no accounting, state, spool, pid files and logs under D, per node: %n);
#                           the caller adds the cluster name, controller host and ports, nodes and partition.
#   slurm_wait_job ID SECONDS [PREFIX...]
#                           waits until job ID has ended (at most SECONDS; then cancels it) and prints its final
#                           state (TIMEOUT_WAITING(<state>) on timeout); scontrol and scancel run as PREFIX CMD
#                           (e.g. `cluster.sh exec node1 --` on the emulated cluster)
# Requirements: root (SlurmUser=root, munged as root), slurm-wlm and munge.

slurm_prepare_dir() {
  local d=$1
  mkdir -p "$d"/{munge,state,spool,log,run,tmp}
  chmod 700 "$d" "$d/munge"
  mungekey --create --keyfile="$d/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$d/munge/munge.key"
}

slurm_munged_argv() {
  local d=$1
  MUNGED_ARGV=(munged --foreground --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.sock"
    --pid-file="$d/munge/munged.pid" --seed-file="$d/munge/munged.seed" --log-file="$d/log/munged.log")
}

slurm_conf_common() {
  local d=$1 task_plugin=$2
  cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.sock
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/slurmd-%n
# TmpFS: the PMIx plugin makes its per-step directories here, not in /tmp, where another throw-away cluster
# (job ids start at 1 in every one) may have left /tmp/spmix_appdir_<uid>_1.0 behind.
TmpFS=$d/tmp
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
KillWait=5
MinJobAge=300
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
CONF
}

slurm_wait_job() {
  local id=$1 deadline=$((SECONDS + $2)) state=""
  shift 2
  while [ $SECONDS -lt $deadline ]; do
    state=$("$@" scontrol show job "$id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in PENDING|RUNNING|CONFIGURING|COMPLETING|"") sleep 0.5 ;; *) echo "$state"; return 0 ;; esac
  done
  "$@" scancel "$id" 2>/dev/null
  echo "TIMEOUT_WAITING(${state:-unknown})"
}
