//! Saying on stderr when an agent is much slower than usual to reply. libtest-mimic has
//! no "running for over 60 seconds" notice, and an agent that never answers (the usual
//! case: a process agent that does not flush its reply) would otherwise be silent until
//! the case's timeout.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::util::format_duration;

/// When an agent's usual reply time is not known yet.
const FIRST_NOTICE: Duration = Duration::from_secs(60);
/// Never sooner than this, however fast the agent usually is (unless
/// `AGENTEST_SLOW_NOTICE_MIN` says otherwise: agentest's own tests lower it).
const SOONEST: Duration = Duration::from_secs(5);
/// "Much longer than usual".
const TIMES_USUAL: u32 = 10;
/// Replies seen before an agent's mean counts as usual.
const SAMPLES: u32 = 3;

/// Reply times by agent: (replies, total time).
fn seen() -> &'static Mutex<HashMap<String, (u32, Duration)>> {
    static SEEN: OnceLock<Mutex<HashMap<String, (u32, Duration)>>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// The agent's mean reply time, once it has replied a few times.
fn usual(agent: &str) -> Option<Duration> {
    let seen = seen().lock().unwrap_or_else(|e| e.into_inner());
    seen.get(agent)
        .filter(|(n, _)| *n >= SAMPLES)
        .map(|(n, total)| *total / *n)
}

/// How long a reply may take before it is said: ten times the usual, at least `soonest`
/// (5 s unless set), at most a minute; a minute while the usual is not known.
fn threshold(usual: Option<Duration>, soonest: Duration) -> Duration {
    match usual {
        Some(u) => (u * TIMES_USUAL).clamp(soonest.min(FIRST_NOTICE), FIRST_NOTICE),
        None => FIRST_NOTICE,
    }
}

/// Awaits `reply` (the agent's answer to `turn` of `trial`), saying once on stderr when
/// it takes much longer than `agent` usually does, and learning how long it took.
pub(crate) async fn noting<T>(
    reply: impl Future<Output = T>,
    trial: &str,
    agent: &str,
    turn: u32,
) -> T {
    let usual = usual(agent);
    let soonest = crate::settings::get().slow_notice_min.unwrap_or(SOONEST);
    let wait = threshold(usual, soonest);
    let started = tokio::time::Instant::now();
    tokio::pin!(reply);
    let out = tokio::select! {
        out = &mut reply => out,
        _ = tokio::time::sleep(wait) => {
            let why = match usual {
                Some(u) => format!("it usually answers in {}", format_duration(u)),
                None => "a process agent must write each reply as one line and flush it".to_string(),
            };
            eprintln!(
                "agentest: {trial}: agent `{agent}` has not replied to turn {turn} after {} ({why}); still waiting, up to the case's timeout",
                format_duration(wait)
            );
            reply.await
        }
    };
    let took = started.elapsed();
    let mut seen = seen().lock().unwrap_or_else(|e| e.into_inner());
    let entry = seen.entry(agent.to_string()).or_default();
    entry.0 += 1;
    entry.1 += took;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_comes_at_ten_times_the_usual_within_bounds() {
        let ms = Duration::from_millis;
        assert_eq!(threshold(None, SOONEST), FIRST_NOTICE);
        assert_eq!(threshold(Some(ms(10)), SOONEST), SOONEST);
        assert_eq!(
            threshold(Some(Duration::from_secs(2)), SOONEST),
            Duration::from_secs(20)
        );
        assert_eq!(
            threshold(Some(Duration::from_secs(30)), SOONEST),
            FIRST_NOTICE
        );
        // A lower floor (AGENTEST_SLOW_NOTICE_MIN) lowers only the floor.
        assert_eq!(threshold(Some(ms(10)), ms(500)), ms(500));
        assert_eq!(threshold(Some(ms(100)), ms(500)), Duration::from_secs(1));
        assert_eq!(threshold(None, ms(500)), FIRST_NOTICE);
        // One above the ceiling is the ceiling.
        assert_eq!(
            threshold(Some(ms(10)), Duration::from_secs(600)),
            FIRST_NOTICE
        );
    }
}
