// Package images builds container images without a registry or a container engine: Go binaries compiled as static
// executables, each wrapped into a one-layer image with go-containerregistry and written into one docker-archive
// tarball that `ctr images import` loads into containerd. The local cluster (internal/localcluster) runs Gleaner's
// binaries (./cmd/...) and the test workloads (./test/workloads/...) from these images.
package images
