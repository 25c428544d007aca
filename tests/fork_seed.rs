//! A fork's seed full of resume markers over a long inbox (issue 16 §3,
//! stay linear): each marker with work pending is also read as the
//! parent's own fork boundary, and that reading was a copy of the whole
//! ghost, pending lists and all, so a seed of n markers over n pending
//! messages cost n² (a 40,000-marker log took 12 s to validate). The
//! validator and the runtime's resume read seeds alike (`Readings`).
//! Counted in bytes allocated on this thread, not timed.

use courier_check::validate::validate;
use courier_runtime::kept;

/// A log whose header says `seed_length` (a fork) or nothing (a resumed
/// session): `markers` pairs of a `session/end-seed` and a send appended
/// to a growing `next-turn`, then the fork's boundary and one more send.
fn seed_of_markers(markers: usize, fork: bool) -> String {
    let send = |start: usize, id: &str| {
        format!(
            r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":{start},"inserted":[{{"id":"{id}","role":"user","content":[],"source":{{"kind":"user"}}}}]}}}}"#
        )
    };
    let mut events = vec![send(0, "P0")];
    for k in 1..=markers {
        events.push(r#"{"type":"session/end-seed","data":{}}"#.to_owned());
        events.push(send(k, &format!("P{k}")));
    }
    let seed = if fork {
        format!(r#","seedLength":{},"parentSession":"p""#, events.len())
    } else {
        String::new()
    };
    events.push(r#"{"type":"session/end-seed","data":{}}"#.to_owned());
    events.push(send(if fork { 0 } else { markers + 1 }, "C"));
    let header = format!(r#"{{"type":"session","version":0,"id":"c"{seed}}}"#);
    let mut log = header;
    for event in events {
        log.push('\n');
        log.push_str(&event);
    }
    log.push('\n');
    log
}

/// The bytes `read` allocates.
fn allocated(read: impl FnOnce()) -> u64 {
    allocation_counter::measure(read).bytes_total
}

/// Before, validating the fork allocated 76 times what the same markers
/// cost a log that is not a fork (which reads each as a resume only):
/// 262,811,548 bytes against 3,449,367; now 5,893,644.
#[test]
fn validating_a_seed_of_markers_costs_about_what_a_resumed_log_does() {
    let validated = |log: String| {
        allocated(|| {
            let summary = validate(log.as_bytes(), |finding| panic!("{finding:?}"));
            assert!(summary.expect("readable").is_valid());
        })
    };
    let fork = validated(seed_of_markers(3_000, true));
    let plain = validated(seed_of_markers(3_000, false));
    assert!(
        fork < 3 * plain,
        "the fork allocated {fork} bytes, the resumed log {plain}"
    );
}

/// The runtime's resume reads a fork's seed as the validator does, and
/// copied the inbox at every marker alike.
#[test]
fn resuming_from_a_seed_of_markers_costs_about_what_a_resumed_log_does() {
    let read = |log: String| {
        allocated(|| {
            let kept = kept::read(log.as_bytes()).expect("resumable");
            assert_eq!(kept.next_turn(), 1);
        })
    };
    let fork = read(seed_of_markers(3_000, true));
    let plain = read(seed_of_markers(3_000, false));
    assert!(
        fork < 3 * plain,
        "the fork allocated {fork} bytes, the resumed log {plain}"
    );
}
