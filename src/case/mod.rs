//! The case model: what a case means once a source has read it, whatever its format.

mod assertion;
mod mock;
mod model;
mod model_settings;
mod repeat;
pub mod scenario;

pub use assertion::{
    Assertion, JsonPath, JsonType, JudgeSpec, Kind, SpanCount, SpanStatusWanted, ToolScope,
    ValueMatcher, ASSERTION_TYPES,
};
pub use mock::{Mock, MockAnswer};
pub use model::{
    Case, Checkpoint, ConnectorAgent, Criteria, EvalStudioRef, FailureMode, Input, Interactive,
    Location, Mode, PersonaRef, Provider, ScriptRule, Simulator, SourceLlms, Turn,
};
pub use model_settings::ModelSettings;
pub use repeat::{check_cost, check_runs, Budget, Gate, Repeats, MAX_RUNS};
