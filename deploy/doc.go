// Package deploy holds no code: it is the home of readside's deployment
// files (Dockerfile, compose, Kubernetes manifests, Prometheus rules, the
// Grafana dashboard) and of the tests that parse and cross-check them
// without a Docker engine, a cluster or a Prometheus (docs/operations.md,
// "Deploying").
package deploy
