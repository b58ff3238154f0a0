#!/usr/bin/env bash
# kube-build.sh builds the Kubernetes and etcd binaries Gleaner's tests and local cluster run, from the Go module
# proxy, into a per-user cache outside the work tree. Nothing here can be downloaded as a release binary, so each
# component is compiled once from its Go module and kept, keyed by version; a second run finds it and returns at once.
#
# Usage:
#   hack/kube-build.sh envtest            # kube-apiserver, kubectl, etcd; prints the KUBEBUILDER_ASSETS directory
#   hack/kube-build.sh bin NAME...        # any of: kube-apiserver kubectl kubelet kube-scheduler
#                                         #         kube-controller-manager etcd containerd; prints the directory
#                                         #         of each (containerd also builds containerd-shim-runc-v2 and ctr)
#
# Environment:
#   GLEANER_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gleaner)
#   KUBE_VERSION    Kubernetes version (default v1.36.3, the line Gleaner's client libraries follow)
#   ETCD_VERSION    etcd version (default v3.6.8, the one k8s.io/kubernetes v1.36.3 itself requires)
#   CONTAINERD_VERSION  containerd version (default v2.4.2: NRI is on by default from v2; Debian's 1.6 has none)
#
# Only the asked-for directory goes to stdout; progress goes to stderr, so `$(hack/kube-build.sh envtest)` works.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
CACHE=${GLEANER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner}
KUBE_BIN=$CACHE/kubernetes/$KUBE_VERSION/bin
ETCD_BIN=$CACHE/etcd/$ETCD_VERSION/bin
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CONTAINERD_BIN=$CACHE/containerd/$CONTAINERD_VERSION/bin
# The containerd commands the local cluster runs: the daemon, the runc shim it starts per pod, and its CLI.
CONTAINERD_COMMANDS=(containerd containerd-shim-runc-v2 ctr)

# The Kubernetes commands a throwaway module can build; each must be imported by its tools file so go.sum covers it.
KUBE_COMMANDS=(kube-apiserver kubectl kubelet kube-scheduler kube-controller-manager)

log() { printf 'kube-build: %s\n' "$*" >&2; }

# Staging minor version: v1.36.3 -> v0.36.3.
staging_version() { echo "v0.${KUBE_VERSION#v1.}"; }

# write_tools DIR PREFIX COMMAND... writes DIR/tools.go importing PREFIX/COMMAND for each command, so that go mod
# tidy records everything they import, and tidies the module.
write_tools() {
  local dir=$1 prefix=$2 c
  shift 2
  {
    echo "//go:build tools"
    echo
    echo "// Package tools pins the commands this module builds so that go mod tidy records their imports."
    echo "package tools"
    echo
    echo "import ("
    for c in "$@"; do echo "	_ \"$prefix/$c\""; done
    echo ")"
  } >"$dir/tools.go"
  (cd "$dir" && go mod tidy >&2)
}

# kube_module prepares (once) a module that requires k8s.io/kubernetes and pins every staging module it replaces
# with a local path in its own go.mod to the published v0.x version of the same release.
kube_module() {
  local dir=$CACHE/src/kubernetes-$KUBE_VERSION
  if [[ -f $dir/.ready ]]; then echo "$dir"; return; fi
  log "preparing build module for k8s.io/kubernetes $KUBE_VERSION in $dir"
  rm -rf "$dir" && mkdir -p "$dir"
  local upstream staging
  upstream=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$upstream")
  {
    echo "module gleaner.local/kube-build"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $(staging_version)"; done
    echo ")"
  } >"$dir/go.mod"
  write_tools "$dir" k8s.io/kubernetes/cmd "${KUBE_COMMANDS[@]}"
  touch "$dir/.ready"
  echo "$dir"
}

# build_kube builds the named Kubernetes commands that are not in the cache yet, in one go build so they share work.
build_kube() {
  local missing=() c
  for c in "$@"; do [[ -x $KUBE_BIN/$c ]] || missing+=("$c"); done
  ((${#missing[@]})) || return 0
  local dir pkgs=() v=$KUBE_VERSION minor
  dir=$(kube_module)
  minor=${v#v1.}; minor=${minor%%.*}
  # -s -w: no symbol table or DWARF, which nothing here reads; linking without them is the cheaper part of a build.
  local ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  log "building ${missing[*]} $KUBE_VERSION into $CACHE (once: 10-20 minutes on a cold Go build cache and 2 cores, instant afterwards)"
  mkdir -p "$KUBE_BIN"
  local tmp
  tmp=$(mktemp -d "$KUBE_BIN/.build.XXXXXX")
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  for c in "${missing[@]}"; do mv -f "$tmp/$c" "$KUBE_BIN/$c"; done
  rmdir "$tmp"
}

build_etcd() {
  [[ -x $ETCD_BIN/etcd ]] && return 0
  local dir=$CACHE/src/etcd-$ETCD_VERSION
  log "building etcd $ETCD_VERSION into $CACHE (once)"
  rm -rf "$dir" && mkdir -p "$dir" "$ETCD_BIN"
  cat >"$dir/go.mod" <<MOD
module gleaner.local/etcd-build

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat >"$dir/main.go" <<'GO'
// Command etcd is the etcd server, built from its Go module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$dir" && go mod tidy >&2 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ETCD_BIN/etcd.tmp" . && mv -f "$ETCD_BIN/etcd.tmp" "$ETCD_BIN/etcd")
}

# build_containerd builds containerd, its runc shim and ctr from a throwaway module whose tools file imports the three
# commands. CGO is off and the snapshotters that need C libraries are left out by their build tags; the overlayfs
# snapshotter the local cluster uses is pure Go.
build_containerd() {
  local c missing=()
  for c in "${CONTAINERD_COMMANDS[@]}"; do [[ -x $CONTAINERD_BIN/$c ]] || missing+=("$c"); done
  ((${#missing[@]})) || return 0
  local dir=$CACHE/src/containerd-$CONTAINERD_VERSION pkgs=()
  log "building containerd $CONTAINERD_VERSION into $CACHE (once: a few minutes on a cold Go build cache)"
  if [[ ! -f $dir/.ready ]]; then
    rm -rf "$dir" && mkdir -p "$dir"
    cat >"$dir/go.mod" <<MOD
module gleaner.local/containerd-build

go 1.26

require github.com/containerd/containerd/v2 $CONTAINERD_VERSION
MOD
    write_tools "$dir" github.com/containerd/containerd/v2/cmd "${CONTAINERD_COMMANDS[@]}"
    touch "$dir/.ready"
  fi
  for c in "${missing[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$c"); done
  mkdir -p "$CONTAINERD_BIN"
  local tmp
  tmp=$(mktemp -d "$CONTAINERD_BIN/.build.XXXXXX")
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" -o "$tmp/" "${pkgs[@]}")
  for c in "${missing[@]}"; do mv -f "$tmp/$c" "$CONTAINERD_BIN/$c"; done
  rmdir "$tmp"
}

# with_lock serialises builds: two test runs started together must not both compile kube-apiserver.
with_lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.build.lock"
  flock 9
  "$@"
}

# built reports whether every named component is already in the cache, so a warm run never waits on the lock.
built() {
  local c b
  for c in "$@"; do
    case $c in
      etcd) [[ -x $ETCD_BIN/etcd ]] || return 1 ;;
      containerd) for b in "${CONTAINERD_COMMANDS[@]}"; do [[ -x $CONTAINERD_BIN/$b ]] || return 1; done ;;
      *) [[ -x $KUBE_BIN/$c ]] || return 1 ;;
    esac
  done
}

envtest() {
  local assets=$CACHE/envtest/$KUBE_VERSION-etcd-$ETCD_VERSION
  if ! built etcd kube-apiserver kubectl || [[ ! -e $assets/kubectl ]]; then
    with_lock build_etcd
    with_lock build_kube kube-apiserver kubectl
    mkdir -p "$assets"
    ln -sfn "$KUBE_BIN/kube-apiserver" "$assets/kube-apiserver"
    ln -sfn "$KUBE_BIN/kubectl" "$assets/kubectl"
    ln -sfn "$ETCD_BIN/etcd" "$assets/etcd"
  fi
  echo "$assets"
}

bins() {
  local c kube=() dirs=()
  for c in "$@"; do
    case $c in
      etcd) dirs+=("$ETCD_BIN") ;;
      containerd) dirs+=("$CONTAINERD_BIN") ;;
      kube-apiserver|kubectl|kubelet|kube-scheduler|kube-controller-manager) kube+=("$c"); dirs+=("$KUBE_BIN") ;;
      *) echo "kube-build: unknown component $c" >&2; exit 2 ;;
    esac
  done
  if ! built "$@"; then
    [[ " $* " == *" etcd "* ]] && with_lock build_etcd
    [[ " $* " == *" containerd "* ]] && with_lock build_containerd
    ((${#kube[@]})) && with_lock build_kube "${kube[@]}"
  fi
  printf '%s\n' "${dirs[@]}" | sort -u
}

case ${1:-} in
  envtest) envtest ;;
  bin) shift; bins "$@" ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
