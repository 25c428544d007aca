//! The differential test against dsh (adapters/dsh): `courier run --against
//! dsh` over the shared scenarios. dsh may differ only where a named rule
//! (src/cli/rules.rs) explains it: Decision 3, dispose is final in the
//! contract, not in dsh. Needs node and
//! the built adapter: skipped with a message when they are missing, unless
//! `COURIER_DSH_REQUIRED=1` (CI sets it once it has built the adapter).

mod common;

use common::{
    courier, files_with_extension, shared_restart_scenarios, shared_scenarios, stdout, workspace,
};

/// Divergences per named rule over the shared scenarios and restart ones:
/// only Decision 3 (a send after dispose) parts them from dsh.
const EXPECTED_COUNTS: [(&str, usize); 3] = [
    ("decision-3-dispose-is-final", 3),
    ("decision-5-tool-calls-after-max-tokens", 0),
    ("unexplained", 0),
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
fn every_shared_scenario_matches_dsh_or_is_explained_by_a_named_rule() {
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
    assert_eq!(output.status.code(), Some(0), "{text}\n{errors}");
    let failed = text
        .lines()
        .filter(|line| line.starts_with("FAIL "))
        .count();
    for (rule, count) in EXPECTED_COUNTS {
        assert!(
            text.contains(&format!("\n  {rule}: {count}\n")),
            "expected {count} divergences under {rule}:\n{text}"
        );
    }
    eprintln!(
        "{} of {} shared scenarios match dsh",
        files.len() - failed,
        files.len()
    );
}
