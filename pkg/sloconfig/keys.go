package sloconfig

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The ConfigMap keys other than ColocationConfigKey, with Koordinator's names.
const (
	// ResourceThresholdConfigKey holds the thresholds of best-effort suppression and eviction (NodeSLO
	// spec.resourceUsedThresholdWithBE).
	ResourceThresholdConfigKey = "resource-threshold-config"
	// ResourceQOSConfigKey holds the per-class CPU, memory, block I/O and resctrl QoS (spec.resourceQOSStrategy).
	ResourceQOSConfigKey = "resource-qos-config"
	// CPUBurstConfigKey holds the CPU burst strategy (spec.cpuBurstStrategy).
	CPUBurstConfigKey = "cpu-burst-config"
	// SystemConfigKey holds node-wide kernel settings (spec.systemStrategy).
	SystemConfigKey = "system-config"
	// HostApplicationConfigKey lists the processes outside Kubernetes (spec.hostApplications).
	HostApplicationConfigKey = "host-application-config"
)

// Keys returns every ConfigMap key Gleaner reads, in the order they are parsed and reported.
func Keys() []string {
	return []string{
		ColocationConfigKey, ResourceThresholdConfigKey, ResourceQOSConfigKey,
		CPUBurstConfigKey, SystemConfigKey, HostApplicationConfigKey,
		CPUNormalizationConfigKey, ResourceAmplificationConfigKey,
	}
}

// ResourceThresholdCfg is the resource-threshold-config key.
//
// +kubebuilder:object:generate=true
type ResourceThresholdCfg struct {
	// ClusterStrategy applies to every node.
	ClusterStrategy *slov1alpha1.ResourceThresholdStrategy `json:"clusterStrategy,omitempty"`
	// NodeStrategies override it for the nodes their selector matches; the first match wins.
	NodeStrategies []NodeResourceThresholdStrategy `json:"nodeStrategies,omitempty"`
}

// NodeResourceThresholdStrategy is one node override of resource-threshold-config.
//
// +kubebuilder:object:generate=true
type NodeResourceThresholdStrategy struct {
	NodeCfgProfile                         `json:",inline"`
	*slov1alpha1.ResourceThresholdStrategy `json:",inline"`
}

// ResourceQOSCfg is the resource-qos-config key.
//
// +kubebuilder:object:generate=true
type ResourceQOSCfg struct {
	// ClusterStrategy applies to every node.
	ClusterStrategy *slov1alpha1.ResourceQOSStrategy `json:"clusterStrategy,omitempty"`
	// NodeStrategies override it for the nodes their selector matches; the first match wins.
	NodeStrategies []NodeResourceQOSStrategy `json:"nodeStrategies,omitempty"`
}

// NodeResourceQOSStrategy is one node override of resource-qos-config.
//
// +kubebuilder:object:generate=true
type NodeResourceQOSStrategy struct {
	NodeCfgProfile                   `json:",inline"`
	*slov1alpha1.ResourceQOSStrategy `json:",inline"`
}

// CPUBurstCfg is the cpu-burst-config key.
//
// +kubebuilder:object:generate=true
type CPUBurstCfg struct {
	// ClusterStrategy applies to every node.
	ClusterStrategy *slov1alpha1.CPUBurstStrategy `json:"clusterStrategy,omitempty"`
	// NodeStrategies override it for the nodes their selector matches; the first match wins.
	NodeStrategies []NodeCPUBurstCfg `json:"nodeStrategies,omitempty"`
}

// NodeCPUBurstCfg is one node override of cpu-burst-config.
//
// +kubebuilder:object:generate=true
type NodeCPUBurstCfg struct {
	NodeCfgProfile                `json:",inline"`
	*slov1alpha1.CPUBurstStrategy `json:",inline"`
}

// SystemCfg is the system-config key.
//
// +kubebuilder:object:generate=true
type SystemCfg struct {
	// ClusterStrategy applies to every node.
	ClusterStrategy *slov1alpha1.SystemStrategy `json:"clusterStrategy,omitempty"`
	// NodeStrategies override it for the nodes their selector matches; the first match wins.
	NodeStrategies []NodeSystemStrategy `json:"nodeStrategies,omitempty"`
}

// NodeSystemStrategy is one node override of system-config.
//
// +kubebuilder:object:generate=true
type NodeSystemStrategy struct {
	NodeCfgProfile              `json:",inline"`
	*slov1alpha1.SystemStrategy `json:",inline"`
}

// HostApplicationCfg is the host-application-config key. Lists are not merged: a matching node config's
// applications replace the cluster's.
//
// +kubebuilder:object:generate=true
type HostApplicationCfg struct {
	// Applications run on every node.
	Applications []slov1alpha1.HostApplicationSpec `json:"applications,omitempty"`
	// NodeConfigs replace Applications for the nodes their selector matches; the first match wins.
	NodeConfigs []NodeHostApplicationCfg `json:"nodeConfigs,omitempty"`
}

// NodeHostApplicationCfg is one node override of host-application-config.
//
// +kubebuilder:object:generate=true
type NodeHostApplicationCfg struct {
	NodeCfgProfile `json:",inline"`
	// Applications replace the cluster's list on the matching nodes; an empty list means none.
	Applications []slov1alpha1.HostApplicationSpec `json:"applications,omitempty"`
}
