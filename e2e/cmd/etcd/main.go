// Command etcd is etcd's own server, built from go.etcd.io/etcd/server/v3 at
// the version Kubernetes' go.mod requires, for the end-to-end tests' control
// plane (Debian's etcd 3.4 lacks a watch feature kube-apiserver needs).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
