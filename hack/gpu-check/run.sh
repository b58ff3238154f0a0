#!/usr/bin/env bash
# run.sh is the real-GPU check of the NVML layer (docs/agent.md, "GPUs"), for a machine with NVIDIA GPUs and their
# driver: it runs the nvml-tagged tests of pkg/agent/system/gpu and pkg/agent/collector against the machine's own
# NVML while gpuhold keeps 1 GiB in use on GPU 0. The binaries are built beforehand on any Linux machine with Go and
# gcc (`make gpu-check-build`: they need no CUDA toolkit), so the GPU machine needs neither.
#
# Usage: hack/gpu-check/run.sh   (from the repository root; writes its output under $OUT, default bin/gpu-check/out)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=bin/gpu-check
out=${OUT:-$bin/out}
mkdir -p "$out"
nvidia-smi -L | tee "$out/nvidia-smi-L.txt"
nvidia-smi --query-gpu=index,name,uuid,memory.total,memory.used,utilization.gpu,mig.mode.current --format=csv | tee "$out/nvidia-smi-query.txt"
GLEANER_REAL_GPUS=$(grep -c '^GPU ' "$out/nvidia-smi-L.txt")
export GLEANER_REAL_GPUS

hold=$((1 << 30))
"$bin/gpuhold" "$hold" 120 >"$out/gpuhold.txt" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q holds "$out/gpuhold.txt" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
cat "$out/gpuhold.txt"
if grep -q holds "$out/gpuhold.txt"; then
  export GLEANER_GPU_HOLD_PID=$pid GLEANER_GPU_HOLD_BYTES=$hold
fi
nvidia-smi --query-gpu=index,memory.used --format=csv | tee "$out/nvidia-smi-held.txt"

rc=0
(cd pkg/agent/system/gpu && "../../../../$bin/gpu.test" -test.v -test.run 'NVML') 2>&1 | tee "$out/gpu.txt" || rc=1
(cd pkg/agent/collector && "../../../$bin/collector.test" -test.v -test.run 'GPU') 2>&1 | tee "$out/collector.txt" || rc=1
kill "$pid" 2>/dev/null || true
exit $rc
