// Package podresourcestest serves the kubelet's pod-resources API on a unix socket for tests, answering
// GetAllocatableResources as a kubelet with a given CPU and memory manager would.
package podresourcestest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Static is what a kubelet with the static CPU manager (CPUs 1-3 assignable, 0 reserved) and the Static memory
// manager answers.
func Static() *podresourcesv1.AllocatableResourcesResponse {
	return &podresourcesv1.AllocatableResourcesResponse{
		CpuIds: []int64{1, 2, 3},
		Memory: []*podresourcesv1.ContainerMemory{{MemoryType: "memory", Size: 8 << 30, Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: 0}}}}},
	}
}

// None is what a kubelet with neither answers (both policies "none", the kubelet's default).
func None() *podresourcesv1.AllocatableResourcesResponse {
	return &podresourcesv1.AllocatableResourcesResponse{}
}

type server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	resp *podresourcesv1.AllocatableResourcesResponse
}

func (s *server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	return s.resp, nil
}

// Serve serves resp until the test ends and returns the socket's path; a nil resp serves a kubelet that does not
// implement GetAllocatableResources.
func Serve(t testing.TB, resp *podresourcesv1.AllocatableResourcesResponse) string {
	t.Helper()
	// A short directory of its own: a unix socket's path has at most 107 bytes, and t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "podres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kubelet.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if resp != nil {
		podresourcesv1.RegisterPodResourcesListerServer(srv, &server{resp: resp})
	} else {
		podresourcesv1.RegisterPodResourcesListerServer(srv, podresourcesv1.UnimplementedPodResourcesListerServer{})
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return socket
}
