//! The Kubernetes manifests played by podman.
