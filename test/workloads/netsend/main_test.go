package main

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

func TestSendStreamsUntilCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	sent, _ := send(ctx, ln.Addr().String())
	received := <-got
	if sent < 1<<20 || received != sent {
		t.Fatalf("sent %d bytes, the listener received %d; want at least 1 MiB, all of it received", sent, received)
	}
}

func TestSendSaysWhenNobodyListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	if _, err := send(context.Background(), addr); err == nil {
		t.Fatal("sending to a closed port succeeded")
	}
}
