// Package hostsim simulates a node's /proc, /sys and cgroup trees in a directory, for the agent's tests and
// benchmarks: pods, host applications and the system use the CPU and memory a test gives them, and Advance moves
// the kernel's counters (/proc/stat, cpuacct.usage or cpu.stat, cpu.stat throttling, pressure totals) as if that
// much time had passed. The files have the kernel's formats, so the agent reads them with its production code.
//
//	h, _ := hostsim.New(t.TempDir(), hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs})
//	_ = h.AddPod(pod, hostsim.Usage{CPU: 0.5, Memory: 100 << 20})
//	_ = h.Advance(time.Second)
package hostsim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Config shapes the simulated host.
type Config struct {
	// Version and Driver select the cgroup tree's shape.
	Version cgroup.Version
	Driver  cgroup.Driver
	// Parent is the kubelet's cgroup root inside the tree ("" for /).
	Parent string
	// CPUs is the number of CPUs (default 4), one socket, one NUMA node.
	CPUs int
	// MemTotal is the node's memory in bytes (default 16 GiB).
	MemTotal uint64
	// NoPSI leaves /proc/pressure out, like a kernel without CONFIG_PSI.
	NoPSI bool
	// BEQuotaCores is the CFS quota of the besteffort QoS cgroup in cores; 0 means unlimited.
	BEQuotaCores float64
	// BECPUs is the cpuset of the besteffort QoS cgroup; empty means every CPU.
	BECPUs string
}

// Usage is what a simulated pod, application or the system uses.
type Usage struct {
	// CPU is in cores.
	CPU float64
	// Memory is anonymous memory in bytes (what the agent reports).
	Memory uint64
	// PageCache is page cache in bytes (which the agent leaves out of memory usage).
	PageCache uint64
	// Throttled is the share of CFS periods (100 ms) in which the group hits its quota.
	Throttled float64
	// Pressure is the share of time its tasks stall, for every resource, "some" and half of it "full".
	Pressure float64
	// DiskRead and DiskWrite are bytes per second on the simulated disk (vda, 253:0), in 4 KiB operations.
	DiskRead, DiskWrite uint64
}

// group is a cgroup the simulator keeps counters for.
type group struct {
	dir      string
	usage    Usage
	cpu      time.Duration // cumulative CPU time
	periods  uint64
	throttle uint64
	stall    time.Duration // cumulative "some" stall
	disk     [2]uint64     // cumulative bytes read and written
	children []*group
	dirty    bool // memory.stat needs writing
}

// Host is a simulated node. Its methods are safe for concurrent use.
type Host struct {
	mu     sync.Mutex
	cfg    Config
	root   string
	layout cgroup.Layout

	kubepods, guaranteed, burstable, besteffort *group
	pods                                        map[types.UID]*group
	apps                                        map[string]*group
	system                                      Usage
	busy, idle                                  time.Duration // /proc/stat
	stall                                       time.Duration // /proc/pressure
	elapsed                                     time.Duration
}

// New lays out a host in dir with no pods.
func New(dir string, cfg Config) (*Host, error) {
	if cfg.CPUs == 0 {
		cfg.CPUs = 4
	}
	if cfg.MemTotal == 0 {
		cfg.MemTotal = 16 << 30
	}
	h := &Host{
		cfg: cfg, root: dir, layout: cgroup.Layout{Driver: cfg.Driver, Parent: cfg.Parent},
		pods: map[types.UID]*group{}, apps: map[string]*group{},
	}
	h.kubepods = &group{dir: h.layout.Kubepods()}
	h.guaranteed = h.kubepods
	h.burstable = &group{dir: h.layout.QoSDir(corev1.PodQOSBurstable)}
	h.besteffort = &group{dir: h.layout.QoSDir(corev1.PodQOSBestEffort)}
	h.kubepods.children = []*group{h.burstable, h.besteffort}
	if cfg.Version == cgroup.V2 {
		if err := h.write(filepath.Join("cgroup", "cgroup.controllers"), "cpuset cpu io memory pids\n"); err != nil {
			return nil, err
		}
	}
	for _, g := range []*group{h.kubepods, h.burstable, h.besteffort} {
		if err := h.mkGroup(g, -1); err != nil {
			return nil, err
		}
	}
	if cfg.BEQuotaCores > 0 || cfg.BECPUs != "" {
		if err := h.limitBE(); err != nil {
			return nil, err
		}
	}
	if err := h.writeSys(); err != nil {
		return nil, err
	}
	return h, h.flush()
}

// ProcRoot is the simulated /proc.
func (h *Host) ProcRoot() string { return filepath.Join(h.root, "proc") }

// SysRoot is the simulated /sys.
func (h *Host) SysRoot() string { return filepath.Join(h.root, "sys") }

// CgroupRoot is the simulated /sys/fs/cgroup.
func (h *Host) CgroupRoot() string { return filepath.Join(h.root, "cgroup") }

// Layout is the kubelet layout of the tree.
func (h *Host) Layout() cgroup.Layout { return h.layout }

// Elapsed is the simulated time so far.
func (h *Host) Elapsed() time.Duration { return h.elapsed }

// AddPod creates the cgroups of pod (its QoS class from its resources, its containers from the container IDs in
// its status) using u, split evenly among the containers.
func (h *Host) AddPod(pod *corev1.Pod, u Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s already added", pod.UID)
	}
	p := &group{dir: h.layout.PodDir(pod), usage: u, dirty: true}
	var ids []string
	for _, s := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if s.ContainerID != "" {
			ids = append(ids, s.ContainerID)
		}
	}
	for _, id := range ids {
		dir, err := h.layout.ContainerDir(p.dir, id)
		if err != nil {
			return err
		}
		p.children = append(p.children, &group{dir: dir, dirty: true})
	}
	h.splitUsage(p)
	quotaCores := -1.0
	if u.Throttled > 0 {
		quotaCores = math.Max(u.CPU, 0.1)
	}
	if err := h.mkGroup(p, quotaCores); err != nil {
		return err
	}
	for _, c := range p.children {
		if err := h.mkGroup(c, quotaCores); err != nil {
			return err
		}
	}
	parent := h.guaranteed
	switch qos.GetPodQOS(pod) {
	case corev1.PodQOSBurstable:
		parent = h.burstable
	case corev1.PodQOSBestEffort:
		parent = h.besteffort
	}
	parent.children = append(parent.children, p)
	h.pods[pod.UID] = p
	return h.writeGroup(p)
}

// SetPodUsage changes what a pod uses from now on.
func (h *Host) SetPodUsage(uid types.UID, u Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pods[uid]
	if !ok {
		return fmt.Errorf("no pod %s", uid)
	}
	p.usage, p.dirty = u, true
	h.splitUsage(p)
	return nil
}

// RemovePod deletes a pod's cgroups, as the kubelet does when the pod ends.
func (h *Host) RemovePod(uid types.UID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pods[uid]
	if !ok {
		return fmt.Errorf("no pod %s", uid)
	}
	delete(h.pods, uid)
	for _, parent := range []*group{h.kubepods, h.burstable, h.besteffort} {
		parent.children = slices.DeleteFunc(parent.children, func(g *group) bool { return g == p })
	}
	for _, d := range h.subsystemDirs(p.dir) {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	return nil
}

// AddHostApp creates a host application's cgroup at dir (relative to the hierarchy root).
func (h *Host) AddHostApp(name, dir string, u Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &group{dir: dir, usage: u, dirty: true}
	if err := h.mkGroup(g, -1); err != nil {
		return err
	}
	h.apps[name] = g
	return h.writeGroup(g)
}

// SetSystemUsage sets what the node uses outside pods and host applications (kernel, kubelet, daemons).
func (h *Host) SetSystemUsage(u Usage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.system = u
}

// Advance moves every counter as if d passed with the current usages, and writes the files.
func (h *Host) Advance(d time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.elapsed += d
	var busy float64
	for _, p := range h.pods {
		h.advanceGroup(p, d)
		busy += p.usage.CPU
	}
	for _, a := range h.apps {
		h.advanceGroup(a, d)
		busy += a.usage.CPU
	}
	busy += h.system.CPU
	busy = math.Min(busy, float64(h.cfg.CPUs))
	h.busy += scale(d, busy)
	h.idle += scale(d, float64(h.cfg.CPUs)-busy)
	h.stall += scale(d, h.system.Pressure)
	return h.flush()
}

func (h *Host) advanceGroup(g *group, d time.Duration) {
	g.cpu += scale(d, g.usage.CPU)
	g.stall += scale(d, g.usage.Pressure)
	g.disk[0] += uint64(d.Seconds() * float64(g.usage.DiskRead))
	g.disk[1] += uint64(d.Seconds() * float64(g.usage.DiskWrite))
	if g.usage.Throttled > 0 {
		periods := uint64(d / (100 * time.Millisecond))
		g.periods += periods
		g.throttle += uint64(math.Round(float64(periods) * g.usage.Throttled))
	}
	for _, c := range g.children {
		h.advanceGroup(c, d)
	}
}

// flush writes every file that changed.
func (h *Host) flush() error {
	var errs []error
	for _, g := range h.pods {
		errs = append(errs, h.writeGroup(g))
	}
	for _, g := range h.apps {
		errs = append(errs, h.writeGroup(g))
	}
	// QoS groups and kubepods: sums of their pods.
	for _, q := range []*group{h.burstable, h.besteffort} {
		h.sum(q)
		errs = append(errs, h.writeCounters(q))
	}
	h.sum(h.kubepods)
	errs = append(errs, h.writeCounters(h.kubepods), h.writeProc())
	return errors.Join(errs...)
}

func (h *Host) sum(g *group) {
	var cpu time.Duration
	for _, c := range g.children {
		if c == h.burstable || c == h.besteffort {
			h.sum(c)
		}
		cpu += c.cpu
	}
	g.cpu = cpu
}

// splitUsage divides a pod's usage among its containers.
func (h *Host) splitUsage(p *group) {
	n := len(p.children)
	for _, c := range p.children {
		c.usage = Usage{
			CPU: p.usage.CPU / float64(n), Memory: p.usage.Memory / uint64(n), PageCache: p.usage.PageCache / uint64(n),
			Throttled: p.usage.Throttled, Pressure: p.usage.Pressure,
			DiskRead: p.usage.DiskRead / uint64(n), DiskWrite: p.usage.DiskWrite / uint64(n),
		}
		c.dirty = true
	}
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// subsystemDirs are the directories of a cgroup: one per v1 subsystem, or one.
func (h *Host) subsystemDirs(dir string) []string {
	if h.cfg.Version == cgroup.V2 {
		return []string{filepath.Join(h.CgroupRoot(), dir)}
	}
	var dirs []string
	for _, s := range cgroup.V1Subsystems() {
		dirs = append(dirs, filepath.Join(h.CgroupRoot(), s, dir))
	}
	return dirs
}

// mkGroup creates a cgroup with its static files; quotaCores < 0 means no quota.
func (h *Host) mkGroup(g *group, quotaCores float64) error {
	for _, d := range h.subsystemDirs(g.dir) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	all := fmt.Sprintf("0-%d", h.cfg.CPUs-1)
	quota := int64(-1)
	if quotaCores > 0 {
		quota = int64(quotaCores * 100000)
	}
	files := map[string]string{}
	if h.cfg.Version == cgroup.V1 {
		files["cpu/cpu.cfs_quota_us"] = strconv.FormatInt(quota, 10)
		files["cpu/cpu.cfs_period_us"] = "100000"
		files["cpu/cpu.shares"] = "1024"
		files["cpu/cpu.cfs_burst_us"] = "0"
		files["cpuset/cpuset.cpus"] = all
		files["cpuset/cpuset.effective_cpus"] = all
		files["memory/memory.limit_in_bytes"] = "9223372036854771712"
	} else {
		q := "max"
		if quota > 0 {
			q = strconv.FormatInt(quota, 10)
		}
		files["cpu.max"] = q + " 100000"
		files["cpu.weight"] = "100"
		files["cpu.max.burst"] = "0"
		files["cpuset.cpus.effective"] = all
		files["memory.max"] = "max"
	}
	for f, v := range files {
		if err := h.writeCgroupFile(g.dir, f, v+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func (h *Host) limitBE() error {
	g := h.besteffort.dir
	cpus := h.cfg.BECPUs
	if cpus == "" {
		cpus = fmt.Sprintf("0-%d", h.cfg.CPUs-1)
	}
	quota := int64(-1)
	if h.cfg.BEQuotaCores > 0 {
		quota = int64(h.cfg.BEQuotaCores * 100000)
	}
	if h.cfg.Version == cgroup.V1 {
		return errors.Join(
			h.writeCgroupFile(g, "cpu/cpu.cfs_quota_us", strconv.FormatInt(quota, 10)+"\n"),
			h.writeCgroupFile(g, "cpuset/cpuset.effective_cpus", cpus+"\n"),
		)
	}
	q := "max"
	if quota > 0 {
		q = strconv.FormatInt(quota, 10)
	}
	return errors.Join(h.writeCgroupFile(g, "cpu.max", q+" 100000\n"), h.writeCgroupFile(g, "cpuset.cpus.effective", cpus+"\n"))
}

// writeGroup writes a group's counters and, if it changed, its memory.stat; then its children's.
func (h *Host) writeGroup(g *group) error {
	errs := []error{h.writeCounters(g)}
	if g.dirty {
		errs = append(errs, h.writeMemory(g))
		g.dirty = false
	}
	for _, c := range g.children {
		errs = append(errs, h.writeGroup(c))
	}
	return errors.Join(errs...)
}

func (h *Host) writeCounters(g *group) error {
	throttledNs := int64(g.throttle) * int64(10*time.Millisecond)
	rd, wr := g.disk[0], g.disk[1]
	if h.cfg.Version == cgroup.V1 {
		return errors.Join(
			h.writeCgroupFile(g.dir, "cpuacct/cpuacct.usage", strconv.FormatInt(int64(g.cpu), 10)+"\n"),
			h.writeCgroupFile(g.dir, "cpu/cpu.stat", fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\nnr_bursts 0\nburst_time 0\n", g.periods, g.throttle, throttledNs)),
			h.writeCgroupFile(g.dir, "blkio/blkio.throttle.io_service_bytes_recursive", blkioStat(rd, wr)),
			h.writeCgroupFile(g.dir, "blkio/blkio.throttle.io_serviced_recursive", blkioStat(rd/4096, wr/4096)),
		)
	}
	us := g.cpu.Microseconds()
	stall := g.stall.Microseconds()
	errs := []error{h.writeCgroupFile(g.dir, "cpu.stat", fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\nnr_bursts 0\nburst_usec 0\n",
		us, us*7/10, us-us*7/10, g.periods, g.throttle, throttledNs/1000))}
	for _, r := range []string{"cpu", "memory", "io"} {
		errs = append(errs, h.writeCgroupFile(g.dir, r+".pressure", pressure(stall)))
	}
	io := ""
	if rd+wr > 0 {
		io = fmt.Sprintf("253:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", rd, wr, rd/4096, wr/4096)
	}
	errs = append(errs, h.writeCgroupFile(g.dir, "io.stat", io))
	return errors.Join(errs...)
}

// blkioStat is a v1 blkio statistics file with read and write on the simulated disk.
func blkioStat(read, write uint64) string {
	if read+write == 0 {
		return "Total 0\n"
	}
	return fmt.Sprintf("253:0 Read %d\n253:0 Write %d\n253:0 Sync %d\n253:0 Async 0\n253:0 Discard 0\n253:0 Total %d\nTotal %d\n",
		read, write, read+write, read+write, read+write)
}

func pressure(someUs int64) string {
	return fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", someUs, someUs/2)
}

func (h *Host) writeMemory(g *group) error {
	u := g.usage
	anon, cache := u.Memory, u.PageCache
	activeAnon, inactiveAnon := anon-anon/4, anon/4
	activeFile, inactiveFile := cache/2, cache-cache/2
	var b strings.Builder
	if h.cfg.Version == cgroup.V1 {
		fmt.Fprintf(&b, "cache %d\nrss %d\nrss_huge 0\nshmem 0\nmapped_file 0\ndirty 0\nwriteback 0\nswap 0\npgpgin 0\npgpgout 0\npgfault 0\npgmajfault 0\n", cache, anon)
		fmt.Fprintf(&b, "inactive_anon %d\nactive_anon %d\ninactive_file %d\nactive_file %d\nunevictable 0\n", inactiveAnon, activeAnon, inactiveFile, activeFile)
		fmt.Fprintf(&b, "hierarchical_memory_limit 9223372036854771712\nhierarchical_memsw_limit 9223372036854771712\n")
		fmt.Fprintf(&b, "total_cache %d\ntotal_rss %d\ntotal_rss_huge 0\ntotal_shmem 0\ntotal_mapped_file 0\ntotal_dirty 0\ntotal_writeback 0\ntotal_swap 0\n", cache, anon)
		fmt.Fprintf(&b, "total_pgpgin 0\ntotal_pgpgout 0\ntotal_pgfault 0\ntotal_pgmajfault 0\n")
		fmt.Fprintf(&b, "total_inactive_anon %d\ntotal_active_anon %d\ntotal_inactive_file %d\ntotal_active_file %d\ntotal_unevictable 0\n", inactiveAnon, activeAnon, inactiveFile, activeFile)
		return h.writeCgroupFile(g.dir, "memory/memory.stat", b.String())
	}
	fmt.Fprintf(&b, "anon %d\nfile %d\nkernel 0\nkernel_stack 0\npagetables 0\nsock 0\nshmem 0\nfile_mapped 0\nfile_dirty 0\n", anon, cache)
	fmt.Fprintf(&b, "inactive_anon %d\nactive_anon %d\ninactive_file %d\nactive_file %d\nunevictable 0\n", inactiveAnon, activeAnon, inactiveFile, activeFile)
	return h.writeCgroupFile(g.dir, "memory.stat", b.String())
}

// writeCgroupFile writes file ("subsystem/name" on v1, "name" on v2) of cgroup dir.
func (h *Host) writeCgroupFile(dir, file, content string) error {
	if h.cfg.Version == cgroup.V1 {
		sub, name, _ := strings.Cut(file, "/")
		return writeInPlace(filepath.Join(h.CgroupRoot(), sub, dir, name), content)
	}
	return writeInPlace(filepath.Join(h.CgroupRoot(), dir, file), content)
}

// writeInPlace rewrites a file in place, as the kernel's files change: an agent that keeps cgroup files open
// (cgroup.FS.KeepOpen) must see the new contents, which it would not after a rename. Tests that read while the
// simulation advances must therefore not assert on the values of that moment.
func writeInPlace(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// WriteFile writes a file under the host's root, for tests that corrupt one.
func (h *Host) WriteFile(rel, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.write(rel, content)
}

func (h *Host) write(rel, content string) error {
	p := filepath.Join(h.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return writeInPlace(p, content)
}

// writeProc writes /proc/stat, /proc/meminfo and /proc/pressure.
func (h *Host) writeProc() error {
	tick := func(d time.Duration) int64 { return int64(d / (10 * time.Millisecond)) }
	var b strings.Builder
	// busy split over user 70%, system 25%, softirq 5%.
	busy := tick(h.busy)
	user, sys := busy*70/100, busy*25/100
	soft := busy - user - sys
	fmt.Fprintf(&b, "cpu  %d 0 %d %d 0 0 %d 0 0 0\n", user, sys, tick(h.idle), soft)
	n := int64(h.cfg.CPUs)
	for i := range n {
		fmt.Fprintf(&b, "cpu%d %d 0 %d %d 0 0 %d 0 0 0\n", i, user/n, sys/n, tick(h.idle)/n, soft/n)
	}
	fmt.Fprintf(&b, "intr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	var used, cache uint64
	for _, g := range h.pods {
		used, cache = used+g.usage.Memory, cache+g.usage.PageCache
	}
	for _, g := range h.apps {
		used, cache = used+g.usage.Memory, cache+g.usage.PageCache
	}
	used, cache = used+h.system.Memory, cache+h.system.PageCache
	total := h.cfg.MemTotal
	kb := func(v uint64) uint64 { return v >> 10 }
	free := total - min(total, used+cache)
	mem := fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:               0 kB\nCached:         %d kB\nSwapCached:            0 kB\n",
		kb(total), kb(free), kb(total-min(total, used)), kb(cache))
	errs := []error{h.write("proc/stat", b.String()), h.write("proc/meminfo", mem)}
	if !h.cfg.NoPSI {
		for _, r := range []string{"cpu", "memory", "io"} {
			errs = append(errs, h.write("proc/pressure/"+r, pressure(h.stall.Microseconds())))
		}
	}
	return errors.Join(errs...)
}

// writeSys writes the CPU topology (one socket, one core per CPU) and one NUMA node.
func (h *Host) writeSys() error {
	all := fmt.Sprintf("0-%d", h.cfg.CPUs-1)
	errs := []error{h.write("sys/devices/system/cpu/online", all+"\n")}
	for i := range h.cfg.CPUs {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", i)
		errs = append(errs,
			h.write(d+"core_id", strconv.Itoa(i)+"\n"),
			h.write(d+"physical_package_id", "0\n"),
			h.write(d+"core_siblings_list", all+"\n"),
			h.write(d+"thread_siblings_list", strconv.Itoa(i)+"\n"),
		)
	}
	kb := h.cfg.MemTotal >> 10
	// One disk, vda, holding the root file system (/proc/1/mountinfo: the host's mounts, as init sees them).
	errs = append(errs,
		h.write("sys/block/vda/dev", "253:0\n"),
		h.write("sys/block/vda/size", "41943040\n"),
		h.write("sys/block/vda/queue/rotational", "0\n"),
		h.write("proc/1/mountinfo", "22 27 0:21 / /proc rw,relatime - proc proc rw\n27 1 253:0 / / rw,relatime - ext4 /dev/vda rw\n"),
	)
	errs = append(errs,
		h.write("sys/devices/system/node/node0/cpulist", all+"\n"),
		h.write("sys/devices/system/node/node0/meminfo", fmt.Sprintf("Node 0 MemTotal:       %d kB\nNode 0 MemFree:        %d kB\nNode 0 MemUsed:        0 kB\n", kb, kb)),
	)
	return errors.Join(errs...)
}
