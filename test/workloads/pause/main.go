// Command pause is the process of every pod sandbox in the local cluster (tagged registry.k8s.io/pause:3.10): it
// holds the pod's namespaces, does nothing, and exits 0 on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
