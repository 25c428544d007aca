//! Where the user's code can panic outside a call it makes: in the `Drop` of
//! a hook, a sink or an observer, and in the `Drop` of a panic's own payload
//! (`panic_any` of a value whose `Drop` panics). Each is dropped here, under
//! `catch_unwind`, so a user's panic never unwinds through the driver task,
//! a lock or a `Drop` (where, during another panic's unwinding, it would
//! abort the process).

use std::any::Any;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A panic payload's message: its `&str` or `String` (another payload,
/// from `panic_any`, has no text to show). The payload is dropped here,
/// guarded.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let message = panic_text(&*payload);
    drop_guarded(payload);
    message
}

/// [`panic_message`] of a payload the caller drops later (outside a lock).
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic whose payload is not a string (`panic_any`)".to_owned()
    }
}

/// Drops `value`, catching a panic in its `Drop`. That panic's payload is
/// dropped under a guard too, and one whose own `Drop` panics again is
/// leaked (forgotten): the only end to a chain of panicking drops.
pub(crate) fn drop_guarded<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| drop(value)))
        && let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload)))
    {
        mem::forget(again);
    }
}

/// A user's value (a hook) dropped through [`drop_guarded`].
pub(crate) struct Guarded<T>(Option<T>);

impl<T> Guarded<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Some(value))
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        let Some(value) = &mut self.0 else {
            unreachable!("taken only by its drop");
        };
        value
    }
}

impl<T> Drop for Guarded<T> {
    fn drop(&mut self) {
        drop_guarded(self.0.take());
    }
}
