// Package sysreconcile is the QoS manager's system settings plugin (the ConfigMap key system-config, the NodeSLO's
// systemStrategy): with the strategy's enable on it keeps
//
//	vm.min_free_kbytes       = MemTotal (kB, /proc/meminfo) x minFreeKbytesFactor / 10000
//	vm.watermark_scale_factor = watermarkScaleFactor
//	memcg_reaper/reap_background = memcgReapBackGround (Anolis kernels only; elsewhere said once and skipped)
//
// through the resource executor. Before it first changes a file it records the value the file held in a state file
// under Deps.StateDir, so that an agent restart does not mistake the agent's own values for the kernel's; with the
// strategy off it writes the recorded values back, stops holding the files and forgets them. docs/qos.md explains
// the knobs and the deployment (a writable mount of the host's /proc/sys/vm).
package sysreconcile
