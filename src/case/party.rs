//! The parties to a conversation test, for blame: who made a case fail.

use serde::{Deserialize, Serialize};

/// Whose fault it was that a case did not pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Party {
    /// The agent under test.
    Agent,
    /// The simulated user.
    Simulator,
    /// A judge: it could not decide, answered garbage, or abstained.
    Judge,
    /// What carries the conversation: transport, a server's 5xx, timeouts.
    Infrastructure,
}

impl Party {
    /// The parties, as written in `rerun_on` and `--blame`.
    pub const ALL: [Party; 4] = [
        Party::Agent,
        Party::Simulator,
        Party::Judge,
        Party::Infrastructure,
    ];

    /// As written.
    pub fn name(self) -> &'static str {
        match self {
            Party::Agent => "agent",
            Party::Simulator => "simulator",
            Party::Judge => "judge",
            Party::Infrastructure => "infrastructure",
        }
    }

    /// Reads a name; `Err` lists the names.
    pub fn parse(s: &str) -> Result<Party, String> {
        Party::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("expected \"agent\", \"simulator\", \"judge\" or \"infrastructure\", found \"{s}\"")
            })
    }
}
