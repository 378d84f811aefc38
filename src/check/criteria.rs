//! EvalStudio's verdict on a conversation judged against success and failure criteria:
//! the result `{success, score, reason}` as its run processor words it.

use crate::case::Criteria;
use crate::record::{CaseReport, CriteriaEvaluation, RunResult, Status, Termination};

/// The result, as EvalStudio's run processor words it.
pub(crate) fn conclude(
    criteria: &Criteria,
    termination: Termination,
    last: Option<CriteriaEvaluation>,
    report: &mut CaseReport,
) {
    report.termination = Some(termination);
    let Some(e) = last else {
        // No reply was evaluated (a seed that already filled max_messages).
        report.status = Status::Failed;
        let reason = format!(
            "max messages ({}) reached before any reply could be evaluated",
            criteria.max_messages
        );
        report.error = Some(reason.clone());
        report.result = Some(RunResult {
            success: false,
            score: None,
            reason,
        });
        return;
    };
    let (success, reason) = match termination {
        Termination::SuccessCriteriaMet => (true, e.reasoning.clone()),
        Termination::FailureCriteriaMet => (
            false,
            format!("Failure criteria was triggered. {}", e.reasoning),
        ),
        _ if e.failure_met => (
            false,
            format!("Failure criteria was triggered. {}", e.reasoning),
        ),
        Termination::SimulatorDone => (
            false,
            format!(
                "The simulated user ended the conversation without meeting the success criteria. {}",
                e.reasoning
            ),
        ),
        _ => (
            // Only failure criteria: not triggered is a pass.
            criteria.success.is_none(),
            if criteria.success.is_none() {
                e.reasoning.clone()
            } else {
                format!(
                    "Max messages ({}) reached without meeting success criteria. {}",
                    criteria.max_messages, e.reasoning
                )
            },
        ),
    };
    if !success {
        report.status = Status::Failed;
        report.error = Some(reason.clone());
    }
    report.result = Some(RunResult {
        success,
        score: Some(e.confidence),
        reason,
    });
}

/// The verdict without a model for the judge (EvalStudio's fallback): one exchange,
/// passed when the agent answered.
pub(crate) fn conclude_fallback(answered: bool, report: &mut CaseReport) {
    report.termination = Some(Termination::SingleTurnFallback);
    let reason = if answered {
        "no model for the judge ([llm]): one exchange, and the agent answered".to_string()
    } else {
        "no model for the judge ([llm]): one exchange, and the agent's reply was empty".to_string()
    };
    if !answered {
        report.status = Status::Failed;
        report.error = Some(reason.clone());
    }
    report.result = Some(RunResult {
        success: answered,
        score: None,
        reason,
    });
}
