package qosmanagertest

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Log records the lines of a logger, for tests of what a plugin says (and how often).
type Log struct {
	mu  sync.Mutex
	all []string
}

// Logger returns a logger that records into l.
func (l *Log) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, prefix+" "+args)
	}, funcr.Options{})
}

// Count is how many lines contain s.
func (l *Log) Count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.all {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// String is every line, one per line.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}
