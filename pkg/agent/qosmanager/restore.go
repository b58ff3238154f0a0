package qosmanager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// OffSpec is the NodeSLO spec with every QoS feature off: the defaults, which leave every feature off but class BE's
// CPU QoS (cpu.idle), with that one off too. A plugin run with it gives back what it wrote, as when its feature is
// turned off in slo-controller-config.
func OffSpec() *slov1alpha1.NodeSLOSpec {
	spec := (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults()
	spec.ResourceQOSStrategy.BEClass.CPUQOS.Enable = ptr.To(false)
	return spec
}

// Restore runs every enabled plugin once with OffSpec, in registry order, whatever the NodeSLO says: the node gets
// back what the plugins wrote (the kubelet's values, the kernel's defaults, the originals they kept), as when each
// feature is turned off. It is for an uninstall (the agent's DaemonSet is gone), after Start has returned; a plugin
// that fails does not stop the others. It returns their errors.
func (m *Manager) Restore(ctx context.Context) error {
	off := OffSpec()
	var errs []error
	for _, r := range m.running {
		r.mu.Lock()
		err := r.p.Run(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("plugin", r.name)), off)
		r.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("QoS plugin %s: %w", r.name, err))
		}
	}
	return errors.Join(errs...)
}
