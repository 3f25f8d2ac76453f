#!/usr/bin/env bash
# Tests the lnpu kernel module (kernel_iface/kmod/) in a virtual machine:
#   1. installs Debian 12's Linux 6.12 image and headers, QEMU and busybox
#      (only what is missing) and builds the project (setup.sh);
#   2. builds lnpu.ko against the 6.12 headers;
#   3. boots the 6.12 kernel in qemu-system-x86_64 (KVM with the
#      uncompressed vmlinux, PVH entry; TCG if KVM fails) on a busybox
#      initramfs that mounts the host's root read-only over virtio-9p and
#      chroots into it;
#   4. the guest (tools/scripts/vm_guest.sh) loads the module, starts
#      lnpu-firmware and runs the tests against /dev/accel/accel0, writing
#      JUnit files to a writable 9p share.
# usage: vm_test.sh [RESULTS_DIR]   (default: $BUILD_DIR/test-results)
# VM_NO_BUILD=1 skips building the project (the caller did); VM_ACCEL=tcg
# skips the KVM attempt.
# Writes vm-*.xml into RESULTS_DIR and prints "N passed, N failed" over
# them; exits 1 if anything failed. A VM that does not boot or does not
# finish within VM_TIMEOUT seconds (default 1800) is a failed test case;
# its console log and the guest's dmesg are kept in $BUILD_DIR/vm.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ -n "${VM_NO_BUILD:-}" ]; then
  # The caller built $BUILD_DIR (test.sh does): only the package installer.
  source "$repo/tools/scripts/install_packages.sh"
  build_dir=$(realpath -m "${BUILD_DIR:-$repo/build}")
else
  source "$repo/tools/scripts/setup.sh"
fi
install_missing_packages linux-image-6.12-amd64 linux-headers-6.12-amd64 \
  qemu-system-x86 busybox-static zstd

results_dir=$(realpath -m "${1:-$build_dir/test-results}")
work=$build_dir/vm
mkdir -p "$results_dir" "$work"
rm -f "$results_dir"/vm-*.xml
rm -rf "$work/share" "$work/initramfs" "$work/kmod"
mkdir -p "$work/share"
status=0

vm_case() {  # NAME PASSED [MESSAGE]: a one-case JUnit file
  local failure=""
  [ "$2" = 1 ] || failure="<failure message=\"${3:-failed}\"/>"
  printf '<testsuites><testsuite name="vm"><testcase name="%s">%s</testcase></testsuite></testsuites>\n' \
    "$1" "$failure" > "$results_dir/vm-$1.xml"
  [ "$2" = 1 ] || status=1
}

# The newest 6.12 kernel installed.
kver=$(ls /boot | sed -n 's/^vmlinuz-\(6\.12\..*-amd64\)$/\1/p' | sort -V | tail -n 1)
if [ -z "$kver" ] || [ ! -d "/usr/src/linux-headers-$kver" ]; then
  echo "vm_test: no Linux 6.12 image with headers installed" >&2
  vm_case boot 0 "no 6.12 kernel"
  python3 "$repo/tools/scripts/count_tests.py" "$results_dir"/vm-*.xml || true
  exit 1
fi

# 2. The module, built outside the source tree.
mkdir -p "$work/kmod/kernel_iface/kmod"
# Sources only: objects of a build in the tree must not be taken as current.
cp "$repo"/kernel_iface/kmod/{Kbuild,Makefile,LICENSE,*.c,*.h} "$work/kmod/kernel_iface/kmod/"
cp -r "$repo/kernel_iface/uapi" "$work/kmod/kernel_iface/"
if make -s -C "/usr/src/linux-headers-$kver" M="$work/kmod/kernel_iface/kmod" \
     modules > "$work/kmod-build.log" 2>&1 \
   && ! grep -q "warning:" "$work/kmod-build.log"; then
  vm_case kmod-build 1
else
  cat "$work/kmod-build.log"
  vm_case kmod-build 0 "lnpu.ko did not build cleanly"
  python3 "$repo/tools/scripts/count_tests.py" "$results_dir"/vm-*.xml || true
  exit 1
fi

# 3. Initramfs: busybox, the 9p modules, an init that chroots into the host.
initramfs=$work/initramfs
mkdir -p "$initramfs"/{bin,dev,proc,sys,mnt/root,lib/modules}
cp /bin/busybox "$initramfs/bin/busybox"
for m in fs/netfs/netfs net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
  xz -dc "/lib/modules/$kver/kernel/$m.ko.xz" > "$initramfs/lib/modules/$(basename $m).ko"
done
cat > "$initramfs/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in netfs 9pnet 9pnet_virtio 9p; do insmod /lib/modules/\$m.ko; done
if mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 hostroot /mnt/root; then
  r=/mnt/root
  mount -t proc proc \$r/proc
  mount -t sysfs sys \$r/sys
  mount -t devtmpfs dev \$r/dev
  # A checkout under /tmp (e.g. a fresh clone there) stays visible under
  # the guest's own /tmp: bound back in from the host root.
  case "$repo" in /tmp/*) mkdir -p /hosttmp; mount -o bind \$r/tmp /hosttmp ;; esac
  mount -t tmpfs tmp \$r/tmp
  case "$repo" in /tmp/*) mkdir -p \$r$repo; mount -o bind /hosttmp${repo#/tmp} \$r$repo ;; esac
  mount -t tmpfs run \$r/run
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results \$r$work/share
  echo "vm: chroot into the host root"
  chroot \$r /bin/bash $repo/tools/scripts/vm_guest.sh $repo $build_dir $work/share $kver
fi
echo "vm: powering off"
sync
poweroff -f
EOF
chmod +x "$initramfs/init"
(cd "$initramfs" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.cpio.gz"

# The uncompressed kernel (ELF with a PVH entry) for KVM: the compressed
# one's decompressor stops with a KVM emulation failure on these machines.
vmlinux=$work/vmlinux-$kver
if [ ! -s "$vmlinux" ]; then
  # The zstd frame inside the bzImage decompresses to the ELF vmlinux
  # (zstd then complains about the 4 size bytes after the frame).
  python3 - "/boot/vmlinuz-$kver" "$vmlinux" <<'PY' || true
import subprocess, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\x28\xb5\x2f\xfd")  # zstd frame magic
while at >= 0:
    out = subprocess.run(["zstd", "-dq", "-c"], input=data[at:],
                         capture_output=True).stdout
    if out[:4] == b"\x7fELF":
        open(sys.argv[2], "wb").write(out)
        break
    at = data.find(b"\x28\xb5\x2f\xfd", at + 1)
PY
fi

# boot ACCEL KERNEL: one VM run, bounded by VM_TIMEOUT (default 1800 s);
# fails early if the guest has not reached its script within
# VM_BOOT_TIMEOUT seconds (default 600). Results land in $work/share.
boot() {
  local accel=$1 kernel=$2 cpu=() waited=0
  [ "$accel" = kvm ] && cpu=(-cpu host)
  rm -f "$work/share"/*
  # no_timer_check: a starved TCG guest otherwise panics in the IO-APIC
  # timer check ("IO-APIC + timer doesn't work!").
  timeout --kill-after=10 "${VM_TIMEOUT:-1800}" \
    qemu-system-x86_64 -accel "$accel" "${cpu[@]}" -m 4096 -smp 2 \
      -nographic -no-reboot -kernel "$kernel" \
      -initrd "$work/initramfs.cpio.gz" \
      -append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 oops=panic loglevel=4 no_timer_check" \
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
      -virtfs "local,path=$work/share,mount_tag=results,security_model=none" \
      < /dev/null > "$work/console-$accel.log" 2>&1 &
  local qemu=$!
  while [ ! -f "$work/share/guest-started" ] && kill -0 "$qemu" 2>/dev/null; do
    # KVM boots in a second or not at all: nested KVM here stops in the
    # firmware (no kernel message) and is given up after 10 s.
    if ((waited >= ${VM_BOOT_TIMEOUT:-600})) || { [ "$accel" = kvm ] && ((waited >= 10)) \
         && ! grep -qa "Linux version" "$work/console-$accel.log"; }; then
      echo "vm_test: the $accel guest did not start within ${waited} s"
      kill "$qemu"
      wait "$qemu"
      return 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  wait "$qemu"
  [ -f "$work/share/guest-started" ]
}

# stories260K, compiled on the host; the guest reads it over 9p.
"$build_dir/tools/npu-compile/npu-compile" "$repo/models/stories260K.gguf" \
  -o "$work/stories260K.lnpu" > "$work/compile.log" 2>&1 \
  || { cat "$work/compile.log"; vm_case compile-stories260K 0; }

start=$(date +%s)
accel=kvm
if [ "${VM_ACCEL:-}" = tcg ] \
   || ! { [ -r /dev/kvm ] && [ -s "$vmlinux" ] && boot kvm "$vmlinux"; }; then
  echo "vm_test: KVM boot failed (see $work/console-kvm.log); using TCG"
  accel=tcg
  # A guest that stops before its script starts has not loaded lnpu.ko
  # yet: QEMU's emulation failed, not the module (seen once on an AMD
  # host: an int3 Oops in the timer code 1.5 s into boot, the next boots
  # clean). One more boot then; the first console is kept.
  if ! boot tcg "/boot/vmlinuz-$kver" && [ ! -f "$work/share/guest-started" ]; then
    mv "$work/console-tcg.log" "$work/console-tcg-first.log"
    echo "vm_test: the TCG guest stopped before its script started" \
         "(console: $work/console-tcg-first.log); booting it again"
    boot tcg "/boot/vmlinuz-$kver" || true
  fi
fi
elapsed=$(($(date +%s) - start))
echo "vm_test: $accel VM ran ${elapsed} s"

# The cases the guest finished count even if the VM did not.
cp "$work/share"/*.xml "$results_dir/" 2>/dev/null || true
for f in "$results_dir"/vm-*.xml; do
  grep -q "<failure" "$f" && status=1
done
cat "$work/share/summary.txt" 2>/dev/null || true
if [ -f "$work/share/guest-finished" ]; then
  vm_case boot 1
else
  vm_case boot 0 "the $accel VM did not finish (console: $work/console-$accel.log)"
  tail -n 60 "$work/console-$accel.log" || true
fi
if ((status)); then
  echo "vm_test: console log $work/console-$accel.log, guest dmesg $work/share/dmesg.txt"
  cp "$work/share/dmesg.txt" "$work/dmesg-$accel.txt" 2>/dev/null || true
fi
python3 "$repo/tools/scripts/count_tests.py" "$results_dir"/vm-*.xml || status=1
exit "$status"
