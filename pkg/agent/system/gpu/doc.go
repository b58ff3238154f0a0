// Package gpu describes a node's NVIDIA GPUs and the processes using them, through the part of NVML the agent
// uses (Library). The implementation on NVML (github.com/NVIDIA/go-nvml, which loads libnvidia-ml.so.1 with dlopen
// and needs cgo) is built only with the build tag nvml and CGO_ENABLED=1:
//
//	CGO_ENABLED=1 go build -tags nvml ./cmd/gleaner-agent
//
// Without it (the default, static CGO_ENABLED=0 build) NewNVML returns a Library whose Init says that this build
// has no NVML, and the agent runs unchanged. With it, a node without the driver gets ErrNoDriver from Init.
package gpu
