// Package storage describes a node's block devices and the file systems behind the kubelet's and the container
// runtime's directories, from sysfs and the host's mount table.
package storage
