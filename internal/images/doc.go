// Package images builds container images without a container engine: Go binaries compiled as static executables,
// each wrapped into a one-layer image with go-containerregistry.
//
// For the local cluster (internal/localcluster), every binary of Gleaner (./cmd/...) and of the test workloads
// (./test/workloads/...) for this machine goes into one docker-archive tarball that `ctr images import` loads into
// containerd. For a release (release.go; `make images`, `make push`), the commands the chart runs get one image
// index each, with an image per Linux architecture, written into an OCI image layout or pushed to a registry.
package images
