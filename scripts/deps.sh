#!/bin/sh
# Installs the Debian packages stprof needs to build, test and demo, skipping
# the ones already present (so a second run costs a dpkg query, no network).
# bench also puts memray (PyPI) in a virtual environment that sees the
# system's torch: $MEMRAY_VENV, default ~/.cache/stprof/memray-venv.
# Usage: scripts/deps.sh [build|check|demo|bench]
set -eu
what=${1:-check}
pkgs="build-essential cmake pkg-config libunwind-dev libelf-dev libdwarf-dev
      libprotobuf-c-dev protobuf-c-compiler protobuf-compiler"
case "$what" in
  build) ;;
  demo) pkgs="$pkgs python3" ;;
  check) pkgs="$pkgs python3 python3-torch clang libclang-rt-14-dev llvm chromium heaptrack valgrind time" ;;
  bench) pkgs="$pkgs python3 python3-torch python3-venv heaptrack time libjemalloc2 libmimalloc2.0" ;;
  *) echo "usage: $0 [build|check|demo|bench]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
memray_venv() {
  [ "$what" = bench ] || return 0
  V=${MEMRAY_VENV:-$HOME/.cache/stprof/memray-venv}
  [ -x "$V/bin/memray" ] && return 0
  echo "stprof: installing memray (PyPI) in $V" >&2
  /usr/bin/python3 -m venv --system-site-packages "$V" && "$V/bin/pip" install -q memray
}
[ -z "$missing" ] && { memray_venv; exit 0; }
echo "stprof: installing Debian packages:$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
memray_venv
