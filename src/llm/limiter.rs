//! One limiter per endpoint per process: requests in flight, and requests started per
//! minute. Under nextest each case is its own process, so bound model traffic there
//! with a test group (`max-threads`) instead; see the README.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Limits for one endpoint.
#[derive(Debug)]
pub(crate) struct Limiter {
    in_flight: Arc<Semaphore>,
    per_minute: Option<Mutex<Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    capacity: f64,
    tokens: f64,
    refill_per_sec: f64,
    last: Instant,
}

impl Limiter {
    /// The shared limiter for `endpoint`; the first caller's limits win.
    pub(crate) fn for_endpoint(
        endpoint: &str,
        max_in_flight: usize,
        per_minute: Option<u32>,
    ) -> Arc<Limiter> {
        static ALL: OnceLock<Mutex<HashMap<String, Arc<Limiter>>>> = OnceLock::new();
        let mut all = ALL
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.entry(endpoint.to_string())
            .or_insert_with(|| {
                Arc::new(Limiter {
                    in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))),
                    per_minute: per_minute.filter(|n| *n > 0).map(|n| {
                        Mutex::new(Bucket {
                            capacity: f64::from(n).clamp(1.0, 60.0),
                            tokens: f64::from(n).clamp(1.0, 60.0),
                            refill_per_sec: f64::from(n) / 60.0,
                            last: Instant::now(),
                        })
                    }),
                })
            })
            .clone()
    }

    /// Waits for a slot in flight and, when a rate is set, for the rate to allow a start.
    pub(crate) async fn acquire(&self) -> OwnedSemaphorePermit {
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
        permit
    }
}
