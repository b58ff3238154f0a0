package cpuinfo

// The files this package reads:
//
// proc/cpuinfo, one block per logical CPU; only the first "vendor_id" and "model name" are read (arm64 kernels
// print no model name, only "CPU implementer" and "CPU part": the model is then empty):
//
//	processor	: 0
//	vendor_id	: GenuineIntel
//	cpu family	: 6
//	model		: 85
//	model name	: Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz
//
// sys/devices/system/cpu/smt/active, "1" while simultaneous multithreading is active (Linux 4.19 and later); where
// it is missing, sys/devices/system/cpu/cpu0/topology/thread_siblings_list, a CPU list such as "0,48": more than one
// CPU means hyper-threading.
//
// sys/devices/system/cpu/intel_pstate/no_turbo, "0" while turbo is on. Without that file (another vendor, or
// another cpufreq driver) turbo counts as off, as Koordinator's koordlet counts it, so that ratio models measured
// with Koordinator pick the same ratio here.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// maxCPUInfo bounds the read of /proc/cpuinfo: about 1.5 KiB per CPU, so 4 MiB holds a few thousand CPUs, and only
// the first block is parsed anyway.
const maxCPUInfo = 4 << 20

// maxSmallFile bounds the one-line sysfs files.
const maxSmallFile = 4096

// Read describes the node's processors from the /proc and /sys trees under procRoot and sysRoot. A /proc/cpuinfo
// that cannot be read is an error; missing sysfs files only leave hyper-threading or turbo off.
func Read(procRoot, sysRoot string) (*slov1alpha1.CPUBasicInfo, error) {
	f, err := os.Open(filepath.Join(procRoot, "cpuinfo"))
	if err != nil {
		return nil, fmt.Errorf("reading the CPU model: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := parseCPUInfo(system.LimitReader(f, maxCPUInfo))
	if err != nil {
		return nil, fmt.Errorf("reading the CPU model from %s: %w", f.Name(), err)
	}
	if info.HyperThreadEnabled, err = readHyperThreading(sysRoot); err != nil {
		return nil, err
	}
	if info.TurboEnabled, err = readTurbo(sysRoot); err != nil {
		return nil, err
	}
	return info, nil
}

// parseCPUInfo takes the vendor and model name of the first CPU block of /proc/cpuinfo. A kernel that prints
// neither (arm64) leaves both empty: such a node matches no ratioModel entry and gets the defaultRatio.
func parseCPUInfo(r io.Reader) (*slov1alpha1.CPUBasicInfo, error) {
	info := &slov1alpha1.CPUBasicInfo{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if strings.TrimSpace(line) == "" && (info.CPUModel != "" || info.VendorID != "") {
			break // the end of the first CPU's block
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name", "Model Name":
			if info.CPUModel == "" {
				info.CPUModel = strings.TrimSpace(value)
			}
		case "vendor_id":
			if info.VendorID == "" {
				info.VendorID = strings.TrimSpace(value)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return info, nil
}

// readHyperThreading says whether more than one thread runs per core.
func readHyperThreading(sysRoot string) (bool, error) {
	cpu := filepath.Join(sysRoot, "devices", "system", "cpu")
	active, found, err := readSmall(filepath.Join(cpu, "smt", "active"))
	if err != nil {
		return false, err
	}
	if found {
		return active == "1", nil
	}
	siblings, found, err := readSmall(filepath.Join(cpu, "cpu0", "topology", "thread_siblings_list"))
	if err != nil || !found {
		return false, err
	}
	set, err := cpulist.Parse(siblings)
	if err != nil {
		return false, fmt.Errorf("reading the hyper-threads of CPU 0: %w", err)
	}
	return set.Size() > 1, nil
}

// readTurbo says whether intel_pstate has turbo on.
func readTurbo(sysRoot string) (bool, error) {
	noTurbo, found, err := readSmall(filepath.Join(sysRoot, "devices", "system", "cpu", "intel_pstate", "no_turbo"))
	if err != nil || !found {
		return false, err
	}
	return noTurbo == "0", nil
}

// readSmall reads a one-line sysfs file, trimmed; found is false when it does not exist.
func readSmall(path string) (value string, found bool, err error) {
	b, err := system.ReadFile(path, maxSmallFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), true, nil
}
