# Shared by the bench/peers/ scripts (sourced, not run): the peers' servers and batond started
# in a temporary directory and stopped on exit, waits with deadlines, medians and ratios.
# Each script sources it after `cd` to the repository's root.

bin=build/release
peers_token="bench-token-0123456789abcdef0123456789abcdef"
peers_cleanups=()

# Commands run at exit, last registered first (servers stopped, temporary directories removed).
peers_on_exit() { peers_cleanups=("$1" "${peers_cleanups[@]}"); }
peers_cleanup() {
  local c
  for c in "${peers_cleanups[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
  peers_cleanups=()
}
trap peers_cleanup EXIT
trap 'exit 130' INT TERM

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

need_built() {
  local b
  for b in "$@"; do [[ -x "$bin/$b" ]] || die "build the release preset first ($bin/$b missing; bench/run.sh peers builds it)"; done
}

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 10 ms until it succeeds; fails after the deadline.
wait_until() {
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || { echo "timed out after $1 s waiting for $what" >&2; return 1; }
    sleep 0.01
  done
}

# N free TCP ports on loopback, below the kernel's ephemeral range (as tests/support/free_ports.hpp
# chooses them: a port the kernel picked for binding to 0 could go to another connection before
# the daemon binds it), held together while asked so they differ.
free_ports() {
  python3 - "$1" "$$" <<'PY'
import socket, sys
n, pid = int(sys.argv[1]), int(sys.argv[2])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
first, held = 10000, []
span = max(1, low - first)
for tried in range(span):
    if len(held) == n:
        break
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", first + (pid * 7 + tried) % span))
        held.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in held))
PY
}

# now_s: wall time in seconds with microseconds, without a fork.
now_s() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# median V...: the median of the values (the mean of the middle two for an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratio A B: A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }
# verdict MEASURED OP TARGET: "met" or "not met" (OP is >= or <=).
verdict() { awk -v m="$1" -v op="$2" -v t="$3" 'BEGIN { ok = (op == ">=") ? m >= t : m <= t; print ok ? "met" : "NOT met" }'; }
# latency_stats FILE: "mean p50 p99 max" of the milliseconds in FILE, one a line.
latency_stats() {
  sort -g "$1" | awk '{ v[NR] = $1; s += $1 } END {
    if (NR == 0) { print "0 0 0 0"; exit }
    p50 = v[int(0.50 * NR) + 1]; i99 = int(0.99 * NR) + 1; if (i99 > NR) i99 = NR
    printf "%.2f %.2f %.2f %.2f\n", s / NR, p50, v[i99], v[NR] }'
}
load_average() { cut -d' ' -f1-3 /proc/loadavg; }

# --- PostgreSQL 15 (Debian's binaries) in a temporary directory --------------------------------
# As tests/support/postgres_server.hpp starts it (a Unix socket in its directory, no port; as
# root the server runs as the "postgres" user), but with Debian's defaults kept: fsync on,
# synchronous_commit on, full_page_writes on. Trust authentication on the socket, user "baton".
pg_bin=/usr/lib/postgresql/15/bin
pg_run_as=()
pg_init() {  # pg_init DIR
  local dir=$1
  [[ -x "$pg_bin/initdb" && -x "$pg_bin/pgbench" ]] || die "PostgreSQL 15 is not installed (scripts/setup.sh installs it)"
  mkdir -p "$dir"
  if [[ $(id -u) -eq 0 ]]; then
    pg_run_as=(runuser -u postgres --)
    chmod 0755 "$(dirname "$dir")"
    chown postgres "$dir"
  fi
  "${pg_run_as[@]}" "$pg_bin/initdb" -D "$dir/data" -U baton --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  peers_on_exit "${pg_run_as[*]} $pg_bin/pg_ctl -D $dir/data -m immediate stop"
}
pg_ctl_start() {  # pg_ctl_start DIR: returns at once; see pg_ready
  local dir=$1
  "${pg_run_as[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" \
    -o "-c listen_addresses='' -k $dir -c log_line_prefix='%m ' -c max_connections=64" start >/dev/null
}
pg_ready() { "$pg_bin/pg_isready" -q -h "$1" -U baton -d postgres; }
pg_start() {  # pg_start DIR: started and accepting connections
  pg_ctl_start "$1"
  wait_until 60 "PostgreSQL to accept connections" pg_ready "$1" || { tail -20 "$1/server.log" >&2; die "PostgreSQL did not start"; }
}
pg_crash() { "${pg_run_as[@]}" "$pg_bin/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null; }
pg_stop() { "${pg_run_as[@]}" "$pg_bin/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null; }
psql_do() {  # psql_do DIR SQL: the result unaligned, without headers
  "$pg_bin/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h "$1" -U baton -d postgres -c "$2"
}

# The job queue of Oban, River, Graphile Worker, Solid Queue and many home-grown orchestrators:
# a jobs table with a partial index on the queued ones in claim order, and an event table.
pg_make_queue() {  # pg_make_queue DIR JOBS
  local dir=$1 jobs=$2
  "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -U baton -d postgres >/dev/null <<EOF
CREATE TABLE jobs (
  id bigserial PRIMARY KEY,
  priority int NOT NULL,
  created timestamptz NOT NULL,
  state text NOT NULL DEFAULT 'queued',
  worker text,
  assigned_at timestamptz,
  args jsonb NOT NULL);
CREATE INDEX jobs_claim ON jobs (priority, created) WHERE state = 'queued';
CREATE TABLE job_events (
  id bigserial PRIMARY KEY,
  job_id bigint NOT NULL,
  type text NOT NULL,
  worker text,
  at timestamptz NOT NULL DEFAULT now());
INSERT INTO jobs (priority, created, args)
  SELECT ((g::bigint * 7919) % 10)::int, now() - (($jobs - g) * interval '1 ms'),
         jsonb_build_object('title', 'bench ' || g, 'input_bundle_path', '/bundles/' || g)
  FROM generate_series(1, $jobs) g;
VACUUM ANALYZE jobs;
CHECKPOINT;
EOF
}
# The claim, as those systems make it: the first queued job in priority order not locked by
# another claimer, marked assigned, an event row, one durable commit.
pg_claim_script() {
  cat <<'EOF'
BEGIN;
SELECT id AS job FROM jobs WHERE state = 'queued' ORDER BY priority, created LIMIT 1 FOR UPDATE SKIP LOCKED \gset
UPDATE jobs SET state = 'assigned', worker = 'worker-' || :client_id::text, assigned_at = now() WHERE id = :job;
INSERT INTO job_events (job_id, type, worker) VALUES (:job, 'job.assigned', 'worker-' || :client_id::text);
END;
EOF
}

# --- batond with a config and an operator token (as bench/import_bench.sh starts it) ----------
batond_pid=""
batond_url=""
batond_start() {  # batond_start DIR CONFIG_YAML_TEXT
  local dir=$1
  mkdir -p "$dir"
  printf '%s\n' "$2" >"$dir/batond.yaml"
  rm -f "$dir/port"
  BATON_CONFIG="$dir/batond.yaml" BATON_API_TOKEN="$peers_token" BATON_LOG_LEVEL=warn \
    "$bin/batond/batond" --data-dir "$dir/data" --listen 127.0.0.1:0 --port-file "$dir/port" 2>"$dir/batond.err" &
  batond_pid=$!
  peers_on_exit "kill -9 $batond_pid"
  wait_until 60 "batond to serve" test -s "$dir/port" || { cat "$dir/batond.err" >&2; die "batond did not start"; }
  batond_url="http://127.0.0.1:$(cat "$dir/port")"
}
batond_stop() {
  [[ -n "$batond_pid" ]] || return 0
  kill "$batond_pid" 2>/dev/null || true
  wait "$batond_pid" 2>/dev/null || true
  batond_pid=""
}

# --- the real local Slurm the integration tests start (scripts/slurm-local.sh) ---------------
# In a directory and on ports of its own (free ones), so it does not meet a test's cluster.
# SLURM_LOCAL_SCHEDULER_PARAMETERS / SLURM_LOCAL_EXTRA_CONF from the caller reach the script.
slurm_dir=""
slurm_start() {  # slurm_start DIR
  slurm_dir=$1
  command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    die "Slurm is not installed (scripts/setup.sh installs slurm-wlm and munge)"
  [[ $(id -u) -eq 0 ]] || die "the local Slurm runs as root (scripts/slurm-local.sh)"
  chmod 0755 "$(dirname "$slurm_dir")"  # munged wants every directory above its socket searchable
  local ports
  read -r -a ports <<<"$(free_ports 2)"
  ((${#ports[@]} == 2)) || die "no two free ports below the ephemeral range"
  export SLURM_LOCAL_DIR=$slurm_dir SLURM_LOCAL_CPUS=4 SLURM_LOCAL_GPUS=0 \
    SLURM_LOCAL_CTLD_PORT=${ports[0]} SLURM_LOCAL_SLURMD_PORT=${ports[1]}
  peers_on_exit "SLURM_LOCAL_DIR=$slurm_dir bash scripts/slurm-local.sh stop"
  bash scripts/slurm-local.sh start >"$slurm_dir.start.out" 2>"$slurm_dir.start.err" ||
    { cat "$slurm_dir.start.err" >&2; die "scripts/slurm-local.sh start failed"; }
  export SLURM_CONF=$slurm_dir/etc/slurm.conf
}
slurm_stop() {
  [[ -n "$slurm_dir" ]] || return 0
  SLURM_LOCAL_DIR=$slurm_dir bash scripts/slurm-local.sh stop >/dev/null 2>&1 || true
  slurm_dir=""
}
# Job and array limits above the benchmarks' 10,000 (Slurm's defaults: 10,000 jobs, arrays of 1,001).
slurm_limits="MaxJobCount=200000
MaxArraySize=10001"
