#!/usr/bin/env bash
# cgroupv2-test.sh runs the real-kernel tests (func TestRealKernel*, test/cgrouptest's sandbox) of every package that
# has them on cgroup v2, inside a kernel of their own: Debian's user-mode Linux (package user-mode-linux, kernel 6.1),
# booted as an ordinary process with this machine's root file system as its root (hostfs) and a cgroup2 hierarchy
# of its own. The host's cgroup hierarchies are not touched. The test binaries are compiled here (go test -c) and
# run inside with -test.v; their output is printed as go test prints it, with an ok/FAIL line per package, and the
# count of tests run on v2 at the end. docs/benchmarks.md has the boot time, the added CI time and what this kernel
# lacks (cpuset, PSI).
#
# Usage: hack/cgroupv2-test.sh            (make test-cgroupv2)
#
# Environment:
#   GLEANER_V2_RUN    the -test.run selection (default ^TestRealKernel)
#   GLEANER_V2_PKGS   the package directories to run, space-separated (default: every one with TestRealKernel*)
#   GLEANER_UML_MEM   the kernel's memory (default 1G)
#   GLEANER_UML       the user-mode kernel's command (default linux, from the package user-mode-linux)
#   GLEANER_V2_WORK   the work directory, under the tree so the kernel sees it (default bin/cgroupv2)
#   CI                under CI=true, what cannot run fails naming what is missing; elsewhere it is skipped, saying why
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
RUN=${GLEANER_V2_RUN:-^TestRealKernel}
MEM=${GLEANER_UML_MEM:-1G}
UML=${GLEANER_UML:-linux}
WORK=${GLEANER_V2_WORK:-$REPO/bin/cgroupv2} # under the tree, so the kernel sees it through hostfs; bin/ is ignored by git
LOCK=/tmp/gleaner-cgrouptest.lock # test/cgrouptest.LockFile: the host's sandboxes and this kernel take turns

# The tests that skip inside this kernel, each for a limit of the user-mode kernel or a test about v1 only (the reason
# is the test's own skip message). Under CI=true any other skip fails the run: a test that starts skipping here (a
# kernel feature gone, a sandbox that cannot be made) would otherwise turn into a green run that proved nothing.
EXPECTED_SKIPS=(
  TestRealKernelBurst                                   # CPU time accounted by ticks of a host-scheduled CPU
  TestRealKernelCgroupCounters                          # no perf events in user-mode Linux
  TestRealKernelContainerStartsWhileSuppressionTightens # about cgroup v1: the quota written at StartContainer
  TestRealKernelServiceStallEvictsBatch                 # no pressure stall information in user-mode Linux
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

install_uml() {
  command -v "$UML" >/dev/null && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    cannot "the user-mode kernel ($UML, Debian's package user-mode-linux) is missing, and installing it needs root and apt-get (uid $(id -u))"
  fi
  echo "cgroupv2: installing Debian's user-mode-linux (the cgroup v2 test kernel, about 40 MB) with apt-get: once per machine"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends user-mode-linux >"$WORK/apt.log" 2>&1; then
    echo "cgroupv2: the install failed; running apt-get update first and trying again"
    apt-get update >>"$WORK/apt.log" 2>&1 && apt-get install -y --no-install-recommends user-mode-linux >>"$WORK/apt.log" 2>&1 ||
      { tail -20 "$WORK/apt.log" >&2; cannot "apt-get could not install user-mode-linux (log above, in $WORK/apt.log)"; }
  fi
  command -v "$UML" >/dev/null || cannot "user-mode-linux is installed but $UML is not on PATH"
}

rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/out"
install_uml

# UML keeps the guest's memory in a file under TMPDIR: tmpfs (/dev/shm) when there is one.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  export TMPDIR=/dev/shm
elif [[ ! -w ${TMPDIR:-/tmp} ]]; then
  cannot "no writable /dev/shm or TMPDIR for the user-mode kernel's memory file"
fi

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

# The init script: PID 1 of the user-mode kernel. It mounts what the tests need (proc, sys, a private /tmp, the
# cgroup2 hierarchy at /sys/fs/cgroup, where test/cgrouptest looks), runs each binary from its package directory
# (tests read testdata/ relative to it) and writes its output and exit status here, through hostfs.
{
  echo '#!/bin/sh'
  echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp'
  printf 'export CI=%q GLEANER_TEST_KERNEL="user-mode-linux $(uname -r)" GLEANER_TEST_BLOCK_DEVICE=/dev/ubda\n' "${CI:-}"
  echo 'mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t tmpfs tmp /tmp &&'
  echo '  mount -t cgroup2 cgroup2 /sys/fs/cgroup || { echo "cgroupv2: the init script could not mount proc, sys, tmp or cgroup2"; halt -f; }'
  # A tree under /tmp (a CI clone, say) is hidden by the private /tmp: mount it again from the host at its path.
  if [[ $REPO == /tmp/* ]]; then
    printf 'mkdir -p %q && mount -t hostfs -o %q none %q || { echo "cgroupv2: could not mount the tree %s"; halt -f; }\n' \
      "$REPO" "$REPO" "$REPO" "$REPO"
  fi
  echo "date +%s.%N > $WORK/out/booted"
  for p in "${pkgs[@]}"; do
    b=$(basename "$p")
    printf 'cd %q && %q -test.v -test.timeout 8m -test.run %q > %q 2>&1; echo $? > %q\n' \
      "$REPO/$p" "$WORK/bin/$b.test" "$RUN" "$WORK/out/$b.log" "$WORK/out/$b.rc"
  done
  echo 'halt -f'
} >"$WORK/init.sh"
chmod +x "$WORK/init.sh"
# The io.max tests' block device: the kernel's own ubd driver over a sparse file (/dev/ubda inside).
truncate -s 512M "$WORK/ubd.img"

echo "cgroupv2: booting user-mode-linux ($(dpkg-query -W -f '${Version}' user-mode-linux 2>/dev/null || echo '?'), mem=$MEM) and running the tests inside"
start=$(date +%s.%N)
rc=0
# uml_dir: the kernel's pid file and management socket go to the work directory, not ~/.uml.
flock "$LOCK" timeout 20m "$UML" mem="$MEM" uml_dir="$WORK" root=/dev/root rootfstype=hostfs rootflags=/ rw init="$WORK/init.sh" \
  ubd0="$WORK/ubd.img" con=null con0=fd:0,fd:1 </dev/null >"$WORK/console.log" 2>&1 || rc=$?
end=$(date +%s.%N)
if [[ ! -f $WORK/out/booted ]]; then
  tail -30 "$WORK/console.log" >&2
  cannot "the user-mode kernel did not reach its init script (exit $rc; console above, in $WORK/console.log)"
fi

failed=0 passed=0 skipped=0 ran=0
for p in "${pkgs[@]}"; do
  b=$(basename "$p")
  log=$WORK/out/$b.log
  mod=$(go list "./$p")
  if [[ ! -f $WORK/out/$b.rc ]]; then
    [[ -f $log ]] && cat "$log"
    echo "FAIL	$mod	(cgroup v2: the kernel stopped before the test binary ended; console in $WORK/console.log)"
    failed=$((failed + 1))
    continue
  fi
  cat "$log"
  if [[ $(cat "$WORK/out/$b.rc") == 0 ]]; then
    echo "ok  	$mod	(cgroup v2, user-mode-linux)"
  else
    echo "FAIL	$mod	(cgroup v2, user-mode-linux)"
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
