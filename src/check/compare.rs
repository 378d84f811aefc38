//! What changed between two executions, honestly: cases that went from passing to
//! failing and back, new and removed cases, and for the pass counts (a case's repeats,
//! and the whole run's) whether a drop is more than chance, by Fisher's exact test.
//! Two runs of a non-deterministic agent differ by chance; only a significant drop is
//! a regression.

use serde::Serialize;

use crate::record::{CaseReport, Status};

/// A case's passes and failures in one execution: its counted repeats, or its one run.
/// Errors, skips and inconclusive runs say nothing either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub(crate) passed: u32,
    pub(crate) failed: u32,
}

impl Counts {
    /// What a case's record counts.
    pub(crate) fn of(r: &CaseReport) -> Counts {
        match &r.stability {
            Some(s) => Counts {
                passed: s.passed,
                failed: s.failed,
            },
            None => Counts {
                passed: u32::from(r.status == Status::Passed),
                failed: u32::from(matches!(r.status, Status::Failed | Status::Timeout)),
            },
        }
    }

    fn rate(self) -> Option<f64> {
        let n = self.passed + self.failed;
        (n > 0).then(|| f64::from(self.passed) / f64::from(n))
    }

    fn add(&mut self, o: Counts) {
        self.passed += o.passed;
        self.failed += o.failed;
    }
}

/// How a case changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Change {
    /// Passed in the first, not in the second.
    NowFailing,
    /// Not passed in the first, passed in the second.
    NowPassing,
    /// The same status in both.
    Same,
    /// Another change of status (failed to error, ...).
    Other,
    /// Only in the second.
    New,
    /// Only in the first.
    Removed,
}

/// One case in both (or either) executions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CaseChange {
    pub(crate) trial: String,
    /// Its status in each, when it ran there.
    pub(crate) before: Option<Status>,
    pub(crate) after: Option<Status>,
    pub(crate) before_counts: Option<Counts>,
    pub(crate) after_counts: Option<Counts>,
    pub(crate) change: Change,
    /// Fisher's one-sided p-value that the second's pass rate is no lower than the
    /// first's, when the rate dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p_value: Option<f64>,
    /// A drop significant at the comparison's level.
    pub(crate) regression: bool,
}

/// Two executions compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Comparison {
    /// The significance level.
    pub(crate) alpha: f64,
    pub(crate) cases: Vec<CaseChange>,
    /// Every counted run of the cases in both.
    pub(crate) before: Counts,
    pub(crate) after: Counts,
    /// Fisher's one-sided p-value for the whole, when its pass rate dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p_value: Option<f64>,
    /// Whether the whole's drop is significant.
    pub(crate) regression: bool,
}

impl Comparison {
    /// Whether anything regressed: a case, or the whole.
    pub(crate) fn regressed(&self) -> bool {
        self.regression || self.cases.iter().any(|c| c.regression)
    }
}

/// Compares `before` with `after` (each an execution's case records) at level `alpha`.
pub(crate) fn compare(before: &[CaseReport], after: &[CaseReport], alpha: f64) -> Comparison {
    use std::collections::BTreeMap;
    let index = |rs: &[CaseReport]| -> BTreeMap<String, (Status, Counts)> {
        rs.iter()
            .map(|r| (r.trial.clone(), (r.status, Counts::of(r))))
            .collect()
    };
    let (a, b) = (index(before), index(after));
    let mut trials: Vec<&String> = a.keys().chain(b.keys()).collect();
    trials.sort();
    trials.dedup();
    let zero = Counts {
        passed: 0,
        failed: 0,
    };
    let (mut all_a, mut all_b) = (zero, zero);
    let mut cases = Vec::with_capacity(trials.len());
    for t in trials {
        let (x, y) = (a.get(t), b.get(t));
        let change = match (x, y) {
            (None, _) => Change::New,
            (_, None) => Change::Removed,
            (Some((s, _)), Some((u, _))) if s == u => Change::Same,
            (Some((Status::Passed, _)), Some(_)) => Change::NowFailing,
            (Some(_), Some((Status::Passed, _))) => Change::NowPassing,
            _ => Change::Other,
        };
        let (mut p_value, mut regression) = (None, false);
        if let (Some((_, ca)), Some((_, cb))) = (x, y) {
            all_a.add(*ca);
            all_b.add(*cb);
            if let Some(p) = drop_p(*ca, *cb) {
                p_value = Some(p);
                regression = p < alpha;
            }
        }
        cases.push(CaseChange {
            trial: t.clone(),
            before: x.map(|v| v.0),
            after: y.map(|v| v.0),
            before_counts: x.map(|v| v.1),
            after_counts: y.map(|v| v.1),
            change,
            p_value,
            regression,
        });
    }
    let p_value = drop_p(all_a, all_b);
    Comparison {
        alpha,
        cases,
        before: all_a,
        after: all_b,
        regression: p_value.is_some_and(|p| p < alpha),
        p_value,
    }
}

/// A case's runs across executions, summed up: how often it passed (each counted
/// repeat of a repeated case, else each run), the 95 % Wilson interval of its pass
/// rate, and since when it is flaky: the first execution whose verdict differed from
/// the one before, or whose repeats both passed and failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct History {
    pub(crate) passed: u32,
    pub(crate) failed: u32,
    pub(crate) pass_rate: Option<f64>,
    pub(crate) wilson: Option<[f64; 2]>,
    pub(crate) changed_at: Option<i64>,
}

/// One run of a case, as its history reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HistoryRun<'a> {
    pub(crate) execution: i64,
    pub(crate) verdict: &'a str,
    /// A repeated case's counted repeats; None for a case run once.
    pub(crate) repeats: Option<Counts>,
}

/// The history of runs given oldest first. Verdicts other than passed, failed and
/// timeout count neither way.
pub(crate) fn history(runs: &[HistoryRun<'_>]) -> History {
    let mut h = History {
        passed: 0,
        failed: 0,
        pass_rate: None,
        wilson: None,
        changed_at: None,
    };
    let mut last: Option<bool> = None;
    for run in runs {
        let passed = match run.verdict {
            "passed" => true,
            "failed" | "timeout" => false,
            _ => continue,
        };
        let counted = run.repeats.unwrap_or(Counts {
            passed: u32::from(passed),
            failed: u32::from(!passed),
        });
        h.passed += counted.passed;
        h.failed += counted.failed;
        let mixed = counted.passed > 0 && counted.failed > 0;
        if (mixed || last.is_some_and(|l| l != passed)) && h.changed_at.is_none() {
            h.changed_at = Some(run.execution);
        }
        last = Some(passed);
    }
    let n = h.passed + h.failed;
    if n > 0 {
        h.pass_rate = Some(f64::from(h.passed) / f64::from(n));
        let (lo, hi) = crate::check::gate::wilson(h.passed, n, 0.95);
        h.wilson = Some([lo, hi]);
    }
    h
}

/// Fisher's exact test, one-sided, when `after`'s pass rate is below `before`'s: the
/// probability, with the four margins fixed, of `after` passing as few times as it did
/// or fewer. `None` when the rate did not drop (or either has no counted run).
pub(crate) fn drop_p(before: Counts, after: Counts) -> Option<f64> {
    let (ra, rb) = (before.rate()?, after.rate()?);
    if rb >= ra {
        return None;
    }
    let n_after = after.passed + after.failed;
    let passes = before.passed + after.passed;
    let total = n_after + before.passed + before.failed;
    // P(X = k) for X ~ Hypergeometric(total, passes, n_after), for k up to the observed.
    let low = passes.saturating_sub(total - n_after);
    let p: f64 = (low..=after.passed)
        .map(|k| hypergeometric(total, passes, n_after, k))
        .sum();
    Some(p.min(1.0))
}

/// `C(K, k) C(N-K, n-k) / C(N, n)`, by logarithms.
fn hypergeometric(n_total: u32, k_total: u32, n: u32, k: u32) -> f64 {
    (ln_choose(k_total, k) + ln_choose(n_total - k_total, n - k) - ln_choose(n_total, n)).exp()
}

fn ln_choose(n: u32, k: u32) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

fn ln_factorial(n: u32) -> f64 {
    (2..=n).map(|i| f64::from(i).ln()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(passed: u32, failed: u32) -> Counts {
        Counts { passed, failed }
    }

    #[test]
    fn a_history_counts_passes_and_finds_the_first_change() {
        let run = |execution, verdict| HistoryRun {
            execution,
            verdict,
            repeats: None,
        };
        let h = history(&[
            run(1, "passed"),
            run(2, "skipped"),
            run(3, "passed"),
            run(4, "failed"),
            run(5, "passed"),
        ]);
        assert_eq!((h.passed, h.failed), (3, 1));
        assert_eq!(h.pass_rate, Some(0.75));
        assert_eq!(h.changed_at, Some(4));
        let [lo, hi] = h.wilson.unwrap();
        // Wilson 95 % for 3 of 4: centre (3 + 1.92) / 7.84, half width 1.96/7.84 * sqrt(0.75 + 0.96).
        let z: f64 = 1.959_963_984_540_054;
        let (n, p) = (4.0_f64, 0.75_f64);
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        assert!(
            (lo - (centre - half)).abs() < 1e-9 && (hi - (centre + half)).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(history(&[run(1, "error")]).pass_rate, None);
        // A repeated case counts its repeats, and is flaky from the first execution
        // whose repeats both passed and failed, its verdict the same throughout.
        let repeated = |execution, passed, failed| HistoryRun {
            execution,
            verdict: "passed",
            repeats: Some(c(passed, failed)),
        };
        let h = history(&[repeated(1, 5, 0), repeated(2, 4, 1), repeated(3, 5, 0)]);
        assert_eq!((h.passed, h.failed, h.changed_at), (14, 1, Some(2)));
    }

    #[test]
    fn fisher_matches_hand_computed_values() {
        // 9/10 then 2/10: margins 11 passes of 20, 10 in the second. P(X <= 2) =
        // [C(11,1)C(9,9) + C(11,2)C(9,8)] / C(20,10) = (11 + 495) / 184756.
        let p = drop_p(c(9, 1), c(2, 8)).unwrap();
        assert!((p - 506.0 / 184_756.0).abs() < 1e-12, "{p}");
        // One run each, pass then fail: 1/2, never significant.
        assert_eq!(drop_p(c(1, 0), c(0, 1)), Some(0.5));
        // No drop: no test.
        assert_eq!(drop_p(c(5, 5), c(6, 4)), None);
        assert_eq!(drop_p(c(0, 0), c(0, 3)), None);
    }
}
