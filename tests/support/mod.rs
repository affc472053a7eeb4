//! The test-support crate of the integration tests and benches (`use sanctum_test_support as
//! support;` in each): one file per topic, each helper written once. A crate of its own so it
//! is compiled once, not once per suite (tests/support/Cargo.toml). The fuzz crate compiles a
//! few of its files by path, hence `dead_code` and `unused_imports` are allowed here.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(dead_code, unused_imports)]
// Lints of a public library API that were not asked of these helpers while they were a
// private module: a fixture's `new()` sets up a world (no `Default` meant), and a reader's
// `next()` is a blocking read, not an iterator.
#![allow(clippy::new_without_default, clippy::should_implement_trait)]

/// Audit-log files as lines.
pub mod audit;
/// The side-by-side benches' figures: proxies' CPU time, rates and percentiles, knobs.
pub mod bench;
/// Real headless Chromium over WebDriver: the driver, a session, waits, clicks, screenshots.
pub mod browser;
/// Fixtures of the card tests: plugin and `exec` frames, a long script.
pub mod card;
/// Local servers speaking the push channels' APIs (ntfy, Telegram, a signed webhook).
pub mod channels;
/// The compose deployment under podman: images, the stack, commands inside its containers.
pub mod compose;
/// The compose and Kubernetes images: the base, the staged context, one build per context.
pub mod compose_images;
/// Agent turns in the compose deployment: New Tasks, what reached the model, a fan-out.
pub mod compose_turns;
/// Docker Compose v2 (the users' compose) and a private podman API service for it.
pub mod compose_v2;
/// The egress proxy as tests start it: upstreams, client exchanges, its audit records.
pub mod egress;
/// A raw gateway WebSocket client: an operator with its own device, raw frames.
pub mod gateway;
/// One guard deployment: OpenClaw's approvals document and the real `serve` on temp dirs.
pub mod guard;
/// Fixtures of the inbox tests: a gated request, its verdict, a human decision.
pub mod inbox;
/// The node's invoke handler in this process (no WebSocket).
pub mod inproc;
/// The Kubernetes manifests (deploy/k8s): read, schema-validated, held to the security policy.
pub mod kube;
/// The Kubernetes manifests played by podman: rendered for this machine, pods, teardown.
pub mod kube_play;
/// The oracle's mutation generator: expansions, quoting, wrappers, option spellings, payloads.
pub mod mutate;
/// The node: the real gateway, the scripted model, `sanctum-guard node`.
pub mod node;
/// OpenClaw's approvals formats: the sample document, effective policy on both sides.
pub mod openclaw;
/// The policy oracle: a world of marked secrets, the syscall recorder, claims against effects.
pub mod oracle;
/// Fixtures of the policy case files (tests/data/*.tsv).
pub mod policy;
/// A throwaway PostgreSQL server (fleet mode's shared store): start, stop, start again.
pub mod postgres;
/// Child processes: the guard binary, its CLI, kill-on-drop children, waiting for output.
pub mod process;
/// Fixtures of the read-proxy tests: loopback web servers (HTTP, HTTPS with a test CA),
/// counting internal listeners, the proxy with a test hosts file.
pub mod readproxy;
/// A coding session replayed through the policy and bounded grants: prompts counted.
pub mod replay;
/// Reviewer accounts made with the command line, and their login links.
pub mod reviewers;
/// Fixtures of the sandbox tests: the CLI, the compiled probe, a git workspace.
pub mod sandbox;
/// Clients of the exec-approvals socket: raw frames, signed `exec` frames, the real client.
pub mod socket;
/// The real Node and OpenClaw installed by tests/setup.sh: locating, running, calling its JS.
pub mod tools;
/// The web prompt: `serve` with its HTTP door, a minimal HTTP client, sign-in.
pub mod web;
