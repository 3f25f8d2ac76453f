#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs (only those missing),
# then configures and builds the project in $BUILD_DIR (default: build).
# Safe to run again. Sourced by demo.sh and test.sh, which may call
# install_missing_packages for more packages.
set -euo pipefail

# install_missing_packages PKG...: apt-get installs those not installed
# (as root, else through sudo). A PKG of another architecture
# (libhwy-dev:arm64) first adds that architecture to dpkg (multiarch).
install_missing_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "installing missing Debian packages: ${missing[*]}"
  local sudo_cmd=() arch
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*://p' | sort -u); do
    [ "$arch" = "$(dpkg --print-architecture)" ] \
      || dpkg --print-foreign-architectures | grep -qx "$arch" \
      || "${sudo_cmd[@]}" dpkg --add-architecture "$arch"
  done
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
}

install_missing_packages g++ meson ninja-build pkg-config python3 libdrm-dev \
  libflatbuffers-dev flatbuffers-compiler libabsl-dev libgtest-dev \
  libgmock-dev libbenchmark-dev libhwy-dev nlohmann-json3-dev

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$repo/build}
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$repo" ${MESON_OPTIONS:-}
fi
ninja -C "$build_dir"
