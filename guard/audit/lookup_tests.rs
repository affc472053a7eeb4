use super::*;
use crate::audit::{AuditLog, AuditOptions, KEY_FILE};
use serde_json::json;

/// A keyed log of `n` records (`{"n": i}`) in a temp dir; the stamps the writer returned.
fn log_of(n: u64, rotate_bytes: u64) -> (tempfile::TempDir, PathBuf, Vec<super::super::Stamp>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("audit.jsonl");
    let opts = AuditOptions {
        key_path: None,
        rotate_bytes,
    };
    let (log, _) = AuditLog::open_with(&path, &opts).expect("open");
    let stamps = (1..=n)
        .map(|i| {
            log.append_stamped(crate::audit::AuditEvent::Startup(
                crate::audit::event::Startup {
                    pid: u32::try_from(i).expect("small"),
                    socket: PathBuf::from("/s"),
                    state_dir: PathBuf::from("/d"),
                    openclaw_store: PathBuf::from("/o"),
                    policy: "p".into(),
                    expired_at_start: 0,
                    version: "t",
                },
            ))
            .expect("append")
        })
        .collect();
    drop(log);
    (dir, path, stamps)
}

fn key(dir: &tempfile::TempDir) -> AuditKey {
    AuditKey::load(&dir.path().join(KEY_FILE)).expect("key")
}

#[test]
fn finds_the_record_the_writer_stamped_and_the_chain_vouches_for_it() {
    let (dir, path, stamps) = log_of(5, 0);
    let k = key(&dir);
    for s in &stamps {
        let f = lookup(&path, Some(&k), s.seq)
            .expect("lookup")
            .expect("found");
        assert_eq!(f.hash, s.hash, "the stamp is the line's hash");
        assert_eq!(f.hash, line_hash(f.line.as_bytes()));
        assert_eq!(f.record["seq"], json!(s.seq));
        assert_eq!(f.record["kind"], "startup");
        assert_eq!(
            f.chain,
            ChainCheck {
                intact: true,
                from: 1,
                keyed: true,
                anchored: true,
                broken: None
            },
            "seq {}",
            s.seq
        );
    }
    assert!(lookup(&path, Some(&k), 6).expect("lookup").is_none());
    assert!(lookup(&path, Some(&k), 0).expect("lookup").is_none());
    // Without the key the chain is checked, but proves less and anchors nothing.
    let f = lookup(&path, None, 3).expect("lookup").expect("found");
    assert!(f.chain.intact && !f.chain.keyed && !f.chain.anchored);
}

/// Table: what each change to the file does to the check of records 2, 3 and 4.
#[test]
fn a_changed_log_says_so_at_the_record() {
    type Change = fn(&mut Vec<String>);
    let edit_3: Change = |lines| lines[2] = lines[2].replace("\"pid\":3", "\"pid\":9");
    let drop_5: Change = |lines| {
        lines.pop();
    };
    let swap_34: Change = |lines| lines.swap(2, 3);
    // (change, [(seq, intact, anchored)], what the first break says)
    type Row = (&'static str, Change, [(u64, bool, bool); 3], &'static str);
    let table: [Row; 3] = [
        (
            "record 3 edited",
            edit_3,
            [(2, true, false), (3, false, false), (4, false, false)],
            "not sealed",
        ),
        (
            "the newest record cut off",
            drop_5,
            [(2, true, false), (3, true, false), (4, true, false)],
            "cut off",
        ),
        (
            "records 3 and 4 swapped",
            swap_34,
            [(2, false, false), (3, false, false), (4, false, false)],
            "prev",
        ),
    ];
    for (name, change, want, what) in table {
        let (dir, path, stamps) = log_of(5, 0);
        let text = std::fs::read_to_string(&path).expect("read");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        change(&mut lines);
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let k = key(&dir);
        for (seq, intact, anchored) in want {
            let f = lookup(&path, Some(&k), seq)
                .expect("lookup")
                .expect("found");
            assert_eq!(
                (f.chain.intact, f.chain.anchored),
                (intact, anchored),
                "{name}: seq {seq}: {:?}",
                f.chain
            );
            let b = f.chain.broken.expect("a break is named");
            assert!(b.what.contains(what), "{name}: {b:?}");
            if seq == 3 && name.contains("edited") {
                assert_ne!(f.hash, stamps[2].hash, "an edited line has another hash");
            }
        }
    }
}

#[test]
fn finds_records_in_rotated_files_as_one_chain() {
    let (dir, path, stamps) = log_of(40, 2_000);
    let files = log_files(&path).expect("files");
    assert!(files.len() > 2, "{files:?}");
    assert_eq!(files.last(), Some(&path), "the live file is last");
    let k = key(&dir);
    let first = lookup(&path, Some(&k), 1).expect("lookup").expect("found");
    assert_ne!(first.file, path, "seq 1 is in an archive");
    assert_eq!(first.hash, stamps[0].hash);
    assert!(
        first.chain.intact && first.chain.anchored,
        "{:?}",
        first.chain
    );
    // An archive gone: the chain starts later, and the lost records are not found.
    std::fs::remove_file(&files[0]).expect("rm");
    assert!(lookup(&path, Some(&k), 1).expect("lookup").is_none());
    let last = stamps.last().expect("stamps");
    let f = lookup(&path, Some(&k), last.seq)
        .expect("lookup")
        .expect("found");
    assert!(f.chain.from > 1, "{:?}", f.chain);
    assert!(f.chain.intact && f.chain.anchored, "{:?}", f.chain);
}
