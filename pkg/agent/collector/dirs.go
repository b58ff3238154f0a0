package collector

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// podDirs remembers the cgroup directories of pods and their containers between rounds: formatting them is the
// largest allocation of a round otherwise. Directories of pods not seen in a round are forgotten by retain.
type podDirs struct {
	layout cgroup.Layout
	pods   map[types.UID]string
	ctrs   map[string]string // container ID -> directory
	seen   map[types.UID]bool
	seenC  map[string]bool
}

func newPodDirs(l cgroup.Layout) *podDirs {
	return &podDirs{layout: l, pods: map[types.UID]string{}, ctrs: map[string]string{}, seen: map[types.UID]bool{}, seenC: map[string]bool{}}
}

// pod is the pod's cgroup directory.
func (d *podDirs) pod(m *statesinformer.PodMeta) string {
	d.seen[m.Pod.UID] = true
	dir, ok := d.pods[m.Pod.UID]
	if !ok {
		dir = d.layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		d.pods[m.Pod.UID] = dir
	}
	return dir
}

// container is the directory of the container with the given status container ID in podDir.
func (d *podDirs) container(podDir, containerID string) (string, error) {
	d.seenC[containerID] = true
	if dir, ok := d.ctrs[containerID]; ok {
		return dir, nil
	}
	dir, err := d.layout.ContainerDir(podDir, containerID)
	if err == nil {
		d.ctrs[containerID] = dir
	}
	return dir, err
}

// retain forgets what was not looked up since the last retain.
func (d *podDirs) retain() {
	for uid := range d.pods {
		if !d.seen[uid] {
			delete(d.pods, uid)
		}
	}
	for id := range d.ctrs {
		if !d.seenC[id] {
			delete(d.ctrs, id)
		}
	}
	clear(d.seen)
	clear(d.seenC)
}
