package cpuinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

func TestRead(t *testing.T) {
	tests := []struct {
		tree string
		want *slov1alpha1.CPUBasicInfo
	}{
		{"intel", &slov1alpha1.CPUBasicInfo{CPUModel: "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz", VendorID: "GenuineIntel",
			HyperThreadEnabled: true, TurboEnabled: true}},
		// No smt/active: one thread sibling of CPU 0 means no hyper-threading; no intel_pstate: turbo counts as off.
		{"amd", &slov1alpha1.CPUBasicInfo{CPUModel: "AMD EPYC 7763 64-Core Processor", VendorID: "AuthenticAMD"}},
		{"arm", &slov1alpha1.CPUBasicInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			root := filepath.Join("testdata", tt.tree)
			got, err := Read(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Read (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadSysfsVariants(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantHT    bool
		wantTurbo bool
	}{
		{"smt inactive wins over siblings", map[string]string{"smt/active": "0\n", "cpu0/topology/thread_siblings_list": "0,48\n"}, false, false},
		{"siblings without smt file", map[string]string{"cpu0/topology/thread_siblings_list": "0,48\n"}, true, false},
		{"sibling range", map[string]string{"cpu0/topology/thread_siblings_list": "0-1\n"}, true, false},
		{"turbo off", map[string]string{"intel_pstate/no_turbo": "1\n"}, false, false},
		{"turbo on", map[string]string{"intel_pstate/no_turbo": "0\n"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, filepath.Join(root, "proc", "cpuinfo"), "vendor_id\t: GenuineIntel\nmodel name\t: X\n")
			for rel, content := range tt.files {
				write(t, filepath.Join(root, "sys", "devices", "system", "cpu", rel), content)
			}
			got, err := Read(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
			if err != nil {
				t.Fatal(err)
			}
			if got.HyperThreadEnabled != tt.wantHT || got.TurboEnabled != tt.wantTurbo {
				t.Errorf("hyper-threading %v, turbo %v; want %v, %v", got.HyperThreadEnabled, got.TurboEnabled, tt.wantHT, tt.wantTurbo)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	root := t.TempDir()
	if _, err := Read(filepath.Join(root, "proc"), filepath.Join(root, "sys")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no /proc/cpuinfo: got %v, want a not-exist error", err)
	}
	write(t, filepath.Join(root, "proc", "cpuinfo"), "model name\t: X\n")
	write(t, filepath.Join(root, "sys", "devices", "system", "cpu", "cpu0", "topology", "thread_siblings_list"), "zero\n")
	if _, err := Read(filepath.Join(root, "proc"), filepath.Join(root, "sys")); err == nil || !strings.Contains(err.Error(), "hyper-threads of CPU 0") {
		t.Errorf("a sibling list that does not parse: got %v", err)
	}
	huge := filepath.Join(root, "huge")
	write(t, filepath.Join(huge, "proc", "cpuinfo"), strings.Repeat("flags\t: fpu\n", maxCPUInfo/10))
	if _, err := Read(filepath.Join(huge, "proc"), filepath.Join(huge, "sys")); !errors.Is(err, system.ErrTooLarge) {
		t.Errorf("an endless /proc/cpuinfo: got %v, want ErrTooLarge", err)
	}
}

func TestParseCPUInfoStopsAtTheFirstBlock(t *testing.T) {
	got, err := parseCPUInfo(strings.NewReader("processor\t: 0\nvendor_id\t: A\nmodel name\t: first\n\nprocessor\t: 1\nmodel name\t: second\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&slov1alpha1.CPUBasicInfo{CPUModel: "first", VendorID: "A"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
