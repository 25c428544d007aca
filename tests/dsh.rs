//! The differential test against dsh (adapters/dsh): `courier run --against
//! dsh` over the shared scenarios. dsh may differ only where SPEC Decision 3
//! says it does (dispose is final in the contract, not in dsh). Needs node and
//! the built adapter: skipped with a message when they are missing, unless
//! `COURIER_DSH_REQUIRED=1` (CI sets it once it has built the adapter).

mod common;

use std::collections::BTreeSet;

use common::{
    courier, files_with_extension, shared_restart_scenarios, shared_scenarios, stdout, workspace,
};

/// The scenarios Decision 3 expects dsh to fail: a send after dispose.
const DECISION_3: [&str; 3] = [
    "s033-disposed-never-latches.txn",
    "s089-context-during-disposal-parks.txn",
    "s127-dispose-drains-idle-run.txn",
];

/// Why the dsh run cannot happen here, if it cannot.
fn missing() -> Option<String> {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|output| output.status.success()) {
        return Some("node is not installed".to_owned());
    }
    let adapter = workspace().join("adapters/dsh");
    if adapter.join("dist/driver.mjs").is_file() {
        return None;
    }
    if !adapter.join("node_modules").is_dir() {
        return Some(
            "the dsh adapter is not built (npm ci && npm run build in adapters/dsh)".to_owned(),
        );
    }
    // Building the bundle needs dsh's pinned sources beside the checkout.
    let reference = std::env::var_os("COURIER_DSH_REFERENCE")
        .map_or_else(|| workspace().join("../shared/reference/dsh"), Into::into);
    (!reference.is_dir()).then(|| {
        format!(
            "the dsh reference sources are absent ({})",
            reference.display()
        )
    })
}

#[test]
fn dsh_differs_from_the_contract_only_by_decision_3() {
    if let Some(reason) = missing() {
        let required = std::env::var("COURIER_DSH_REQUIRED").is_ok_and(|value| value == "1");
        assert!(!required, "COURIER_DSH_REQUIRED=1 but {reason}");
        eprintln!("skipped: {reason}");
        return;
    }
    // The restart ones too: dsh's own persistence and resume path (SPEC §11).
    let mut files = files_with_extension(&shared_scenarios(), "txn");
    files.extend(files_with_extension(&shared_restart_scenarios(), "txn"));
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut arguments = vec!["run", "--against", "dsh"];
    arguments.extend(names.iter().map(String::as_str));
    let output = courier(&arguments);
    let text = stdout(&output);
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{text}\n{errors}"
    );
    let failed: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("FAIL "))
        .filter_map(|path| path.rsplit('/').next())
        .collect();
    let allowed: BTreeSet<&str> = DECISION_3.into_iter().collect();
    assert!(
        failed.is_subset(&allowed),
        "dsh differs beyond Decision 3:\n{text}"
    );
    eprintln!(
        "{} of {} shared scenarios match dsh",
        files.len() - failed.len(),
        files.len()
    );
}
