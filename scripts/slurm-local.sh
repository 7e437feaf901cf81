#!/usr/bin/env bash
# slurm-local.sh -- start/stop a real single-node Slurm 22.05 cluster (Debian 12
# packages) for integration tests, as root, with no systemd and no network
# beyond loopback.
# Copied into the project from the verified recipe (shared/reference/slurm-local.md); the
# Slurm integration test starts and stops its own cluster with it.
#
#   prerequisites : apt-get install -y slurm-wlm munge
#                   (+ slurmdbd mariadb-server for SLURM_LOCAL_ACCOUNTING=1)
#   usage         : slurm-local.sh start | stop | status | env
#   after start   : export SLURM_CONF=$SLURM_LOCAL_DIR/etc/slurm.conf
#                   (or set SLURM_LOCAL_CONF_DIR=/etc/slurm, then no env is needed)
#
# Knobs (environment):
#   SLURM_LOCAL_DIR          /tmp/slurm-local   state, logs, sockets, pid files
#   SLURM_LOCAL_CONF_DIR     $DIR/etc           where slurm.conf/gres.conf go
#   SLURM_LOCAL_CPUS         $(nproc)           CPUs advertised; may exceed real cores
#   SLURM_LOCAL_MEM_MB       from `slurmd -C`   RealMemory advertised
#   SLURM_LOCAL_GPUS         2                  fake GPUs (gres/gpu); 0 = no GRES
#   SLURM_LOCAL_MIN_JOB_AGE  300                seconds a finished job stays in slurmctld
#   SLURM_LOCAL_ACCOUNTING   0                  1 = MariaDB + slurmdbd, so sacct works
#   SLURM_LOCAL_WARMUP       1                  run one `true` job before declaring ready
#   SLURM_LOCAL_DB_PORT      13306              MariaDB TCP port (127.0.0.1 only)
#   SLURM_LOCAL_CTLD_PORT / _SLURMD_PORT / _DBD_PORT   6817 / 6818 / 6819
#   SLURM_LOCAL_SCHEDULER_PARAMETERS  batch_sched_delay=0   slurm.conf's SchedulerParameters
#   SLURM_LOCAL_EXTRA_CONF   (none)             further slurm.conf lines, e.g. "MaxJobCount=100000"
#                                               (bench/peers/ raises the job and array limits)
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
CONF_DIR=${SLURM_LOCAL_CONF_DIR:-$DIR/etc}
CPUS=${SLURM_LOCAL_CPUS:-$(nproc)}
GPUS=${SLURM_LOCAL_GPUS:-2}
MIN_JOB_AGE=${SLURM_LOCAL_MIN_JOB_AGE:-300}
ACCOUNTING=${SLURM_LOCAL_ACCOUNTING:-0}
DB_PORT=${SLURM_LOCAL_DB_PORT:-13306}
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-6818}
DBD_PORT=${SLURM_LOCAL_DBD_PORT:-6819}
NODE=localhost          # node name independent of the machine's hostname
MUNGE_SOCK=$DIR/munge/munge.socket
export SLURM_CONF=$CONF_DIR/slurm.conf

log() { echo "[slurm-local $(date +%T.%3N)] $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }

# A pid is alive if /proc/PID exists and is not a zombie (PID 1 in some
# these machines reap orphans late, and `kill -0` succeeds on zombies).
alive() {
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  local st; st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 1   # field after "(comm)"
  [ -n "$st" ] && [ "${st%% *}" != Z ]
}
pid_of() { [ -s "$1" ] && cat "$1" || true; }

stop_pidfile() { # stop_pidfile NAME PIDFILE
  local pid; pid=$(pid_of "$2")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then log "$1 ($pid) ignored SIGTERM, sending SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $1 (pid $pid)"
  fi
  rm -f "$2"
}

descendants() { # descendants PID -> all descendant pids (reads /proc without a fork per process)
  local -A kids=(); local f line p pp rest c
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null < "$f" || continue
    p=${f#/proc/}; p=${p%/stat}; rest=${line##*) }; pp=${rest#* }; pp=${pp%% *}
    kids[$pp]="${kids[$pp]:-} $p"
  done
  local queue=("$1") out=""
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}")
    for c in ${kids[$p]:-}; do out="$out $c"; queue+=("$c"); done
  done
  echo $out
}

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...  (deadline-based: one try may be slow)
  local end=$((SECONDS + $1)) what=$2; shift 2
  while [ $SECONDS -lt $end ]; do
    "$@" >/dev/null 2>&1 </dev/null && return 0; sleep 0.1
  done
  log "timeout waiting for $what"; return 1
}

node_idle() { [ "$(sinfo -h -n "$NODE" -o %T 2>/dev/null | sort -u)" = idle ]; }

cmd_stop() {
  if alive "$(pid_of "$DIR/run/slurmctld.pid")" && [ -f "$SLURM_CONF" ]; then
    # Cancel every job first: slurmstepd survives slurmd and blocks SIGTERM.
    local jobs; jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      log "cancelling jobs: $(echo $jobs)"
      scancel $jobs 2>/dev/null || true
      wait_for 30 "job queue to drain" bash -c '[ -z "$(squeue -h -o %i)" ]' || true
    fi
  fi
  stop_pidfile slurmd    "$DIR/run/slurmd.pid"
  stop_pidfile slurmctld "$DIR/run/slurmctld.pid"
  stop_pidfile slurmdbd  "$DIR/run/slurmdbd.pid"
  stop_pidfile mariadbd  "$DIR/db/mariadbd.pid"
  stop_pidfile munged    "$DIR/munge/munged.pid"
  # Stray step daemons (only possible if jobs could not be cancelled): they
  # belong to this cluster, since nothing else runs Slurm here.
  local exe pid kids stepd
  stepd=$(readlink -f "$(command -v slurmstepd || echo /usr/sbin/slurmstepd)")  # Debian: /usr/sbin/slurmstepd-wlm
  for exe in $(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$stepd" 2>/dev/null); do
    pid=${exe#/proc/}; pid=${pid%/exe}
    alive "$pid" || continue
    kids=$(descendants "$pid")   # the job's processes; they would outlive their stepd
    log "killing stray slurmstepd $pid and its job processes:${kids:- none}"
    kill -KILL $kids "$pid" 2>/dev/null || true
  done
  return 0
}

write_slurm_conf() {
  local mem=${SLURM_LOCAL_MEM_MB:-$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)}
  local acct gres_types="" node_gres=""
  if [ "$ACCOUNTING" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# munge socket for slurmctld/sacct/sacctmgr -> slurmdbd traffic (AuthInfo is NOT used there)
AccountingStoragePass=$MUNGE_SOCK
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
  else
    acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  fi
  if [ "$GPUS" -gt 0 ]; then gres_types="GresTypes=gpu"; node_gres="Gres=gpu:$GPUS"; fi
  mkdir -p "$CONF_DIR"
  cat > "$CONF_DIR/slurm.conf" <<EOF
# generated by slurm-local.sh
ClusterName=localci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
MpiDefault=none
# no cgroups: the machine's cgroup tree is not delegated to us
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# default batch_sched_delay=3 makes sbatch->RUNNING take ~2.6 s; 0 gives ~0.4-0.7 s
SchedulerParameters=${SLURM_LOCAL_SCHEDULER_PARAMETERS:-batch_sched_delay=0}
# accept advertised CPUs/RealMemory even if larger than the hardware
SlurmdParameters=config_overrides
$acct
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ReturnToService=2
MinJobAge=$MIN_JOB_AGE
KillWait=5
${SLURM_LOCAL_EXTRA_CONF:-}
$gres_types
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem $node_gres State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu   Nodes=$NODE Default=NO  MaxTime=INFINITE State=UP
EOF
  if [ "$GPUS" -gt 0 ]; then
    # gres/gpu needs File=; slurmd only stat()s it and wants a char/block
    # device (a regular file still schedules, but CUDA_VISIBLE_DEVICES is then
    # not set). Device nodes with /dev/null's numbers are harmless.
    mkdir -p "$DIR/fakedev"
    local i files=""
    for i in $(seq 0 $((GPUS - 1))); do
      rm -f "$DIR/fakedev/nvidia$i"
      mknod "$DIR/fakedev/nvidia$i" c 1 3 2>/dev/null || { log "mknod failed; using a regular file"; touch "$DIR/fakedev/nvidia$i"; }
      files="$files,$DIR/fakedev/nvidia$i"
    done
    printf 'AutoDetect=off\nName=gpu File=%s\n' "${files#,}" > "$CONF_DIR/gres.conf"
  else
    rm -f "$CONF_DIR/gres.conf"
  fi
}

start_munge() {
  mkdir -p "$DIR/munge"; chmod 0755 "$DIR/munge"
  # Private key owned by root (munged running as root refuses a key owned by
  # the munge user: "Keyfile is insecure ... should be owned by UID 0").
  [ -s "$DIR/munge/munge.key" ] || mungekey --create --keyfile="$DIR/munge/munge.key"
  chmod 0600 "$DIR/munge/munge.key"
  /usr/sbin/munged --key-file="$DIR/munge/munge.key" --socket="$MUNGE_SOCK" \
    --pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed" \
    --log-file="$DIR/log/munged.log"      # daemonizes
  wait_for 10 munged bash -c "munge -S '$MUNGE_SOCK' -n | unmunge -S '$MUNGE_SOCK'"
}

start_accounting() {
  command -v mariadbd >/dev/null && command -v slurmdbd >/dev/null || {
    log "SLURM_LOCAL_ACCOUNTING=1 needs: apt-get install -y slurmdbd mariadb-server"; exit 1; }
  mkdir -p "$DIR/db"
  if [ ! -d "$DIR/db/data/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$DIR/db/data" --user=root \
      --auth-root-authentication-method=normal --skip-test-db > "$DIR/log/mariadb-install.log" 2>&1
  fi
  setsid nohup /usr/sbin/mariadbd --no-defaults --datadir="$DIR/db/data" --user=root \
    --bind-address=127.0.0.1 --port="$DB_PORT" --socket="$DIR/db/mysqld.sock" \
    --pid-file="$DIR/db/mariadbd.pid" --log-error="$DIR/log/mariadb.err" \
    --skip-log-bin --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 \
    </dev/null >/dev/null 2>&1 &
  wait_for 60 mariadb mariadb --no-defaults -S "$DIR/db/mysqld.sock" -uroot -e 'select 1'
  mariadb --no-defaults -S "$DIR/db/mysqld.sock" -uroot -e "
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat > "$CONF_DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 0600 "$CONF_DIR/slurmdbd.conf"   # slurmdbd refuses a world-readable file
  /usr/sbin/slurmdbd                      # reads $(dirname $SLURM_CONF)/slurmdbd.conf, daemonizes
  wait_for 60 slurmdbd timeout 10 sacctmgr -n list cluster
}

cmd_start() {
  [ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
  local t0; t0=$(now)
  cmd_stop
  # Clean slate every start (slurmctld -c restarts job ids at 1; a kept
  # accounting DB would then hold duplicate job ids).
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/db" "$DIR/log"
  mkdir -p "$DIR"/{state,spool,run,log}
  write_slurm_conf
  start_munge;                       log "munged up after $(since "$t0") s"
  if [ "$ACCOUNTING" = 1 ]; then start_accounting; log "mariadb+slurmdbd up after $(since "$t0") s"; fi
  /usr/sbin/slurmctld -c                 # -c: ignore any saved state; daemonizes
  /usr/sbin/slurmd -N "$NODE"            # -N: node name != hostname; daemonizes
  if ! wait_for 60 "node $NODE idle" node_idle; then
    sinfo -N -l >&2 || true; tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2; exit 1
  fi
  log "node idle after $(since "$t0") s"
  # slurmctld runs its first scheduling pass ~3 s after it starts, so a job
  # submitted earlier waits that long. A warm-up job absorbs this and proves
  # the whole path (munge credentials, launch, completion) works.
  if [ "${SLURM_LOCAL_WARMUP:-1}" = 1 ]; then
    local w; w=$(sbatch --parsable --job-name=slurm-local-warmup --chdir="$DIR" --output=/dev/null --wrap=true)
    if ! wait_for 30 "warm-up job $w" bash -c "[ -z \"\$(squeue --jobs $w --noheader --format=%i)\" ]"; then
      tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2; exit 1
    fi
    scontrol show job "$w" | grep -q JobState=COMPLETED || { log "warm-up job $w did not complete"; exit 1; }
  fi
  log "cluster ready after $(since "$t0") s"
  echo "export SLURM_CONF=$SLURM_CONF"
}

cmd_status() {
  local n
  for n in munge/munged db/mariadbd run/slurmdbd run/slurmctld run/slurmd; do
    local pid; pid=$(pid_of "$DIR/$n.pid")
    if alive "$pid"; then echo "${n#*/}: running (pid $pid)"; else echo "${n#*/}: not running"; fi
  done
  sinfo 2>/dev/null || true
}

case "${1:-}" in
  start)  cmd_start ;;
  stop)   cmd_stop ;;
  status) cmd_status ;;
  env)    echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
