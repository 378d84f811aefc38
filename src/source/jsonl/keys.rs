//! The keys a case line may have.

/// Every key a case line may have.
pub const CASE_KEYS: [&str; 39] = [
    "id",
    "name",
    "description",
    "skip",
    "timeout",
    "agent",
    "options",
    "expected",
    "tags",
    "user",
    "team",
    "metadata",
    "before",
    "after",
    "input",
    "turns",
    "mode",
    "final_assertions",
    "assertions",
    "assert",
    "simulator",
    "checkpoints",
    "max_turns",
    "interactive",
    "setup",
    "golden",
    "success_criteria",
    "failure_criteria",
    "failure_criteria_mode",
    "max_messages",
    "instructions",
    "messages",
    "personas",
    "runs",
    "min_pass",
    "pass_rate",
    "confidence",
    "max_cost",
    "max_tokens",
];

/// The keys of EvalStudio's evaluation loop on a dynamic case: their run in
/// [`CASE_KEYS`], from `success_criteria` to `messages`.
pub(super) const CRITERIA_KEYS: &[&str] = CASE_KEYS.split_at(26).1.split_at(6).0;

// The run above is where the criteria keys are.
const _: () = {
    assert!(CRITERIA_KEYS.len() == 6);
    assert!(matches!(CRITERIA_KEYS[0].as_bytes(), b"success_criteria"));
    assert!(matches!(CRITERIA_KEYS[5].as_bytes(), b"messages"));
};
