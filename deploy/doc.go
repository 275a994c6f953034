// Package deploy holds no code: the Dockerfile, the systemd unit and the
// Kubernetes manifests live beside this file, and its test checks them for
// the keys a safe deployment needs (this machine has no Docker engine or
// Kubernetes API to try them on).
package deploy
