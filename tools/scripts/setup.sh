#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs (only those missing),
# then configures and builds the project in $BUILD_DIR (default: build).
# Safe to run again. Sourced by demo.sh and test.sh, which may call
# install_missing_packages for more packages.
set -euo pipefail

# install_missing_packages PKG... (tools/scripts/install_packages.sh)
source "$(dirname "${BASH_SOURCE[0]}")/install_packages.sh"

install_missing_packages g++ meson ninja-build pkg-config python3 libdrm-dev \
  libflatbuffers-dev flatbuffers-compiler libabsl-dev libgtest-dev \
  libgmock-dev libbenchmark-dev libhwy-dev libcpp-httplib-dev nlohmann-json3-dev

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$repo/build}
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$repo" ${MESON_OPTIONS:-}
fi
ninja -C "$build_dir"
