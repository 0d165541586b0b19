//go:build tools

// Package kubernetes pins the Kubernetes API server and etcd that the
// adapter's end-to-end tests run (make tools builds them into bin/). Its
// go.mod is a module of its own, so these versions never move the
// service's dependencies.
package kubernetes

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
)
