#!/bin/sh
# Installs the Debian packages stprof needs to build, test and demo, skipping
# the ones already present (so a second run costs a dpkg query, no network).
# bench also puts memray (PyPI) in a virtual environment that sees the
# system's torch: $MEMRAY_VENV, default ~/.cache/stprof/memray-venv.
# build and check also unpack the Compute Sanitizer API (PyPI wheel
# nvidia-cuda-sanitizer-api: headers and libsanitizer-public.so) into
# $STPROF_SANITIZER_CACHE, default ~/.cache/stprof/sanitizer-api, where
# cmake finds it (Debian's pip is externally managed: pip download + unzip).
# check and bench also put JAX (jax[cpu] 0.10.2, the newest PyPI has for
# Debian 12's Python 3.11, with flax and optax) in a virtual environment of
# its own for tests/jax: $STPROF_JAX_VENV, default ~/.cache/stprof/jax-venv.
# Usage: scripts/deps.sh [build|check|demo|bench]
set -eu
what=${1:-check}
pkgs="build-essential cmake pkg-config libunwind-dev libelf-dev libdwarf-dev
      libprotobuf-c-dev protobuf-c-compiler protobuf-compiler zlib1g-dev"
case "$what" in
  build) pkgs="$pkgs python3-pip" ;;
  demo) pkgs="$pkgs python3" ;;
  check) pkgs="$pkgs python3 python3-pip python3-venv python3-torch clang libclang-rt-14-dev llvm chromium heaptrack valgrind time
               redis-server redis-tools" ;;
  bench) pkgs="$pkgs python3 python3-torch python3-venv heaptrack time valgrind libjemalloc2 libmimalloc2.0
               redis-server redis-tools libtcmalloc-minimal4 libgoogle-perftools4 bc memcached libmemcached-tools" ;;
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
jax_venv() {
  case "$what" in check|bench) ;; *) return 0 ;; esac
  V=${STPROF_JAX_VENV:-$HOME/.cache/stprof/jax-venv}
  "$V/bin/python" -c 'import jax, flax, optax' >/dev/null 2>&1 && return 0
  echo "stprof: installing jax[cpu], flax and optax (PyPI) in $V" >&2
  /usr/bin/python3 -m venv "$V" &&
    "$V/bin/pip" install -q "jax[cpu]==0.10.2" "flax==0.12.8" "optax==0.2.8" >&2 ||
    echo "stprof: could not install JAX in $V; tests/jax will fail" >&2
}
sanitizer_api() {
  case "$what" in build|check) ;; *) return 0 ;; esac
  D=${STPROF_SANITIZER_CACHE:-$HOME/.cache/stprof/sanitizer-api}
  ls "$D"/nvidia/cu*/compute-sanitizer/include/sanitizer.h >/dev/null 2>&1 && return 0
  echo "stprof: unpacking the Compute Sanitizer API (PyPI nvidia-cuda-sanitizer-api) into $D" >&2
  T=$(mktemp -d)
  # the major version of the CUDA toolkit when there is one (its cuda.h is used)
  major=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p' | head -1)
  spec="nvidia-cuda-sanitizer-api"
  [ -n "$major" ] && [ "$major" -ge 13 ] && spec="nvidia-cuda-sanitizer-api>=$major,<$((major + 1))"
  [ -n "$major" ] && [ "$major" = 12 ] && spec="nvidia-cuda-sanitizer-api-cu12"
  if python3 -m pip download -q --no-deps --only-binary :all: -d "$T" "$spec" >&2 &&
     mkdir -p "$D" && python3 -m zipfile -e "$T"/*.whl "$D"; then :; else
    echo "stprof: could not get the Compute Sanitizer API; --accesses=exact will be compiled out" >&2
  fi
  rm -rf "$T"
}
[ -z "$missing" ] && { memray_venv; jax_venv; sanitizer_api; exit 0; }
echo "stprof: installing Debian packages:$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
memray_venv
jax_venv
sanitizer_api
