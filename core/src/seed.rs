//! A fork's seed read without knowing its markers (SPEC §11). A fork copies
//! its parent's events whole, markers included, and its header names only
//! its own `seedLength`; so a `session/end-seed` inside the seed
//! ([`EndSeed::InSeed`](crate::log::EndSeed::InSeed)) was either the
//! parent's own fork boundary (a fork of a fork: its inbox emptied there)
//! or a marker the parent's resume appended (its inbox kept). The two are
//! written alike. Where the parent had something pending they differ, and
//! only the events after the marker tell which: [`Readings`] carries each
//! reading that still explains the log, and drops one as soon as an event
//! contradicts it. A reader that replays the seed (the validator, a resume)
//! thus accepts what its parent wrote either way, and still refuses what no
//! reading explains. The fork's own boundary ends the doubt: its inbox
//! starts empty whichever reading was true.

/// At most this many readings are carried at once: each marker with work
/// pending adds one, and a contradicted one is dropped, so more than a
/// couple at a time takes a seed of many nested forks, each with work
/// pending, that no event after it has told apart yet. Past the cap a new
/// fork reading is not added (the resume readings, the default, are kept).
const READINGS_MAX: usize = 8;

/// The readings of a log that still explain it, in order of preference:
/// the first one read every earlier marker as a resume. Never empty.
#[derive(Clone, Debug)]
pub struct Readings<T> {
    all: Vec<T>,
}

impl<T> Readings<T> {
    /// One reading.
    pub fn new(reading: T) -> Self {
        Self { all: vec![reading] }
    }

    /// The preferred reading still standing.
    pub fn first(&self) -> &T {
        &self.all[0]
    }

    /// The preferred reading still standing, taken.
    pub fn into_first(self) -> T {
        let mut all = self.all;
        all.swap_remove(0)
    }

    /// How many readings still stand.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Always false: there is always a reading.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Applies an event to every reading and keeps the ones it suits. When
    /// it suits none, keeps the readings whose error `goes_on` (one that
    /// leaves its state whole) and returns the first of those errors; if
    /// there is none, keeps only the first reading, as its error left it,
    /// for the caller to stop at, and returns that error.
    pub fn each<E>(
        &mut self,
        mut apply: impl FnMut(&mut T) -> Result<(), E>,
        goes_on: impl Fn(&E) -> bool,
    ) -> Result<(), E> {
        if let [only] = self.all.as_mut_slice() {
            return apply(only);
        }
        let mut suited = Vec::with_capacity(self.all.len());
        let mut going = Vec::new();
        let mut going_error = None;
        let mut stopped = None;
        for mut reading in std::mem::take(&mut self.all) {
            match apply(&mut reading) {
                Ok(()) => suited.push(reading),
                Err(error) if goes_on(&error) => {
                    going.push(reading);
                    going_error.get_or_insert(error);
                }
                Err(error) => {
                    stopped.get_or_insert((reading, error));
                }
            }
        }
        match (going_error, stopped) {
            _ if !suited.is_empty() => {
                self.all = suited;
                Ok(())
            }
            (Some(error), _) => {
                self.all = going;
                Err(error)
            }
            (None, Some((reading, error))) => {
                self.all = vec![reading];
                Err(error)
            }
            // There was a reading, so it was suited or it failed.
            (None, None) => Ok(()),
        }
    }

    /// A marker inside a fork's seed: every reading takes it as a resume
    /// (`resume`), and the first one that `forks_apart` (it has work
    /// pending and no open turn, so a fork boundary here would have emptied
    /// its inbox) is also carried on as its parent's own boundary: `fork`
    /// builds what that boundary leaves of it, without copying what it
    /// empties (a copy of the inbox at every marker was quadratic). A
    /// parent forks only between turns, so an open turn has no fork
    /// reading.
    pub fn in_seed<E>(
        &mut self,
        resume: impl FnMut(&mut T) -> Result<(), E>,
        forks_apart: impl Fn(&T) -> bool,
        fork: impl FnOnce(&T) -> T,
    ) -> Result<(), E> {
        let forked = self.all.iter().find(|reading| forks_apart(reading));
        let forked = forked.map(fork);
        match (self.each(resume, |_| false), forked) {
            (Ok(()), Some(forked)) if self.all.len() < READINGS_MAX => self.all.push(forked),
            (Ok(()), _) => {}
            (Err(_), Some(forked)) => self.all = vec![forked],
            (Err(error), None) => return Err(error),
        }
        Ok(())
    }

    /// The fork's own boundary: the doubt ends (its inbox starts empty
    /// whichever reading was true), so the preferred reading goes on alone.
    pub fn boundary(&mut self) -> &mut T {
        self.all.truncate(1);
        &mut self.all[0]
    }
}

#[cfg(test)]
mod tests {
    use super::Readings;

    /// A reading is a pending count; a resume keeps it, a fork empties it,
    /// and an event "takes n" from what is pending.
    fn take(n: u32) -> impl FnMut(&mut u32) -> Result<(), String> {
        move |pending| {
            *pending = pending
                .checked_sub(n)
                .ok_or(format!("takes {n} of {pending}"))?;
            Ok(())
        }
    }

    fn marker(readings: &mut Readings<u32>) -> Result<(), String> {
        readings.in_seed(|_| Ok(()), |pending| *pending > 0, |_| 0)
    }

    #[test]
    fn a_marker_with_work_pending_is_read_both_ways_until_an_event_tells() {
        let mut readings = Readings::new(2);
        marker(&mut readings).unwrap();
        assert_eq!(readings.all, [2, 2 - 2]);
        // Taking one suits only the resume reading.
        readings.each(take(1), |_| false).unwrap();
        assert_eq!(readings.all, [1]);
        // Taking two suits none: the first reading's error.
        assert_eq!(
            readings.each(take(2), |_| false),
            Err("takes 2 of 1".into())
        );
        assert_eq!(readings.all, [1]);
    }

    #[test]
    fn the_fork_reading_is_kept_when_the_resume_one_is_contradicted() {
        let mut readings = Readings::new(3);
        marker(&mut readings).unwrap();
        readings.each(take(0), |_| false).unwrap();
        // An insertion at the start of an empty list: only the fork reading.
        let insert_at_zero = |pending: &mut u32| {
            if *pending > 0 {
                return Err(format!("inserts at 0 of {pending}"));
            }
            *pending = 1;
            Ok(())
        };
        readings.each(insert_at_zero, |_| false).unwrap();
        assert_eq!(readings.all, [1]);
    }

    #[test]
    fn nothing_pending_or_a_refused_resume_leaves_one_reading() {
        let mut readings = Readings::new(0);
        marker(&mut readings).unwrap();
        assert_eq!(readings.all, [0]);
        let mut readings = Readings::new(4);
        readings
            .in_seed(|_| Err("open"), |pending| *pending > 0, |_| 0)
            .unwrap();
        assert_eq!(readings.all, [0]);
        let refused = readings.in_seed(|_| Err("open"), |_| false, |_| 0);
        assert_eq!(refused, Err("open"));
    }

    #[test]
    fn an_error_that_goes_on_keeps_its_readings_when_none_is_suited() {
        let mut readings = Readings::new(2);
        marker(&mut readings).unwrap();
        let both_err = |pending: &mut u32| Err::<(), _>(*pending);
        assert_eq!(readings.each(both_err, |_| true), Err(2));
        assert_eq!(readings.all, [2, 0]);
        assert_eq!(readings.boundary(), &mut 2);
        assert_eq!(readings.len(), 1);
    }

    #[test]
    fn the_readings_are_capped() {
        let mut readings = Readings::new(1);
        for _ in 0..20 {
            readings
                .in_seed(|_| Ok::<_, ()>(()), |_| true, |reading| *reading)
                .unwrap();
        }
        assert_eq!(readings.len(), super::READINGS_MAX);
    }
}
