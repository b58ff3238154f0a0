package manager

import (
	"context"

	"github.com/go-logr/logr"
)

// stopSequenceMsg is what controller-runtime logs for an error that arrives while the manager is already stopping.
// With LeaderElectionReleaseOnCancel, releasing the lease on a normal stop always produces one: the leader elector's
// OnStoppedLeading reports "leader election lost" whether the lease was lost or handed back.
const stopSequenceMsg = "error received after stop sequence was engaged"

// StopLogger returns logger with one change: once ctx is done (the manager was asked to stop), controller-runtime's
// "leader election lost" error for the lease it has just released is logged as what it is, an info line, instead of
// an error with a stack trace. A lease lost while running is not touched: the manager then stops with that error.
func StopLogger(ctx context.Context, logger logr.Logger) logr.Logger {
	sink := logger.GetSink()
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // this wrapper's own frame, so that callers are reported as before
	}
	return logr.New(&stopSink{LogSink: sink, ctx: ctx})
}

type stopSink struct {
	logr.LogSink
	ctx context.Context
}

func (s *stopSink) Error(err error, msg string, kv ...any) {
	if msg == stopSequenceMsg && err != nil && err.Error() == "leader election lost" && s.ctx.Err() != nil {
		s.Info(0, "released the leader lease on stop", kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s *stopSink) WithValues(kv ...any) logr.LogSink {
	return &stopSink{LogSink: s.LogSink.WithValues(kv...), ctx: s.ctx}
}

func (s *stopSink) WithName(name string) logr.LogSink {
	return &stopSink{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}
