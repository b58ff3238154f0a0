package v1alpha1

import "testing"

func TestCgroupLocation(t *testing.T) {
	tests := []struct {
		name             string
		app              HostApplicationSpec
		base             CgroupBaseType
		parent, relative string
	}{
		{name: "defaults, LS", app: HostApplicationSpec{Name: "nginx", QoS: QoSLS}, base: CgroupBaseRoot, parent: "host-latency-sensitive", relative: "nginx"},
		{name: "defaults, no QoS", app: HostApplicationSpec{Name: "nginx"}, base: CgroupBaseRoot, parent: "host-latency-sensitive", relative: "nginx"},
		{name: "defaults, BE", app: HostApplicationSpec{Name: "spark", QoS: QoSBE}, base: CgroupBaseRoot, parent: "host-best-effort", relative: "spark"},
		{
			name: "seed example: everything given",
			app:  HostApplicationSpec{Name: "nginx", QoS: QoSLS, CgroupPath: &CgroupPath{Base: CgroupBaseKubepodsBesteffort, ParentDir: "apps/", RelativePath: "web/"}},
			base: CgroupBaseKubepodsBesteffort, parent: "apps/", relative: "web/",
		},
		{
			name: "partly given: the rest defaults",
			app:  HostApplicationSpec{Name: "x", QoS: QoSBE, CgroupPath: &CgroupPath{Base: CgroupBaseKubepods}},
			base: CgroupBaseKubepods, parent: "host-best-effort", relative: "x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, parent, rel := tt.app.CgroupLocation()
			if base != tt.base || parent != tt.parent || rel != tt.relative {
				t.Errorf("CgroupLocation() = %q, %q, %q; want %q, %q, %q", base, parent, rel, tt.base, tt.parent, tt.relative)
			}
		})
	}
}
