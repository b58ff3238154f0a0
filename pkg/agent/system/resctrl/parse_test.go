package resctrl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

func TestParseSchemata(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    Schemata
		wantErr string
	}{
		{
			name: "L3 and MB on two sockets",
			text: "L3:0=7ff;1=7ff\nMB:0=100;1=100\n",
			want: Schemata{
				{Resource: "L3", Domains: []Domain{{0, "7ff"}, {1, "7ff"}}},
				{Resource: "MB", Domains: []Domain{{0, "100"}, {1, "100"}}},
			},
		},
		{
			name: "CDP with the kernel's padding and cache ids with a gap",
			text: "L3CODE:0=fffff;2=fffff\nL3DATA:0=fffff;2=3c0\n    MB:0=100;2=50\n",
			want: Schemata{
				{Resource: "L3CODE", Domains: []Domain{{0, "fffff"}, {2, "fffff"}}},
				{Resource: "L3DATA", Domains: []Domain{{0, "fffff"}, {2, "3c0"}}},
				{Resource: "MB", Domains: []Domain{{0, "100"}, {2, "50"}}},
			},
		},
		{name: "blank lines and a trailing semicolon", text: "\nL3:0=f;\n\n", want: Schemata{{Resource: "L3", Domains: []Domain{{0, "f"}}}}},
		{name: "no resource", text: ":0=f\n", wantErr: "want <resource>:<id>=<value>"},
		{name: "no colon", text: "L3 0=f\n", wantErr: "want <resource>:<id>=<value>"},
		{name: "domain without value", text: "L3:0=\n", wantErr: "domain 0 has no value"},
		{name: "domain without =", text: "L3:0\n", wantErr: "is not <id>=<value>"},
		{name: "bad cache id", text: "L3:x=f\n", wantErr: "is not a cache id"},
		{name: "no domains", text: "L3:\n", wantErr: "no domains"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSchemata(strings.NewReader(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("schemata (-want +got):\n%s", d)
			}
		})
	}
}

func TestSchemataStringRoundTrips(t *testing.T) {
	s := Schemata{
		{Resource: "L3", Domains: []Domain{{0, "3"}, {1, "c"}}},
		{Resource: "MB", Domains: []Domain{{0, "50"}, {1, "50"}}},
	}
	if got, want := s.String(), "L3:0=3;1=c\nMB:0=50;1=50\n"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	back, err := ParseSchemata(strings.NewReader(s.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, back); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
}

func TestParseCPUInfo(t *testing.T) {
	text := "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu rdt_a cat_l3 cdp_l3 mba\n\n" +
		"processor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu\n"
	c, err := parseCPUInfo(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if c.vendor != "GenuineIntel" || !c.flags["cat_l3"] || !c.flags["mba"] || !c.flags["cdp_l3"] || c.flags["cat_l2"] {
		t.Fatalf("parsed %+v; want GenuineIntel with the first CPU's flags", c)
	}
	arm, err := parseCPUInfo(strings.NewReader("processor\t: 0\nFeatures\t: fp asimd\n"))
	if err != nil || len(arm.flags) != 0 {
		t.Fatalf("an arm64 cpuinfo gave %+v, %v; want no flags", arm, err)
	}
}

func TestParseMountOptions(t *testing.T) {
	opts, ok, err := parseMountOptions(strings.NewReader("sysfs /sys sysfs rw 0 0\nresctrl /sys/fs/resctrl resctrl rw,relatime,cdp,mba_MBps 0 0\n"))
	if err != nil || !ok || !opts["cdp"] || !opts["mba_MBps"] || opts["cdpl2"] {
		t.Fatalf("got %v, %v, %v; want cdp and mba_MBps", opts, ok, err)
	}
	if _, ok, err := parseMountOptions(strings.NewReader("sysfs /sys sysfs rw 0 0\n")); ok || err != nil {
		t.Fatalf("a mounts file without resctrl gave %v, %v", ok, err)
	}
}

func FuzzParseSchemata(f *testing.F) {
	for _, s := range []string{"L3:0=7ff;1=7ff\nMB:0=100;1=100\n", "L3CODE:0=f\n    MB:0=10", ":;=", "L3:0=\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchemata(strings.NewReader(text))
		if err != nil {
			return
		}
		// What parses renders to text that parses to the same schemata.
		back, err := ParseSchemata(strings.NewReader(s.String()))
		if err != nil {
			t.Fatalf("rendering %q gave %q, which does not parse: %v", text, s.String(), err)
		}
		if d := cmp.Diff(s, back); d != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", text, d)
		}
	})
}

// TestHugeProcListingsAreRefused: a /proc/mounts or /proc/cpuinfo past maxProcListing (here 20 MiB without the line
// looked for) is an error, not read to its end.
func TestHugeProcListingsAreRefused(t *testing.T) {
	dir := t.TempDir()
	huge := strings.Repeat("tmpfs /run/x tmpfs rw 0 0\n", (20<<20)/26)
	for _, name := range []string{"mounts", "cpuinfo"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(huge), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := readMountOptions(filepath.Join(dir, "mounts")); !errors.Is(err, system.ErrTooLarge) {
		t.Errorf("readMountOptions of 20 MiB: %v, want ErrTooLarge", err)
	}
	if _, err := readCPUInfo(filepath.Join(dir, "cpuinfo")); !errors.Is(err, system.ErrTooLarge) {
		t.Errorf("readCPUInfo of 20 MiB: %v, want ErrTooLarge", err)
	}
}
