// Command etcd is etcd's own server entry point, built from the
// go.etcd.io/etcd/server/v3 module pinned in go.mod (the release Kubernetes
// itself is tested with).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
