//! Helpers shared by the integration tests: where the shared inputs live and
//! how to list transcript files deterministically.
//!
//! Each test binary compiles this module on its own and uses only part of it,
//! so unused items are expected here.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use courier_core::Agent;
use courier_core::log::{SessionHeader, durable_line};
use courier_core::transcript::{Runner, Script};

/// The workspace root: the nearest folder above the compiling package that
/// holds `Cargo.lock` (member crates include this module too).
pub(crate) fn workspace() -> &'static Path {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .find(|folder| folder.join("Cargo.lock").is_file())
        .unwrap_or(package)
}

/// `<workspace>/../shared`, when the project's shared folder sits next to the
/// checkout (it does on developer machines and in CI, not on a bare clone).
pub(crate) fn shared_root() -> Option<PathBuf> {
    let root = workspace().join("../shared");
    root.is_dir().then_some(root)
}

/// The vendored copies that stand in for `../shared` on a bare clone.
pub(crate) fn vendored_root() -> PathBuf {
    workspace().join("tests/shared")
}

/// The shared scenarios: `../shared/scenarios`, else the vendored copy.
pub(crate) fn shared_scenarios() -> PathBuf {
    match shared_root() {
        Some(root) => root.join("scenarios"),
        None => vendored_root().join("scenarios"),
    }
}

/// The shared restart scenarios (SPEC §11): `../shared/scenarios-restart`,
/// else the vendored copy.
pub(crate) fn shared_restart_scenarios() -> PathBuf {
    match shared_root() {
        Some(root) => root.join("scenarios-restart"),
        None => vendored_root().join("scenarios-restart"),
    }
}

/// The logs dsh wrote across crashes and resumes:
/// `../shared/fixtures/dsh-restart-logs`, else the vendored copy.
pub(crate) fn dsh_restart_logs() -> PathBuf {
    match shared_root() {
        Some(root) => root.join("fixtures/dsh-restart-logs"),
        None => vendored_root().join("dsh-restart-logs"),
    }
}

/// The recorded dsh logs: `../shared/fixtures/dsh-logs`, else the vendored copy.
pub(crate) fn dsh_logs() -> PathBuf {
    match shared_root() {
        Some(root) => root.join("fixtures/dsh-logs"),
        None => vendored_root().join("dsh-logs"),
    }
}

/// The project's own scenario folders (`tests/regressions` may not exist yet).
pub(crate) fn project_scenario_dirs() -> Vec<PathBuf> {
    vec![
        workspace().join("tests/scenarios"),
        workspace().join("tests/regressions"),
    ]
}

/// The files of `directory` ending in `.extension`, sorted by path so every
/// run visits them in the same order; a missing folder lists nothing.
pub(crate) fn files_with_extension(directory: &Path, extension: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable folder entry").path())
        .filter(|path| path.is_file())
        .filter(|path| path.extension().is_some_and(|found| found == extension))
        .collect();
    files.sort();
    files
}

/// Every transcript the transcript test runs: the shared ones (restart
/// scenarios too), then the project's, each folder sorted.
pub(crate) fn all_transcripts() -> Vec<PathBuf> {
    let mut files = files_with_extension(&shared_scenarios(), "txn");
    files.extend(files_with_extension(&shared_restart_scenarios(), "txn"));
    for directory in project_scenario_dirs() {
        files.extend(files_with_extension(&directory, "txn"));
    }
    files
}

/// A path relative to the workspace when it is inside it, for short messages.
pub(crate) fn display(path: &Path) -> String {
    let shown = path.strip_prefix(workspace()).unwrap_or(path);
    shown.display().to_string()
}

/// Runs the built `courier` binary in the workspace root. (`option_env!`:
/// member crates' tests include this module too, without the binary.)
pub(crate) fn courier(arguments: &[&str]) -> std::process::Output {
    let binary = option_env!("CARGO_BIN_EXE_courier");
    std::process::Command::new(binary.expect("only the courier package's tests run it"))
        .args(arguments)
        .current_dir(workspace())
        .output()
        .expect("the courier binary runs")
}

/// A command's standard output as text.
pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A transcript that passes on the correct core.
pub(crate) const PASSING: &str = "\
# a followup starts turn 1 and claims its message
followup A
----
spliced next-turn@0 +A
~inserted A
~status running
turn/start 1
spliced next-turn@0 -1
~claimed A 1

run
----
step/start 1.1
user/message A
step/end 1.1
turn/end 1 completed
~status idle
";

/// The durable log of one transcript run on a fresh core agent.
pub(crate) fn scenario_log(file: &Path) -> String {
    let script = Script::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut runner = Runner::new(Agent::new());
    for block in script.blocks() {
        runner.execute(&block.command).expect("`run` reaches idle");
    }
    let mut log = SessionHeader::new(display(file)).line() + "\n";
    for line in runner.log().iter().filter_map(durable_line) {
        log.push_str(&line);
        log.push('\n');
    }
    log
}
