#!/usr/bin/env bash
# tool.sh installs a pinned Go tool into the per-user cache (once) and prints the path of its binary. Tools that the
# module can carry itself (controller-gen) are `go tool` entries in go.mod instead; this is for those whose
# dependencies must not mix with Gleaner's.
#
# Usage: hack/tool.sh golangci-lint|helm|helm3|prometheus|promtool
#
# prometheus and promtool are Prometheus 3.16.0 (its Go module numbers 3.x releases v0.3xx.y), built from the module
# proxy without the web UI's assets and with no service discovery but Kubernetes' (Prometheus's own build tags
# remove_all_sd and enable_kubernetes_sd; static targets are built in): the e2e suite runs the server against the
# local cluster, the unit suite runs `promtool check rules` and `check config` on docs/operations.md's scrape
# configuration, which discovers pods. Leaving out the cloud providers' SDKs roughly halves the first build (measured
# in docs/benchmarks.md). `go install pkg@version` accepts all of these: their go.mod files have no replace or
# exclude directive.
set -euo pipefail

CACHE=${GLEANER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner}

prometheus_tags=remove_all_sd,enable_kubernetes_sd
tags=
case ${1:-} in
  golangci-lint) pkg=github.com/golangci/golangci-lint/v2/cmd/golangci-lint version=v2.15.0 took="about 6 minutes" ;;
  # The chart's tests (test/manifests) render charts/gleaner with it; the local cluster can install from it.
  helm) pkg=helm.sh/helm/v4/cmd/helm version=v4.3.1 took="about 2.5 minutes" ;;
  # Helm 3, which most clusters' operators still run: test/manifests renders and lints the chart with both.
  helm3) pkg=helm.sh/helm/v3/cmd/helm version=v3.22.0 took="about 2.5 minutes" ;;
  prometheus) pkg=github.com/prometheus/prometheus/cmd/prometheus version=v0.316.0 tags=$prometheus_tags took="several minutes" ;;
  promtool) pkg=github.com/prometheus/prometheus/cmd/promtool version=v0.316.0 tags=$prometheus_tags took="about 1 minute after prometheus" ;;
  *) echo "usage: hack/tool.sh golangci-lint|helm|helm3|prometheus|promtool" >&2; exit 2 ;;
esac

# The build tags are part of the cache key: a binary built with others is another build.
dir=$CACHE/tools/$1-$version${tags:+-${tags//,/-}}
bin=$dir/${pkg##*/}
if [[ ! -x $bin ]]; then
  # Two test runs started together wait for one build instead of both compiling it.
  mkdir -p "$CACHE/tools"
  exec 9>"$CACHE/tools/.$1.lock"
  flock 9
fi
if [[ ! -x $bin ]]; then
  echo "tool: building $1 $version into $dir (once; $took on 2 cores, instant afterwards)" >&2
  mkdir -p "$dir"
  (cd /tmp && GOBIN=$dir GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" ${tags:+-tags "$tags"} "$pkg@$version" >&2)
fi
echo "$bin"
