// Package deploy holds no code. Its tests keep the Kubernetes manifests
// of deploy/ (base/, overlays/) and the repository's Dockerfile honest: every object
// kustomize builds decodes strictly into its Kubernetes API type, the
// objects refer to each other consistently, and the Deployment passes only
// flags that `tributary serve` accepts.
//
// It is a module of its own so that kustomize's dependencies never reach
// the service's go.mod.
package deploy
