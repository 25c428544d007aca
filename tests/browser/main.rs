//! The pictures in a real browser: headless Debian Chromium, driven through
//! chromedriver, renders a `courier diagram` SVG (and, with the model,
//! `courier explore`). Screenshots land in `target/browser/`.
//!
//! `.ci/run` installs `chromium` and `chromium-driver` and sets
//! `COURIER_BROWSER_REQUIRED=1`; without them (and without that variable)
//! the test is skipped with a message saying so.

mod webdriver;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use courier::diagram::Lane;
use webdriver::Driver;

/// Chromium and chromedriver, or `None` (after saying why) when this
/// machine has neither and nothing asked for them.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|folder| folder.join(name))
            .find(|candidate| candidate.is_file())
    };
    if let (Some(chromium), Some(chromedriver)) = (find("chromium"), find("chromedriver")) {
        return Some((chromium, chromedriver));
    }
    assert!(
        std::env::var_os("COURIER_BROWSER_REQUIRED").is_none(),
        "COURIER_BROWSER_REQUIRED is set but chromium or chromedriver is not on PATH"
    );
    // Straight to stderr, past the test harness's capture, so the skip shows.
    let _ = writeln!(
        std::io::stderr(),
        "browser test SKIPPED: no `chromium` / `chromedriver` on PATH \
         (`.ci/run` installs Debian's chromium and chromium-driver)"
    );
    None
}

/// `target/browser/`, created fresh for this run's screenshots.
fn output_folder() -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("browser");
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// A fresh, empty Chromium profile folder.
fn profile(output: &Path, name: &str) -> PathBuf {
    let folder = output.join(format!("profile-{name}"));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

fn courier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_courier"))
}

#[test]
fn a_diagram_renders_in_chromium_with_its_lanes() {
    let Some((chromium, chromedriver)) = browser() else {
        return;
    };
    let output = output_folder();
    let svg = output.join("m01-no-latch.svg");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shared/scenarios/m01-no-latch.txn");
    let mut diagram = courier();
    diagram.arg("diagram").arg(&scenario).arg("--out").arg(&svg);
    if cfg!(feature = "mutants") {
        diagram.args(["--mutant", "no-latch"]);
    }
    let ran = diagram.output().unwrap();
    let printed = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "courier diagram failed: {ran:?}");
    assert_eq!(printed.trim(), format!("diagram: {}", svg.display()));

    let driver = Driver::start(&chromedriver);
    let session = driver.session(&chromium, &profile(&output, "diagram"));
    session.goto(&format!("file://{}", svg.display()));
    let root = session.script("return document.documentElement.tagName");
    assert_eq!(root, "svg", "the file did not load as an SVG document");
    let errors = session.script("return document.getElementsByTagName('parsererror').length");
    assert_eq!(errors, 0, "Chromium found XML errors in the SVG");
    let lanes = session.wait_for_script(
        "the lane titles",
        "const titles = Array.from(document.querySelectorAll('text.lane'), t => t.textContent);\
         return titles.length ? titles : null",
    );
    let expected: Vec<&str> = Lane::ALL.iter().map(|lane| lane.title()).collect();
    assert_eq!(lanes, serde_json::json!(expected));
    let body = session.script("return document.documentElement.textContent");
    assert!(body.as_str().unwrap().contains("followup B"), "{body}");
    if cfg!(feature = "mutants") {
        assert!(
            body.as_str()
                .unwrap()
                .contains("BROKEN here: no-lost-wakeup"),
            "{body}"
        );
    }
    session.screenshot(&output.join("diagram.png"));
}
