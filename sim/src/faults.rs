//! Restarts as faults (SPEC §11): a seed's swarm sets how often the safety
//! phase crashes the agent instead of feeding an input, and each crash draws
//! how much of the durable log it loses. A runtime that writes behind can
//! lose many transitions at once, and a torn write cuts inside one, so the
//! cut is drawn over the whole log, at a transition boundary or inside one.

use crate::prng::Prng;

/// The shape of the durable log a session has written: its length and
/// where each transition's writes end, which is all a cut needs (the events
/// themselves stay in the harness).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct LogShape {
    /// Every transition boundary, increasing: 0, then the log's length
    /// after each transition (or restart) that wrote something.
    boundaries: Vec<usize>,
}

/// Boundaries a shape holds before it first grows: most seeds' logs have
/// fewer, and growing one element at a time from one reallocated several
/// times per seed.
const BOUNDARIES_INITIAL: usize = 64;

impl Default for LogShape {
    fn default() -> Self {
        let mut boundaries = Vec::with_capacity(BOUNDARIES_INITIAL);
        boundaries.push(0);
        Self { boundaries }
    }
}

impl LogShape {
    /// The log's length.
    pub(crate) fn len(&self) -> usize {
        *self.boundaries.last().expect("0 is always a boundary")
    }

    /// One transition wrote `written` durable events.
    pub(crate) fn wrote(&mut self, written: usize) {
        if written > 0 {
            self.boundaries.push(self.len() + written);
        }
    }

    /// A restart kept all but the last `lose` events, then wrote `closers`
    /// durable events. The cut is where the resumed run starts, so it is a
    /// boundary even when it tore a transition.
    pub(crate) fn restarted(&mut self, lose: usize, closers: usize) {
        let kept = self.len() - lose.min(self.len());
        self.boundaries.retain(|&boundary| boundary < kept);
        self.boundaries.push(kept);
        self.wrote(closers);
    }
}

/// Draws restarts for one seed from its own stream, so the input stream
/// is the same whether restarts are on or off.
pub(crate) struct Faults {
    prng: Prng,
    percent: u32,
}

/// How many of the latest transitions a "recent" cut reaches back over:
/// write-behind usually loses the tail, so half the cuts land there.
const RECENT_TRANSITIONS: usize = 4;

impl Faults {
    /// Restarts at `percent` of the draws.
    pub(crate) fn new(prng: Prng, percent: u32) -> Self {
        Self { prng, percent }
    }

    /// Whether no draw is ever a restart.
    pub(crate) fn never(&self) -> bool {
        self.percent == 0
    }

    /// Whether the next draw is a restart, and then how many events it
    /// loses from `log`. Some restarts lose nothing (a clean crash); the
    /// rest cut before a transition anywhere in the log (half of them among
    /// the last few), at its start (untorn) or strictly inside its writes
    /// (torn).
    pub(crate) fn restart(&mut self, log: &LogShape) -> Option<usize> {
        if self.percent == 0 || !self.prng.chance(self.percent, 100) {
            return None;
        }
        let transitions = log.boundaries.len() - 1;
        if transitions == 0 || self.prng.chance(1, 8) {
            return Some(0);
        }
        let reach = if self.prng.chance(1, 2) {
            transitions.min(RECENT_TRANSITIONS)
        } else {
            transitions
        };
        let back = 1 + self.prng.index(reach).expect("at least one transition");
        let start = log.boundaries[transitions - back];
        let end = log.boundaries[transitions - back + 1];
        let width = u32::try_from(end - start).unwrap_or(u32::MAX);
        let kept = if width > 1 && self.prng.chance(1, 2) {
            start + self.prng.between(1, width - 1) as usize
        } else {
            start
        };
        Some(log.len() - kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_cuts_the_shape_and_its_closers_extend_it() {
        let mut log = LogShape::default();
        log.wrote(3);
        log.wrote(0);
        log.wrote(4);
        assert_eq!(log.boundaries, [0, 3, 7]);
        log.restarted(5, 2);
        assert_eq!(log.boundaries, [0, 2, 4], "torn at 2, two closers");
        log.restarted(99, 0);
        assert_eq!(log.boundaries, [0]);
    }

    #[test]
    fn cuts_reach_the_whole_log_torn_and_untorn() {
        let mut log = LogShape::default();
        for _ in 0..40 {
            log.wrote(3);
        }
        let mut faults = Faults::new(Prng::new(1), 100);
        let (mut torn, mut untorn, mut deep) = (0, 0, 0);
        for _ in 0..2000 {
            let lose = faults.restart(&log).expect("always restarts");
            assert!(lose <= log.len());
            if lose.is_multiple_of(3) {
                untorn += 1;
            } else {
                torn += 1;
            }
            deep += usize::from(lose > 3 * RECENT_TRANSITIONS);
        }
        assert!(torn > 300 && untorn > 300, "{torn} torn, {untorn} untorn");
        assert!(deep > 300, "{deep} cuts beyond the recent transitions");
        assert!(!faults.never());
        let mut never = Faults::new(Prng::new(1), 0);
        assert!(never.never());
        assert_eq!(never.restart(&log), None);
    }
}
