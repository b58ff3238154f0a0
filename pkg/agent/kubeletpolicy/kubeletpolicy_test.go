package kubeletpolicy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy"
	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy/podresourcestest"
)

// TestRead asks a gRPC server on a unix socket, speaking the kubelet's pod-resources API, as the agent asks the
// kubelet. The e2e suite asks the local node's real kubelet (TestKubeletManagersAreReadFromThePodResourcesSocket).
func TestRead(t *testing.T) {
	ctx := context.Background()
	for name, tt := range map[string]struct {
		socket string
		want   slov1alpha1.KubeletResourceManagers
	}{
		"static CPU and memory managers": {podresourcestest.Serve(t, podresourcestest.Static()), slov1alpha1.KubeletResourceManagers{CPUManagerPolicy: "static", MemoryManagerPolicy: "Static"}},
		"the kubelet's defaults":         {podresourcestest.Serve(t, podresourcestest.None()), slov1alpha1.KubeletResourceManagers{CPUManagerPolicy: "none", MemoryManagerPolicy: "None"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := kubeletpolicy.Read(ctx, tt.socket)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Read = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	ctx := context.Background()
	_, err := kubeletpolicy.Read(ctx, podresourcestest.Serve(t, nil))
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "does not serve GetAllocatableResources") {
		t.Errorf("a kubelet without GetAllocatableResources: %v, want ErrUnsupported saying so", err)
	}
	_, err = kubeletpolicy.Read(ctx, filepath.Join(t.TempDir(), "kubelet.sock"))
	if err == nil || !strings.Contains(err.Error(), "is the kubelet's pod-resources directory mounted") {
		t.Errorf("no socket: %v, want an error asking about the mount", err)
	}
	// A socket file nothing listens on (the kubelet is down): Unavailable at once, not a wait for the timeout.
	stale := filepath.Join(t.TempDir(), "kubelet.sock")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = kubeletpolicy.Read(ctx, stale); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "asking the kubelet") {
		t.Errorf("nothing listening: %v (code %s), want Unavailable", err, status.Code(err))
	}
	if got := kubeletpolicy.Socket("/var/lib/kubelet"); got != "/var/lib/kubelet/pod-resources/kubelet.sock" {
		t.Errorf("Socket = %q", got)
	}
}
