package runtimehook

// Features returns the hook's features, in the order their values are merged (a later feature's field replaces an
// earlier one's). Adding a feature (network classes, per-pod QoS) is one file implementing PodFeature
// or ContainerFeature and one line here; nri.go and reconciler.go do not change.
func Features() []FeatureFactory {
	return []FeatureFactory{
		{Name: TierFeatureName, New: newTierFeature},
		{Name: CPUSetFeatureName, New: newCPUSetFeature},
		{Name: OOMScoreFeatureName, New: newOOMFeature},
	}
}
