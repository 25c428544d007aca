//! Occurrence bookkeeping for the runtime's tests, from the two places a
//! runtime user can see: the durable log and the live notifications. The
//! properties themselves are `courier-model`'s (its `History` checks the log
//! here); this only counts where each message went, assuming (as these tests
//! do) that no id is ever sent twice.
//!
//! Each test binary compiles this module on its own and uses only part of it,
//! so unused items are expected here (as in `tests/common`).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use courier_check::{History, Mode};
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
    /// with `courier_core::log::parse_line`, and every durable event passes
    /// the shared durable checks (`courier_check::History`), whose effects
    /// say what each splice removed and whether it was a claim. Returns the
    /// ledger and the ids still pending at the end of the log.
    pub(crate) fn from_log<S: AsRef<str>>(
        lines: impl IntoIterator<Item = S>,
    ) -> (Self, BTreeSet<MessageId>) {
        let mut ledger = Self::default();
        let mut history = History::new(Mode::Core);
        let mut lines = lines.into_iter();
        let header = lines.next().expect("a log has a header");
        let header = header.as_ref();
        assert!(
            matches!(parse_line(header), Ok(LogLine::Header(_))),
            "the first line is the session header: {header}"
        );
        for line in lines {
            let line = line.as_ref();
            let Ok(LogLine::Delivery(output)) = parse_line(line) else {
                panic!("not a delivery event: {line}");
            };
            let effect = history
                .observe(&output)
                .unwrap_or_else(|violation| panic!("{violation}\n  at {line}"));
            let exits = if effect.claim {
                &mut ledger.claimed
            } else {
                &mut ledger.discarded
            };
            for id in &effect.removed {
                bump(exits, id);
            }
            for id in &effect.inserted {
                bump(&mut ledger.inserted, id);
            }
        }
        (ledger, history.pending().cloned().collect())
    }

    /// Counts the live `inserted`, `claimed` and `discarded` notifications.
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
            Output::Spliced(_)
            | Output::TurnStart { .. }
            | Output::StepStart { .. }
            | Output::UserMessage(_)
            | Output::StepEnd { .. }
            | Output::TurnEnd { .. }
            | Output::Status { .. }
            | Output::Error { .. }
            | Output::Idle => {}
        }
    }

    /// Asserts that every inserted id is claimed xor discarded xor still
    /// `pending`, exactly once, and that nothing left or waits without
    /// having entered.
    pub(crate) fn balance(&self, pending: &BTreeSet<MessageId>) -> Counts {
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
        let exits = self.claimed.keys().chain(self.discarded.keys());
        for id in exits.chain(pending) {
            assert!(self.inserted.contains_key(id), "{id} never entered");
        }
        Counts {
            inserted: self.inserted.len(),
            claimed: self.claimed.len(),
            discarded: self.discarded.len(),
            pending: pending.len(),
        }
    }

    /// The ids pending in `inbox`.
    pub(crate) fn pending(inbox: &Inbox) -> BTreeSet<MessageId> {
        let lists = Target::ALL
            .into_iter()
            .flat_map(|target| inbox.list(target));
        lists.map(|message| message.id().clone()).collect()
    }

    /// Whether `id` was claimed exactly once.
    pub(crate) fn claimed_once(&self, id: &str) -> bool {
        self.claimed.get(&MessageId::from(id)) == Some(&1)
    }
}
