//! Whose fault it was that a case did not pass: the agent's, the simulated user's, a
//! judge's, or the infrastructure's, with the evidence. Decided as each case ends, so
//! that `[run] rerun_on` can run the simulator's and infrastructure's failures again.
//!
//! In order: what the case's stop already shows (infrastructure that failed, a
//! simulator that broke), a deadline that passed (infrastructure), a judge that could
//! not decide or could not answer, then the simulated user's faults in the
//! conversation, else the agent.

use crate::case::{Case, Checkpoint, Kind, Mode};
use crate::record::{AssertionReport, Blame, CaseReport, Party, Status, Termination};

/// A simulated user's message longer than this is over-long: a user does not write
/// essays, and a simulator that does is rambling or dumping its instructions.
pub(crate) const MAX_SIMULATED_CHARS: usize = 2_000;

/// The shortest checkpoint wording whose appearance in a simulated message counts as
/// a leak: shorter phrases turn up by chance.
const MIN_LEAK_CHARS: usize = 16;

/// The shortest message whose repetition counts as the simulator repeating itself: a
/// user may well say "yes" or "ok" twice.
const MIN_REPEAT_CHARS: usize = 12;

/// The case's blame, for a record that did not pass (`None` for a pass or a skip).
pub(crate) fn blame(report: &CaseReport, case: &Case) -> Option<Blame> {
    if matches!(report.status, Status::Passed | Status::Skipped) {
        return None;
    }
    if let Some(b) = &report.blame {
        return Some(b.clone());
    }
    let error = report.error.clone().unwrap_or_default();
    let blame = |party, evidence: String| Some(Blame { party, evidence });
    // The lifecycle blames a timeout by what the case was doing; a record without one
    // (made elsewhere) is infrastructure's.
    if report.status == Status::Timeout {
        return blame(Party::Infrastructure, error);
    }
    if report.termination == Some(Termination::SimulatorError) {
        return blame(Party::Simulator, error);
    }
    if let Some(why) = judge_fault(report) {
        return blame(Party::Judge, why);
    }
    if let Some(why) = simulator_fault(report, case) {
        return blame(Party::Simulator, why);
    }
    blame(Party::Agent, error)
}

/// Every check of the record: turns' assertions and checkpoints, final assertions.
fn checks(report: &CaseReport) -> impl Iterator<Item = &AssertionReport> {
    report
        .turns
        .iter()
        .flat_map(|t| t.assertions.iter().chain(&t.checkpoints))
        .chain(&report.final_assertions)
}

/// A judge that could not decide (the case is inconclusive), or that gave no verdict:
/// a judged check that failed without a judgment, or whose jury lost too many jurors
/// (its judgment is the error, with the votes).
fn judge_fault(report: &CaseReport) -> Option<String> {
    if report.status == Status::Inconclusive {
        return Some(format!(
            "a judge could not decide: {}",
            report.error.as_deref().unwrap_or_default()
        ));
    }
    // An error, or a failure on CI (a judge with no recording or no key).
    if !matches!(report.status, Status::Error | Status::Failed) {
        return None;
    }
    let broken = |a: &&AssertionReport| {
        let t = a.spec.get("type").and_then(|v| v.as_str()).unwrap_or("");
        let judged_type = matches!(
            t,
            "agent" | "llm_judge" | "user_satisfaction" | "conversation_flow" | "context_retention"
        );
        a.failed()
            && match &a.judgment {
                None => judged_type,
                Some(j) => j.reason == a.message && j.jurors.iter().any(|v| v.error.is_some()),
            }
    };
    checks(report)
        .find(broken)
        .map(|a| format!("the judge of {} gave no verdict: {}", a.label, a.message))
}

/// The simulated user's faults, in its messages and how it ended the conversation.
/// A forbidden checkpoint the agent matched is the agent's, whatever the user said.
fn simulator_fault(report: &CaseReport, case: &Case) -> Option<String> {
    if report.termination == Some(Termination::ForbiddenCheckpoint) {
        return None;
    }
    // Only a simulated user ends a conversation with its goal achieved.
    if report.termination == Some(Termination::GoalAchieved) {
        let pending: Vec<&str> = report
            .checkpoints
            .iter()
            .filter(|c| c.required && !c.forbidden && !c.reached)
            .map(|c| c.id.as_str())
            .collect();
        if !pending.is_empty() {
            return Some(format!(
                "the simulated user claimed its goal after turn {} while required checkpoints were pending: {}",
                report.total_turns.max(report.turns.len() as u32),
                pending.join(", ")
            ));
        }
    }
    let simulated: Vec<(u32, &str)> = report
        .turns
        .iter()
        .filter(|t| t.input_source == "simulated")
        .map(|t| (t.turn, t.input.as_str()))
        .collect();
    if simulated.is_empty() {
        return None;
    }
    let checkpoints: &[Checkpoint] = match &case.mode {
        Mode::Dynamic { checkpoints, .. } => checkpoints,
        _ => &[],
    };
    for (i, (turn, said)) in simulated.iter().enumerate() {
        if said.trim().is_empty() {
            return Some(format!(
                "the simulated user sent an empty message at turn {turn}"
            ));
        }
        let chars = said.chars().count();
        if chars > MAX_SIMULATED_CHARS {
            return Some(format!(
                "the simulated user sent an over-long message at turn {turn}: {chars} characters (a user's are at most {MAX_SIMULATED_CHARS})"
            ));
        }
        let repeated = simulated[..i]
            .iter()
            .filter(|_| said.trim().chars().count() >= MIN_REPEAT_CHARS)
            .find(|(_, e)| crate::util::same_words(e, said));
        if let Some((earlier, _)) = repeated {
            return Some(format!(
                "the simulated user repeated itself at turn {turn} (as at turn {earlier}): \"{}\"",
                crate::util::clip(said)
            ));
        }
        if let Some((id, wording)) = leaked(checkpoints, said) {
            return Some(format!(
                "the simulated user leaked checkpoint `{id}`'s wording at turn {turn}: \"{wording}\""
            ));
        }
    }
    None
}

/// A checkpoint's description, or its judge's criteria, said by the simulated user:
/// the id and the wording.
fn leaked<'c>(checkpoints: &'c [Checkpoint], said: &str) -> Option<(&'c str, String)> {
    let said = said.to_lowercase();
    for c in checkpoints {
        let criteria = c.assertions.iter().filter_map(|a| match &a.kind {
            Kind::Judge { spec, .. } => Some(spec.criteria.as_str()),
            _ => None,
        });
        for wording in c.description.as_deref().into_iter().chain(criteria) {
            let w = wording.trim().trim_end_matches('.').to_lowercase();
            if w.chars().count() >= MIN_LEAK_CHARS && said.contains(&w) {
                return Some((c.id.as_str(), wording.trim().to_string()));
            }
        }
    }
    None
}

/// Whether the simulated user broke the persona it played, asked of `judge` over the
/// conversation (`[run] persona_judge`): the simulator's blame when the judge says it
/// did. `None` when it stayed in character, or the judge could not say (said on
/// stderr: the case's own verdict stands).
pub(crate) async fn persona_broken(
    judges: &dyn crate::check::jury::Judges,
    judge: &crate::case::JudgeRef,
    persona: &str,
    report: &CaseReport,
) -> Option<Blame> {
    use crate::check::judge::JudgeRequest;
    use crate::protocol::Message;
    let mut conversation = Vec::new();
    for t in &report.turns {
        conversation.push(Message::user(t.input.clone()));
        conversation.push(Message::assistant(t.output.clone(), None));
    }
    let said: Vec<&str> = report
        .turns
        .iter()
        .filter(|t| t.input_source == "simulated")
        .map(|t| t.input.as_str())
        .collect();
    if said.is_empty() {
        return None;
    }
    let criteria = format!(
        "Judge only the user's messages, not the assistant's: the user stays in character throughout as this persona: {persona}"
    );
    let request = JudgeRequest {
        input: said.join("\n"),
        conversation,
        ..JudgeRequest::new(criteria, said.join("\n"))
    };
    let choice = crate::case::JudgeChoice {
        judges: vec![judge.clone()],
        ..crate::case::JudgeChoice::default()
    };
    let model = crate::case::ModelSettings::default();
    let decided = match judges.panel(&choice, &model).await {
        Ok(panel) => crate::check::jury::decide(judges, &panel, &request)
            .await
            .map_err(|u| u.error),
        Err(e) => Err(e),
    };
    match decided {
        Ok(d) if d.passed == Some(false) => Some(Blame {
            party: Party::Simulator,
            evidence: format!(
                "the simulated user broke its persona ({judge}: {})",
                d.judgment.reason
            ),
        }),
        Ok(_) => None,
        Err(e) => {
            eprintln!(
                "agentest: {}: the persona judge {judge} could not say whether the simulated user kept its persona: {e}",
                report.trial
            );
            None
        }
    }
}
