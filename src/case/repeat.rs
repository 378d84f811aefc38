//! How often a case runs, what its repeats must show, and what it may spend.

/// What a case's repeats must show for its trial to pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gate {
    /// Every repeat passes: the gate when none is given.
    All,
    /// At least this many of the repeats pass (`min_pass`).
    MinPass(u32),
    /// The pass rate is at least `rate` (`pass_rate`). With `confidence`, the rate is
    /// judged by the Wilson score interval at that confidence: the gate passes when its
    /// lower bound is at least `rate` and fails when its upper bound is below it.
    PassRate {
        /// In (0, 1].
        rate: f64,
        /// In (0, 1), like 0.95.
        confidence: Option<f64>,
    },
}

impl Gate {
    /// How the gate reads in messages: `all 5 runs pass`, `min_pass 4 of 5`,
    /// `pass_rate 0.8 at confidence 0.95`.
    pub fn describe(&self, runs: u32) -> String {
        match self {
            Gate::All => format!("all {runs} runs pass"),
            Gate::MinPass(k) => format!("min_pass {k} of {runs}"),
            Gate::PassRate {
                rate,
                confidence: None,
            } => format!("pass_rate {rate} of {runs} runs"),
            Gate::PassRate {
                rate,
                confidence: Some(c),
            } => format!("pass_rate {rate} at confidence {c}, up to {runs} runs"),
        }
    }
}

/// A spending limit, on a case (all its repeats) or on a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// At most this much money, in the config's pricing currency.
    pub max_cost: Option<f64>,
    /// At most this many tokens (input and output, every role).
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// Whether it limits anything.
    pub fn is_set(&self) -> bool {
        self.max_cost.is_some() || self.max_tokens.is_some()
    }
}

/// A case's own `runs`, gate and budget, as written (the config and the command line
/// fill in what it leaves out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Repeats {
    /// `runs`: how many independent conversations the verdict comes from.
    pub runs: Option<u32>,
    /// `min_pass`, or `pass_rate` with `confidence`.
    pub gate: Option<Gate>,
    /// `max_cost` and `max_tokens`, over all of the case's repeats.
    pub budget: Budget,
}

/// Largest `runs` accepted: a case repeated more often is a load test, not a gate.
pub(crate) const MAX_RUNS: u32 = 10_000;

impl Gate {
    /// The gate `min_pass`, `pass_rate` and `confidence` give (each as written, at most
    /// one of the first two), checked; the error names the field and the fix.
    pub(crate) fn from_fields(
        min_pass: Option<u64>,
        pass_rate: Option<f64>,
        confidence: Option<f64>,
        runs: Option<u32>,
    ) -> Result<Option<Gate>, RepeatValueError> {
        use RepeatValueError as E;
        if let Some(c) = confidence.filter(|c| !(*c > 0.0 && *c < 1.0)) {
            return Err(E::Confidence(c));
        }
        match (min_pass, pass_rate) {
            (Some(_), Some(_)) => Err(E::BothGates),
            (Some(_), None) if confidence.is_some() => Err(E::ConfidenceWithMinPass),
            (Some(k), None) => {
                if k == 0 || k > u64::from(MAX_RUNS) {
                    return Err(E::MinPass(k));
                }
                let k = k as u32;
                if let Some(runs) = runs.filter(|n| k > *n) {
                    return Err(E::MinPassOverRuns { k, runs });
                }
                Ok(Some(Gate::MinPass(k)))
            }
            (None, Some(rate)) if !(rate > 0.0 && rate <= 1.0) => Err(E::PassRate(rate)),
            (None, Some(rate)) => Ok(Some(Gate::PassRate { rate, confidence })),
            (None, None) if confidence.is_some() => Err(E::ConfidenceAlone),
            (None, None) => Ok(None),
        }
    }
}

/// A repeat setting out of its range, or two that do not go together; its reader says
/// where ([`RepeatValueError::field`] names the field: `runs`, `[run].runs`, ...).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RepeatValueError {
    /// `confidence` outside (0, 1).
    #[error("expected a number between 0 and 1 (exclusive), like 0.95, found {0}")]
    Confidence(f64),
    /// `min_pass` and `pass_rate` together.
    #[error("give either `min_pass` (k of N repeats) or `pass_rate` (a share of them), not both")]
    BothGates,
    /// `confidence` with `min_pass`, whose gate is exact.
    #[error("`confidence` applies to `pass_rate`; with `min_pass` the gate is exact, so remove `confidence` or use `pass_rate`")]
    ConfidenceWithMinPass,
    /// `min_pass` outside 1 to [`MAX_RUNS`].
    #[error("expected a whole number of passing repeats from 1 to {MAX_RUNS}, found {0}")]
    MinPass(u64),
    /// `min_pass` above `runs`.
    #[error("min_pass {k} is more than the {runs} runs; lower `min_pass` or raise `runs`")]
    MinPassOverRuns {
        /// `min_pass`.
        k: u32,
        /// `runs`.
        runs: u32,
    },
    /// `pass_rate` outside (0, 1].
    #[error("expected a share of passing repeats above 0 and at most 1, like 0.8, found {0}")]
    PassRate(f64),
    /// `confidence` with no `pass_rate`.
    #[error("`confidence` needs a `pass_rate` to judge; add `pass_rate`, like 0.8")]
    ConfidenceAlone,
    /// `runs` outside 1 to [`MAX_RUNS`].
    #[error("expected a whole number of runs from 1 to {MAX_RUNS}, found {0}")]
    Runs(u64),
    /// `max_cost` not a positive amount.
    #[error("expected an amount above 0 in the pricing currency, like 0.50, found {0}")]
    Cost(f64),
}

impl RepeatValueError {
    /// The field to blame, as a case line names it.
    pub(crate) fn field(&self) -> &'static str {
        match self {
            RepeatValueError::Confidence(_)
            | RepeatValueError::ConfidenceWithMinPass
            | RepeatValueError::ConfidenceAlone => "confidence",
            RepeatValueError::BothGates | RepeatValueError::PassRate(_) => "pass_rate",
            RepeatValueError::MinPass(_) | RepeatValueError::MinPassOverRuns { .. } => "min_pass",
            RepeatValueError::Runs(_) => "runs",
            RepeatValueError::Cost(_) => "max_cost",
        }
    }
}

/// Checks `runs` as written: a whole number from 1 to [`MAX_RUNS`].
pub(crate) fn check_runs(runs: u64) -> Result<u32, RepeatValueError> {
    if (1..=u64::from(MAX_RUNS)).contains(&runs) {
        Ok(runs as u32)
    } else {
        Err(RepeatValueError::Runs(runs))
    }
}

/// Checks `max_cost` as written: a positive amount.
pub(crate) fn check_cost(cost: f64) -> Result<f64, RepeatValueError> {
    if cost.is_finite() && cost > 0.0 {
        Ok(cost)
    } else {
        Err(RepeatValueError::Cost(cost))
    }
}
