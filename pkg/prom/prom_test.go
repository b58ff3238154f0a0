package prom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	second.Inc()
	if first != second {
		t.Fatal("a second registration must return the collector registered first")
	}
	// Same name, different labels: a real conflict, reported.
	_, err = Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"node"}))
	if err == nil || !strings.Contains(err.Error(), "registering Prometheus collector") {
		t.Fatalf("want a registration error, got %v", err)
	}
}
