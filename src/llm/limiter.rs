//! One limiter per endpoint per process: requests in flight, and requests started per
//! minute. The in-flight limit is the process's own (under nextest each case is its own
//! process, so bound it there with a test group, `max-threads`; see docs/models.md);
//! the rate is the execution's, kept in the run store's ledger when a store is open.
//!
//! The in-flight limit adapts unless `max_in_flight` pins it (additive increase,
//! multiplicative decrease): it starts at 16; each run of successful calls as long as
//! the limit raises it by one, up to the run's parallelism, so `--parallel 64` against a
//! fast endpoint is not held at 16; a timeout or a 429 halves it (once for the calls
//! that were in flight together), so a one-slot local server is not drowned by calls it
//! cannot serve, whose abandoned requests would keep it busy. The first decrease, and a
//! pinned limit below the run's parallelism, are said once on stderr.
//!
//! Time a case spends waiting for a slot counts against its deadline (a case's time is
//! what the user waits for), so [`SlotWait`] keeps it, and a case that times out says how
//! much of its time went there.

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
    per_minute: Option<Mutex<Window>>,
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
    /// When the limit was last lowered: calls that started before then were in flight
    /// together with the call that lowered it, and do not lower it again.
    lowered_at: Option<Instant>,
    /// Whether a decrease was said on stderr already.
    said_lowered: bool,
}

/// `requests_per_minute` kept as a window, not a bucket: no window (a minute) holds more
/// than `limit` starts. A bucket that starts full would allow nearly twice the limit in
/// the first minute: the full bucket, then its refill.
#[derive(Debug)]
struct Window {
    limit: u32,
    /// The starts within the last window, oldest first.
    starts: std::collections::VecDeque<Instant>,
}

impl Window {
    /// Starts now if the window allows it, else how long until it will.
    fn start(&mut self, window: Duration) -> Option<Duration> {
        let now = Instant::now();
        while self
            .starts
            .front()
            .is_some_and(|s| now.duration_since(*s) >= window)
        {
            self.starts.pop_front();
        }
        if self.starts.len() < self.limit as usize {
            self.starts.push_back(now);
            return None;
        }
        let oldest = *self.starts.front().expect("a full window has a start");
        Some(
            (oldest + window)
                .saturating_duration_since(now)
                .max(Duration::from_millis(1)),
        )
    }
}

/// A slot in flight; returned (or retired, when the limit fell) when dropped.
pub(crate) struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    limiter: Arc<Limiter>,
    /// When the call got its slot.
    started: Instant,
}

impl Slot {
    /// Adapts the endpoint's limit to how the call in this slot went.
    pub(crate) fn observe(&self, load: Load) {
        self.limiter.observe(load, self.started);
    }
}

/// The time one case's model calls spent waiting for a slot (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct SlotWait {
    state: Mutex<WaitState>,
}

#[derive(Debug, Default)]
struct WaitState {
    total: Duration,
    /// A wait under way (a call whose case timed out while it waited never ends it).
    since: Option<Instant>,
    /// The endpoint waited for, as messages show it, and its limit then.
    endpoint: String,
    limit: usize,
}

impl SlotWait {
    fn start(&self, endpoint: &str, limit: usize) {
        let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        w.since = Some(Instant::now());
        w.endpoint = endpoint.to_string();
        w.limit = limit;
    }

    fn stop(&self) {
        let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(since) = w.since.take() {
            w.total += since.elapsed();
        }
    }

    /// How long the case waited for slots so far (a wait under way included), for which
    /// endpoint and with what limit; `None` when it never waited noticeably.
    pub(crate) fn waited(&self) -> Option<(Duration, String, usize)> {
        let w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let total = w.total + w.since.map(|s| s.elapsed()).unwrap_or_default();
        (total >= Duration::from_millis(100)).then(|| (total, w.endpoint.clone(), w.limit))
    }
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
                lowered_at: None,
                said_lowered: false,
            }),
            per_minute: per_minute.filter(|n| *n > 0).map(|limit| {
                Mutex::new(Window {
                    limit,
                    starts: Default::default(),
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

    /// Waits for a slot in flight and, when a rate is set, for the rate to allow a start;
    /// the time it takes goes into `wait`.
    pub(crate) async fn acquire(self: &Arc<Self>, wait: &SlotWait) -> Slot {
        self.say_if_capped();
        let limit = self
            .adaptive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .limit;
        wait.start(&self.shown, limit);
        let slot = self.acquire_slot().await;
        wait.stop();
        slot
    }

    async fn acquire_slot(self: &Arc<Self>) -> Slot {
        let permit = self
            .in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        if let Some(window) = &self.per_minute {
            self.wait_for_the_rate(window).await;
        }
        Slot {
            permit: Some(permit),
            limiter: self.clone(),
            started: Instant::now(),
        }
    }

    /// Waits until the rate allows a start: the execution's ledger in the run store,
    /// when one is open, which counts the starts of every process of the execution
    /// (machines included); else this process's own window.
    async fn wait_for_the_rate(&self, window: &Mutex<Window>) {
        let span = crate::settings::get().rate_window;
        let limit = window.lock().unwrap_or_else(|e| e.into_inner()).limit;
        loop {
            let wait = match crate::record::store::start_request(&self.shown, limit, span).await {
                Some(wait) => wait,
                None => window.lock().unwrap_or_else(|e| e.into_inner()).start(span),
            };
            match wait {
                None => return,
                Some(d) => tokio::time::sleep(d).await,
            }
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

    /// Adapts the limit to how a call that started at `started` went (unless pinned).
    fn observe(&self, load: Load, started: Instant) {
        let mut a = self.adaptive.lock().unwrap_or_else(|e| e.into_inner());
        if a.pinned {
            return;
        }
        match load {
            Load::Overloaded => {
                if a.lowered_at.is_some_and(|t| started < t) || a.limit == 1 {
                    return;
                }
                let from = a.limit;
                let to = (from / 2).max(1);
                a.limit = to;
                a.successes = 0;
                a.lowered_at = Some(Instant::now());
                // Free permits go at once; those in use are retired as they come back.
                let retired = self.in_flight.forget_permits(from - to);
                a.debt += from - to - retired;
                if !a.said_lowered {
                    a.said_lowered = true;
                    eprintln!(
                        "agentest: model endpoint {} is overloaded (a timeout or HTTP 429); lowering its requests in flight from {from} to {to}, raised again as calls succeed; set max_in_flight in its table to pin the limit",
                        self.shown
                    );
                }
            }
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
        let now = Instant::now();
        for _ in 0..start {
            l.observe(Load::Kept, now);
        }
        assert_eq!(
            l.limit(),
            start + 1,
            "one more per run of successes as long as the limit"
        );
        assert_eq!(available(&l), start + 1);
        for _ in 0..100 {
            l.observe(Load::Kept, now);
        }
        assert_eq!(l.limit(), start + 2, "never past the ceiling");
    }

    #[tokio::test]
    async fn overload_halves_the_limit_once_per_flight_and_it_grows_back() {
        let l = Arc::new(Limiter::new("test", None, None));
        let wait = SlotWait::default();
        assert_eq!(l.limit(), 16);
        // Ten calls in flight together; two of them time out.
        let mut slots = Vec::new();
        for _ in 0..10 {
            slots.push(l.acquire(&wait).await);
        }
        slots[0].observe(Load::Overloaded);
        assert_eq!(l.limit(), 8);
        assert_eq!(available(&l), 0, "6 free permits retired at once, 2 owed");
        slots[1].observe(Load::Overloaded);
        assert_eq!(l.limit(), 8, "calls of the same flight lower it once");
        drop(slots);
        assert_eq!(
            available(&l),
            8,
            "the owed permits retired as they came back"
        );
        // A call that starts after the decrease and times out lowers it again.
        let s = l.acquire(&wait).await;
        s.observe(Load::Overloaded);
        drop(s);
        assert_eq!((l.limit(), available(&l)), (4, 4));
        for _ in 0..3 {
            let s = l.acquire(&wait).await;
            s.observe(Load::Overloaded);
        }
        assert_eq!(l.limit(), 1, "never below one");
        // Successes raise it by one per run as long as the limit.
        let s = l.acquire(&wait).await;
        s.observe(Load::Kept);
        drop(s);
        assert_eq!((l.limit(), available(&l)), (2, 2));
        assert!(wait.waited().is_none(), "no call waited");
    }

    #[tokio::test]
    async fn time_spent_waiting_for_a_slot_is_kept() {
        let l = Arc::new(Limiter::new("http://model", Some(1), None));
        let wait = SlotWait::default();
        let first = l.acquire(&wait).await;
        let waiting = {
            let l = l.clone();
            tokio::spawn(async move {
                let wait = SlotWait::default();
                let _slot =
                    tokio::time::timeout(Duration::from_millis(300), l.acquire(&wait)).await;
                wait.waited()
            })
        };
        let (waited, endpoint, limit) = waiting.await.unwrap().expect("it waited");
        drop(first);
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
            "a wait cut short still counts: {waited:?}"
        );
        assert_eq!((endpoint.as_str(), limit), ("http://model", 1));
    }

    #[tokio::test]
    async fn a_pinned_limit_never_moves() {
        let l = Arc::new(Limiter::new("test", Some(2), None));
        let now = Instant::now();
        l.observe(Load::Overloaded, now);
        for _ in 0..10 {
            l.observe(Load::Kept, now);
        }
        assert_eq!(l.limit(), 2);
        assert_eq!(available(&l), 2);
    }
}
