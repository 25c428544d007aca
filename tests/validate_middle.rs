//! `courier validate` over logs that splice in the middle of long pending
//! lists (issue 16, stay linear): such a splice turns a long ghost list
//! (`courier_check::history::Pending`) into a treap, so it costs O(log n);
//! these tests pin that the tree keeps every id in order and that no check
//! was weakened. The speed itself is `benches/validate.rs`'s `validate-scale/middle`.

use courier_check::validate::{Finding, validate};
use courier_check::{History, Mode};
use courier_core::{Inserted, Message, Outcome, Output, Splice, Target};

const HEADER: &str = r#"{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}"#;

fn message(id: &str) -> String {
    format!(r#"{{"id":"{id}","role":"user","content":"x","source":{{"kind":"user"}}}}"#)
}

/// A `next-turn` splice line: remove `removed` at `start` (canceled, so not
/// a claim; a pure insertion has no outcome) and insert `ids` there.
fn splice(start: usize, removed: usize, ids: &[String]) -> String {
    let inserted: Vec<String> = ids.iter().map(|id| message(id)).collect();
    let outcome = if removed > 0 {
        r#","outcome":"canceled""#
    } else {
        ""
    };
    format!(
        r#"{{"type":"agent/inbox/spliced","data":{{"target":"next-turn","start":{start},"removedCount":{removed},"inserted":[{}]{outcome}}}}}"#,
        inserted.join(",")
    )
}

fn findings(lines: &[String]) -> Vec<(u64, String)> {
    let log = lines.join("\n") + "\n";
    let mut found = Vec::new();
    let summary = validate(log.as_bytes(), |Finding { line, violation }| {
        found.push((line, violation.to_string()));
    })
    .unwrap();
    // A history violation stops the file at its line; a valid log is read whole.
    let read = found.last().map_or(lines.len() as u64, |(line, _)| *line);
    assert_eq!(summary.lines, read);
    found
}

/// The middle-insert shape of the bench: `events` splices at the middle of
/// one list, three in four inserting `m<k>`, the fourth removing one id;
/// returns the log's lines (header first) and the list each leaves.
fn middle(events: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = vec![HEADER.to_owned()];
    let mut model: Vec<String> = Vec::new();
    let mut after = Vec::new();
    for k in 0..events {
        let start = model.len() / 2;
        if k % 4 == 3 {
            lines.push(splice(start, 1, &[]));
            model.remove(start);
        } else {
            let id = format!("m{k}");
            lines.push(splice(start, 0, std::slice::from_ref(&id)));
            model.insert(start, id);
        }
        after.push(model.clone());
    }
    (lines, after)
}

#[test]
fn stay_linear_middle_splices_validate_and_keep_list_order() {
    // 2000 splices grow the list to 1000 ids, past the 128 from which a
    // middle splice makes it a treap, so the tree's split and merge are
    // exercised.
    let (lines, after) = middle(2000);
    assert_eq!(findings(&lines), []);
    assert_eq!(after.last().unwrap().len(), 1000);
    // The same splices through `History`, its list checked after each one
    // against the plain vector, with the removed ids it reports.
    let mut history = History::new(Mode::Log);
    let mut model: Vec<String> = Vec::new();
    for (k, expected) in after.iter().enumerate() {
        let start = model.len() / 2;
        let remove = k % 4 == 3;
        let inserted = (!remove).then(|| Message::from(format!("m{k}").as_str()));
        let effect = history
            .observe(&Output::Spliced(Splice {
                target: Target::NextTurn,
                start,
                removed_count: usize::from(remove),
                inserted: inserted.into_iter().collect(),
                outcome: remove.then_some(Outcome::Canceled),
            }))
            .unwrap();
        let removed: Vec<&str> = effect.removed.iter().map(|id| id.as_str()).collect();
        let expected_removed: Vec<&str> = if remove {
            vec![model[start].as_str()]
        } else {
            Vec::new()
        };
        assert_eq!(removed, expected_removed, "splice {k}");
        model.clone_from(expected);
        let listed: Vec<&str> = history
            .list(Target::NextTurn)
            .iter()
            .map(|id| id.as_str())
            .collect();
        assert_eq!(listed, model, "after splice {k}");
    }
    // A batch in the middle, then a removal of a run spanning it.
    let batch: Vec<String> = (0..300).map(|k| format!("b{k}")).collect();
    let effect = history
        .observe(&Output::Spliced(Splice {
            target: Target::NextTurn,
            start: 400,
            removed_count: 0,
            inserted: batch.iter().map(|id| Message::from(id.as_str())).collect(),
            outcome: None,
        }))
        .unwrap();
    assert_eq!(effect.inserted.len(), 300);
    model.splice(400..400, batch);
    let effect = history
        .observe(&Output::Spliced(Splice {
            target: Target::NextTurn,
            start: 350,
            removed_count: 400,
            inserted: Inserted::new(),
            outcome: Some(Outcome::Canceled),
        }))
        .unwrap();
    let gone: Vec<String> = model.drain(350..750).collect();
    let removed: Vec<&str> = effect.removed.iter().map(|id| id.as_str()).collect();
    assert_eq!(removed, gone);
    let listed: Vec<&str> = history
        .list(Target::NextTurn)
        .iter()
        .map(|id| id.as_str())
        .collect();
    assert_eq!(listed, model);
}

#[test]
fn stay_linear_a_broken_middle_splice_is_reported_on_its_line() {
    let (lines, after) = middle(2000);
    let list = after.last().unwrap();
    let length = list.len();
    let half = length / 2;
    let pending = list[123].clone();
    // A history violation stops the file, so each break gets its own log:
    // the 2000 valid middle splices, then the broken one on line 2002.
    let broken = |line: String| {
        let mut log = lines.clone();
        log.push(line);
        log.push(splice(0, 0, &["after".to_owned()]));
        findings(&log)
    };
    // A pending id inserted again in the middle of the list.
    assert_eq!(
        broken(splice(half, 0, &["fresh".to_owned(), pending.clone()])),
        [(
            2002,
            format!("unique-pending: {pending} inserted into next-turn while pending")
        )]
    );
    // The same id removed and inserted back by one splice is no duplicate.
    let at = list.iter().position(|id| *id == pending).unwrap();
    assert_eq!(broken(splice(at, 1, std::slice::from_ref(&pending))), []);
    // A splice one past the end.
    assert_eq!(
        broken(splice(length + 1, 0, &["late".to_owned()])),
        [(
            2002,
            format!(
                "replay-matches: next-turn splice starts at {} past length {length}",
                length + 1
            )
        )]
    );
    // A removal from the middle running one past the end.
    assert_eq!(
        broken(splice(half, length - half + 1, &[])),
        [(
            2002,
            format!(
                "replay-matches: next-turn splice at {half} removes {} of {}",
                length - half + 1,
                length - half
            )
        )]
    );
}
