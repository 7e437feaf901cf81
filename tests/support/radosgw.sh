#!/bin/bash
# A throw-away S3 store for tests: Ceph's radosgw (Debian 12's radosgw, which checks SigV4
# signatures, expiry and scope as a real store does) on a one-monitor, one-OSD cluster that keeps
# objects in memory (memstore), all inside DIR, on 127.0.0.1. Started by
# tests/support/radosgw_process.hpp; ~3 s from nothing to answering.
#
# Usage: radosgw.sh DIR   (DIR empty or absent; config, mon store, logs and sockets go in it)
# Environment: RGW_PORT and MON_PORT (required: free loopback ports the caller chose),
#   RGW_ACCESS_KEY / RGW_SECRET_KEY (the bucket owner's key), RGW_BUCKET (created; empty: none),
#   RGW_UPLOAD_ACCESS_KEY / RGW_UPLOAD_SECRET_KEY (optional: a subuser of the owner that may
#   only write, as docs/storage.md asks for presigned uploads), RGW_START_TIMEOUT (s per step).
#
# Prints "RGW_READY" on stdout once radosgw answers and the user and bucket exist, then stays in
# the foreground: SIGTERM stops radosgw, the OSD and the monitor (in that order) and exits 0; a
# daemon that dies on its own stops the rest and exits 1. Each daemon runs under
# `setpriv --pdeathsig TERM`, so it goes too if this script is killed. cephx is off between the
# daemons (one host, loopback); S3's signatures are radosgw's own checks and stay on. The OSD
# takes its ports from Ceph's range 6800-7300 on 127.0.0.1, skipping ports in use.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi

DIR=$(realpath -m -- "$1")
mkdir -p -- "$DIR"
if [ -n "$(ls -A -- "$DIR")" ]; then
    echo "radosgw.sh: $DIR is not empty" >&2
    exit 2
fi

ACCESS_KEY=${RGW_ACCESS_KEY:-AKIDTEST}
SECRET_KEY=${RGW_SECRET_KEY:-SECRETTESTSECRETTESTSECRETTESTSECRETTEST}
UPLOAD_ACCESS_KEY=${RGW_UPLOAD_ACCESS_KEY:-}
UPLOAD_SECRET_KEY=${RGW_UPLOAD_SECRET_KEY:-}
BUCKET=${RGW_BUCKET-test-bucket}
TIMEOUT=${RGW_START_TIMEOUT:-60}
MEMSTORE_BYTES=${RGW_MEMSTORE_BYTES:-1073741824}
MON_PORT=${MON_PORT:?the caller chooses MON_PORT}
RGW_PORT=${RGW_PORT:?the caller chooses RGW_PORT}

log() { echo "radosgw.sh: $(date +%H:%M:%S.%3N) $*" >&2; }

mkdir -p "$DIR"/{run,log,mon.a,rgw,crash,tmp}
echo $$ > "$DIR/run/supervisor.pid"

FSID=$(uuidgen)

# Every path that defaults to /var/lib/ceph, /var/log/ceph, /var/run/ceph or
# /etc/ceph is pointed into $DIR. cephx is off (auth = none): the S3 SigV4
# checking is done by radosgw itself and does not depend on cephx.
cat > "$DIR/ceph.conf" <<EOF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = false
keyring = $DIR/keyring
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = true
crash dir = $DIR/crash
tmp dir = $DIR/tmp
mon cluster log to file = false
mon data = $DIR/mon.\$id
osd data = $DIR/osd.\$id
rgw data = $DIR/rgw
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 2
mon data avail crit = 1

[mon]
admin socket = $DIR/run/\$cluster-\$name.asok
# Commit map changes every 50 ms instead of every 1 s: radosgw's first start
# creates ~7 pools one after the other, each waiting for an osdmap commit
# (startup 16 s -> ~3 s).
paxos propose interval = 0.05
paxos min wait = 0.01

[osd]
admin socket = $DIR/run/\$cluster-\$name.asok
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd op num shards = 2
osd op num threads per shard = 1
osd check max object name len on startup = false
# if the mon is already gone (supervisor killed), do not wait 5 s for it
osd mon shutdown timeout = 1

[client.rgw.a]
admin socket = $DIR/run/\$cluster-\$name.asok
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw thread pool size = 32
rgw dns name = localhost
rgw enable usage log = false
rgw dynamic resharding = false
# radosgw defaults this to "secure", which needs cephx session keys; with
# auth = none only crc is possible.
ms mon client mode = crc
EOF

export CEPH_CONF="$DIR/ceph.conf"
# Client-side tools (ceph, radosgw-admin): don't wait forever for the mon.
CEPH() { timeout "$TIMEOUT" ceph --connect-timeout "$TIMEOUT" "$@"; }

PIDS=()        # daemon pids, in start order
NAMES=()
STOPPING=0

stop_all() {
    STOPPING=1
    local i pid
    # reverse start order: rgw, osd, mon
    for ((i=${#PIDS[@]}-1; i>=0; i--)); do
        pid=${PIDS[$i]}
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 1 100); do          # up to 10 s
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "${NAMES[$i]} (pid $pid) ignored SIGTERM, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
    rm -f "$DIR"/run/*.pid
}

on_signal() {
    log "signal received, stopping"
    stop_all
    exit 0
}
on_error() {
    local rc=$?
    trap - EXIT
    if [ "$STOPPING" = 0 ] && [ "$rc" != 0 ]; then
        log "failed (rc=$rc); last log lines:"
        tail -n 15 "$DIR"/log/*.log >&2 2>/dev/null || true
        stop_all
    fi
    exit "$rc"
}
trap on_signal TERM INT HUP
trap on_error EXIT

start_daemon() {   # name, command...
    local name=$1; shift
    # --pdeathsig: the daemon gets SIGTERM if this script dies, even by SIGKILL.
    setpriv --pdeathsig TERM -- "$@" </dev/null >>"$DIR/log/$name.stdout" 2>&1 &
    PIDS+=("$!")
    NAMES+=("$name")
    echo "$!" > "$DIR/run/$name.supervised.pid"
}

wait_for() {   # description, command...
    local what=$1; shift
    local deadline=$(( $(date +%s) + TIMEOUT ))
    until "$@" >/dev/null 2>&1; do
        local pid
        for pid in "${PIDS[@]}"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                log "a daemon (pid $pid) died while waiting for $what"
                return 1
            fi
        done
        if [ "$(date +%s)" -ge "$deadline" ]; then
            log "timeout waiting for $what"
            return 1
        fi
        sleep 0.2
    done
}

# ---- monitor -------------------------------------------------------------
log "dir=$DIR mon_port=$MON_PORT rgw_port=$RGW_PORT"
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$DIR/monmap" >>"$DIR/log/mkfs.log" 2>&1
start_daemon mon.a ceph-mon -f -i a
wait_for "mon quorum" CEPH -s
log "mon up"

# ---- osd (memstore) ------------------------------------------------------
OSD_UUID=$(uuidgen)
OSD_ID=$(CEPH osd new "$OSD_UUID")
mkdir -p "$DIR/osd.$OSD_ID"
ceph-osd -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" >>"$DIR/log/mkfs.log" 2>&1
start_daemon "osd.$OSD_ID" ceph-osd -f -i "$OSD_ID"
osd_up() { CEPH osd dump --format json | grep -q '"up":1'; }
wait_for "osd.$OSD_ID up" osd_up
log "osd.$OSD_ID up"

# ---- radosgw -------------------------------------------------------------
start_daemon rgw.a radosgw -f -n client.rgw.a
rgw_answers() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$RGW_PORT/"; }
wait_for "radosgw HTTP" rgw_answers
log "radosgw answers on 127.0.0.1:$RGW_PORT"

timeout "$TIMEOUT" radosgw-admin user create --uid test --display-name "test user" \
    --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" \
    >"$DIR/log/user-create.json" 2>>"$DIR/log/radosgw-admin.stderr"

if [ -n "$BUCKET" ]; then
    # curl 7.88's --aws-sigv4 does not add x-amz-content-sha256, which radosgw
    # needs for header SigV4 (else SignatureDoesNotMatch); curl signs it if given.
    EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
    code=$(curl -s -o "$DIR/log/bucket-create.out" -w '%{http_code}' -X PUT \
        --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
        -H "x-amz-content-sha256: $EMPTY_SHA256" \
        "http://127.0.0.1:$RGW_PORT/$BUCKET")
    if [ "$code" != 200 ]; then
        log "bucket create returned HTTP $code: $(cat "$DIR/log/bucket-create.out")"
        exit 1
    fi
fi

if [ -n "$UPLOAD_ACCESS_KEY" ]; then
    # "write" lets it PUT objects and parts, never read one: a copy needs read on its source.
    timeout "$TIMEOUT" radosgw-admin subuser create --uid test --subuser test:upload --access write \
        --key-type s3 --access-key "$UPLOAD_ACCESS_KEY" --secret-key "$UPLOAD_SECRET_KEY" \
        >"$DIR/log/subuser-create.json" 2>>"$DIR/log/radosgw-admin.stderr"
fi

echo "RGW_READY"
log "ready"

# ---- supervise ------------------------------------------------------------
# `wait -n` returns when any daemon exits, or early when a trapped signal
# arrives (the trap then runs and exits).
set +e
while true; do
    wait -n "${PIDS[@]}"
    for i in "${!PIDS[@]}"; do
        if ! kill -0 "${PIDS[$i]}" 2>/dev/null; then
            log "${NAMES[$i]} (pid ${PIDS[$i]}) exited unexpectedly; stopping the rest"
            trap - EXIT
            stop_all
            exit 1
        fi
    done
done
