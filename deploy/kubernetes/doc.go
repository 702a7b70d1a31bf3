// Package kubernetes holds no code: it is the module of the Kubernetes
// manifests that run xdsconform load sharded over an Indexed Job (base/,
// overlays/example/), and of their test, which builds them with kustomize
// and decodes every object strictly into its Kubernetes API type. A module
// of its own, so that importers of the suite never carry the Kubernetes
// and kustomize dependencies.
package kubernetes
