#!/usr/bin/env bash
# run.sh is `make run-bare`: it starts a bare control plane (kube-apiserver and etcd built by hack/kube-build.sh, with
# Gleaner's CRDs) and runs gleaner-manager against it in the foreground. Ctrl-C stops both and removes what they
# wrote: etcd's data and, unless GLEANER_RUN_DIR names a directory to keep, the run's directory with its logs.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=${GLEANER_RUN_DIR:+yes}
state=${GLEANER_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/gleaner-run.XXXXXX")}
mkdir -p "$state"
assets=$(hack/kube-build.sh envtest)
go build -o "$state/bin/" ./cmd/gleaner-manager ./hack/devapi

rm -f "$state/kubeconfig"
# A Ctrl-C reaches every process of the terminal's foreground group at once, devapi too: it must keep the control
# plane up until gleaner-manager has stopped (released its lease, flushed its events), so it ignores the interrupt
# and stops at cleanup's TERM, which comes after the manager has exited.
"$state/bin/devapi" --interrupt-stops=false --assets "$assets" --kubeconfig "$state/kubeconfig" >"$state/devapi.log" 2>&1 &
devapi=$!
# devapi stops kube-apiserver and etcd (each in its own process group, so Ctrl-C reaches neither) and removes etcd's
# data; it holds off further signals until that is done, so the TERM here cannot cut it short.
cleanup() {
  kill "$devapi" 2>/dev/null || true
  wait "$devapi" 2>/dev/null || true
  if [[ $keep ]]; then
    echo "run: stopped; logs in $state"
  else
    rm -rf "$state"
    echo "run: stopped; nothing left behind (GLEANER_RUN_DIR=dir keeps the logs there)"
  fi
}
trap cleanup EXIT

for _ in $(seq 1 300); do
  [[ -s $state/kubeconfig ]] && break
  kill -0 "$devapi" 2>/dev/null || { cat "$state/devapi.log" >&2; exit 1; }
  sleep 0.2
done
[[ -s $state/kubeconfig ]] || { echo "run: the control plane did not come up:" >&2; cat "$state/devapi.log" >&2; exit 1; }

echo "run: control plane up; kubectl --kubeconfig $state/kubeconfig get nodeallocations,nodeslos,nodemetrics"
echo "run: gleaner-manager health: curl localhost:8081/healthz   metrics: curl localhost:8080/metrics"
"$state/bin/gleaner-manager" --kubeconfig "$state/kubeconfig" "$@"
