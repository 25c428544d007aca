//! The vendored copies under `tests/shared/` must stay byte-identical to
//! `../shared`, or a bare clone would test different inputs than a developer.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

/// Every file directly in `directory` (these folders are flat), by name.
fn contents(directory: &Path) -> BTreeMap<String, Vec<u8>> {
    let entries = std::fs::read_dir(directory)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", directory.display()));
    let mut files = BTreeMap::new();
    for entry in entries {
        let path = entry.expect("a readable folder entry").path();
        assert!(
            path.is_file(),
            "{} is not a flat folder: {} is not a file",
            directory.display(),
            path.display()
        );
        let name = path.file_name().expect("a named file");
        let bytes = std::fs::read(&path).expect("a readable file");
        files.insert(name.to_string_lossy().into_owned(), bytes);
    }
    files
}

/// Names of files that are missing on one side or differ in content.
fn drift(shared: &Path, vendored: &Path) -> Vec<String> {
    let shared = contents(shared);
    let vendored = contents(vendored);
    assert!(!shared.is_empty(), "the shared folder is empty");
    let names: std::collections::BTreeSet<&String> = shared.keys().chain(vendored.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| match (shared.get(name), vendored.get(name)) {
            (Some(_), None) => Some(format!("{name}: missing from the vendored copy")),
            (None, Some(_)) => Some(format!("{name}: only in the vendored copy")),
            (Some(a), Some(b)) if a != b => Some(format!("{name}: contents differ")),
            _ => None,
        })
        .collect()
}

#[test]
fn vendored_inputs_match_shared() {
    let Some(shared) = common::shared_root() else {
        // A bare clone has only the vendored copies: nothing to compare with.
        eprintln!("../shared is absent; the vendored copies are the inputs");
        return;
    };
    let vendored = common::vendored_root();
    let pairs = [
        (shared.join("scenarios"), vendored.join("scenarios")),
        (shared.join("fixtures/dsh-logs"), vendored.join("dsh-logs")),
        (
            shared.join("scenarios-restart"),
            vendored.join("scenarios-restart"),
        ),
        (
            shared.join("fixtures/dsh-restart-logs"),
            vendored.join("dsh-restart-logs"),
        ),
    ];
    let mut problems = Vec::new();
    for (shared, vendored) in &pairs {
        for problem in drift(shared, vendored) {
            problems.push(format!("{}: {problem}", common::display(vendored)));
        }
    }
    assert!(
        problems.is_empty(),
        "tests/shared drifted from ../shared (copy the shared folders again):\n{}",
        problems.join("\n")
    );
}

/// The fallback is what a bare clone tests: it must hold the same kinds of
/// inputs the lookup hands out.
#[test]
fn vendored_copies_exist() {
    let vendored = common::vendored_root();
    let scenarios = common::files_with_extension(&vendored.join("scenarios"), "txn");
    let logs = common::files_with_extension(&vendored.join("dsh-logs"), "jsonl");
    assert!(!scenarios.is_empty(), "no vendored scenarios");
    assert!(!logs.is_empty(), "no vendored dsh logs");
}
