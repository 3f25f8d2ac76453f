#!/usr/bin/env bash
# Defines install_missing_packages; sourced by setup.sh and by tests that
# need a package the build does not (the chat page test's chromium).
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
