#!/usr/bin/env bash
# cgroupv2-node.sh runs the local cluster (internal/localcluster: etcd, kube-apiserver, the controller manager, the
# scheduler, containerd and kubelet v1.36.3 with its default failCgroupV1: true) and the QoS subset of the e2e suite
# on a cgroup v2 kernel: Debian's own kernel (package linux-image-amd64) in a QEMU virtual machine with two CPUs,
# this machine's root file system as its root (9p), and a cgroup2 hierarchy with every controller (cpuset and PSI
# included). The host's cgroup hierarchies are not touched; what the cluster writes goes to the machine's own tmpfs.
#
# This machine has /dev/kvm, but its KVM is PVM, which runs only kernels built for it: QEMU emulates the CPUs (TCG),
# 10-20x slower than the host. The e2e test binary and gleaner-local are compiled here and run inside with -test.v;
# their output is printed as go test prints it. docs/benchmarks.md has the times.
#
# Usage: hack/cgroupv2-node.sh            (make e2e-cgroupv2)
#
# Environment:
#   GLEANER_V2_NODE_RUN  the -test.run selection (default: the QoS subset, V2_NODE_TESTS below)
#   GLEANER_V2_NODE_MEM  the machine's memory (default 8G: the stall test wants 4 GiB free above what the node uses)
#   GLEANER_V2_NODE_WORK the work directory, under the tree so the machine sees it (default bin/cgroupv2-node)
#   GLEANER_V2_NODE_CMD  a shell command to run inside instead of the tests (a look at the machine; its output is in
#                        the work directory's out/cmd.log)
#   GLEANER_V2_NODE_DISK a raw disk image to attach (/dev/vda inside), for tests that need a block device
#   GLEANER_QEMU         the emulator's command (default qemu-system-x86_64, from the package qemu-system-x86)
#   GLEANER_CACHE        the cache root, where the kernel and the initramfs are kept (default ~/.cache/gleaner)
#   CI                   under CI=true, what cannot run fails naming what is missing; elsewhere it is skipped
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
MEM=${GLEANER_V2_NODE_MEM:-8G}
WORK=${GLEANER_V2_NODE_WORK:-$REPO/bin/cgroupv2-node}
QEMU=${GLEANER_QEMU:-qemu-system-x86_64}
CACHE=${GLEANER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner}/vmkernel

# The QoS subset of the e2e suite, each test reading the node's cgroups through either version: the node itself,
# the pods' cgroups as the kubelet writes them, CPU suppression, eviction with a PodDisruptionBudget, the runtime
# hook's values at container start and from its reconciler, CPU idle and block I/O caps from the ConfigMap, CPU
# burst, and the OOM order under a real OOM.
V2_NODE_TESTS=(
  TestNodeIsReady
  TestPodCgroupsFollowRequestsAndLimits
  TestCPUSuppressFollowsTheService
  TestMemoryEvictionSparesPodsUnderABudget
  TestRuntimeHookSetsBatchLimitsAtCreation
  TestRuntimeHookReconcilerFixesPodsStartedWithoutTheAgent
  TestBestEffortCgroupsFollowTheConfigMap
  TestCPUBurstFollowsTheConfigMap
  TestOOMKillsBatchBeforeTheService
)
RUN=${GLEANER_V2_NODE_RUN:-^($(IFS='|'; echo "${V2_NODE_TESTS[*]}"))\$}

# cannot says why the tests cannot run: a failure under CI=true, a skip elsewhere.
cannot() {
  if [[ "${CI:-}" == true ]]; then
    printf 'cgroupv2-node: FAIL: CI=true and the cgroup v2 node cannot run: %s\n' "$*" >&2
    exit 1
  fi
  printf 'cgroupv2-node: skipped: %s (under CI=true this fails)\n' "$*"
  exit 0
}

rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/out"
for tool in "$QEMU" busybox cpio depmod dpkg-deb; do
  command -v "$tool" >/dev/null || cannot "$tool is missing (make e2e-cgroupv2 installs qemu-system-x86, busybox-static, cpio and kmod)"
done

# The kernel: Debian's, the version linux-image-amd64 names today, unpacked into the cache once (its modules with
# their index, for the machine's modprobe). A cached one serves when the archive cannot be reached.
kernel_dir() {
  local pkg dir deb
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [[ -n $pkg && -f $CACHE/$pkg/vmlinuz ]]; then
    echo "$CACHE/$pkg"
    return
  fi
  if [[ -n $pkg ]]; then
    echo "cgroupv2-node: unpacking Debian's $pkg into $CACHE (once)" >&2
    dir=$CACHE/$pkg
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    if (cd "$dir.tmp" && apt-get download "$pkg" >download.log 2>&1); then
      deb=$(ls "$dir.tmp"/*.deb)
      dpkg-deb -x "$deb" "$dir.tmp/root"
      local ver
      ver=$(ls "$dir.tmp/root/lib/modules")
      depmod -b "$dir.tmp/root" "$ver"
      mv "$dir.tmp/root/boot/vmlinuz-$ver" "$dir.tmp/vmlinuz"
      echo "$ver" >"$dir.tmp/release"
      rm -f "$deb"
      rm -rf "$dir" && mv "$dir.tmp" "$dir"
      # Debian replaces the kernel with each security update: only the newest is kept.
      find "$CACHE" -mindepth 1 -maxdepth 1 -name 'linux-image-*' ! -name "$pkg" -exec rm -rf {} +
      echo "$dir"
      return
    fi
    echo "cgroupv2-node: apt-get download $pkg failed ($(tail -1 "$dir.tmp/download.log")); looking for a cached kernel" >&2
  fi
  dir=$(ls -d "$CACHE"/linux-image-*/ 2>/dev/null | tail -1)
  [[ -n $dir && -f $dir/vmlinuz ]] || return 1
  echo "${dir%/}"
}
# A fresh machine may have no package lists, or lists older than the archive (a download then fails with 404).
if ! KDIR=$(kernel_dir); then
  echo "cgroupv2-node: no kernel yet; running apt-get update once and trying again" >&2
  apt-get update >"$WORK/apt-update.log" 2>&1 || true
  KDIR=$(kernel_dir) || cannot "no kernel: Debian's linux-image-amd64 could not be downloaded and none is cached in $CACHE"
fi
KVER=$(cat "$KDIR/release")
MODS=$KDIR/root/lib/modules/$KVER

# The initramfs: busybox and the modules that mount the host's root over virtio 9p, then the init script below.
if [[ ! -f $KDIR/initrd.gz || $0 -nt $KDIR/initrd.gz ]]; then
  ird=$(mktemp -d)
  mkdir -p "$ird"/{bin,dev,proc,newroot,modules}
  cp "$(command -v busybox)" "$ird/bin/busybox"
  for m in virtio_pci 9p 9pnet_virtio; do modprobe -d "$KDIR/root" -S "$KVER" --show-depends "$m"; done |
    awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
    cp "$ko" "$ird/modules/" && basename "$ko" >>"$ird/modules/order"
  done
  cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /modules/order); do /bin/busybox insmod /modules/$m || echo "initramfs: insmod $m failed"; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /newroot ||
  { echo "initramfs: mounting the host's root failed"; /bin/busybox poweroff -f; }
init=$(/bin/busybox sed -n 's/.*gleaner.init=\([^ ]*\).*/\1/p' /proc/cmdline)
/bin/busybox umount /proc
/bin/busybox mount --move /dev /newroot/dev
exec /bin/busybox switch_root /newroot "$init"
EOF
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$KDIR/initrd.gz.tmp") && mv "$KDIR/initrd.gz.tmp" "$KDIR/initrd.gz"
  rm -rf "$ird"
fi

# Compiling inside, on emulated CPUs, would take most of the run: the suite and the cluster's images are built here.
if [[ -z ${GLEANER_V2_NODE_CMD:-} ]]; then
  echo "cgroupv2-node: compiling the e2e suite (go test -c) and building the cluster's images"
  go test -c -o "$WORK/bin/e2e.test" ./test/e2e
  go build -o "$WORK/bin/" ./hack/gleaner-local
  # The cluster's binaries too (the list internal/localcluster asks for): the machine has no network (GOPROXY=off),
  # so on a machine whose cache lacks them (no host e2e run before) a build inside failed at the first module.
  hack/kube-build.sh bin etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl containerd >/dev/null
  # A state directory of its own, short (containerd's socket paths under it must fit 107 bytes, whatever the tree's
  # path); the tarball then moves into the tree, where the machine sees it.
  images_state=$(mktemp -d /tmp/gleaner-images.XXXXXX)
  built=$("$WORK/bin/gleaner-local" --state-dir "$images_state" build-images)
  IMAGES=$WORK/images.tar
  mv "$built" "$IMAGES"
  rm -rf "$images_state"
fi

# The machine's init: PID 1 inside. Everything the cluster writes outside the tree goes to the machine's tmpfs, so
# nothing of it reaches the host through 9p; the kernel's modules (bridge, veth, netfilter for the pods' network) come
# from the cache. A dummy interface gives the kubelet a default route, with no way off the machine: it has no NIC.
STATE=/var/lib/gleaner-e2e
{
  echo '#!/bin/sh'
  # HOME is the machine's own (tmpfs): the host's home reaches it through 9p, where the suite's look at what it
  # holds (TakeSnapshot's homeEntries, a walk of every file outside the build caches) took 100 s on emulated CPUs.
  # What go read from the host's home (its env file's GOTOOLCHAIN, git's safe.directory) is set below instead.
  echo 'export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/home TMPDIR=/tmp'
  printf 'export CI=%q GLEANER_E2E=1 GLEANER_E2E_STATE=%q GLEANER_E2E_IMAGES=%q GLEANER_CACHE=%q GOCACHE=%q GOMODCACHE=%q GOFLAGS="-mod=readonly -buildvcs=false" GOPROXY=off GOTOOLCHAIN=local\n' \
    "${CI:-}" "$STATE" "${IMAGES:-}" "$(dirname "$CACHE")" "$(go env GOCACHE)" "$(go env GOMODCACHE)"
  echo 'say() { echo "cgroupv2-node: $*" > /dev/ttyS0; }'
  echo 'mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&'
  echo '  mount -t tmpfs run /run && mkdir /run/home || { say "could not mount proc, sys, cgroup2 or /run"; poweroff -f; }'
  # What the machine reads from the host under /tmp (a CI clone, or a home there and with it the caches: the tree,
  # the kernel's modules, Go's caches) would be hidden by the machine's own /tmp: each is bound again at its path.
  under_tmp=()
  for d in "$REPO" "$(dirname "$CACHE")" "$(go env GOCACHE)" "$(go env GOMODCACHE)"; do
    [[ $d == /tmp/* ]] && under_tmp+=("$d")
  done
  if ((${#under_tmp[@]})); then
    echo 'mkdir -p /run/host-tmp && mount --bind /tmp /run/host-tmp'
  fi
  echo 'mount -t tmpfs tmp /tmp || { say "could not mount /tmp"; poweroff -f; }'
  for d in "${under_tmp[@]}"; do
    printf 'mkdir -p %q && mount --bind %q %q || { say "could not bind the host'"'"'s %s"; poweroff -f; }\n' \
      "$d" "/run/host-tmp/${d#/tmp/}" "$d" "$d"
  done
  echo 'mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm'
  echo 'mount -t debugfs none /sys/kernel/debug 2>/dev/null; mount -t tracefs none /sys/kernel/tracing 2>/dev/null'
  for d in "$STATE" /var/lib/kubelet /var/log /var/lib/cni /etc/cni /opt/containerd /usr/libexec/kubernetes \
    /var/lib/gleaner-agent /var/lib/gleaner-local /root/.kube /lib/modules; do
    printf 'mkdir -p %q 2>/dev/null; mount -t tmpfs tmpfs %q\n' "$d" "$d"
  done
  printf 'mkdir -p /lib/modules/%q && mount --bind %q /lib/modules/%q\n' "$KVER" "$MODS" "$KVER"
  echo 'echo 1 > /proc/sys/kernel/sysrq'
  echo 'hostname localhost; ip link set lo up'
  echo 'modprobe dummy && ip link add eth0 type dummy && ip addr add 192.0.2.2/24 dev eth0 && ip link set eth0 up && ip route add default via 192.0.2.1'
  echo 'for m in virtio_blk loop overlay bridge veth br_netfilter nf_conntrack iptable_nat iptable_filter xt_MASQUERADE xt_comment xt_mark; do modprobe $m; done'
  echo "date +%s.%N > $WORK/out/booted"
  echo 'say "booted: $(uname -r), cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers), $(nproc) CPUs"'
  if [[ -n ${GLEANER_V2_NODE_CMD:-} ]]; then
    printf '(%s) > %q 2>&1\n' "$GLEANER_V2_NODE_CMD" "$WORK/out/cmd.log"
  else
    printf 'cd %q && %q -test.v -test.timeout 60m -test.run %q > %q 2>&1; echo $? > %q\n' \
      "$REPO/test/e2e" "$WORK/bin/e2e.test" "$RUN" "$WORK/out/e2e.log" "$WORK/out/e2e.rc"
  fi
  echo 'sync; echo o > /proc/sysrq-trigger; sleep 10; poweroff -f'
} >"$WORK/init.sh"
chmod +x "$WORK/init.sh"

echo "cgroupv2-node: booting Debian's kernel $KVER in QEMU (emulated CPUs, 2 of them, $MEM) and running the e2e subset inside"
start=$(date +%s.%N)
rc=0
disk=()
[[ -n ${GLEANER_V2_NODE_DISK:-} ]] && disk=(-drive "if=virtio,format=raw,file=$GLEANER_V2_NODE_DISK")
timeout 75m "$QEMU" -accel tcg,thread=multi -cpu max -smp 2 -m "$MEM" -nographic -no-reboot -nic none "${disk[@]}" \
  -kernel "$KDIR/vmlinuz" -initrd "$KDIR/initrd.gz" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,id=hostroot \
  -append "console=ttyS0 quiet panic=-1 gleaner.init=$WORK/init.sh" </dev/null >"$WORK/console.log" 2>&1 || rc=$?
end=$(date +%s.%N)
grep '^cgroupv2-node:' "$WORK/console.log" || true
if [[ ! -f $WORK/out/booted ]]; then
  tail -30 "$WORK/console.log" >&2
  cannot "the machine did not reach its init script (exit $rc; console above, in $WORK/console.log)"
fi
boot=$(awk -v a="$start" -v b="$(cat "$WORK/out/booted")" 'BEGIN { printf "%.1f", b - a }')
total=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
if [[ -n ${GLEANER_V2_NODE_CMD:-} ]]; then
  cat "$WORK/out/cmd.log"
  echo "cgroupv2-node: the command ran; the machine booted in ${boot}s and stopped after ${total}s"
  exit 0
fi
log=$WORK/out/e2e.log
[[ -f $log ]] && cat "$log"
mod=$(go list ./test/e2e)
passed=$(grep -c '^--- PASS' "$log" 2>/dev/null || true)
failed=$(grep -c '^--- FAIL' "$log" 2>/dev/null || true)
skipped=$(grep -c '^--- SKIP' "$log" 2>/dev/null || true)
echo "cgroupv2-node: $((passed + failed)) e2e tests ran on a cgroup v2 node ($passed passed, $failed failed, $skipped skipped) in ${total}s; the machine booted in ${boot}s"
if [[ ! -f $WORK/out/e2e.rc ]]; then
  echo "FAIL	$mod	(cgroup v2 node: the machine stopped before the test binary ended; console in $WORK/console.log)"
  exit 1
fi
if [[ $(cat "$WORK/out/e2e.rc") != 0 ]]; then
  echo "FAIL	$mod	(cgroup v2 node, Debian $KVER)"
  exit 1
fi
if [[ $skipped -gt 0 && "${CI:-}" == true ]]; then
  echo "cgroupv2-node: FAIL: CI=true and $skipped tests skipped on the cgroup v2 node" >&2
  exit 1
fi
echo "ok  	$mod	(cgroup v2 node, Debian $KVER)"
