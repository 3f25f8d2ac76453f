#!/usr/bin/env bash
# Builds and runs the whole test suite, then prints the line
# "N passed, N failed" counted over the individual test cases of all runs:
#   1. every suite in the normal build        $BUILD_DIR      (build/)
#   2. every suite under AddressSanitizer
#      and UndefinedBehaviorSanitizer
#      (clang)                                $BUILD_DIR-asan (build-asan/)
#   3. the threaded suites (softnpu, driver,
#      runtime, end_to_end) under
#      ThreadSanitizer (clang)                $BUILD_DIR-tsan (build-tsan/)
#   4. bounded libFuzzer runs (clang) of
#      the software NPU's ioctls and of each
#      parser (tests/fuzz/), one test case
#      per target; prints executions         $BUILD_DIR-fuzz (build-fuzz/)
#   5. every suite that does not need x86,
#      cross-built for aarch64, under
#      qemu-aarch64                           $BUILD_DIR-aarch64 (build-aarch64/)
#   6. the lnpu kernel module in a Linux 6.12
#      VM (tools/scripts/vm_test.sh), in the
#      background from step 2 on               $BUILD_DIR/vm
# FUZZ_SECONDS (default 120) is the fuzzing time of all targets together, run
# in two lanes (half of it in wall time). Build directories are
# reused when run again. Sanitizer reports fail the run that printed them.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$repo/tools/scripts/setup.sh"
# Every package of the later steps, in one apt-get run before the VM step
# starts in the background: clang's sanitizer runtimes and libFuzzer
# (libclang-rt-14-dev), the
# aarch64 cross toolchain, qemu-user and the arm64 -dev packages, and the
# VM's kernel, QEMU and busybox (vm_test.sh).
aarch64_packages=(g++-aarch64-linux-gnu qemu-user libabsl-dev:arm64
                  libdrm-dev:arm64 libflatbuffers-dev:arm64 libgtest-dev:arm64
                  libgmock-dev:arm64 libhwy-dev:arm64 libcpp-httplib-dev:arm64)
install_missing_packages clang libclang-rt-14-dev "${aarch64_packages[@]}" \
  linux-image-6.12-amd64 linux-headers-6.12-amd64 qemu-system-x86 \
  busybox-static zstd

# step_done NAME: notes the wall time since the previous step (the first
# step counts from the start: packages and the normal build); the times are
# printed before the totals.
step_times=()
step_start=0
step_done() {
  step_times+=("$1 $((SECONDS - step_start)) s")
  step_start=$SECONDS
}
step_done "packages and normal build"

asan_dir=${build_dir}-asan
tsan_dir=${build_dir}-tsan
fuzz_dir=${build_dir}-fuzz
results_dir=$build_dir/test-results
mkdir -p "$results_dir"
rm -f "$results_dir"/*.xml
status=0

# record_case NAME PASSED: a one-case JUnit file for a step that is not a
# meson test (a failed build, the fuzz run).
record_case() {
  local failure=""
  [ "$2" = 1 ] || failure="<failure message=\"failed\"/>"
  printf '<testsuites><testsuite name="%s"><testcase name="%s">%s</testcase></testsuite></testsuites>\n' \
    "$1" "$1" "$failure" > "$results_dir/$1.xml"
  [ "$2" = 1 ] || status=1
}

# run_meson_tests DIR NAME [TEST...]: meson test (built already) and its
# JUnit log under NAME (logs named NAME, so that two runs in one build
# directory can overlap).
run_meson_tests() {
  local dir=$1 name=$2
  shift 2
  meson test -C "$dir" --no-rebuild --num-processes 2 --print-errorlogs --logbase "$name" "$@" \
    || status=1
  cp "$dir/meson-logs/$name.junit.xml" "$results_dir/$name.xml"
}

# sanitizer_setup DIR SANITIZERS [MESON_OPTION...]: configures a sanitizer
# build; no debug info and -O1 keep its build time down, and so does
# compiling the software NPU's Highway kernels for two of the four x86
# targets (about half their compile time): AVX2, the widest one nearly every
# x86-64 machine has, and SCALAR, the portable fallback. The kernels are one
# source for every target; the normal build runs SSE4 and AVX3 too.
sanitizer_setup() {
  [ -f "$1/build.ninja" ] && return 0
  meson setup "$1" "$repo" -Db_sanitize="$2" -Doptimization=1 -Ddebug=false \
    -Dhwy_disabled_targets='HWY_SSSE3|HWY_SSE4|HWY_AVX3|HWY_AVX3_DL' "${@:3}"
}

# 1. Normal build (setup.sh built it).
run_meson_tests "$build_dir" normal
step_done "normal tests"

# 6, started now. The lnpu kernel module (kernel_iface/kmod/) in a Linux
# 6.12 virtual machine, tested against /dev/accel/accel0
# (docs/kernel-driver.md): writes vm-*.xml; a VM that fails to boot is a
# failed case, bounded in time. It only reads the normal build, and its
# guest (TCG: an emulated CPU) mostly runs one thread at a time, so it runs
# beside steps 2-5 and takes the CPU time their test runs leave idle; its
# output is printed when it ends. It shares the CPU at the same priority:
# at nice 10 a build starved the guest until a 200 ms job timed out. With
# less CPU it boots and runs slower, hence the longer bounds.
vm_log=$build_dir/vm-test.log
(
  vm_start=$SECONDS
  vm_status=0
  VM_NO_BUILD=1 BUILD_DIR="$build_dir" VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-2400} \
    VM_TIMEOUT=${VM_TIMEOUT:-3600} \
    bash "$repo/tools/scripts/vm_test.sh" "$results_dir" || vm_status=$?
  echo "vm_test: the VM step took $((SECONDS - vm_start)) s beside the others"
  exit "$vm_status"
) > "$vm_log" 2>&1 &
vm_pid=$!

# 2. AddressSanitizer + UBSan, every suite, built with clang: GCC 12 took
# twice the CPU time for the same sanitized sources (docs/performance.md).
# Only the test programs and what they run are built (meson-test-prereq).
# Left out: the qwen2-vocabulary (151k tokens) cases of the structured-output
# random walks, of the server's structured replies and of the grammar mask
# timing (whose figures mean nothing under ASan), 280 s of the step under
# ASan; their llama-spm twins run the same matcher and server code here,
# tokenizer_test runs qwen2's byte-level BPE, and the normal build runs them
# all.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
asan_gtest_filter='-Vocabularies/RandomWalkTest.*/qwen2:Vocabularies/StructuredServeTest.*/qwen2:GrammarMatcherTest.MaskTimeOnQwen2'
if CC=clang CXX=clang++ sanitizer_setup "$asan_dir" address,undefined \
    && ninja -C "$asan_dir" meson-test-prereq; then
  GTEST_FILTER=$asan_gtest_filter run_meson_tests "$asan_dir" asan
else
  record_case asan-build 0
fi
step_done "ASan+UBSan build and tests"

# 3. ThreadSanitizer, the suites whose executables live in the threaded
# test folders, built with clang (as step 2: half GCC's compile time; these
# suites ran in 52 s against 161-171 s with GCC's TSan). No suppressions:
# the software NPU synchronises with std::mutex and atomics, which TSan
# sees (Debian's Abseil is not TSan-instrumented, so a race report inside
# absl::Mutex would need a suppressions file naming why).
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
threaded_tests() {  # prints "TARGET TEST" per threaded test of build $1
  meson introspect --tests "$1" | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    exe = os.path.relpath(os.path.realpath(t["cmd"][0]), build)
    if exe.split("/")[:2] in (["tests", d] for d in
                              ("softnpu", "driver", "runtime", "end_to_end")):
        print(exe, t["name"])' "$1"
}
if CC=clang CXX=clang++ sanitizer_setup "$tsan_dir" thread \
    && mapfile -t tsan_tests < <(threaded_tests "$tsan_dir") \
    && ((${#tsan_tests[@]})) \
    && ninja -C "$tsan_dir" $(printf '%s\n' "${tsan_tests[@]}" | cut -d' ' -f1 | sort -u); then
  run_meson_tests "$tsan_dir" tsan $(printf '%s\n' "${tsan_tests[@]}" | cut -d' ' -f2)
else
  record_case tsan-build 0
fi
step_done "TSan build and tests"

# 4. Bounded fuzz runs: clang, ASan + UBSan, libFuzzer coverage (line
# tables only, enough for file:line in reports, at -O1; the Highway kernels
# for the SCALAR target alone and none of the hand-written x86
# quantized-matmul paths, whose sanitized compile took 11.5 of this step's
# 13.5 minutes in session 33's run, also in a build directory made before
# that: the fuzzers look for validation and parser faults, not kernel
# arithmetic, which steps 1-2 and 5 test, and fuzz_corpus_test replays the
# committed seeds with every kernel in steps 1 and 2); one
# fuzzer per target, FUZZ_SECONDS of fuzzing split between them (the ioctl
# fuzzer, whose inputs each build a device, gets two shares). A libFuzzer
# process runs one thread, so the targets run in two lanes, one per core:
# the step's wall time is half of FUZZ_SECONDS. New inputs collect in
# $fuzz_dir/corpus/<target>; the committed seeds are read every run.
fuzz_targets=(softnpu_ioctl gguf artifact session tokenizer_spm tokenizer_bpe
              chat_template)
fuzz_seconds=${FUZZ_SECONDS:-120}
fuzz_share=$(( fuzz_seconds / (${#fuzz_targets[@]} + 1) ))
[ "$fuzz_share" -ge 1 ] || fuzz_share=1
fuzz_built=0
if { [ -f "$fuzz_dir/build.ninja" ] \
       || CC=clang CXX=clang++ meson setup "$fuzz_dir" "$repo" -Dfuzz=true \
            -Db_sanitize=address,undefined -Doptimization=1 -Ddebug=false \
            -Dcpp_args=-gline-tables-only \
            -Dhwy_disabled_targets='HWY_SSSE3|HWY_SSE4|HWY_AVX2|HWY_AVX3|HWY_AVX3_DL' \
            -Dx86_quant_matmul_paths=false; } \
    && meson configure "$fuzz_dir" -Dx86_quant_matmul_paths=false \
    && ninja -C "$fuzz_dir" $(printf 'tests/fuzz/%s_fuzzer ' "${fuzz_targets[@]}"); then
  fuzz_built=1
fi
fuzz_seconds_of() {  # TARGET: its fuzzing time
  if [ "$1" = softnpu_ioctl ]; then echo $(( 2 * fuzz_share )); else echo "$fuzz_share"; fi
}
fuzz_lane() {  # TARGET...: runs each fuzzer in turn; its exit status goes to TARGET.rc
  local target rc
  for target in "$@"; do
    mkdir -p "$fuzz_dir/corpus/$target"
    rc=0
    "$fuzz_dir/tests/fuzz/${target}_fuzzer" \
      -max_total_time="$(fuzz_seconds_of "$target")" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$fuzz_dir/$target-" \
      "$fuzz_dir/corpus/$target" "$repo/tests/fuzz/corpus/$target" \
      > "$fuzz_dir/$target.log" 2>&1 || rc=$?
    echo "$rc" > "$fuzz_dir/$target.rc"
  done
}
fuzz_total_runs=0
if [ $fuzz_built = 1 ]; then
  # Each target to the lane with less fuzzing time so far.
  lane_targets=("" "") lane_seconds=(0 0)
  for target in "${fuzz_targets[@]}"; do
    lane=0
    [ "${lane_seconds[1]}" -lt "${lane_seconds[0]}" ] && lane=1
    lane_targets[lane]+=" $target"
    lane_seconds[lane]=$(( lane_seconds[lane] + $(fuzz_seconds_of "$target") ))
  done
  rm -f "$fuzz_dir"/*.rc
  fuzz_lane ${lane_targets[0]} & lane_pid=$!
  fuzz_lane ${lane_targets[1]}
  wait "$lane_pid" || true
fi
for target in "${fuzz_targets[@]}"; do
  fuzz_ok=0
  if [ $fuzz_built = 1 ]; then
    fuzz_log=$fuzz_dir/$target.log
    if [ "$(cat "$fuzz_dir/$target.rc" 2>/dev/null)" = 0 ]; then
      fuzz_ok=1
    else
      tail -n 60 "$fuzz_log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$fuzz_log")
    fuzz_total_runs=$(( fuzz_total_runs + ${runs:-0} ))
    echo "fuzz: ${target}_fuzzer ran ${runs:-0} executions in $(fuzz_seconds_of "$target") s:" \
         "$([ $fuzz_ok = 1 ] && echo 'no crash, hang, sanitizer report or broken property' || echo "FAILED, see $fuzz_log")"
  fi
  record_case "fuzz-$target" "$fuzz_ok"
done
echo "fuzz: $fuzz_total_runs executions over ${#fuzz_targets[@]} targets"
step_done "fuzz build and runs"

# 5. aarch64: every suite that does not need x86, cross-built with Debian's
# toolchain against the arm64 multiarch -dev packages
# (tools/scripts/aarch64-linux-gnu.ini) at -O1 without debug info (the
# build costs less than half of -O2 with debug info; docs/performance.md)
# and run under qemu-aarch64, the test programs' own sources at -O1 too
# (the default -O0 would make their reference computations slow under
# emulation); only the test programs and what they run are
# built (meson-test-prereq). "cortex-a76" (Armv8.2 NEON with dot product,
# no SVE: fast to emulate; quantized matmul path neon-dotprod) runs every
# suite but those in aarch64_left_out, with small compute shapes; the
# compute suites run again on the CPUs that take the other kernel paths:
# "max" (SVE2, dot product, i8mm: the Highway targets and Arm
# quantized-matmul paths that cortex-a76 does not take; qemu's SVE vectors
# are 512 bits, so the targets for fixed 256- and 128-bit SVE would never
# run and are not built; emulated
# SVE is ~30x slower than NEON, so the
# matmul and attention cases above 2^18 multiply-adds are skipped:
# LNPU_COMPUTE_TEST_SMALL_SHAPES) and "cortex-a57" (NEON only: every case,
# falling back to the Highway quantized matmul). LNPU_EXPECTED_QUANT_PATHS
# makes quant_matmul_test check each CPU's path list.
aarch64_dir=${build_dir}-aarch64
# Left out under qemu-aarch64 (DEVELOPERS.md gives the same reasons):
#   npu_serve_chat_page  drives a headless Chromium (an x86 program, not
#                        part of the stack) against npu-serve; the server
#                        itself runs under qemu in npu_serve and
#                        npu_serve_structured.
aarch64_left_out=(npu_serve_chat_page)
# Cases left out on cortex-a76, 10-40x slower under emulation than native
# and covered there by the same code on a smaller vocabulary or a shorter
# run: the qwen2 vocabulary (151k tokens) cases of the structured-output
# random walks, of the server's structured replies (the llama-spm ones
# run) and of the grammar mask timing; the server soak, whose RSS is
# qemu's; `npu-info --validate`, whose speed thresholds (matmul >= 0.2
# GFLOP/s) are a device's, not an emulator's (its known-answer check runs
# in the normal build); stories260K's greedy run to the full 1152-slot
# cache (its 200-token and chunked-prompt cases run); and
# the compile of the Gemma presets to count their cache bytes (compiler
# arithmetic, no kernel).
# On "max", the cases of the NEON Highway target and of the neon-dotprod
# path are left out: the cortex-a76 run just ran them.
aarch64_max_gtest_filter='-*/NEON:*/neon_dotprod'
aarch64_gtest_filter='-Vocabularies/RandomWalkTest.*/qwen2:Vocabularies/StructuredServeTest.*/qwen2:GrammarMatcherTest.MaskTimeOnQwen2:NpuServeTest.SoakOfMixedClientsReturnsToBaseline:NpuInfoTest.Validate*:StoriesEquivalenceTest.MatchesReferenceUntilTheDefaultCacheIsFull:WindowRingPresetTest.GemmaPresetsSaveTheDocumentedBytes'
if { [ -f "$aarch64_dir/build.ninja" ] \
           || meson setup "$aarch64_dir" "$repo" \
                --cross-file "$repo/tools/scripts/aarch64-linux-gnu.ini"; } \
    && meson configure "$aarch64_dir" -Doptimization=1 -Ddebug=false -Dtest_optimization=same \
         -Dhwy_disabled_targets='HWY_SSSE3|HWY_SVE_256|HWY_SVE2_128' \
    && ninja -C "$aarch64_dir" meson-test-prereq \
    && mapfile -t aarch64_suites < <(meson test -C "$aarch64_dir" --no-rebuild --list \
                                       | grep -vxF -f <(printf '%s\n' "${aarch64_left_out[@]}")); then
  # A "threadsafe" death test re-execs the test binary, which the kernel
  # cannot run without binfmt_misc for aarch64; "fast" only forks.
  export GTEST_DEATH_TEST_STYLE=fast
  # The "max" and "cortex-a57" runs (two suites each, one much longer than
  # the other) go beside the cortex-a76 run at nice 10: they take the CPU
  # time its last, longest suites leave idle without slowing its
  # timing-sensitive cases.
  (
    renice -n 10 -p "$BASHPID" > /dev/null
    status=0
    QEMU_CPU=max LNPU_COMPUTE_TEST_SMALL_SHAPES=1 \
      LNPU_EXPECTED_QUANT_PATHS=neon-i8mm,neon-dotprod,highway \
      GTEST_FILTER=$aarch64_max_gtest_filter \
      run_meson_tests "$aarch64_dir" aarch64-max --timeout-multiplier=4 \
        quant_matmul_test quant_matmul_q6_k_test compute_kernels_test
    QEMU_CPU=cortex-a57 LNPU_EXPECTED_QUANT_PATHS=highway \
      run_meson_tests "$aarch64_dir" aarch64-cortex-a57 --timeout-multiplier=4 \
        quant_matmul_test quant_matmul_q6_k_test compute_kernels_test
    exit "$status"
  ) &
  aarch64_other_cpus=$!
  QEMU_CPU=cortex-a76 LNPU_COMPUTE_TEST_SMALL_SHAPES=1 \
    LNPU_EXPECTED_QUANT_PATHS=neon-dotprod,highway \
    GTEST_FILTER=$aarch64_gtest_filter \
    run_meson_tests "$aarch64_dir" aarch64-cortex-a76 --timeout-multiplier=4 \
      "${aarch64_suites[@]}"
  wait "$aarch64_other_cpus" || status=1
else
  record_case aarch64-build 0
fi
step_done "aarch64 cross build and qemu runs"

# 6. The VM step started after step 1: its output, once it has ended.
wait "$vm_pid" || status=1
cat "$vm_log"
step_done "waiting for the kernel module VM"

echo "wall time per step: $(IFS=';'; echo "${step_times[*]}" | sed 's/;/, /g')"
# The longest compiles of each build, so that one that grows shows here
# (a sanitized kernel source once took 12 of the run's minutes unnoticed).
python3 "$repo/tools/scripts/longest_builds.py" 3 "$build_dir" "$asan_dir" "$tsan_dir" \
  "$fuzz_dir" "$aarch64_dir" || true
python3 "$repo/tools/scripts/count_tests.py" "$results_dir"/*.xml || status=1
exit "$status"
