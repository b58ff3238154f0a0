// Package kubeletpolicy asks the kubelet which of its resource managers hand out whole CPUs or NUMA memory: the
// static CPU manager and the Static memory manager. Both admit a pod against the node's real CPUs and bytes, not
// against its allocatable, so gleaner-manager must not amplify the allocatable of a node where they run (docs/qos.md,
// "Resource amplification and the kubelet").
//
// The answer comes from the kubelet's pod-resources API (GetAllocatableResources, generally available since
// Kubernetes 1.28), on the unix socket <kubelet root dir>/pod-resources/kubelet.sock. The kubelet's "none" CPU
// policy reports no allocatable CPU IDs and its "None" memory policy no memory blocks; the static ones report the CPUs
// and the NUMA memory they may assign exclusively. That is the only signal the node itself offers without the
// kubelet's configuration file or its configz endpoint (which would take the node proxy permission, a far wider one
// than a read-only mount of one socket's directory).
package kubeletpolicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Socket is the pod-resources socket under the kubelet's root directory.
func Socket(kubeletRootDir string) string {
	return filepath.Join(kubeletRootDir, "pod-resources", "kubelet.sock")
}

// Timeout bounds one question to the kubelet.
const Timeout = 5 * time.Second

// Read asks the kubelet behind socket for its CPU and memory manager policies.
func Read(ctx context.Context, socket string) (slov1alpha1.KubeletResourceManagers, error) {
	if _, err := os.Stat(socket); err != nil {
		return slov1alpha1.KubeletResourceManagers{}, fmt.Errorf("the kubelet's pod-resources socket: %w (is the kubelet's pod-resources directory mounted into the agent?)", err)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return slov1alpha1.KubeletResourceManagers{}, fmt.Errorf("connecting to the kubelet's pod-resources socket %s: %w", socket, err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if status.Code(err) == codes.Unimplemented {
		return slov1alpha1.KubeletResourceManagers{}, fmt.Errorf("the kubelet behind %s does not serve GetAllocatableResources (a kubelet before 1.28 without the KubeletPodResourcesGetAllocatable feature gate): %w", socket, errors.ErrUnsupported)
	}
	if err != nil {
		return slov1alpha1.KubeletResourceManagers{}, fmt.Errorf("asking the kubelet for its allocatable resources on %s: %w", socket, err)
	}
	return Of(resp), nil
}

// Of reads the managers' policies from the kubelet's answer.
func Of(resp *podresourcesv1.AllocatableResourcesResponse) slov1alpha1.KubeletResourceManagers {
	m := slov1alpha1.KubeletResourceManagers{CPUManagerPolicy: slov1alpha1.KubeletCPUManagerPolicyNone, MemoryManagerPolicy: slov1alpha1.KubeletMemoryManagerPolicyNone}
	if len(resp.GetCpuIds()) > 0 {
		m.CPUManagerPolicy = slov1alpha1.KubeletCPUManagerPolicyStatic
	}
	if len(resp.GetMemory()) > 0 {
		m.MemoryManagerPolicy = slov1alpha1.KubeletMemoryManagerPolicyStatic
	}
	return m
}
