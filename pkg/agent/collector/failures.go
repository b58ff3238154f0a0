package collector

import (
	"errors"
	"fmt"
	"io/fs"
)

// failures collects per-item errors of one round so one bad pod costs only its own sample. Unless strict, a cgroup
// that does not exist is not a failure: the pod has not started yet, or has just ended.
type failures struct {
	what   string
	strict bool
	failed int
	first  error
}

func (f *failures) add(item string, err error) {
	if err == nil || (!f.strict && errors.Is(err, fs.ErrNotExist)) {
		return
	}
	f.failed++
	if f.first == nil {
		f.first = fmt.Errorf("%s: %w", item, err)
	}
}

// err summarises the round: nil when nothing failed.
func (f *failures) err(total int) error {
	if f.failed == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d of %d failed, the first: %w", f.what, f.failed, total, f.first)
}
