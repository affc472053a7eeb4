//! The node decides on its own filesystem: with a sidecar decider that sees another
//! filesystem (here: another mount namespace, where the workspace path holds other files),
//! what the node sees where the command runs counts, and the stricter verdict wins. A
//! workspace symlink to a `.env` outside the workspace is never read autonomously.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::json;
use std::time::Duration;
use support::node::*;

const TOKEN: &str = "node-fs-token-0123456789abcdefghijk";
const SECRET: &str = "OPENAI_API_KEY=sk-node-fs-secret";

#[test]
fn a_workspace_link_to_a_dotenv_is_not_read_when_the_sidecar_sees_another_filesystem() {
    let w = World::full(TOKEN);
    let _serve = Serve::start(&w, &[], &[]);
    let dir = w.tmp.path().join("node");
    // What the node's mount namespace shows at `ws`: a link to a `.env` outside it. The
    // sidecar's namespace shows an empty directory there.
    let ws = dir.join("ws");
    let node_view = dir.join("node-view");
    let outside = dir.join("outside");
    for d in [&ws, &node_view, &outside] {
        std::fs::create_dir_all(d).expect("dir");
    }
    std::fs::write(outside.join(".env"), SECRET).expect("env");
    std::os::unix::fs::symlink(outside.join(".env"), node_view.join("notes.txt")).expect("link");
    let link = ws.join("notes.txt");
    let params = json!({"command":["cat", link],"cwd":ws,"agentId":"main",
        "sessionKey":"agent:main:main","runId":"run-fs"});
    let gw = OneInvokeGateway::start(params);
    let (sock, oc) = (
        w.socket().to_str().expect("utf8").to_owned(),
        w.oc_state.to_str().expect("utf8").to_owned(),
    );
    let bind = format!(
        "mount --bind {} {} && exec \"$@\"",
        node_view.display(),
        ws.display()
    );
    let node = NodeProc::start_wrapped(
        &[
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            &bind,
            "sh",
        ],
        &dir,
        gw.port,
        &dir.join("node-state"),
        &ws,
        &["--decider", &sock, "--openclaw-state", &oc],
    );
    let r = gw.wait_result(Duration::from_secs(60));
    assert!(
        !r.to_string().contains("sk-node-fs-secret"),
        "the .env was read: {r}\n{}",
        node.log()
    );
    assert_eq!(r["ok"], false, "{r}\n{}", node.log());
    assert!(
        r.to_string().contains("SYSTEM_RUN_DENIED"),
        "{r}\n{}",
        node.log()
    );
    gw.drop_connection();
}
