//! How steady a case's repeats were: the figures a repeated case reports.

use serde::{Deserialize, Serialize};

/// A repeated case's figures: how its repeats ended, the pass rate and its Wilson
/// interval, Yao's stability class, how alike the transcripts were, and durations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// The gate, as read: `min_pass 4 of 5`.
    pub gate: String,
    /// Repeats planned (`runs`).
    pub planned: u32,
    /// Repeats counted in the verdict.
    pub runs: u32,
    /// Repeats started: the counted ones, and any that were already running or had
    /// finished out of order when the gate was decided.
    pub started: u32,
    /// Repeats not counted because the gate was decided first (not started, or stopped
    /// while running): what early stopping saved.
    pub saved: u32,
    /// Of the saved, those stopped while running.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u32,
    /// Counted repeats that passed.
    pub passed: u32,
    /// Counted repeats that failed a check.
    pub failed: u32,
    /// Counted repeats that ended in an error or a timeout (never counted as failures).
    pub errors: u32,
    /// `passed / (passed + failed)`; `null` when every repeat errored.
    pub pass_rate: Option<f64>,
    /// The Wilson score interval of the pass rate, `[lower, upper]`.
    pub wilson: Option<[f64; 2]>,
    /// The interval's confidence (the gate's, else 0.95).
    pub confidence: f64,
    /// Yao's class of the pass rate.
    pub class: Option<StabilityClass>,
    /// The share of repeats whose transcript (normalised as golden files are) is the
    /// most common one.
    pub consistency: f64,
    /// The repeats' durations.
    pub duration: DurationStats,
    /// Some repeats passed and some failed.
    pub flaky: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Yao's stability classes, by pass rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StabilityClass {
    /// 100 %.
    Stable,
    /// 80–99 %.
    MostlyStable,
    /// 50–79 %.
    Unstable,
    /// Below 50 %.
    HighlyUnstable,
}

impl StabilityClass {
    /// The class of a pass rate in [0, 1].
    pub fn of(pass_rate: f64) -> StabilityClass {
        if pass_rate >= 1.0 {
            StabilityClass::Stable
        } else if pass_rate >= 0.8 {
            StabilityClass::MostlyStable
        } else if pass_rate >= 0.5 {
            StabilityClass::Unstable
        } else {
            StabilityClass::HighlyUnstable
        }
    }

    /// `stable`, `mostly_stable`, ...
    pub fn name(self) -> &'static str {
        match self {
            StabilityClass::Stable => "stable",
            StabilityClass::MostlyStable => "mostly_stable",
            StabilityClass::Unstable => "unstable",
            StabilityClass::HighlyUnstable => "highly_unstable",
        }
    }
}

/// Minimum, mean, maximum and (population) standard deviation of durations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DurationStats {
    /// Shortest, in milliseconds.
    pub min_ms: u64,
    /// Mean, in milliseconds.
    pub avg_ms: f64,
    /// Longest, in milliseconds.
    pub max_ms: u64,
    /// Standard deviation, in milliseconds.
    pub stddev_ms: f64,
}

impl DurationStats {
    /// The statistics of `durations`; all zero when there are none.
    pub fn of(durations: &[u64]) -> DurationStats {
        if durations.is_empty() {
            return DurationStats::default();
        }
        let n = durations.len() as f64;
        let avg = durations.iter().map(|&d| d as f64).sum::<f64>() / n;
        let var = durations
            .iter()
            .map(|&d| (d as f64 - avg).powi(2))
            .sum::<f64>()
            / n;
        DurationStats {
            min_ms: durations.iter().copied().min().unwrap_or(0),
            avg_ms: avg,
            max_ms: durations.iter().copied().max().unwrap_or(0),
            stddev_ms: var.sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn stability_classes_follow_yao() {
        assert_eq!(StabilityClass::of(1.0), StabilityClass::Stable);
        assert_eq!(StabilityClass::of(0.99), StabilityClass::MostlyStable);
        assert_eq!(StabilityClass::of(0.8), StabilityClass::MostlyStable);
        assert_eq!(StabilityClass::of(0.79), StabilityClass::Unstable);
        assert_eq!(StabilityClass::of(0.5), StabilityClass::Unstable);
        assert_eq!(StabilityClass::of(0.49), StabilityClass::HighlyUnstable);
        assert_eq!(StabilityClass::of(0.0), StabilityClass::HighlyUnstable);
    }

    #[test]
    fn duration_statistics() {
        let d = DurationStats::of(&[100, 200, 300, 400]);
        assert_eq!((d.min_ms, d.max_ms), (100, 400));
        assert!(close(d.avg_ms, 250.0));
        // Population variance: (150² + 50² + 50² + 150²) / 4 = 12500.
        assert!(close(d.stddev_ms, 12_500_f64.sqrt()));
        assert_eq!(DurationStats::of(&[]), DurationStats::default());
    }
}
