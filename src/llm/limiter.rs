//! One limiter per endpoint per process: requests in flight, and requests started per
//! minute. Under nextest each case is its own process, so bound model traffic there
//! with a test group (`max-threads`) instead; see the README.
//!
//! The in-flight limit grows unless `max_in_flight` pins it: it starts at 16, and each
//! run of successful calls as long as the limit raises it by one, up to the run's
//! parallelism, so `--parallel 64` against a fast endpoint is not held at 16. A pinned
//! limit below the run's parallelism is said once on stderr.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Requests in flight per endpoint when the config sets none, to start with.
pub(crate) const DEFAULT_IN_FLIGHT: usize = 16;

/// The cases the run has in flight (`--parallel`, `--test-threads`): how far an adaptive
/// limit may grow. 0 until the run says.
static PARALLELISM: AtomicUsize = AtomicUsize::new(0);

/// Tells the limiters how many cases run at once.
pub(crate) fn set_parallelism(cases: usize) {
    PARALLELISM.store(cases, Ordering::Relaxed);
}

/// Limits for one endpoint.
#[derive(Debug)]
pub(crate) struct Limiter {
    /// The endpoint as messages show it.
    shown: String,
    in_flight: Arc<Semaphore>,
    adaptive: Mutex<Adaptive>,
    per_minute: Option<Mutex<Bucket>>,
}

/// Where the in-flight limit stands.
#[derive(Debug)]
struct Adaptive {
    limit: usize,
    /// How high it may grow.
    ceiling: usize,
    /// `max_in_flight` was set: the limit never moves.
    pinned: bool,
    /// Permits to retire as they come back (should the limit fall below what is in use).
    debt: usize,
    /// Successful calls since the limit last moved.
    successes: usize,
    /// Whether the cap was said on stderr already.
    said_capped: bool,
}

#[derive(Debug)]
struct Bucket {
    capacity: f64,
    tokens: f64,
    refill_per_sec: f64,
    last: Instant,
}

/// A slot in flight; returned (or retired, when the limit fell) when dropped.
pub(crate) struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    limiter: Arc<Limiter>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut a = self
            .limiter
            .adaptive
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(permit) = self.permit.take() {
            if a.debt > 0 {
                a.debt -= 1;
                permit.forget();
            }
        }
    }
}

/// How a call went, as far as the endpoint's capacity goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// An answer came in time.
    Kept,
    /// A timeout or a 429: the endpoint has more than it can take.
    Overloaded,
}

impl Limiter {
    /// The shared limiter for the endpoint `url`; the first caller's limits win.
    /// `max_in_flight` pins the limit; without it the limit adapts.
    pub(crate) fn for_endpoint(
        url: &str,
        shown: &str,
        max_in_flight: Option<usize>,
        per_minute: Option<u32>,
    ) -> Arc<Limiter> {
        static ALL: OnceLock<Mutex<HashMap<String, Arc<Limiter>>>> = OnceLock::new();
        let mut all = ALL
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.entry(url.to_string())
            .or_insert_with(|| Arc::new(Limiter::new(shown, max_in_flight, per_minute)))
            .clone()
    }

    fn new(shown: &str, max_in_flight: Option<usize>, per_minute: Option<u32>) -> Limiter {
        let parallelism = PARALLELISM.load(Ordering::Relaxed);
        let (limit, ceiling) = match max_in_flight {
            Some(n) => (n.max(1), n.max(1)),
            None => {
                let ceiling = parallelism.max(DEFAULT_IN_FLIGHT);
                (DEFAULT_IN_FLIGHT.min(ceiling), ceiling)
            }
        };
        Limiter {
            shown: shown.to_string(),
            in_flight: Arc::new(Semaphore::new(limit)),
            adaptive: Mutex::new(Adaptive {
                limit,
                ceiling,
                pinned: max_in_flight.is_some(),
                debt: 0,
                successes: 0,
                said_capped: false,
            }),
            per_minute: per_minute.filter(|n| *n > 0).map(|n| {
                Mutex::new(Bucket {
                    capacity: f64::from(n).clamp(1.0, 60.0),
                    tokens: f64::from(n).clamp(1.0, 60.0),
                    refill_per_sec: f64::from(n) / 60.0,
                    last: Instant::now(),
                })
            }),
        }
    }

    /// The in-flight limit now.
    #[cfg(test)]
    fn limit(&self) -> usize {
        self.adaptive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .limit
    }

    /// Waits for a slot in flight and, when a rate is set, for the rate to allow a start.
    pub(crate) async fn acquire(self: &Arc<Self>) -> Slot {
        self.say_if_capped();
        let permit = self
            .in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        if let Some(bucket) = &self.per_minute {
            loop {
                let wait = {
                    let mut b = bucket.lock().unwrap_or_else(|e| e.into_inner());
                    let now = Instant::now();
                    let elapsed = now.duration_since(b.last).as_secs_f64();
                    b.tokens = (b.tokens + elapsed * b.refill_per_sec).min(b.capacity);
                    b.last = now;
                    if b.tokens >= 1.0 {
                        b.tokens -= 1.0;
                        None
                    } else {
                        Some(Duration::from_secs_f64((1.0 - b.tokens) / b.refill_per_sec))
                    }
                };
                match wait {
                    None => break,
                    Some(d) => tokio::time::sleep(d).await,
                }
            }
        }
        Slot {
            permit: Some(permit),
            limiter: self.clone(),
        }
    }

    /// A pinned limit below the run's parallelism makes cases wait for a slot: said
    /// once, so a slow run is never a mystery.
    fn say_if_capped(&self) {
        let parallelism = PARALLELISM.load(Ordering::Relaxed);
        let mut a = self.adaptive.lock().unwrap_or_else(|e| e.into_inner());
        if a.pinned && !a.said_capped && parallelism > a.limit {
            a.said_capped = true;
            eprintln!(
                "agentest: model endpoint {} allows {} requests in flight (max_in_flight) while {parallelism} cases run at once; calls wait for a slot",
                self.shown, a.limit
            );
        }
    }

    /// Adapts the limit to how a call went (unless it is pinned).
    pub(crate) fn observe(&self, load: Load) {
        let mut a = self.adaptive.lock().unwrap_or_else(|e| e.into_inner());
        if a.pinned {
            return;
        }
        match load {
            // Lowering the limit on timeouts and 429s (multiplicative decrease) is not
            // done yet: with one limiter per endpoint, the slow calls of some cases would
            // starve the healthy calls of others past their deadlines (the fault suite
            // shows it). Until time spent waiting for a slot is kept apart from a case's
            // deadline, an overloaded endpoint is only retried.
            Load::Overloaded => {}
            Load::Kept => {
                a.successes += 1;
                if a.successes >= a.limit && a.limit < a.ceiling {
                    a.successes = 0;
                    a.limit += 1;
                    if a.debt > 0 {
                        a.debt -= 1;
                    } else {
                        self.in_flight.add_permits(1);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn available(l: &Limiter) -> usize {
        l.in_flight.available_permits()
    }

    #[tokio::test]
    async fn success_grows_the_limit_toward_the_ceiling() {
        let l = Arc::new(Limiter::new("test", None, None));
        {
            let mut a = l.adaptive.lock().unwrap();
            a.ceiling = DEFAULT_IN_FLIGHT + 2;
        }
        let start = l.limit();
        assert_eq!(start, DEFAULT_IN_FLIGHT);
        for _ in 0..start {
            l.observe(Load::Kept);
        }
        assert_eq!(
            l.limit(),
            start + 1,
            "one more per run of successes as long as the limit"
        );
        assert_eq!(available(&l), start + 1);
        for _ in 0..100 {
            l.observe(Load::Kept);
        }
        assert_eq!(l.limit(), start + 2, "never past the ceiling");
        l.observe(Load::Overloaded);
        assert_eq!(l.limit(), start + 2);
    }

    #[tokio::test]
    async fn a_pinned_limit_never_moves() {
        let l = Arc::new(Limiter::new("test", Some(2), None));
        l.observe(Load::Overloaded);
        for _ in 0..10 {
            l.observe(Load::Kept);
        }
        assert_eq!(l.limit(), 2);
        assert_eq!(available(&l), 2);
    }
}
