#!/usr/bin/env bash
# Installs the Debian 12 packages baton builds, tests and benchmarks with.
# Idempotent: when everything is present it prints nothing and exits 0.
set -euo pipefail

BUILD_PKGS=(g++ cmake make pkg-config
  libcaf-dev librocksdb-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev
  libgtest-dev libyaml-cpp-dev libcli11-dev libkainjow-mustache-dev libssl-dev libboost-dev zlib1g-dev libsqlite3-dev libpqxx-dev libarchive-dev
  libjemalloc-dev  # baton-replay's malloc (cmake/Dependencies.cmake)
  ccache)  # unchanged files compile from the cache (CMakeLists.txt)
# Integration tests (real local Slurm, SSH submission) and benchmarks.
TEST_PKGS=(slurm-wlm munge openssh-server openssh-client curl wrk procps sqlite3
  chromium chromium-driver python3-selenium  # the dashboard's real-browser test
  postgresql  # the PostgreSQL view's tests start their own server
  clang-14 libclang-rt-14-dev  # libFuzzer (bench/fuzz.sh, and briefly in CI)
  clang-format-14  # the one C++ layout (.clang-format, scripts/format.sh, ctest formatting)
  valgrind  # instruction counts of the core's hot path (bench/rederive_ir.sh)
  python3-botocore  # AWS's SigV4 presigner, which tests/s3_sigv4_test.cpp compares URLs with
  # Ceph's S3 gateway on a one-node in-memory cluster (tests/support/radosgw.sh): the S3 store the
  # S3 tests start, which checks signatures as production stores do.
  radosgw ceph-mon ceph-osd ceph-common uuid-runtime)

build_only=false
[[ "${1:-}" == "--build-only" ]] && build_only=true
want=("${BUILD_PKGS[@]}")
if ! $build_only; then
  want+=("${TEST_PKGS[@]}")
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"

[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# Daemons (slurm, munge, sshd, ceph) must not start at install time; tests start their own.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
