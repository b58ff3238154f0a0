package qosmanager

import "fmt"

// Checks plugins compose in their Validate: each names the NodeSLO field it checks, so a refusal says exactly what
// is wrong. The manager's webhook refuses such values in the ConfigMap already; these checks guard the agent against
// a NodeSLO written by hand or by an older manager.

// CheckPercent returns an error when the percent field (a path such as
// "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent") is unset or outside [min, 100].
func CheckPercent(field string, v *int64, min int64) error { return CheckRange(field, v, min, 100) }

// CheckRange returns an error when v is unset or outside [min, max].
func CheckRange(field string, v *int64, min, max int64) error {
	switch {
	case v == nil:
		return fmt.Errorf("%s is unset", field)
	case *v < min || *v > max:
		return fmt.Errorf("%s is %d, outside [%d, %d]", field, *v, min, max)
	}
	return nil
}

// CheckOrder returns an error when lo is above hi; unset values are not compared.
func CheckOrder(loField string, lo *int64, hiField string, hi *int64) error {
	if lo != nil && hi != nil && *lo > *hi {
		return fmt.Errorf("%s (%d) is above %s (%d)", loField, *lo, hiField, *hi)
	}
	return nil
}
