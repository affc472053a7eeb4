//! The application wiring: the deployment config (the one owner of every deployment fact:
//! state dirs, workspace, deadlines, socket settings), `serve` (the sidecar: engine + doors +
//! sinks), and `doctor` (what this machine enforces). No door or sink logic lives here.
pub mod config;
pub mod doctor;
pub mod doctor_state;
pub mod explain;
pub mod fs_snapshot;
pub mod health;
pub mod node;
pub mod notify;
pub mod secret_file;
pub mod serve;
