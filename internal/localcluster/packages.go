package localcluster

// RuncPath and CNIBinDir are where Debian's runc and containernetworking-plugins packages install their programs;
// internal/hostpkg/packages.tsv lists both packages for the run and e2e targets.
const (
	RuncPath  = "/usr/sbin/runc"
	CNIBinDir = "/usr/lib/cni"
)
