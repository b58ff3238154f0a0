package resctrl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/resctrl"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/resctrl/resctrltest"
)

// detect writes h into a temporary host root and detects it.
func detect(t *testing.T, h resctrltest.Host) (*resctrl.Info, error) {
	t.Helper()
	root := t.TempDir()
	if err := h.Write(root); err != nil {
		t.Fatal(err)
	}
	return resctrl.NewFS(filepath.Join(root, resctrltest.ResctrlDir)).Detect(filepath.Join(root, "proc"))
}

func TestDetect(t *testing.T) {
	l3Only := resctrltest.Intel()
	l3Only.Flags, l3Only.MB = []string{"rdt_a", "cat_l3"}, nil

	cdp := resctrltest.Intel()
	cdp.CDP, cdp.MountOptions = true, []string{"cdp"}

	fourDomains := resctrltest.Intel()
	fourDomains.Domains = []int{0, 1, 3, 4} // cache ids need not be contiguous
	fourDomains.L3 = &resctrltest.L3{Mask: "fffff", MinBits: 2, Closids: 16, Sparse: ptr.To(false)}

	sparse := resctrltest.Intel()
	sparse.L3.Sparse = ptr.To(true)

	mbOnly := resctrltest.Intel()
	mbOnly.Flags, mbOnly.L3 = []string{"rdt_a", "mba"}, nil

	amd := resctrltest.Intel()
	amd.Vendor, amd.MB = "AuthenticAMD", &resctrltest.MB{Min: 0, Gran: 1, Closids: 16}

	mbps := resctrltest.Intel()
	mbps.MountOptions = []string{"mba_MBps"}

	noMBFlag := resctrltest.Intel()
	noMBFlag.Flags = []string{"rdt_a", "cat_l3"}

	tests := []struct {
		name string
		host resctrltest.Host
		want *resctrl.Info
	}{
		{
			name: "L3 only",
			host: l3Only,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3:        &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				Unmanaged: []string{"memory bandwidth: /proc/cpuinfo lacks the mba flag"}},
		},
		{
			name: "L3 and MB",
			host: resctrltest.Intel(),
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3: &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				MB: &resctrl.Bandwidth{Min: 10, Gran: 10, DelayLinear: true, Closids: 8, Domains: []int{0, 1}}},
		},
		{
			name: "several cache ids with a gap, 20 ways, sparse_masks 0",
			host: fourDomains,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3: &resctrl.Cache{Resources: []string{"L3"}, Mask: 0xfffff, MinBits: 2, Closids: 16, Domains: []int{0, 1, 3, 4}},
				MB: &resctrl.Bandwidth{Min: 10, Gran: 10, DelayLinear: true, Closids: 8, Domains: []int{0, 1, 3, 4}}},
		},
		{
			name: "sparse masks",
			host: sparse,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3: &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Sparse: true, Closids: 16, Domains: []int{0, 1}},
				MB: &resctrl.Bandwidth{Min: 10, Gran: 10, DelayLinear: true, Closids: 8, Domains: []int{0, 1}}},
		},
		{
			name: "CDP: L3CODE and L3DATA",
			host: cdp,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3: &resctrl.Cache{Resources: []string{"L3CODE", "L3DATA"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				MB: &resctrl.Bandwidth{Min: 10, Gran: 10, DelayLinear: true, Closids: 8, Domains: []int{0, 1}}},
		},
		{
			name: "MB only",
			host: mbOnly,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				MB:        &resctrl.Bandwidth{Min: 10, Gran: 10, DelayLinear: true, Closids: 8, Domains: []int{0, 1}},
				Unmanaged: []string{"L3 cache: /proc/cpuinfo lacks the cat_l3 flag"}},
		},
		{
			name: "AMD: MB is not in percent",
			host: amd,
			want: &resctrl.Info{Vendor: "AuthenticAMD",
				L3:        &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				Unmanaged: []string{"memory bandwidth: on AuthenticAMD CPUs MB values are absolute bandwidth (1/8 GB/s), not the percentages mbaPercent gives"}},
		},
		{
			name: "mba_MBps: MB is not in percent",
			host: mbps,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3:        &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				Unmanaged: []string{"memory bandwidth: resctrl is mounted with mba_MBps, so MB values are MBps, not the percentages mbaPercent gives"}},
		},
		{
			name: "info/MB present, mba flag absent",
			host: noMBFlag,
			want: &resctrl.Info{Vendor: "GenuineIntel",
				L3:        &resctrl.Cache{Resources: []string{"L3"}, Mask: 0x7ff, MinBits: 1, Closids: 16, Domains: []int{0, 1}},
				Unmanaged: []string{"memory bandwidth: /proc/cpuinfo lacks the mba flag"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detect(t, tt.host)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("info (-want +got):\n%s", d)
			}
		})
	}
}

func TestDetectUnsupported(t *testing.T) {
	notMounted := resctrltest.Intel()
	notMounted.Mounted = false

	noFlags := resctrltest.Intel()
	noFlags.Flags = []string{"sse4_2", "avx2"}

	noInfo := resctrltest.Intel()
	noInfo.L3, noInfo.MB = nil, nil

	tests := []struct {
		name string
		host resctrltest.Host
		want string
	}{
		{name: "not mounted", host: notMounted, want: "resctrl is not mounted at"},
		{name: "a CPU without the flags", host: noFlags, want: "L3 cache: /proc/cpuinfo lacks the cat_l3 flag; memory bandwidth: /proc/cpuinfo lacks the mba flag"},
		{name: "mounted without allocation (monitoring only)", host: noInfo, want: "info/L3 is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := detect(t, tt.host)
			if !errors.Is(err, system.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Detect = %+v, %v; want system.ErrUnsupported saying %q", info, err, tt.want)
			}
		})
	}
}

func TestDetectBadInfo(t *testing.T) {
	root := t.TempDir()
	if err := resctrltest.Intel().Write(root); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, resctrltest.ResctrlDir, "info", "L3", "cbm_mask")
	if err := os.WriteFile(p, []byte("f0f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := resctrl.NewFS(filepath.Join(root, resctrltest.ResctrlDir)).Detect(filepath.Join(root, "proc"))
	if err == nil || errors.Is(err, system.ErrUnsupported) || !strings.Contains(err.Error(), "cbm_mask \"f0f\": not a non-empty contiguous mask") {
		t.Fatalf("Detect with a gapped cbm_mask = %v; want a parse error naming the file", err)
	}
}

func TestClassSchemata(t *testing.T) {
	cdp := resctrltest.Intel()
	cdp.CDP, cdp.Domains = true, []int{0, 1, 2}
	info, err := detect(t, cdp)
	if err != nil {
		t.Fatal(err)
	}
	s, err := info.ClassSchemata(resctrl.Class{CATStartPercent: 0, CATEndPercent: 30, MBAPercent: 55})
	if err != nil {
		t.Fatal(err)
	}
	want := "L3CODE:0=f;1=f;2=f\nL3DATA:0=f;1=f;2=f\nMB:0=60;1=60;2=60\n"
	if got := s.String(); got != want {
		t.Fatalf("schemata %q, want %q", got, want)
	}
	if _, err := info.ClassSchemata(resctrl.Class{CATStartPercent: 0, CATEndPercent: 30, MBAPercent: 5}); err == nil ||
		!strings.Contains(err.Error(), "below the hardware's minimum") {
		t.Fatalf("MBA 5%% with min_bandwidth 10 gave %v", err)
	}
}

func TestTasks(t *testing.T) {
	root := t.TempDir()
	if err := resctrltest.Intel().Write(root); err != nil {
		t.Fatal(err)
	}
	fs := resctrl.NewFS(filepath.Join(root, resctrltest.ResctrlDir))
	got, err := fs.Tasks("")
	if err != nil || !got[1] || !got[2] || len(got) != 2 {
		t.Fatalf("Tasks of the root group = %v, %v; want 1 and 2", got, err)
	}
	if _, err := fs.Tasks("gleaner-BE"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Tasks of a missing group = %v; want fs.ErrNotExist", err)
	}
	if fs.HasGroup("gleaner-BE") || !fs.HasGroup("info") {
		t.Fatal("HasGroup is wrong")
	}
}
