//! The clock is passed in, never read here: recall reads it once per request (so expiry is
//! judged against one instant), and tests drive it by hand.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::Timestamp;

pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// A clock for tests and replays. Every reading advances it by `step_micros`, so two
/// writes never share a stamp unless a test asks for that with a zero step.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
    step_micros: i64,
}

impl ManualClock {
    pub fn new(start: Timestamp, step_micros: i64) -> Self {
        Self {
            now: AtomicI64::new(start.as_micros()),
            step_micros,
        }
    }

    pub fn advance_seconds(&self, seconds: i64) {
        self.now
            .fetch_add(seconds * Timestamp::MICROS_PER_SECOND, Ordering::SeqCst);
    }

    /// The current reading without advancing.
    pub fn peek(&self) -> Timestamp {
        Timestamp::from_micros(self.now.load(Ordering::SeqCst))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(self.now.fetch_add(self.step_micros, Ordering::SeqCst))
    }
}
