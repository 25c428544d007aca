//! Occurrence bookkeeping for the runtime's tests, from the two places a
//! runtime user can see: the durable log (replayed splice by splice) and the
//! live notifications. Not a property checker: SPEC §7 lives in
//! `courier-model`. This only counts where each sent message went, assuming
//! (as these tests do) that no id is ever sent twice.

use std::collections::BTreeMap;

use courier_core::log::{LogLine, parse_line};
use courier_core::{Inbox, MessageId, Output, Target};

/// How many times each id was inserted, claimed and discarded.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub(crate) struct Ledger {
    pub(crate) inserted: BTreeMap<MessageId, u32>,
    pub(crate) claimed: BTreeMap<MessageId, u32>,
    pub(crate) discarded: BTreeMap<MessageId, u32>,
}

/// Totals of a balanced ledger.
#[derive(PartialEq, Eq, Debug)]
pub(crate) struct Counts {
    pub(crate) inserted: usize,
    pub(crate) claimed: usize,
    pub(crate) discarded: usize,
    pub(crate) pending: usize,
}

fn bump(counts: &mut BTreeMap<MessageId, u32>, id: &MessageId) {
    *counts.entry(id.clone()).or_default() += 1;
}

impl Ledger {
    /// Replays a runtime-written log: the header first, every line parses
    /// with `courier_core::log::parse_line`, and each `spliced` is applied to
    /// an inbox rebuilt from empty (a removal with `outcome` is a discard,
    /// one without is a claim). Returns the ledger and the rebuilt inbox.
    pub(crate) fn from_log<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> (Self, Inbox) {
        let mut ledger = Self::default();
        let mut inbox = Inbox::default();
        let mut lines = lines.into_iter();
        let header = lines.next().expect("a log has a header");
        let header = header.as_ref();
        assert!(
            matches!(parse_line(header), Ok(LogLine::Header(_))),
            "the first line is the session header: {header}"
        );
        for line in lines {
            let line = line.as_ref();
            match parse_line(line) {
                Ok(LogLine::Delivery(Output::Spliced(splice))) => {
                    let exits = if splice.outcome.is_some() {
                        &mut ledger.discarded
                    } else {
                        &mut ledger.claimed
                    };
                    for message in inbox.apply(&splice) {
                        bump(exits, message.id());
                    }
                    for message in &splice.inserted {
                        bump(&mut ledger.inserted, message.id());
                    }
                }
                Ok(LogLine::Delivery(_)) => {}
                other => panic!("not a delivery event of ours: {line}: {other:?}"),
            }
        }
        (ledger, inbox)
    }

    /// Counts the live `inserted`, `claimed` and `discarded` notifications.
    #[cfg_attr(
        not(loom),
        allow(dead_code, reason = "only the loom suite reads a whole stream")
    )]
    pub(crate) fn from_live<'a>(outputs: impl IntoIterator<Item = &'a Output>) -> Self {
        let mut ledger = Self::default();
        for output in outputs {
            ledger.observe(output);
        }
        ledger
    }

    /// Counts one live notification (other outputs are ignored).
    pub(crate) fn observe(&mut self, output: &Output) {
        match output {
            Output::Inserted { message } => bump(&mut self.inserted, message.id()),
            Output::Claimed { message, .. } => bump(&mut self.claimed, message.id()),
            Output::Discarded { message } => bump(&mut self.discarded, message.id()),
            _ => {}
        }
    }

    /// Asserts that every inserted id is claimed xor discarded xor still in
    /// `pending`, exactly once, and that nothing left without entering.
    pub(crate) fn balance(&self, pending: &Inbox) -> Counts {
        for (id, &times) in &self.inserted {
            assert_eq!(times, 1, "{id} inserted {times} times");
            let claimed = self.claimed.get(id).copied().unwrap_or(0);
            let discarded = self.discarded.get(id).copied().unwrap_or(0);
            let left = u32::from(pending.contains(id));
            assert_eq!(
                claimed + discarded + left,
                1,
                "{id}: claimed {claimed}, discarded {discarded}, pending {left}"
            );
        }
        for id in self.claimed.keys().chain(self.discarded.keys()) {
            assert!(
                self.inserted.contains_key(id),
                "{id} left but never entered"
            );
        }
        for target in Target::ALL {
            for message in pending.list(target) {
                let id = message.id();
                assert!(
                    self.inserted.contains_key(id),
                    "{id} pending but never entered"
                );
            }
        }
        Counts {
            inserted: self.inserted.len(),
            claimed: self.claimed.len(),
            discarded: self.discarded.len(),
            pending: pending.len(),
        }
    }

    /// Whether `id` was claimed exactly once.
    #[cfg_attr(not(loom), allow(dead_code, reason = "only the loom suite names ids"))]
    pub(crate) fn claimed_once(&self, id: &str) -> bool {
        self.claimed.get(&MessageId::from(id)) == Some(&1)
    }
}
