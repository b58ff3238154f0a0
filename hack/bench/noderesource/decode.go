package main

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// decodeFloor measures, in this process, what the informer must spend on one NodeMetric update before any of the
// manager's own code runs: decoding the watch event's JSON envelope and the NodeMetric in it (CRDs are served as
// JSON; protobuf is for built-in kinds only) with the scheme's codecs, n times. It returns the CPU and the bytes
// allocated per decode.
func decodeFloor(pods []podRef, n int, report string) (time.Duration, uint64, int, error) {
	scheme := runtime.NewScheme()
	if err := slov1alpha1.AddToScheme(scheme); err != nil {
		return 0, 0, 0, err
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	nm := &slov1alpha1.NodeMetric{
		TypeMeta:   metav1.TypeMeta{APIVersion: slov1alpha1.GroupVersion.String(), Kind: "NodeMetric"},
		ObjectMeta: metav1.ObjectMeta{Name: nodeName(0), ResourceVersion: "12345", Generation: 1, UID: "4b1e6d2c-0000-4000-8000-000000000000"},
		Status:     metricStatus(pods, time.Now(), 0, report),
	}
	obj, err := json.Marshal(nm)
	if err != nil {
		return 0, 0, 0, err
	}
	event, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: obj}})
	if err != nil {
		return 0, 0, 0, err
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	decodeOne := func() error {
		var ev metav1.WatchEvent
		if err := json.Unmarshal(event, &ev); err != nil {
			return err
		}
		out := &slov1alpha1.NodeMetric{}
		_, _, err := decoder.Decode(ev.Object.Raw, nil, out)
		return err
	}
	if err := decodeOne(); err != nil {
		return 0, 0, 0, fmt.Errorf("decoding a NodeMetric watch event: %w", err)
	}
	goruntime.GC()
	var m0, m1 goruntime.MemStats
	goruntime.ReadMemStats(&m0)
	cpu0 := processCPU()
	for range n {
		if err := decodeOne(); err != nil {
			return 0, 0, 0, err
		}
	}
	cpu := processCPU() - cpu0
	goruntime.ReadMemStats(&m1)
	return cpu / time.Duration(n), (m1.TotalAlloc - m0.TotalAlloc) / uint64(n), len(event), nil
}

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
