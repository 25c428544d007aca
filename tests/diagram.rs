//! `courier diagram`'s pictures: the Mermaid text of one scenario is pinned
//! by a snapshot; the SVG is checked for its lanes, its escaping and the row
//! where a planted bug breaks its property.

use std::path::{Path, PathBuf};

use courier::diagram::trace::Tracer;
use courier::diagram::{Diagram, Format, Lane, Row};
use courier_core::transcript::Script;
use courier_core::{Agent, Input, Message, Output, Source, Stimulus, TurnEnd};

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/shared/scenarios")
        .join(name)
}

fn traced(name: &str, agent: Agent) -> Diagram {
    traced_file(&scenario(name), agent)
}

fn traced_file(file: &Path, agent: Agent) -> Diagram {
    let text = std::fs::read_to_string(file).unwrap();
    let mut tracer = Tracer::new(agent);
    tracer.run_script(&Script::parse(&text).unwrap()).unwrap();
    tracer
        .finish(file.file_name().unwrap().to_str().unwrap())
        .expect("drawable")
}

/// A vendored restart scenario (SPEC §11).
fn restart_scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/shared/scenarios-restart")
        .join(name)
}

/// r02's restart is its own row: the crash band, the three lost events
/// struck through (A's claim was kept, its `user/message` was not), then
/// the closers.
#[test]
fn a_restart_is_a_row_with_its_crash_lost_events_and_closers() {
    let file = restart_scenario("r02-restart-claimed-is-gone.txn");
    let diagram = traced_file(&file, Agent::new());
    assert_eq!(diagram.broken, None);
    let Some(Row::Restart {
        lose,
        lost,
        closers,
    }) = diagram.rows.get(3)
    else {
        panic!("row 4 is not a restart: {:#?}", diagram.rows);
    };
    assert_eq!((*lose, lost.len()), (3, 3));
    let closers: Vec<String> = closers.iter().map(ToString::to_string).collect();
    assert_eq!(closers, ["step/end 1.1", "turn/end 1 interrupted"]);
    assert_eq!(
        diagram.verdict(),
        "6 inputs and 1 restart, every property holds"
    );
    let mermaid = diagram.render(Format::Mermaid);
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("diagram_r02_restart_mermaid", mermaid);
    });
    let svg = diagram.render(Format::Svg);
    let band = "crash · restart lose=3: the last 3 durable events lost, the resume closes turn 1";
    assert!(svg.contains(&format!(">{band}</text>")), "{svg}");
    assert_eq!(svg.matches(r#"<text class="lost""#).count(), 3, "{svg}");
    assert!(svg.contains(">turn/end 1 interrupted</text>"), "{svg}");
}

/// A trace of stimuli (a simulator's, once it restarts) draws the same rows.
#[test]
fn a_stimulus_trace_draws_its_restarts() {
    let mut tracer = Tracer::new(Agent::new());
    tracer.apply_all(&[
        Stimulus::Input(Input::followup(Message::text("A", Source::user()))),
        Stimulus::Restart { lose: 0 },
    ]);
    let diagram = tracer.finish("stimuli").expect("drawable");
    let closer = Output::TurnEnd {
        turn: 1,
        reason: TurnEnd::Interrupted,
    };
    let restart = Row::Restart {
        lose: 0,
        lost: vec![],
        closers: vec![closer],
    };
    assert_eq!((diagram.rows.len(), &diagram.rows[1]), (2, &restart));
    assert_eq!(diagram.broken, None);
}

/// A resume that writes no closers breaks `resume-closes` at its restart row.
#[cfg(feature = "mutants")]
#[test]
fn a_broken_resume_is_marked_at_its_restart_row() {
    let agent = courier::variant::fresh_agent(Some("resume-no-closers")).unwrap();
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/resume-no-closers.txn");
    let diagram = traced_file(&file, agent);
    let (row, violation) = diagram
        .broken
        .clone()
        .expect("the mutant breaks a property");
    assert_eq!((row, violation.property.name()), (1, "resume-closes"));
    assert!(matches!(diagram.rows[row], Row::Restart { .. }));
    let mermaid = diagram.render(Format::Mermaid);
    assert!(mermaid.contains("the resume writes nothing"), "{mermaid}");
    assert!(mermaid.contains("BROKEN resume-closes"), "{mermaid}");
}

#[test]
fn mermaid_of_the_latch_scenario() {
    let diagram = traced("m01-no-latch.txn", Agent::new());
    assert_eq!(diagram.broken, None);
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("diagram_m01_mermaid", diagram.render(Format::Mermaid));
    });
}

#[test]
fn svg_has_every_lane_and_no_active_content() {
    let svg = traced("s065-steer-enters-step-2.txn", Agent::new()).render(Format::Svg);
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    for lane in Lane::ALL {
        assert!(
            svg.contains(&format!(">{}</text>", lane.title())),
            "no lane {lane:?}"
        );
    }
    for active in ["<script", "href", "@import", "url(http"] {
        assert!(!svg.contains(active), "found {active}");
    }
    assert!(svg.contains(">step/start 1.2</text>"), "{svg}");
}

#[test]
fn a_refused_input_is_drawn_with_its_error() {
    let script = Script::parse("inject A\n----\n\nsteer A\n----\n\n").unwrap();
    let mut tracer = Tracer::new(Agent::new());
    tracer.run_script(&script).unwrap();
    let diagram = tracer.finish("refusal & <escape>").expect("drawable");
    let mermaid = diagram.render(Format::Mermaid);
    assert!(mermaid.contains("C-xNS: steer A"), "{mermaid}");
    assert!(
        mermaid.contains("Note over NS: error: duplicate-id: A"),
        "{mermaid}"
    );
    let svg = diagram.render(Format::Svg);
    assert!(svg.contains("refusal &amp; &lt;escape&gt;"), "{svg}");
    assert!(!svg.contains("<escape>"), "{svg}");
}

#[cfg(feature = "mutants")]
#[test]
fn a_planted_bug_is_marked_at_the_row_where_it_breaks() {
    let agent = courier::variant::fresh_agent(Some("no-latch")).unwrap();
    let diagram = traced("m01-no-latch.txn", agent);
    let (row, violation) = diagram.broken.clone().expect("no-latch breaks a property");
    assert_eq!((row, violation.property.name()), (3, "no-lost-wakeup"));
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("diagram_m01_no_latch_mermaid", diagram.render(Format::Mermaid));
    });
    let svg = diagram.render(Format::Svg);
    assert!(svg.contains("BROKEN here: no-lost-wakeup"), "{svg}");
}

/// `courier check` on a planted bug prints the diagram path beside the
/// counterexample and writes it only with `--diagram`; `courier diagram`
/// then finds the variant in the counterexample's `# replay:` header.
#[cfg(feature = "mutants")]
#[test]
fn check_prints_and_writes_the_counterexample_diagram() {
    let folder = tempfile::tempdir().unwrap();
    let out = folder.path().join("ce.txn");
    let svg = folder.path().join("ce.svg");
    let check = |extra: &[&str]| {
        let ran = courier()
            .args([
                "check",
                "--mutant",
                "no-latch",
                "--messages",
                "2",
                "--threads",
                "1",
            ])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(ran.status.code(), Some(1), "{ran:?}");
        String::from_utf8(ran.stdout).unwrap()
    };
    let printed = check(&[]);
    let hint = format!("diagram: {} (not written; add --diagram)\n", svg.display());
    assert!(printed.contains(&hint), "{printed}");
    assert!(!svg.exists());

    let printed = check(&["--diagram"]);
    assert!(
        printed.contains(&format!("diagram: {}\n", svg.display())),
        "{printed}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("BROKEN here: no-lost-wakeup"), "{drawn}");

    let mermaid = courier()
        .args(["diagram", "--format", "mermaid"])
        .arg(&out)
        .output()
        .unwrap();
    let mermaid = String::from_utf8(mermaid.stdout).unwrap();
    assert!(mermaid.contains("(planted bug no-latch)"), "{mermaid}");
    assert!(
        mermaid.contains("Note over C,S: BROKEN no-lost-wakeup"),
        "{mermaid}"
    );
}

/// `courier sim` prints the diagram path beside the race report it writes
/// and writes it only with `--diagram`; `courier diagram` draws the report
/// on the variant the report names.
#[cfg(feature = "mutants")]
#[test]
fn sim_prints_and_writes_the_report_diagram() {
    let folder = tempfile::tempdir().unwrap();
    let report = folder.path().join("race.json");
    let svg = folder.path().join("race.svg");
    let sim = |extra: &[&str]| {
        let ran = courier()
            .args([
                "sim",
                "--seeds",
                "0..100",
                "--mutant",
                "no-latch",
                "--no-coverage",
            ])
            .args(extra)
            .arg("--report")
            .arg(&report)
            .output()
            .unwrap();
        assert_eq!(ran.status.code(), Some(1), "{ran:?}");
        String::from_utf8(ran.stdout).unwrap()
    };
    let printed = sim(&[]);
    let hint = format!("diagram: {} (not written; add --diagram)\n", svg.display());
    assert!(printed.contains(&hint), "{printed}");
    assert!(!svg.exists());

    let printed = sim(&["--diagram"]);
    assert!(
        printed.contains(&format!("diagram: {}\n", svg.display())),
        "{printed}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let property = written["property"].as_str().unwrap();
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains(&format!("BROKEN here: {property}")),
        "{drawn}"
    );

    let mermaid = courier()
        .args(["diagram", "--format", "mermaid"])
        .arg(&report)
        .output()
        .unwrap();
    let mermaid = String::from_utf8(mermaid.stdout).unwrap();
    assert!(
        mermaid.contains("(planted bug no-latch) seed "),
        "{mermaid}"
    );
    assert!(mermaid.contains(&format!("BROKEN {property}")), "{mermaid}");
}

#[cfg(feature = "mutants")]
fn courier() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
}

/// A liveness failure breaks no single transition: the simulator's verdict
/// over the whole trace is marked at its last row, and only when it still
/// holds. This report claims one its trace does not show on the correct
/// design (`courier replay` says it passes), so nothing is marked and a note
/// says why.
#[test]
fn a_liveness_report_is_marked_only_when_its_trace_still_fails() {
    use courier_check::Property;
    use courier_core::{Input, Message, Source, Stimulus};
    use courier_sim::{Prng, REPORT_FORMAT, Report, Swarm};

    let report = Report {
        format: REPORT_FORMAT,
        seed: 7,
        mutant: None,
        swarm: Swarm::draw(&mut Prng::new(7)),
        property: Property::NoLostWakeup,
        detail: "liveness: a driver is still running when the liveness phase ended".to_owned(),
        output_hash: "fnv1a64:0000000000000000".parse().expect("a hash"),
        trace: vec![
            Stimulus::Input(Input::followup(Message::text("A", Source::user()))),
            Stimulus::Input(Input::WhenIdle),
        ],
    };
    let diagram = courier::diagram::from_report(Path::new("race-7.json"), &report, None).unwrap();
    assert_eq!(diagram.broken, None);
    assert_eq!(
        diagram.notes,
        [
            "note: the report says no-lost-wakeup, but this build's run of its trace breaks \
          nothing (as `courier replay` says)"
        ]
    );
    assert_eq!(diagram.title, "race-7.json (correct design) seed 7");
}

/// A divergence transcript written by `courier sim --against` draws the
/// contract's rows with the other implementation's lines beside its last
/// row, marked, and says where it diverges.
#[test]
fn a_divergence_is_marked_at_its_row_with_the_other_sides_lines() {
    let folder = tempfile::tempdir().expect("a scratch folder");
    let file = folder.path().join("divergence-1.txn");
    let text = "\
# divergence: seed=1, stimulus 2 (the last block), unexplained by any rule
# the other implementation printed there:
#   step/start 1.1
#   user/message F

steer A
----
spliced next-step@0 +A
~inserted A
~status running
turn/start 1
spliced next-step@0 -1
~claimed A 1

send F next-turn no-wake
----
spliced next-turn@0 +F
~inserted F

pre-step enter F
----
~error 1.0
turn/end 1 error
~status idle
";
    std::fs::write(&file, text).expect("written");
    let diagram = courier::diagram::load(&file, None).expect("it draws");
    let diverged = diagram.diverged.as_ref().expect("the divergence is read");
    assert_eq!(diverged.row, 2);
    assert_eq!(diverged.other, ["step/start 1.1", "user/message F"]);
    assert!(
        diagram.verdict().starts_with("diverges at row 3 of 3: "),
        "{}",
        diagram.verdict()
    );
    let mermaid = diagram.render(Format::Mermaid);
    let marked = "Note over C,S: DIVERGES: the other implementation printed instead: \
                  step/start 1.1 | user/message F";
    assert!(mermaid.contains(marked), "{mermaid}");
    let svg = diagram.render(Format::Svg);
    assert!(svg.contains("DIVERGES here: "), "{svg}");
    // A plain transcript diverges from nothing.
    std::fs::write(&file, &text[text.find("steer A").expect("a command")..]).expect("written");
    let plain = courier::diagram::load(&file, None).expect("it draws");
    assert_eq!(plain.diverged, None);
}

/// A build without the planted bugs draws a file that names one (a
/// report's `mutant`, a transcript's `# mutant:`) as the correct design,
/// with a note saying so. Before, a report was refused (exit 2) where a
/// transcript was drawn.
#[cfg(not(feature = "mutants"))]
#[test]
fn a_planted_bug_this_build_lacks_draws_the_correct_design_with_a_note() {
    use courier_check::Property;
    use courier_sim::{Prng, REPORT_FORMAT, Report, Swarm};

    let report = Report {
        format: REPORT_FORMAT,
        seed: 3,
        mutant: Some("no-latch".to_owned()),
        swarm: Swarm::draw(&mut Prng::new(3)),
        property: Property::NoLostWakeup,
        detail: "retired with 1 owed: A".to_owned(),
        output_hash: "fnv1a64:0000000000000000".parse().expect("a hash"),
        trace: vec![Stimulus::Input(Input::followup(Message::text(
            "A",
            Source::user(),
        )))],
    };
    let diagram = courier::diagram::from_report(Path::new("race-3.json"), &report, None).unwrap();
    assert_eq!(diagram.title, "race-3.json (correct design) seed 3");
    assert!(
        diagram.notes[0].starts_with(
            "note: the report's `mutant` field: `no-latch` is a planted bug, and this build has none"
        ),
        "{:?}",
        diagram.notes
    );
    assert!(diagram.notes[0].ends_with("; drawing the correct design instead"));
    // `courier replay` refuses such a report on this build (exit 2), so the
    // note does not say it passes there.
    assert_eq!(
        diagram.notes[1],
        "note: the report says no-lost-wakeup, which the correct design's run of its trace \
         does not break (`courier replay` of it needs a build with its bug)"
    );

    let text = "# mutant: no-latch\nfollowup A\n----\n";
    let drawn = courier::diagram::from_transcript(Path::new("t.txn"), text, None).unwrap();
    assert!(
        drawn.notes[0].starts_with("note: line 1 names the variant: `no-latch` is a planted bug"),
        "{:?}",
        drawn.notes
    );
}
