//! The compose and Kubernetes suites' images: the Debian base, the staged build context
//! (the guard binary under test, the tests' Node and OpenClaw), and the three images built
//! from it once per context.

use super::compose::{repo, run, BASE_IMAGE, IMAGES, OPENCLAW};
use super::process::guard_bin;
use super::tools::cache;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `localhost/debian:bookworm` from debootstrap (minbase), unless it exists
/// (tests/images.sh, the one recipe; tests/run has usually made it while cargo compiled).
pub fn base_image() {
    run(Command::new(repo().join("tests/images.sh"))
        .arg("base")
        .stdout(Stdio::null()));
}

/// A build context with only what the Dockerfiles read: the sources they copy, the guard
/// binary under test at `target/release/sanctum-guard` and the tests' Node and OpenClaw
/// (hard links where the filesystem allows: no copy of the large trees).
pub fn stage_context(dir: &Path) -> PathBuf {
    let ctx = dir.join("context");
    std::fs::create_dir_all(ctx.join("target/release")).unwrap();
    std::fs::create_dir_all(ctx.join(".cache")).unwrap();
    for d in ["docker", "compose", "seccomp", "plugin"] {
        if repo().join(d).exists() {
            run(Command::new("cp").arg("-a").arg(repo().join(d)).arg(&ctx));
        }
    }
    std::fs::copy(repo().join(".dockerignore"), ctx.join(".dockerignore")).unwrap();
    // As the image's build stage ships it: without symbols (the guard image stays < 20 MiB).
    let bin = ctx.join("target/release/sanctum-guard");
    std::fs::copy(guard_bin(), &bin).unwrap();
    run(Command::new("strip").arg("--strip-all").arg(&bin));
    for d in ["node".to_owned(), format!("openclaw-{OPENCLAW}")] {
        let from = cache().join(&d);
        assert!(
            from.exists(),
            "{} missing: run tests/setup.sh",
            from.display()
        );
        let linked = Command::new("cp")
            .arg("-al")
            .arg(&from)
            .arg(ctx.join(".cache"))
            .status()
            .unwrap();
        if !linked.success() {
            run(Command::new("cp")
                .arg("-a")
                .arg(&from)
                .arg(ctx.join(".cache")));
        }
    }
    ctx
}

/// The label that names what an image was built from ([`context_key`]).
const CONTEXT_LABEL: &str = "sanctum.test-context";

/// Builds the three images from `ctx` with the tests' build arguments, unless each already
/// carries `ctx`'s [`context_key`]: the compose and Kubernetes suites build the same images
/// in one run, and podman's own cache check of the agent image hashes OpenClaw's 41,000
/// files (34 s) before it finds nothing to do. tests/run removes the images first, so a run
/// builds them once itself.
pub fn build_images(ctx: &Path) {
    let key = context_key(ctx);
    let built = IMAGES.iter().all(|(tag, _)| {
        let label = Command::new("podman")
            .args(["image", "inspect", "--format"])
            .arg(format!("{{{{index .Labels \"{CONTEXT_LABEL}\"}}}}"))
            .arg(tag)
            .output();
        label.is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == key)
    });
    if built {
        return;
    }
    for (tag, file) in IMAGES {
        run(Command::new("podman")
            .args(["build", "-q", "-f", file, "-t", tag])
            .args(["--build-arg", &format!("BASE_IMAGE={BASE_IMAGE}")])
            .args(["--build-arg", "GUARD_BIN=context"])
            .args(["--build-arg", "OPENCLAW_FROM=context"])
            .args(["--label", &format!("{CONTEXT_LABEL}={key}")])
            .arg(ctx)
            .stdout(Stdio::null()));
    }
}

/// A digest of everything the images are built from: the base image's id, and every file of
/// the staged context by path and content, but for the Node and OpenClaw trees under
/// `.cache`, installed by version, taken by path, size and modification time, and `compose/`,
/// which no Dockerfile copies in the tests' `context` builds (a stack writes its own files
/// there: its model config, certificates, a site).
fn context_key(ctx: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let base =
        run(Command::new("podman").args(["image", "inspect", "--format", "{{.Id}}", BASE_IMAGE]));
    h.update(&base.stdout);
    let mut files = Vec::new();
    walk(ctx, &mut files);
    files.retain(|f| !f.strip_prefix(ctx).is_ok_and(|r| r.starts_with("compose")));
    files.sort();
    for f in files {
        let meta = std::fs::symlink_metadata(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let rel = f.strip_prefix(ctx).unwrap_or(&f);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0]);
        if meta.file_type().is_symlink() {
            h.update(
                std::fs::read_link(&f)
                    .unwrap_or_default()
                    .as_os_str()
                    .as_encoded_bytes(),
            );
        } else if rel.starts_with(".cache") {
            use std::os::unix::fs::MetadataExt;
            h.update(meta.size().to_le_bytes());
            h.update(meta.mtime().to_le_bytes());
            h.update(meta.mtime_nsec().to_le_bytes());
        } else {
            h.update(std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// Every file and symlink under `dir`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.expect("dir entry");
        let path = entry.path();
        if entry.file_type().expect("file type").is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Bytes of an image as podman reports them.
pub fn image_size(tag: &str) -> u64 {
    let out = run(Command::new("podman").args(["image", "inspect", "--format", "{{.Size}}", tag]));
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}
