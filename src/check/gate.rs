//! Repeats into one verdict: the gate's decision (with early stopping), the Wilson
//! score interval, and the stability figures of a case's repeats. Pure arithmetic, so
//! every number here can be checked by hand.

use crate::case::Gate;

/// How a case's repeats ended so far. `error` and `timeout` repeats are `errors`: they
/// say nothing about whether the agent passes, so they are never counted as failures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Repeats that passed.
    pub passed: u32,
    /// Repeats that failed a check.
    pub failed: u32,
    /// Repeats that ended in an error or a timeout.
    pub errors: u32,
}

impl Tally {
    /// Repeats counted.
    pub(crate) fn done(&self) -> u32 {
        self.passed + self.failed + self.errors
    }
}

/// What the gate says of a case's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The gate holds, whatever the errors and the repeats not run would have been.
    Passed,
    /// The gate fails, whatever the errors and the repeats not run would have been.
    Failed,
    /// Errors decide it: counted as passes the gate would hold, counted as failures it
    /// would not.
    Undecidable,
    /// Every repeat ran without error and the Wilson interval still straddles the rate.
    Inconclusive,
}

/// Decides the gate on `tally` out of `runs` planned repeats, or `None` while the
/// repeats still to run could change the verdict. A decision before every repeat ran
/// is early stopping: the rest need not start.
///
/// Count gates (`All`, `MinPass`, `PassRate` without confidence: k of N) are decided
/// when k passes are reached, or when more than N − k repeats failed; when errors leave
/// too few repeats for k passes yet too few failures to fail, errors decide it
/// (`Undecidable`). A gate with confidence is decided on the repeats so far: passed when
/// the Wilson lower bound, errors counted as failures, is at least the rate; failed when
/// the upper bound, errors counted as passes, is below it.
pub(crate) fn decide(gate: &Gate, runs: u32, tally: Tally) -> Option<Verdict> {
    let runs = runs.max(1);
    let Tally {
        passed,
        failed,
        errors,
    } = tally;
    let left = runs.saturating_sub(tally.done());
    match needed(gate, runs) {
        Some(k) => {
            if passed >= k {
                Some(Verdict::Passed)
            } else if failed > runs - k {
                Some(Verdict::Failed)
            } else if passed + left < k {
                Some(Verdict::Undecidable)
            } else {
                None
            }
        }
        None => {
            let Gate::PassRate {
                rate,
                confidence: Some(c),
            } = *gate
            else {
                unreachable!("only a rate with a confidence has no count")
            };
            let n = tally.done();
            if n == 0 {
                return None;
            }
            if wilson(passed, n, c).0 >= rate {
                Some(Verdict::Passed)
            } else if wilson(passed + errors, n, c).1 < rate {
                Some(Verdict::Failed)
            } else if left > 0 {
                None
            } else if errors > 0 {
                Some(Verdict::Undecidable)
            } else {
                Some(Verdict::Inconclusive)
            }
        }
    }
}

/// The passes a count gate needs of `runs` (k of N); `None` for a rate with confidence.
pub(crate) fn needed(gate: &Gate, runs: u32) -> Option<u32> {
    match *gate {
        Gate::All => Some(runs),
        Gate::MinPass(k) => Some(k.min(runs)),
        Gate::PassRate {
            rate,
            confidence: None,
        } => {
            // ceil(rate × N), without 0.8 × 5 = 4.000000000000001 asking for 5.
            let exact = rate * f64::from(runs);
            let k = (exact - 1e-9).ceil().max(1.0) as u32;
            Some(k.min(runs))
        }
        Gate::PassRate {
            confidence: Some(_),
            ..
        } => None,
    }
}

/// The Wilson score interval of `passed` successes in `n` trials at two-sided
/// `confidence` (0.95 → z = 1.96): `(lower, upper)`, `(0, 1)` when `n` is 0.
pub(crate) fn wilson(passed: u32, n: u32, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = z_of(confidence);
    let n = f64::from(n);
    let p = f64::from(passed) / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At the ends the bounds are exact: no rounding above 1 or below 0.
    let lower = if passed == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let upper = if f64::from(passed) == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lower, upper)
}

/// The standard normal quantile for a two-sided `confidence`: Φ⁻¹(1 − (1 − c) / 2).
pub(crate) fn z_of(confidence: f64) -> f64 {
    inverse_normal(1.0 - (1.0 - confidence) / 2.0)
}

/// Φ⁻¹(p) for p in (0, 1), by Peter Acklam's rational approximation (relative error
/// below 1.2e-9), which needs no dependency and no iteration.
fn inverse_normal(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    if p < LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inverse_normal(1.0 - p)
    }
}

/// The share of `transcripts` equal to the most common one (1.0 for one or none).
pub(crate) fn consistency(transcripts: &[String]) -> f64 {
    if transcripts.len() < 2 {
        return 1.0;
    }
    let mut counts = std::collections::HashMap::<&str, usize>::new();
    for t in transcripts {
        *counts.entry(t.as_str()).or_default() += 1;
    }
    let most = counts.values().copied().max().unwrap_or(0);
    most as f64 / transcripts.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(passed: u32, failed: u32, errors: u32) -> Tally {
        Tally {
            passed,
            failed,
            errors,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn z_matches_the_normal_table() {
        assert!(close(z_of(0.95), 1.959_964));
        assert!(close(z_of(0.90), 1.644_854));
        assert!(close(z_of(0.99), 2.575_829));
        assert!(close(z_of(0.999_9), 3.890_592));
    }

    #[test]
    fn wilson_bounds_match_hand_computed_values() {
        // 18 of 20 at 95 %: p = 0.9, z² / n = 0.19208, centre 0.83555, half 0.13659.
        let (lo, hi) = wilson(18, 20, 0.95);
        assert!(close(lo, 0.698_96), "{lo}");
        assert!(close(hi, 0.972_13), "{hi}");
        // All passes: the lower bound is n / (n + z²).
        let (lo, hi) = wilson(16, 16, 0.95);
        assert!(close(lo, 16.0 / (16.0 + 1.959_964_f64.powi(2))), "{lo}");
        assert!(close(hi, 1.0));
        // No passes: the upper bound is z² / (n + z²).
        let (lo, hi) = wilson(0, 1, 0.95);
        assert!(close(lo, 0.0));
        assert!(close(hi, 0.793_45), "{hi}");
        assert_eq!(wilson(0, 0, 0.95), (0.0, 1.0));
    }

    #[test]
    fn all_is_decided_by_the_first_failure_or_the_last_pass() {
        assert_eq!(decide(&Gate::All, 5, t(4, 0, 0)), None);
        assert_eq!(decide(&Gate::All, 5, t(5, 0, 0)), Some(Verdict::Passed));
        assert_eq!(decide(&Gate::All, 5, t(1, 1, 0)), Some(Verdict::Failed));
        // An error before any failure: five passes are out of reach, no failure shown.
        assert_eq!(
            decide(&Gate::All, 5, t(1, 0, 1)),
            Some(Verdict::Undecidable)
        );
    }

    #[test]
    fn min_pass_stops_when_k_is_reached_or_out_of_reach() {
        let g = Gate::MinPass(3);
        assert_eq!(decide(&g, 5, t(3, 0, 0)), Some(Verdict::Passed));
        assert_eq!(decide(&g, 5, t(3, 2, 0)), Some(Verdict::Passed));
        assert_eq!(decide(&g, 5, t(2, 2, 0)), None);
        // Three failures of five: at most two passes are left.
        assert_eq!(decide(&g, 5, t(0, 3, 0)), Some(Verdict::Failed));
        // Two failures, two errors: one repeat left cannot make three passes, but with
        // the errors as passes the gate could have held.
        assert_eq!(decide(&g, 5, t(0, 2, 2)), Some(Verdict::Undecidable));
        assert_eq!(decide(&g, 5, t(1, 1, 1)), None);
        assert_eq!(decide(&g, 5, t(2, 2, 1)), Some(Verdict::Undecidable));
        // Errors never count as failures: two errors, no failure, still open.
        assert_eq!(decide(&g, 5, t(1, 0, 2)), None);
    }

    #[test]
    fn a_rate_without_confidence_is_k_of_n() {
        let g = |rate| Gate::PassRate {
            rate,
            confidence: None,
        };
        assert_eq!(needed(&g(0.8), 5), Some(4));
        assert_eq!(needed(&g(0.8), 10), Some(8));
        assert_eq!(needed(&g(0.75), 10), Some(8));
        assert_eq!(needed(&g(0.01), 10), Some(1));
        assert_eq!(needed(&g(1.0), 7), Some(7));
        assert_eq!(decide(&g(0.8), 10, t(8, 0, 0)), Some(Verdict::Passed));
        assert_eq!(decide(&g(0.8), 10, t(5, 3, 0)), Some(Verdict::Failed));
    }

    #[test]
    fn a_rate_with_confidence_stops_when_the_interval_settles() {
        let g = Gate::PassRate {
            rate: 0.8,
            confidence: Some(0.95),
        };
        // 15 straight passes: lower bound 15 / 18.84 = 0.796, not yet; 16: 0.806.
        assert_eq!(decide(&g, 30, t(15, 0, 0)), None);
        assert_eq!(decide(&g, 30, t(16, 0, 0)), Some(Verdict::Passed));
        // One failure first: the upper bound 0.793 is below 0.8.
        assert_eq!(decide(&g, 30, t(0, 1, 0)), Some(Verdict::Failed));
        // 18 of 20 straddles 0.8 (0.699–0.972): inconclusive once all 20 ran.
        assert_eq!(decide(&g, 30, t(18, 2, 0)), None);
        assert_eq!(decide(&g, 20, t(18, 2, 0)), Some(Verdict::Inconclusive));
        // An error is a failure for the lower bound and a pass for the upper one.
        assert_eq!(decide(&g, 30, t(0, 0, 1)), None);
        assert_eq!(decide(&g, 17, t(16, 0, 1)), Some(Verdict::Undecidable));
        assert_eq!(decide(&g, 30, t(16, 0, 1)), None);
    }

    #[test]
    fn consistency_is_the_share_of_the_most_common_transcript() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(close(consistency(&s(&["a", "a", "b", "a"])), 0.75));
        assert!(close(consistency(&s(&["a"])), 1.0));
    }
}
