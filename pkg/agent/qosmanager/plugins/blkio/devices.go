package blkio

import (
	"fmt"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/storage"
)

// resolve returns the devices block b caps, from the node's /sys at sysRoot: one disk for BlockDevice, the disks
// under a volume group's logical volumes for BlockVolumeGroup. BlockPodVolume is refused (see docs/qos.md).
func resolve(sysRoot string, b slov1alpha1.BlockCfg) ([]cgroup.Device, error) {
	switch b.Type {
	case slov1alpha1.BlockDevice:
		d, err := storage.Disk(sysRoot, b.Name)
		if err != nil {
			return nil, err
		}
		return []cgroup.Device{d}, nil
	case slov1alpha1.BlockVolumeGroup:
		return storage.VolumeGroupDisks(sysRoot, b.Name)
	case slov1alpha1.BlockPodVolume:
		return nil, fmt.Errorf("type %q is not supported: finding a pod volume's device needs its CSI driver's mount; name the device (type %q) instead",
			b.Type, slov1alpha1.BlockDevice)
	}
	return nil, fmt.Errorf("type %q is not one of %q, %q", b.Type, slov1alpha1.BlockDevice, slov1alpha1.BlockVolumeGroup)
}
