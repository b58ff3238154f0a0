#!/usr/bin/env bash
# cgroupv2-test.sh runs the real-kernel tests (func TestRealKernel*, test/cgrouptest's sandbox) of every package that
# has them on cgroup v2, inside a kernel of their own: Debian's kernel (6.1) in the QEMU machine of
# hack/cgroupv2-node.sh, with this machine's root file system as its root (9p), a cgroup2 hierarchy of its own with
# every controller (cpuset and PSI included), two CPUs, and a 512 MiB virtio disk for the I/O tests. The host's
# cgroup hierarchies are not touched. The test binaries are compiled here (go test -c) and run inside with -test.v;
# their output is printed as go test prints it, with an ok/FAIL line per package, and the count of tests run on v2 at
# the end. docs/benchmarks.md has the times and why this kernel and not Debian's user-mode Linux (which dies on this
# machine's AMX CPUs).
#
# Usage: hack/cgroupv2-test.sh            (make test-cgroupv2)
#
# Environment:
#   GLEANER_V2_RUN    the -test.run selection (default ^TestRealKernel)
#   GLEANER_V2_COUNT  how many times each test runs (-test.count; default 1), to see how often a test fails here
#   GLEANER_V2_PKGS   the package directories to run, space-separated (default: every one with TestRealKernel*)
#   GLEANER_V2_WORK   the work directory, under the tree so the machine sees it (default bin/cgroupv2)
#   GLEANER_QEMU      the emulator's command (default qemu-system-x86_64; hack/cgroupv2-node.sh)
#   CI                under CI=true, what cannot run fails naming what is missing; elsewhere it is skipped, saying why
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
RUN=${GLEANER_V2_RUN:-^TestRealKernel}
COUNT=${GLEANER_V2_COUNT:-1}
WORK=${GLEANER_V2_WORK:-$REPO/bin/cgroupv2} # under the tree, so the machine sees it; bin/ is ignored by git
LOCK=/tmp/gleaner-cgrouptest.lock # test/cgrouptest.LockFile: the host's sandboxes and this machine take turns

# The tests that skip inside this machine, each for a limit of emulated CPUs or a test about v1 only (the reason is
# the test's own skip message). Under CI=true any other skip fails the run: a test that starts skipping here (a
# kernel feature gone, a sandbox that cannot be made) would otherwise turn into a green run that proved nothing.
EXPECTED_SKIPS=(
  TestRealKernelBurst                                   # burst's effect on throttling is timed on a real CPU only
  TestRealKernelContainerStartsWhileSuppressionTightens # about cgroup v1: the quota written at StartContainer
  TestRealKernelServiceStallEvictsBatch                 # about cgroup v1: the node's stall (v2 reads each pod's)
)

# cannot says why the tests cannot run: a failure under CI=true, a skip elsewhere.
cannot() {
  if [[ "${CI:-}" == true ]]; then
    printf 'cgroupv2: FAIL: CI=true and the cgroup v2 tests cannot run: %s\n' "$*" >&2
    exit 1
  fi
  printf 'cgroupv2: skipped: %s (under CI=true this fails)\n' "$*"
  exit 0
}

rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/out"
# Before compiling anything: the machine's emulator (make test-cgroupv2 installs it through host-packages).
command -v "${GLEANER_QEMU:-qemu-system-x86_64}" >/dev/null ||
  cannot "${GLEANER_QEMU:-qemu-system-x86_64} is missing (make test-cgroupv2 installs qemu-system-x86, busybox-static, cpio and kmod)"

if [[ -n ${GLEANER_V2_PKGS:-} ]]; then
  read -ra pkgs <<<"$GLEANER_V2_PKGS"
  pkgs=("${pkgs[@]#./}")
else
  mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func TestRealKernel' pkg cmd internal test 2>/dev/null | xargs -n1 dirname | sort -u)
fi
[[ ${#pkgs[@]} -gt 0 ]] || cannot "no package has func TestRealKernel* tests"
echo "cgroupv2: compiling the real-kernel tests of ${#pkgs[@]} packages (go test -c)"
# One go command for all: the packages' base names are distinct (go test -c -o DIR/ requires it).
go test -c -o "$WORK/bin/" "${pkgs[@]/#/./}"

# The script the machine runs (hack/cgroupv2-node.sh has mounted proc, sys, cgroup2 at /sys/fs/cgroup, where
# test/cgrouptest looks, and a private /tmp, and bound the tree there again when it is under /tmp): each binary runs
# from its package directory (tests read testdata/ relative to it) and writes its output and exit status here.
{
  echo 'export HOME=/tmp TMPDIR=/tmp'
  printf 'export CI=%q GLEANER_TEST_KERNEL="qemu $(uname -r)" GLEANER_TEST_BLOCK_DEVICE=/dev/vda\n' "${CI:-}"
  echo "date +%s.%N > $WORK/out/booted"
  for p in "${pkgs[@]}"; do
    b=$(basename "$p")
    printf 'cd %q && %q -test.v -test.timeout 8m -test.count %q -test.run %q > %q 2>&1; echo $? > %q\n' \
      "$REPO/$p" "$WORK/bin/$b.test" "$COUNT" "$RUN" "$WORK/out/$b.log" "$WORK/out/$b.rc"
  done
} >"$WORK/run.sh"
# The io.max tests' block device: a sparse file as the machine's virtio disk (/dev/vda inside).
truncate -s 512M "$WORK/disk.img"

echo "cgroupv2: booting Debian's kernel in QEMU (hack/cgroupv2-node.sh) and running the tests inside"
start=$(date +%s.%N)
rc=0
GLEANER_V2_NODE_WORK=$WORK/machine GLEANER_V2_NODE_DISK=$WORK/disk.img GLEANER_V2_NODE_CMD="sh $WORK/run.sh" \
  flock "$LOCK" hack/cgroupv2-node.sh >"$WORK/machine.log" 2>&1 || rc=$?
end=$(date +%s.%N)
if [[ ! -f $WORK/out/booted ]]; then
  tail -30 "$WORK/machine.log" >&2
  cannot "the machine did not run the tests (exit $rc; its output above, in $WORK/machine.log)"
fi

failed=0 passed=0 skipped=0 ran=0
for p in "${pkgs[@]}"; do
  b=$(basename "$p")
  log=$WORK/out/$b.log
  mod=$(go list "./$p")
  if [[ ! -f $WORK/out/$b.rc ]]; then
    [[ -f $log ]] && cat "$log"
    echo "FAIL	$mod	(cgroup v2: the machine stopped before the test binary ended; its console in $WORK/machine/console.log)"
    failed=$((failed + 1))
    continue
  fi
  cat "$log"
  if [[ $(cat "$WORK/out/$b.rc") == 0 ]]; then
    echo "ok  	$mod	(cgroup v2, Debian's kernel in QEMU)"
  else
    echo "FAIL	$mod	(cgroup v2, Debian's kernel in QEMU)"
    failed=$((failed + 1))
  fi
  passed=$((passed + $(grep -c '^--- PASS' "$log" || true)))
  skipped=$((skipped + $(grep -c '^--- SKIP' "$log" || true)))
  ran=$((ran + $(grep -c '^--- \(PASS\|FAIL\)' "$log" || true)))
done
boot=$(awk -v a="$start" -v b="$(cat "$WORK/out/booted")" 'BEGIN { printf "%.1f", b - a }')
total=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "cgroupv2: $ran tests ran on cgroup v2 ($passed passed, $skipped skipped) in ${total}s; the kernel booted in ${boot}s"
if [[ $skipped -gt 0 ]]; then
  echo "cgroupv2: skipped on v2:"
  grep -h -B1 '^--- SKIP' "$WORK"/out/*.log | grep -v '^--$\|^=== RUN\|^PASS$' | sed 's/^/  /'
fi
unexpected=() skipfail=0
for name in $(grep -h '^--- SKIP' "$WORK"/out/*.log | awk '{print $3}'); do
  [[ " ${EXPECTED_SKIPS[*]} " == *" $name "* ]] || unexpected+=("$name")
done
if [[ ${#unexpected[@]} -gt 0 ]]; then
  msg="skipped on v2 and not in EXPECTED_SKIPS of $0: ${unexpected[*]}"
  if [[ "${CI:-}" == true ]]; then
    echo "cgroupv2: FAIL: CI=true and $msg" >&2
    skipfail=1
  else
    echo "cgroupv2: $msg (under CI=true this fails)"
  fi
fi
if [[ $failed -gt 0 ]]; then
  echo "cgroupv2: FAIL: $failed of ${#pkgs[@]} packages failed on cgroup v2" >&2
fi
[[ $failed -eq 0 && $skipfail -eq 0 ]]
