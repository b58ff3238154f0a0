package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// httpServer serves a handler on an address as a Runnable.
type httpServer struct {
	name    string
	addr    string
	handler http.Handler
	// listen opens the listener (TLS for the metrics server); nil listens on plain TCP.
	listen func(ctx context.Context, addr string) (net.Listener, error)
	// shutdown bounds how long in-flight requests may take after a stop.
	shutdown time.Duration
}

func (s *httpServer) Name() string { return s.name }

// Start listens (an address in use is an error) and serves until ctx ends.
func (s *httpServer) Start(ctx context.Context) error {
	listen := s.listen
	if listen == nil {
		listen = func(_ context.Context, addr string) (net.Listener, error) {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return nil, fmt.Errorf("listening on %s: %w", addr, err)
			}
			return l, nil
		}
	}
	ln, err := listen(ctx, s.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping the server on %s: %w", s.addr, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
