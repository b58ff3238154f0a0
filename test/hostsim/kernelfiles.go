package hostsim

// WriteEach writes file ("subsystem/name" on cgroup v1, "name" on v2) with content into every cgroup of the
// simulated kubepods tree that exists now (kubepods, the QoS cgroups, pods and containers) and of the host
// applications: a kernel that has the file, as a newer kernel than the tree's defaults (cpu.idle needs 5.15) or cgroup v2's memory.min. Call it again
// after adding pods.
func (h *Host) WriteEach(file, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var walk func(g *group) error
	walk = func(g *group) error {
		if err := h.writeCgroupFile(g.dir, file, content); err != nil {
			return err
		}
		for _, c := range g.children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(h.kubepods); err != nil {
		return err
	}
	for _, g := range h.apps {
		if err := walk(g); err != nil {
			return err
		}
	}
	return nil
}
