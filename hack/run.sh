#!/usr/bin/env bash
# run.sh is `make run-bare`: it starts a bare control plane (kube-apiserver and etcd built by hack/kube-build.sh, with
# Gleaner's CRDs) and runs gleaner-manager against it in the foreground. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

state=${GLEANER_RUN_DIR:-$(mktemp -d /tmp/gleaner-run.XXXXXX)}
mkdir -p "$state"
assets=$(hack/kube-build.sh envtest)
go build -o "$state/bin/" ./cmd/gleaner-manager ./hack/devapi

rm -f "$state/kubeconfig"
"$state/bin/devapi" --assets "$assets" --kubeconfig "$state/kubeconfig" >"$state/devapi.log" 2>&1 &
devapi=$!
cleanup() {
  kill "$devapi" 2>/dev/null || true
  wait "$devapi" 2>/dev/null || true
  echo "run: stopped; logs in $state"
}
trap cleanup EXIT

for _ in $(seq 1 300); do
  [[ -s $state/kubeconfig ]] && break
  kill -0 "$devapi" 2>/dev/null || { cat "$state/devapi.log" >&2; exit 1; }
  sleep 0.2
done
[[ -s $state/kubeconfig ]] || { echo "run: the control plane did not come up; see $state/devapi.log" >&2; exit 1; }

echo "run: control plane up; kubectl --kubeconfig $state/kubeconfig get nodeallocations,nodeslos,nodemetrics"
echo "run: gleaner-manager health: curl localhost:8081/healthz   metrics: curl localhost:8080/metrics"
"$state/bin/gleaner-manager" --kubeconfig "$state/kubeconfig" "$@"
