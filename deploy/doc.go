// Package deploy holds no code: the Dockerfile, the systemd unit and the
// Kubernetes manifests live beside this file, and its test checks them for
// the keys a safe deployment needs (this machine has no Docker engine or
// Kubernetes API to try them on). So do the operator's kit, the Prometheus
// alert rules (run through promtool) and the Grafana dashboard.
package deploy
