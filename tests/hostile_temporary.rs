//! The temporary files every write goes through (`courier::files`): named
//! `.NAME.PID.N.tmp`, unique per process and per write, so a stale one
//! left by a process killed mid-write never blocks a later write, is never
//! taken over, and two writers never share one. Its own test binary, so
//! this process's count of temporary files starts at 0 and the stale names
//! below are the very names it would try first.

use std::path::Path;

/// The files in `folder`, sorted.
fn listing(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("a readable folder")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn never_destroy_a_stale_temporary_file_neither_blocks_nor_is_taken() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let target = folder.path().join("t.txn");
    std::fs::write(&target, "old").expect("a writable file");
    // What this process would have used had it been killed mid-write
    // before (a pid is reused): the first ten names it tries.
    let pid = std::process::id();
    let stale: Vec<String> = (0..10).map(|n| format!(".t.txn.{pid}.{n}.tmp")).collect();
    for name in &stale {
        std::fs::write(folder.path().join(name), "not ours").expect("a writable file");
    }
    // Two writers at once, each through a temporary file of its own.
    std::thread::scope(|scope| {
        for text in ["one", "two"] {
            let target = &target;
            scope.spawn(move || courier::files::replace(target, text).expect("the write"));
        }
    });
    let written = std::fs::read_to_string(&target).expect("the target");
    assert!(written == "one" || written == "two", "{written}");
    for name in &stale {
        let kept = std::fs::read_to_string(folder.path().join(name)).expect("the stale file");
        assert_eq!(kept, "not ours", "{name}");
    }
    // Nothing else is left behind.
    let mut expected = stale;
    expected.push("t.txn".to_owned());
    expected.sort();
    assert_eq!(listing(folder.path()), expected);
}

/// A target whose name is as long as a file system allows still gets a
/// temporary file beside it (its name cut to fit). Before,
/// `diagram t.txn --out <250 d's>.svg` failed with `File name too long`.
#[test]
fn never_destroy_a_name_as_long_as_allowed_is_written() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let target = folder.path().join(format!("{}.svg", "é".repeat(125)));
    courier::files::replace(&target, "drawn").expect("the write");
    assert_eq!(
        std::fs::read_to_string(&target).expect("the target"),
        "drawn"
    );
    assert_eq!(listing(folder.path()).len(), 1);
}
