//! How a conversation ended: one type for every mode, written in reports by the names
//! the formats use (`all_checkpoints_reached`, `max_messages`, `escalation_needed`, ...).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a conversation ended. Each mode's policy ends its conversation with one of these;
/// reports, goldens and the run store show its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Termination {
    // Dynamic cases with checkpoints (the Yao seed's termination table).
    /// Every required checkpoint was reached.
    AllCheckpointsReached,
    /// A forbidden checkpoint matched.
    ForbiddenCheckpoint,
    /// The agent stopped awaiting input.
    AgentCompleted,
    /// The simulated user said its goal is achieved (or, in a scenario, had nothing more
    /// to say).
    GoalAchieved,
    /// The simulated user asked for a transfer (tau2's `###TRANSFER###`).
    Transfer,
    /// The simulated user found the task out of scope (tau2's `###OUT-OF-SCOPE###`).
    OutOfScope,
    /// The turn limit was reached.
    MaxTurns,
    /// The simulated user failed.
    SimulatorError,
    /// The agent under test failed.
    AgentError,
    // EvalStudio's evaluation loop.
    /// `max_messages` user and assistant messages were reached.
    MaxMessages,
    /// The simulated user had nothing more to say.
    SimulatorDone,
    /// The success criteria were met.
    SuccessCriteriaMet,
    /// The failure criteria were met (under `every_turn`).
    FailureCriteriaMet,
    /// No model for the judge: one exchange.
    SingleTurnFallback,
    // An ElizaOS scenario's termination conditions, by their names in the file.
    /// `max_turns_reached`.
    MaxTurnsReached,
    /// `user_expresses_satisfaction`.
    UserExpressesSatisfaction,
    /// `agent_provides_solution`.
    AgentProvidesSolution,
    /// `conversation_stuck`.
    ConversationStuck,
    /// `escalation_needed`.
    EscalationNeeded,
    /// `custom_condition`.
    CustomCondition,
    // Scripted conversations (not written in reports: they end when the script does).
    /// Every scripted turn was played (and a person, if any, stopped).
    ScriptDone,
    /// A scripted turn's assertion failed, and the case stopped there.
    AssertionFailed,
}

impl Termination {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        use Termination::*;
        match self {
            AllCheckpointsReached => "all_checkpoints_reached",
            ForbiddenCheckpoint => "forbidden_checkpoint",
            AgentCompleted => "agent_completed",
            GoalAchieved => "goal_achieved",
            Transfer => "transfer",
            OutOfScope => "out_of_scope",
            MaxTurns => "max_turns",
            SimulatorError => "simulator_error",
            AgentError => "agent_error",
            MaxMessages => "max_messages",
            SimulatorDone => "simulator_done",
            SuccessCriteriaMet => "success_criteria_met",
            FailureCriteriaMet => "failure_criteria_met",
            SingleTurnFallback => "single_turn_fallback",
            MaxTurnsReached => "max_turns_reached",
            UserExpressesSatisfaction => "user_expresses_satisfaction",
            AgentProvidesSolution => "agent_provides_solution",
            ConversationStuck => "conversation_stuck",
            EscalationNeeded => "escalation_needed",
            CustomCondition => "custom_condition",
            ScriptDone => "script_done",
            AssertionFailed => "assertion_failed",
        }
    }
}

impl Termination {
    /// The tau2-bench signal a simulated user ends with, as written.
    pub fn signal(self) -> Option<&'static str> {
        match self {
            Termination::Transfer => Some("###TRANSFER###"),
            Termination::OutOfScope => Some("###OUT-OF-SCOPE###"),
            _ => None,
        }
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Termination;

    /// The serde name and `name()` are one: reports and the console say the same.
    #[test]
    fn serde_names_are_the_display_names() {
        use Termination::*;
        for t in [
            AllCheckpointsReached,
            ForbiddenCheckpoint,
            AgentCompleted,
            GoalAchieved,
            Transfer,
            OutOfScope,
            MaxTurns,
            SimulatorError,
            AgentError,
            MaxMessages,
            SimulatorDone,
            SuccessCriteriaMet,
            FailureCriteriaMet,
            SingleTurnFallback,
            MaxTurnsReached,
            UserExpressesSatisfaction,
            AgentProvidesSolution,
            ConversationStuck,
            EscalationNeeded,
            CustomCondition,
            ScriptDone,
            AssertionFailed,
        ] {
            let json = serde_json::to_value(t).unwrap();
            assert_eq!(json, serde_json::Value::String(t.name().into()), "{t:?}");
            let back: Termination = serde_json::from_value(json).unwrap();
            assert_eq!(back, t);
        }
    }
}
