//! The case model: what a case means once a source has read it, whatever its format.

mod assertion;
mod judges;
mod mock;
mod model;
mod model_settings;
mod party;
mod raw;
mod repeat;
pub(crate) mod scenario;

pub use assertion::Assertion;
pub(crate) use assertion::{
    JsonPath, JsonType, JudgeSpec, Kind, SpanCount, SpanStatusWanted, ToolScope, ValueMatcher,
    ASSERTION_TYPES,
};
pub(crate) use judges::{default_max_abstentions, JudgeChoice, JudgeRef, JuryRule, OnInconclusive};
pub(crate) use mock::{Mock, MockAnswer};
pub use model::{Case, Location, Mode};
pub(crate) use model::{
    Checkpoint, ConnectorAgent, Criteria, EvalStudioRef, FailureMode, Input, Interactive, Origin,
    PersonaRef, Provider, ScriptRule, Simulator, SourceLlms, Turn,
};
pub(crate) use model_settings::ModelSettings;
pub(crate) use party::Party;
pub use raw::Raw;
pub(crate) use repeat::{check_cost, check_runs, Budget, Gate, Repeats, MAX_RUNS};
