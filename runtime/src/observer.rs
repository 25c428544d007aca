//! An optional tap on every transition the runtime runs, for checkers that
//! need each input and not only the outputs (e.g. `courier_check::Monitor`,
//! whose no-lost-wakeup check reads which sends woke). The runtime only
//! reports what happened; it judges nothing.

pub use courier_core::Transition;

/// Receives every [`Transition`], in the core's order; see
/// [`crate::Handle::with_observer`]. Any `FnMut(Transition) + Send` closure
/// is one.
///
/// Called inside the agent's critical section (that is what makes the order
/// the core's), so it must be quick and must not call the agent: a call back
/// in deadlocks. A panic is caught: the observer is dropped (guarded, as it
/// is at the agent's end: a panicking `Drop` is caught too; it missed a
/// transition, so what it checks no longer holds) and the call whose
/// transition it observed returns [`crate::Error::ObserverPanicked`]: a
/// client's input at once (unless the core refused it), `when_idle` and
/// `dispose` once their wait ends. A transition no call made (the driver
/// task's completion, the last handle's disposal) is reported by every
/// `when_idle` and `dispose` waiting through it; nothing later is blamed,
/// and [`crate::Handle::observer_panic`] keeps the panic either way.
pub trait Observer: Send + 'static {
    /// One transition, just after the core ran it.
    fn observe(&mut self, transition: Transition);
}

impl<F: FnMut(Transition) + Send + 'static> Observer for F {
    fn observe(&mut self, transition: Transition) {
        self(transition);
    }
}
