#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs (only those missing),
# then configures and builds the project in $BUILD_DIR (default: build).
# Safe to run again. Sourced by demo.sh and test.sh.
set -euo pipefail

packages=(g++ meson ninja-build pkg-config python3 libdrm-dev libflatbuffers-dev
          flatbuffers-compiler libabsl-dev libgtest-dev libgmock-dev
          libbenchmark-dev libhwy-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$repo/build}
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$repo" ${MESON_OPTIONS:-}
fi
ninja -C "$build_dir"
