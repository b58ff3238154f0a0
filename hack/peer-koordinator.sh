#!/usr/bin/env bash
# peer-koordinator.sh builds the peer the colocation benchmark measures Gleaner against: Koordinator's
# koordlet and koord-manager, from the Go module github.com/koordinator-sh/koordinator at a pinned version through the
# Go module proxy, into the per-user cache outside the work tree, the way hack/kube-build.sh builds Kubernetes. No
# Koordinator code or binary is ever part of this repository; a second run finds the binaries and returns at once.
#
# Usage:
#   hack/peer-koordinator.sh      # prints the directory that holds koordlet and koord-manager
#
# Environment:
#   GLEANER_CACHE          cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gleaner)
#   KOORDINATOR_VERSION    Koordinator version (default v1.8.0, the tag of 2026-04-16;
#                          name an exact version: the proxy refuses to list them)
#
# koordlet needs cgo and libpfm (pkg/koordlet/util/perf_group links -lpfm): Debian's libpfm4-dev, checked below.
# Only the directory goes to stdout; progress goes to stderr, so `$(hack/peer-koordinator.sh)` works.
#
# For the benchmark's peer arm: the settings it needs, as v1.8.0 spells them (from the built binaries' --help,
# with and without agent_mode=hostMode, and the module's source).
#
# koordlet (Go's flag package: -name=value or --name=value; a boolean off as --name=false):
#   agent_mode=hostMode   ENVIRONMENT variable, not a flag (pkg/koordlet/util/system/config.go); without it koordlet
#                         is in dsMode and reads /host-cgroup/, /host-sys/, /host-var-run/ ...
#   NODE_NAME=<node>      environment variable: the node koordlet serves (pkg/koordlet/koordlet.go)
#   --kubeconfig=PATH     (controller-runtime's; else in-cluster config)
#   --kubelet-preferred-address-type=Hostname   (default "InternalIP")
#   HTTPS by default: the port is the Node's status.daemonEndpoints.kubeletEndpoint, the credentials --kubeconfig's,
#   the kubelet's certificate unchecked; --kubelet-insecure-tls switches to HTTP on --kubelet-read-only-port (10255).
#   --disable-query-kubelet-config, --kubelet-sync-interval (10s), --kubelet-sync-timeout (3s)
#   Paths that do not follow hostMode (their defaults are the DaemonSet's mounts), set them:
#   --runtime-hooks-addr=PATH           runtime hooks' socket (default "/host-var-run-koordlet/koordlet.sock";
#                                       --runtime-hooks-network=unix)
#   --tsdb-path=DIR                     metric cache (default "/metric-data/")
#   --prediction-checkpoint-filepath=DIR  checkpoints (default "/prediction-checkpoints")
#   --audit-log-dir=DIR                 (default "/var/log/koordlet"; only with the AuditEvents gate)
#   --runtime-hooks-config-path=DIR     runtime-hooks config dir: this one DOES follow hostMode in v1.8.0
#                                       ("/etc/runtime/hookserver.d"; dsMode "/host-etc-hookserver/"), set it anyway
#                                       to keep the node's /etc clean
#   --runtime-hooks-host-endpoint (default "/var/run/koordlet/koordlet.sock", for koord-runtime-proxy, unused here)
#   NRI: --enable-nri-runtime-hook (default true), --runtime-hooks-nri-socket-path (default "nri/nri.sock", under
#   --var-run-root-dir, hostMode "/var/run/"), --runtime-hooks-nri-plugin-name (koordlet_nri),
#   --runtime-hooks-nri-plugin-index (00), --runtime-hooks-nri-connect-timeout (6s)
#   hostMode defaults: --cgroup-root-dir=/sys/fs/cgroup/ --sys-root-dir=/sys/ --proc-root-dir=/proc/
#   --var-run-root-dir=/var/run/ --run-root-dir=/run/ --var-lib-kubelet-dir=/var/lib/kubelet/
#   --addr=:9316 (server), --pprof-addr=:9317 (only with --enable-pprof)
#   --feature-gates=BECPUSuppress=true (BETA, default on), BEMemoryEvict, BECPUEvict, CPUEvict, MemoryEvict,
#   CgroupReconcile (ALPHA, default off); --only-evict-by-api (boolean, default false);
#   --cpu-suppress-interval-seconds (1), --reconcile-interval-seconds (1)
#
# koord-manager (pflag: --name=value):
#   --controllers=nodemetric,nodeslo,noderesource   (default all: colocationprofile, nodemetric, noderesource,
#                                                    nodeslo, quotaprofile)
#   --feature-gates=WebhookFramework=false   webhooks off: there is no webhook flag; the WebhookFramework gate
#                                            (BETA, default true) sets up and waits for the webhook server
#   --kubeconfig=PATH  --enable-leader-election=false (default true; namespace --leader-election-namespace,
#   default "koordinator-system")  --metrics-addr (":8080")  --health-probe-addr (":8000")
#   --enable-pprof=false (default true, --pprof-addr ":8090")
#   --config-namespace (default "koordinator-system") and --slo-config-name (default "slo-controller-config"):
#   where it reads slo-controller-config
#   --noderesource-plugins (default MidResource,BatchResource,CPUNormalization,ResourceAmplification,
#   GPUDeviceResource,RDMADeviceResource)
set -euo pipefail

KOORDINATOR_VERSION=${KOORDINATOR_VERSION:-v1.8.0}
CACHE=${GLEANER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner}
KOORD_BIN=$CACHE/koordinator/$KOORDINATOR_VERSION/bin
KOORD_MODULE=github.com/koordinator-sh/koordinator
# The commands the benchmark runs: the node agent and the manager whose slo-controller publishes batch resources.
KOORD_COMMANDS=(koordlet koord-manager)
# The header libpfm4-dev installs; perf_group includes <perfmon/pfm.h> and links -lpfm (libpfm.so, also libpfm4-dev).
PFM_HEADER=/usr/include/perfmon/pfmlib.h

log() { printf 'peer-koordinator: %s\n' "$*" >&2; }

built() {
  local c
  for c in "${KOORD_COMMANDS[@]}"; do [[ -x $KOORD_BIN/$c ]] || return 1; done
}

# need_libpfm fails, saying what to install, when libpfm's header or its link library is missing: `make
# peer-koordinator` installs it first (the host-packages target peer, internal/hostpkg/packages.tsv); a direct run of
# this script only checks.
need_libpfm() {
  # gcc -print-file-name prints the path it would link, or the bare name when it finds none.
  if [[ -f $PFM_HEADER && $(gcc -print-file-name=libpfm.so) == /* ]]; then
    return 0
  fi
  log "koordlet links libpfm (cgo, -lpfm) and $PFM_HEADER or libpfm.so is missing."
  log "install Debian's libpfm4-dev (go run ./hack/host-packages peer, as root; or make peer-koordinator), then run this again."
  exit 1
}

# need_go fails when the module names a newer Go than this machine's.
need_go() {
  local want have
  want=$1 have=$(go env GOVERSION)
  have=${have#go}
  if [[ $(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1) != "$want" ]]; then
    log "$KOORD_MODULE@$KOORDINATOR_VERSION needs Go $want and this machine has $have; run with GOTOOLCHAIN=go1.27.3"
    exit 1
  fi
}

# koord_module prepares (once) a module that requires Koordinator at the pinned version with the upstream go.mod's
# replace directives copied in (a dependency's replaces do not apply to the module that requires it, and without
# them its Kubernetes libraries resolve to versions it does not build with), and a tools file importing both commands
# so go mod tidy records everything they import.
koord_module() {
  local dir=$CACHE/src/koordinator-$KOORDINATOR_VERSION
  if [[ -f $dir/.ready ]]; then echo "$dir"; return; fi
  log "preparing build module for $KOORD_MODULE $KOORDINATOR_VERSION in $dir"
  rm -rf "$dir" && mkdir -p "$dir"
  local upstream gover replaces
  upstream=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$KOORD_MODULE@$KOORDINATOR_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -f $upstream ]] || { log "go mod download gave no go.mod for $KOORD_MODULE@$KOORDINATOR_VERSION"; exit 1; }
  gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream")
  need_go "$gover"
  # Every replace, in a block or on its own line, without comments; a local-path replace could not apply here.
  replaces=$(awk '
    /^replace[[:space:]]*\($/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock { sub(/\/\/.*/, ""); if ($0 ~ /=>/) print; next }
    /^replace[[:space:]]/ { sub(/^replace[[:space:]]+/, ""); sub(/\/\/.*/, ""); print }
  ' "$upstream" | sed 's/^[[:space:]]*/	/; s/[[:space:]]*$//')
  if grep -q '=>[[:space:]]*\.' <<<"$replaces"; then
    log "$KOORD_MODULE@$KOORDINATOR_VERSION replaces a module with a local path, which a throwaway module cannot:"
    grep '=>[[:space:]]*\.' <<<"$replaces" >&2
    exit 1
  fi
  {
    echo "module gleaner.local/koordinator-build"
    echo
    echo "go $gover"
    echo
    echo "require $KOORD_MODULE $KOORDINATOR_VERSION"
    echo
    echo "replace ("
    echo "$replaces"
    echo ")"
  } >"$dir/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "// Package tools pins the commands this module builds so that go mod tidy records their imports."
    echo "package tools"
    echo
    echo "import ("
    for c in "${KOORD_COMMANDS[@]}"; do echo "	_ \"$KOORD_MODULE/cmd/$c\""; done
    echo ")"
  } >"$dir/tools.go"
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy >&2)
  touch "$dir/.ready"
  echo "$dir"
}

# build_koord builds both commands in one go build, so they share its work. Both with cgo: koordlet needs it, and
# building koord-manager without it (as upstream's image does) would compile net and everything above it a second
# time, doubling a build that is long on 2 cores; a host process linked to glibc is all the benchmark needs.
build_koord() {
  built && return 0
  need_libpfm
  local dir pkgs=() c tmp start
  dir=$(koord_module)
  for c in "${KOORD_COMMANDS[@]}"; do pkgs+=("$KOORD_MODULE/cmd/$c"); done
  log "building ${KOORD_COMMANDS[*]} $KOORDINATOR_VERSION into $KOORD_BIN (once: 15-30 minutes on a cold Go build cache and 2 cores, instant afterwards)"
  mkdir -p "$KOORD_BIN"
  tmp=$(mktemp -d "$KOORD_BIN/.build.XXXXXX")
  start=$SECONDS
  # nice: the build takes both cores for a long time and the machine runs other work beside it.
  (cd "$dir" && CGO_ENABLED=1 nice -n 19 go build -trimpath -ldflags "-s -w" -o "$tmp/" "${pkgs[@]}")
  for c in "${KOORD_COMMANDS[@]}"; do mv -f "$tmp/$c" "$KOORD_BIN/$c"; done
  rmdir "$tmp"
  log "built in $((SECONDS - start)) s"
}

# with_lock serialises two runs of this script, so that they do not both build Koordinator. It is a lock of its own,
# not hack/kube-build.sh's: the benchmark's peer arm should not wait behind a Kubernetes build, and nice keeps the two
# from slowing the rest of the machine.
with_lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.koordinator.lock"
  flock 9
  "$@"
}

case ${1:-} in
  "") built || with_lock build_koord; echo "$KOORD_BIN" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
