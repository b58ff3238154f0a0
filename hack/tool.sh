#!/usr/bin/env bash
# tool.sh installs a pinned Go tool into the per-user cache (once) and prints the path of its binary. Tools that the
# module can carry itself (controller-gen) are `go tool` entries in go.mod instead; this is for those whose
# dependencies must not mix with Gleaner's.
#
# Usage: hack/tool.sh golangci-lint|helm|prometheus|promtool
#
# prometheus and promtool are Prometheus 3.16.0 (its Go module numbers 3.x releases v0.3xx.y), built from the module
# proxy without the web UI's assets: the e2e suite runs the server against the local cluster and the unit suite runs
# `promtool check rules` (config/monitoring). Measured first builds on a busy 2-core machine: prometheus 12 min 3 s
# (module downloads included), then promtool 49 s from the warm build cache they share (alone, about as long as
# prometheus). `go install pkg@version` accepts all of these: their go.mod files have no replace or exclude directive.
set -euo pipefail

CACHE=${GLEANER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner}

case ${1:-} in
  golangci-lint) pkg=github.com/golangci/golangci-lint/v2/cmd/golangci-lint version=v2.15.0 took="about 6 minutes" ;;
  # The chart's tests (test/manifests) render charts/gleaner with it; the local cluster can install from it.
  helm) pkg=helm.sh/helm/v4/cmd/helm version=v4.3.1 took="about 2.5 minutes" ;;
  prometheus) pkg=github.com/prometheus/prometheus/cmd/prometheus version=v0.316.0 took="about 12 minutes" ;;
  promtool) pkg=github.com/prometheus/prometheus/cmd/promtool version=v0.316.0 took="about 10 minutes, 1 after prometheus" ;;
  *) echo "usage: hack/tool.sh golangci-lint|helm|prometheus|promtool" >&2; exit 2 ;;
esac

dir=$CACHE/tools/$1-$version
if [[ ! -x $dir/$1 ]]; then
  echo "tool: building $1 $version into $dir (once; $took on 2 cores, instant afterwards)" >&2
  mkdir -p "$dir"
  (cd /tmp && GOBIN=$dir GOFLAGS=-mod=mod go install "$pkg@$version" >&2)
fi
echo "$dir/$1"
