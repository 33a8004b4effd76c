#!/bin/sh
# Installs the Debian packages stprof needs to build, test and demo, skipping
# the ones already present (so a second run costs a dpkg query, no network).
# Usage: scripts/deps.sh [build|check|demo|bench]
set -eu
what=${1:-check}
pkgs="build-essential cmake pkg-config libunwind-dev libelf-dev libdwarf-dev
      libprotobuf-c-dev protobuf-c-compiler protobuf-compiler"
case "$what" in
  build) ;;
  demo) pkgs="$pkgs python3" ;;
  check) pkgs="$pkgs python3 python3-torch clang libclang-rt-14-dev llvm chromium heaptrack valgrind time" ;;
  bench) pkgs="$pkgs python3 python3-torch heaptrack time libjemalloc2 libmimalloc2.0" ;;
  *) echo "usage: $0 [build|check|demo|bench]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "stprof: installing Debian packages:$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
