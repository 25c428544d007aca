//! What a message read from JSON keeps (logs and race reports hold
//! millions): a source that is its `kind` alone keeps no map node. Counted
//! by `allocation_counter` on this thread, not timed.

use courier_core::Source;

/// Before, every source kept the node its emptied map was read into (about
/// 600 bytes a message read from a log).
#[test]
fn a_source_read_from_json_keeps_nothing_but_its_fields() {
    let mut kept = Vec::with_capacity(1_000);
    let counted = allocation_counter::measure(|| {
        for json in [r#"{"kind":"user"}"#, r#"{"kind":"plugin","plugin":"p"}"#] {
            for _ in 0..500 {
                kept.push(serde_json::from_str::<Source>(json).expect("a source"));
            }
        }
    });
    // The plugin's name is a `String` of its own; nothing else stays.
    assert_eq!(counted.count_current, 500, "{counted:?}");
    let extra = r#"{"kind":"user","note":"n"}"#;
    let with_extra: Source = serde_json::from_str(extra).expect("a source");
    assert_eq!(serde_json::to_string(&with_extra).expect("JSON"), extra);
}
