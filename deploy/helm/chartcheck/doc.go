// Package chartcheck holds no code: its tests run helm's lint and template
// actions on deploy/helm/readside and check what they render (`make
// test-helm`, part of `make test`). A module of its own so readside's go.mod
// does not carry Helm and Kubernetes' client libraries; helm is pinned by
// this go.mod (helm.sh/helm/v3) and built from the module proxy.
package chartcheck
