//! The pictures in a real browser: headless Debian Chromium, driven through
//! chromedriver, drives the Explorer that `courier explore` serves and
//! renders a `courier diagram` SVG. Screenshots land in `target/browser/`.
//!
//! `.ci/run` installs `chromium` and `chromium-driver` and sets
//! `COURIER_BROWSER_REQUIRED=1`; without them (and without that variable)
//! the test is skipped with a message saying so.

mod webdriver;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use courier::diagram::Lane;
use courier_model::VacuityGoal;
use webdriver::{DEADLINE, Driver, Running, Session, free_port, wait_for};

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

/// The Explorer's state text (the "Current State" panel).
const STATE_TEXT: &str =
    "return document.querySelector('section.main-flex-right div.font-small').textContent";

#[test]
fn the_explorer_lists_the_properties_and_follows_an_action() {
    let Some((chromium, chromedriver)) = browser() else {
        return;
    };
    let output = output_folder();
    let (mut explorer, lines, url) = start_explorer();
    let driver = Driver::start(&chromedriver);
    let session = driver.session(&chromium, &profile(&output, "explorer"));
    session.goto(&url);
    lists_the_properties(&session);
    follows_init_then_followup(&session);
    runs_to_completion(&session);
    session.screenshot(&output.join("explorer.png"));
    stop_with_ctrl_c(&mut explorer, &lines);
}

/// `courier explore` on a free port, its printed lines, and the address it
/// announced.
fn start_explorer() -> (Running, mpsc::Receiver<String>, String) {
    let port = free_port();
    let mut explorer = Running(
        courier()
            .args(["explore", "--messages", "2", "--port", &port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = printed_lines(&mut explorer);
    let url = format!("http://127.0.0.1:{port}/");
    let announced = wait_for("the Explorer's address", || {
        lines
            .recv_timeout(DEADLINE)
            .ok()
            .filter(|line| line.starts_with("Explorer:"))
    });
    assert_eq!(announced, format!("Explorer: {url} (Ctrl-C stops it)"));
    (explorer, lines, url)
}

/// The sidebar names every checked property and every vacuity goal.
fn lists_the_properties(session: &Session<'_>) {
    let listed = session.wait_for_script(
        "the property list",
        "const names = Array.from(document.querySelectorAll('nav h3 + ul li .font-code'),\
         e => e.textContent.trim());\
         return names.length ? names : null",
    );
    let listed: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut expected: Vec<String> = courier_model::checked_properties()
        .map(|property| format!("Always {property}"))
        .collect();
    expected.extend(VacuityGoal::ALL.map(|goal| format!("Sometimes {goal}")));
    assert_eq!(listed, expected);
}

/// Clicking the initial state shows an idle agent; clicking `followup`
/// shows the message awaiting its pre-step.
fn follows_init_then_followup(session: &Session<'_>) {
    session.click("//a[normalize-space()='Init 0']");
    let initial = session.wait_for_script(
        "the initial state",
        &format!(
            "const text = (function() {{ {STATE_TEXT} }})();\
                  return text.startsWith('phase') ? text : null"
        ),
    );
    let initial = initial.as_str().unwrap().to_owned();
    for line in [
        "phase      idle",
        "next-turn  -",
        "next-step  -",
        "owed       -",
    ] {
        assert!(initial.contains(line), "no `{line}` in:\n{initial}");
    }
    session.click("//a[starts-with(normalize-space(), 'followup')]");
    let followed = session.wait_for_script(
        "the state after `followup`",
        &format!(
            "const text = (function() {{ {STATE_TEXT} }})();\
                  return text.startsWith('followup A') ? text : null"
        ),
    );
    let followed = followed.as_str().unwrap();
    assert_ne!(followed, initial);
    assert!(
        followed.contains("awaiting pre-step with [A]"),
        "{followed}"
    );
    assert_eq!(session.script("return window.location.hash"), "#/steps/0/0");
}

/// Checks the whole space; each property's status then says how it ended.
fn runs_to_completion(session: &Session<'_>) {
    session.click("//button[normalize-space()='Run to completion']");
    let statuses = session.wait_for_script(
        "every property's final status",
        "const rows = Array.from(document.querySelectorAll('nav h3 + ul li'),\
         li => li.textContent.replace(/\\s+/g, ' ').trim());\
         return rows.length && rows.every(r => !r.includes('Searching')) ? rows : null",
    );
    let statuses: Vec<&str> = statuses
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for property in courier_model::checked_properties() {
        let row = format!("Safety holds: Always {property}");
        assert!(
            statuses.iter().any(|status| status.ends_with(&row)),
            "no `{row}` in {statuses:#?}"
        );
    }
}

/// Every line the child prints, as it prints them.
fn printed_lines(child: &mut Running) -> mpsc::Receiver<String> {
    let stdout = child.0.stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// SIGINT (what Ctrl-C sends) stops the Explorer with exit 0.
fn stop_with_ctrl_c(explorer: &mut Running, lines: &mpsc::Receiver<String>) {
    let pid = explorer.0.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let status = wait_for("the Explorer to exit", || explorer.0.try_wait().unwrap());
    assert!(status.success(), "{status}");
    let rest: Vec<String> = lines.iter().collect();
    assert_eq!(rest, ["explorer stopped"]);
}
