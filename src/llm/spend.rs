//! Spending against budgets: a case's `max_cost` / `max_tokens` (over all its repeats)
//! and the run's `[run] max_cost` / `max_tokens`. Every model call sent (not replayed)
//! adds what it spent to the meters above it, and each call first checks them, so a
//! case stops at the first call after its budget is gone.
//!
//! The run's budget is the execution's: with a run store open, every spending is also
//! written to the store's ledger, and before each call the run's meter learns what the
//! execution's other processes have spent (machines included). So the execution as a
//! whole stops at the first call after the budget is gone, over by at most what the
//! calls in flight across the execution at that moment spend.

use std::sync::{Arc, Mutex};

use crate::case::Budget;
use crate::errors::BudgetError;
use crate::protocol::TokenUsage;
use crate::record::format::common::money;

/// What has been spent under one budget.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    tokens: u64,
    cost: f64,
}

/// What the execution's other processes spent, as the store's ledger last said.
static ELSEWHERE: Mutex<Spent> = Mutex::new(Spent {
    tokens: 0,
    cost: 0.0,
});

/// Asks the store's ledger what the execution's other processes have spent, for the
/// run's meter (nothing changes without a store).
pub(crate) async fn learn_spent_elsewhere() {
    if let Some((tokens, cost)) = crate::record::store::spent_elsewhere().await {
        *ELSEWHERE.lock().unwrap_or_else(|e| e.into_inner()) = Spent { tokens, cost };
    }
}

/// One budget and what has been spent against it, shared by everything under it.
#[derive(Debug)]
pub(crate) struct Meter {
    /// `the case's` or `the run's`, for messages.
    owner: &'static str,
    budget: Budget,
    /// The pricing currency, for messages.
    currency: String,
    spent: Mutex<Spent>,
    /// The run's budget, which every process of the execution spends under.
    shared: bool,
}

impl Meter {
    /// A meter for `budget`; `owner` names whose it is in messages.
    pub(crate) fn new(owner: &'static str, budget: Budget, currency: Option<&str>) -> Arc<Meter> {
        Arc::new(Meter {
            owner,
            budget,
            currency: currency.unwrap_or("USD").to_string(),
            spent: Mutex::new(Spent::default()),
            shared: false,
        })
    }

    /// A meter for the same budget with nothing spent against it: to count again what
    /// stored records spent (a case's repeats spread over workers).
    pub(crate) fn fresh(&self) -> Arc<Meter> {
        Arc::new(Meter {
            owner: self.owner,
            budget: self.budget,
            currency: self.currency.clone(),
            spent: Mutex::new(Spent::default()),
            shared: false,
        })
    }

    /// Counts `tokens` and `cost` spent against the budget (see [`Meter::fresh`]).
    pub(crate) fn charge(&self, tokens: u64, cost: f64) {
        let mut s = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        s.tokens += tokens;
        s.cost += cost;
    }

    /// The run's meter: its budget holds for every process of the execution.
    pub(crate) fn for_run(budget: Budget, currency: Option<&str>) -> Arc<Meter> {
        let mut m = Meter::new("the run's", budget, currency);
        if let Some(m) = Arc::get_mut(&mut m) {
            m.shared = true;
        }
        m
    }

    /// Why no more may be spent, when the budget is gone.
    pub(crate) fn exhausted(&self) -> Option<String> {
        let mut spent = *self.spent.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared {
            let elsewhere = *ELSEWHERE.lock().unwrap_or_else(|e| e.into_inner());
            spent.tokens += elsewhere.tokens;
            spent.cost += elsewhere.cost;
        }
        if let Some(max) = self.budget.max_cost.filter(|m| spent.cost >= *m) {
            return Some(format!(
                "{} budget max_cost {max} {c} is spent ({} {c} so far)",
                self.owner,
                money(spent.cost),
                c = self.currency
            ));
        }
        if let Some(max) = self.budget.max_tokens.filter(|m| spent.tokens >= *m) {
            return Some(format!(
                "{} budget max_tokens {max} is spent ({} tokens so far)",
                self.owner, spent.tokens
            ));
        }
        None
    }

    /// Whether the budget limits money (then every call needs a price).
    pub(crate) fn limits_cost(&self) -> bool {
        self.budget.max_cost.is_some()
    }

    fn add(&self, usage: TokenUsage, cost: Option<f64>) {
        let mut s = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        s.tokens += usage.total();
        s.cost += cost.unwrap_or(0.0);
    }
}

/// The meters a case's calls spend under: its own and the run's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meters(Vec<Arc<Meter>>);

impl Meters {
    /// Spending under each of `meters`.
    pub(crate) fn new(meters: impl IntoIterator<Item = Arc<Meter>>) -> Meters {
        Meters(meters.into_iter().collect())
    }

    /// Why no more may be spent, or whether a call without a price would be spent
    /// under a money budget: checked before each call.
    pub(crate) fn check(&self, priced: bool, endpoint: &str) -> Result<(), BudgetError> {
        for m in &self.0 {
            if let Some(why) = m.exhausted() {
                return Err(BudgetError::Spent { why });
            }
            if !priced && m.limits_cost() {
                return Err(BudgetError::Unpriced {
                    owner: m.owner.to_string(),
                    endpoint: endpoint.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Why no more may be spent under one of them, when one is spent.
    pub(crate) fn exhausted(&self) -> Option<String> {
        self.0.iter().find_map(|m| m.exhausted())
    }

    /// Whether the run's budget is among them: its checks first learn what the
    /// execution's other processes spent.
    pub(crate) fn shared(&self) -> bool {
        self.0.iter().any(|m| m.shared)
    }

    /// Counts a call's spending (or an agent turn's reported usage), and writes it to
    /// the store's ledger for the execution's other processes.
    pub(crate) fn add(&self, usage: TokenUsage, cost: Option<f64>) {
        for m in &self.0 {
            m.add(usage, cost);
        }
        if self.shared() && (usage.total() > 0 || cost.is_some_and(|c| c > 0.0)) {
            crate::record::store::spend(usage.total(), cost.unwrap_or(0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_gone_once_reached_and_says_so() {
        let case = Meter::new(
            "the case's",
            Budget {
                max_cost: Some(0.01),
                max_tokens: None,
            },
            Some("EUR"),
        );
        let run = Meter::new(
            "the run's",
            Budget {
                max_cost: None,
                max_tokens: Some(1000),
            },
            None,
        );
        let meters = Meters::new([case.clone(), run.clone()]);
        let usage = |p, c| TokenUsage {
            prompt_tokens: p,
            completion_tokens: c,
            cached_tokens: 0,
        };
        assert_eq!(meters.check(true, "[llm]"), Ok(()));
        meters.add(usage(300, 100), Some(0.004));
        assert_eq!(meters.check(true, "[llm]"), Ok(()));
        meters.add(usage(500, 200), Some(0.007));
        assert_eq!(
            meters.check(true, "[llm]").unwrap_err().to_string(),
            "budget: the case's budget max_cost 0.01 EUR is spent (0.011 EUR so far); raise it, or lower `runs`"
        );
        assert_eq!(
            Meters::new([run]).check(true, "[llm]").unwrap_err().to_string(),
            "budget: the run's budget max_tokens 1000 is spent (1100 tokens so far); raise it, or lower `runs`"
        );
        let fresh = Meters::new([Meter::new(
            "the case's",
            Budget {
                max_cost: Some(1.0),
                max_tokens: None,
            },
            None,
        )]);
        assert!(fresh
            .check(false, "[llms.\"judge\"]")
            .unwrap_err()
            .to_string()
            .contains("model endpoint [llms.\"judge\"] has no price"));
    }
}
