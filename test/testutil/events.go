package testutil

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Events records events as the agent's event recorders are asked to (the QoS manager's and the runtime hook's
// EventRecorder), for tests to read: each as "NAME TYPE REASON: MESSAGE", NAME being the object's name. It is safe
// for concurrent use.
type Events struct {
	mu   sync.Mutex
	list []string
}

// Eventf records one event.
func (e *Events) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	name := ""
	if m, err := meta.Accessor(obj); err == nil {
		name = m.GetName()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf("%s %s %s: %s", name, eventtype, reason, fmt.Sprintf(messageFmt, args...)))
}

// List is the events recorded so far, in order.
func (e *Events) List() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}
