//! Audit-log files as lines, for tests that read, edit and rewrite them as an attacker would.

use std::path::Path;

/// The log's lines (the file must exist).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read audit log")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Rewrites the log as `lines`, each ended by a newline.
pub fn write_lines(path: &Path, lines: &[String]) {
    let mut s = lines.join("\n");
    s.push('\n');
    std::fs::write(path, s).expect("write audit log");
}
