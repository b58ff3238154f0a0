package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Bandwidth resolves one value of a NetworkQOS (or of a pod's AnnotationNetworkQOS) in bits per second: an integer
// is a percentage of total (0..100), a string a quantity of bits per second ("100M") or a percentage written "50%".
// Unset gives def. The error says what is wrong with the value, not where it is.
func Bandwidth(v *intstr.IntOrString, total, def uint64) (uint64, error) {
	if v == nil {
		return def, nil
	}
	if v.Type == intstr.Int {
		return percentOf(int64(v.IntVal), total)
	}
	if p, ok := strings.CutSuffix(v.StrVal, "%"); ok {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a percentage", v.StrVal)
		}
		return percentOf(n, total)
	}
	q, err := resource.ParseQuantity(v.StrVal)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a percentage nor a bandwidth in bits per second such as \"100M\"", v.StrVal)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s is negative", v.StrVal)
	}
	return uint64(q.Value()), nil
}

func percentOf(p int64, total uint64) (uint64, error) {
	if p < 0 || p > 100 {
		return 0, fmt.Errorf("%d is not a percentage in 0..100", p)
	}
	return total * uint64(p) / 100, nil
}
