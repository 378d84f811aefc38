//! Errors, in two tiers, the way nextest-runner keeps them.
//!
//! User-facing errors (a bad case line, a bad config, an agent that breaks, a model that
//! cannot be reached) are values: they become a case's status (through one function,
//! `run::outcome::status_of`), or the run's exit code. A broken invariant of agentest's own is a bug: it panics, and
//! the case's panic guard reports it as that case's `error`.
//!
//! Every error is a `thiserror` type in this module, with what caused it as its
//! `#[source]`. Each kind of failure of a step (an agent, a mock, a script, a model call)
//! becomes a [`StepError`] in one `From` impl. `String` is left only where the message is
//! the product: what user code returns (agents, hooks, scripts, generators registered in
//! Rust), a parser's or a server's own text (a cassette's recorded refusal), the problem
//! a role's answer reader finds in a model's answer (it is the repair prompt that model
//! is shown next: `run::roles::ask`'s readers), `Reply::from_json` (public; its message
//! is the advice an agent's author reads), and the command line's top (`cli/`), which
//! prints it and exits with code 2. A type here may still carry a message field where
//! the text is built once by the one reader that knows the words (a `FieldError`'s
//! `message`, a step's `StepError`).
//!
//! Messages are lowercase fragments that read well after "failed to" or a location, and
//! never contain a secret (settings are shown as written, before `${VAR}` expansion).
//! Reports and failure messages carry an error's `Display` alone, so a message that
//! depends on its source shows it (`...: {source}`).

use std::path::PathBuf;
use std::sync::Arc;

use crate::case::Location;
use crate::util::StoreAddress;
// The errors of the lowest layer live beside their code in `util` (which imports
// nothing of the crate) and are named here with the rest. The case model, also below
// this module, keeps its one (`case::RepeatValueError`) beside its code the same way.
pub(crate) use crate::util::command::CommandError;
pub(crate) use crate::util::{DurationError, EnvError};

/// What `reqwest::Url::parse` fails with (the `url` crate's `ParseError`).
pub(crate) type UrlParseError = <reqwest::Url as std::str::FromStr>::Err;

// Reading cases, suites and what to run.

/// A case that could not be read: where, which field, what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct CaseError {
    /// `file:line:column` of the problem.
    pub location: Location,
    /// The case id, when the line got far enough to have one.
    pub id: Option<String>,
    /// The field's path (`turns[1].assertions[0].type`), when one field is to blame.
    pub field: Option<String>,
    /// What is wrong and what is expected.
    pub message: String,
}

/// A problem with one field; the parser turns it into a located [`CaseError`](super::CaseError).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FieldError {
    /// The field's path from the case root, like `turns[1].assertions[0].type`.
    pub path: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A suites root that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The root does not exist or is not a directory.
    #[error("failed to find the suites root {path}: {reason}")]
    Root {
        /// The root.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A directory under the root could not be listed.
    #[error("failed to list {path}: {source}")]
    List {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// ` (did you mean `x`?)`, when there is a close name.
fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

/// A matrix axis's `parameter` that names no field of the base scenario; its reader
/// adds where the axis is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MatrixPathError {
    /// `parameter: ""`.
    #[error("the path is empty")]
    Empty,
    /// A key step under something that is not a mapping.
    #[error("`{0}`: its parent is not a mapping")]
    NotMapping(String),
    /// An index step under something that is not a list.
    #[error("`{0}`: its parent is not a list")]
    NotList(String),
    /// A key the base scenario does not have.
    #[error("the base scenario has no `{0}`")]
    NoKey(String),
    /// An index past the end of its list.
    #[error("the base scenario has no `{walked}` (that list has {len} item(s))")]
    NoItem {
        /// The path up to and with the index.
        walked: String,
        /// The list's length.
        len: usize,
    },
}

/// A generator reference (`agents:NAME?count=5`) that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeneratorSpecError {
    /// No name, or one with spaces.
    #[error("`{prefix}:` needs a name without spaces, like `{prefix}:generator?count=5`")]
    Name {
        /// `agents` or `scripts`.
        prefix: &'static str,
    },
    /// `agent:gen`: a kind misspelt.
    #[error("`{kind}:` is no kind of generator; did you mean `{meant}:`?")]
    Kind {
        /// As written.
        kind: String,
        /// The kind it is closest to.
        meant: &'static str,
    },
    /// `?=value`.
    #[error("the parameter `{0}` has no name; write `key=value`")]
    Unnamed(String),
    /// `?a=1&a=2`.
    #[error("the parameter `{0}` is given twice")]
    Twice(String),
    /// `count` that is not a number in range.
    #[error("`count={given}` is not a number of cases from 1 to {max}")]
    Count {
        /// As written.
        given: String,
        /// The most cases one generator may be asked for.
        max: u64,
    },
    /// A `%` escape that is not two hex digits.
    #[error("`{0}` has a `%` not followed by two hex digits")]
    Escape(String),
    /// An escape that decodes to bytes that are not UTF-8.
    #[error("`{0}` does not decode to UTF-8")]
    Utf8(String),
}

/// What `-i` names cannot be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// `-i ""`.
    #[error("the input is empty; pass a suite file, a directory of suites, or a message")]
    Empty,
    /// A path that does not exist.
    #[error("input `{input}` does not exist{}; pass a suite file, a directory of suites, or a quoted message", did_you_mean(.suggestion.as_deref()))]
    Missing {
        /// The input.
        input: String,
        /// A file or folder beside it with a close name.
        suggestion: Option<String>,
    },
    /// One word that is no file: more likely a mistyped path than a message.
    #[error("input `{input}` is neither a file nor a directory{}; to send it to the agent as a message, add --message", did_you_mean(.suggestion.as_deref()))]
    NotAPath {
        /// The input.
        input: String,
        /// A file or folder beside it with a close name.
        suggestion: Option<String>,
    },
    /// A generator reference (`agents:NAME?...`) that cannot be read.
    #[error("failed to read the generator `{input}`: {why}")]
    Generator {
        /// The input.
        input: String,
        /// What is wrong and what to write.
        #[source]
        why: GeneratorSpecError,
    },
    /// The suites cannot be found.
    #[error(transparent)]
    Suites(#[from] SuiteError),
    /// The working directory, where a message case lives, cannot be read.
    #[error("failed to read the working directory: {0}")]
    Cwd(#[source] std::io::Error),
    /// A suites root with no case in it: never a green run.
    #[error("no test cases found under {}: add a suite such as `smoke.jsonl` with a line like {{\"id\": \"T001\", \"input\": \"Hello\", \"assert\": {{\"type\": \"contains\", \"value\": \"Hello\"}}}}", root.display())]
    NoCases {
        /// The suites root.
        root: PathBuf,
    },
}

/// A file `-o` must not write over: the user's cases, or a file agentest did not write.
/// Refused before anything runs (exit code 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OverwriteError {
    /// `-o` names the suite file `-i` names (or the tasks file being imported).
    #[error("refusing to write {what} over {}: it is the file the cases are read from; give -o another path", path.display())]
    Input {
        /// What would be written (`the report`).
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// `-o` names a file the input folder's discovery finds as a suite.
    #[error("refusing to write {what} over {}: it is a suite file under {} (its cases would be lost); give -o a path outside the suites folder", path.display(), root.display())]
    Suite {
        /// What would be written.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The input folder.
        root: PathBuf,
    },
    /// `-o` names a file that exists and is not a report agentest wrote.
    #[error("refusing to write the report over {}: the file exists and is not an agentest {format} report (whose {recognised}); give {setting} another path, or remove the file first if it is not wanted", path.display())]
    NotReport {
        /// Where the path came from: `-o`, `AGENTEST_REPORT`.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// The report's format, by the file's extension.
        format: &'static str,
        /// How agentest recognises a report of that format.
        recognised: &'static str,
    },
    /// The file exists but cannot be read to tell.
    #[error("refusing to write the report over {}: the file exists and cannot be read to check that it is an agentest report ({source}); give {setting} another path", path.display())]
    Unreadable {
        /// Where the path came from: `-o`, `AGENTEST_REPORT`.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
}

// The environment and `agentest.toml`.

/// An environment variable with a value agentest cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name}={value:?} is not valid; use {expected}")]
pub(crate) struct SettingsError {
    /// The variable.
    pub(crate) name: String,
    /// Its value, as set.
    pub(crate) value: String,
    /// What it may be.
    pub(crate) expected: String,
}

/// A config file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `AGENTEST_CONFIG` or `--config` names a file that is not there.
    #[error("{from} names the config {path}, which does not exist; fix the path, or {} to use the agentest.toml found from the suites' folder", if *.from == "--config" { "leave out --config" } else { "unset AGENTEST_CONFIG" })]
    Chosen {
        /// The file.
        path: PathBuf,
        /// `AGENTEST_CONFIG` or `--config`.
        from: &'static str,
    },
    /// The file exists but cannot be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not fit the schema.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// An agent table whose keys do not fit its `type`.
    #[error("invalid config {path}: {table} (line {line}): {source}")]
    Agent {
        /// The file.
        path: PathBuf,
        /// `[agent]` or `[agents."NAME"]`.
        table: String,
        /// The table's line.
        line: usize,
        /// What is wrong with it.
        #[source]
        source: Box<AgentSetupError>,
    },
    /// The `personas_file` cannot be used.
    #[error("invalid config {path}: personas_file: {source}")]
    PersonasFile {
        /// The config file.
        path: PathBuf,
        /// What is wrong in the personas file, located there.
        #[source]
        source: CaseError,
    },
    /// A value the schema allows but agentest cannot use.
    #[error("invalid config {path}: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The value and what is wrong with it.
        #[source]
        source: ConfigValueError,
    },
}

/// A value in `agentest.toml` that TOML accepts but agentest cannot use: a duration, a
/// count, a URL, a reference to an endpoint that is not there.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigValueError {
    /// A duration that cannot be read.
    #[error("{key}: {source}")]
    Duration {
        /// The setting, like `[run].timeout`.
        key: String,
        /// Why.
        #[source]
        source: DurationError,
    },
    /// A timeout of zero.
    #[error(
        "{key}: a timeout of zero would fail every case; remove it or give a duration like \"30s\""
    )]
    ZeroTimeout {
        /// The setting, like `[run].timeout`.
        key: String,
    },
    /// A `[[golden.redactions]]` pattern that is not a regex.
    #[error("[[golden.redactions]] #{number}: invalid regex \"{pattern}\": {source}")]
    Redaction {
        /// The entry's number, from 1.
        number: usize,
        /// The pattern as written.
        pattern: String,
        /// Why.
        #[source]
        source: regex::Error,
    },
    /// `[run].cassettes` names no mode.
    #[error("[run].cassettes: {0}")]
    CassetteMode(#[source] CassetteModeError),
    /// `[store]` that names no usable store.
    #[error("[store]: {problem}")]
    StoreUrl {
        /// What is wrong and what to write.
        problem: String,
    },
    /// A `${VAR}` of `[store].url` that is not set.
    #[error(transparent)]
    StoreEnv(#[from] EnvError),
    /// `[run].concurrency = 0`.
    #[error("[run].concurrency: must be at least 1")]
    ZeroConcurrency,
    /// A `[judges.NAME]` table, or a `[run]` judging setting, that cannot be used.
    #[error("{key}: {message}")]
    Judge {
        /// The setting, like `[judges."panel"].jury` or `[run].on_inconclusive`.
        key: String,
        /// What is wrong and the fix.
        message: String,
    },
    /// `[traces].listen` that is not an address.
    #[error("[traces].listen: expected an address and port like \"127.0.0.1:4318\" (port 0: a free one), found {value:?}")]
    TracesListen {
        /// What was written.
        value: String,
    },
    /// A repeat count, gate or budget that cannot be used.
    #[error("{key}: {message}")]
    Repeats {
        /// The setting, like `[run].min_pass`.
        key: String,
        /// What is wrong and the fix.
        message: String,
    },
    /// A `pricing` table that cannot be used.
    #[error("{table}.pricing: {message}")]
    Pricing {
        /// `[llm]`, `[llms."NAME"]` or `[agents."NAME"]`.
        table: String,
        /// What is wrong and the fix.
        message: String,
    },
    /// `max_in_flight = 0` on an endpoint.
    #[error("{table}.max_in_flight must be at least 1")]
    ZeroInFlight {
        /// `[llm]` or `[llms."NAME"]`.
        table: String,
    },
    /// A `top_p` outside (0, 1].
    #[error("{table}.top_p {value} is outside (0, 1]")]
    TopP {
        /// `[llm]` or `[llms."NAME"]`.
        table: String,
        /// The value.
        value: f64,
    },
    /// A temperature outside 0..=2.
    #[error("{table}.temperature {value} is outside 0..=2")]
    Temperature {
        /// `[llm]` or `[llms."NAME"]`.
        table: String,
        /// The temperature.
        value: f64,
    },
    /// An openai agent names an endpoint that is not defined.
    #[error("{table}.llm names \"{name}\", which is not defined; add [llms.\"{name}\"] with base_url, model and api_key_env")]
    UndefinedLlm {
        /// The agent's table.
        table: String,
        /// The endpoint it names.
        name: String,
    },
    /// An openai agent with no endpoint to call.
    #[error("{table} is an openai agent but there is no model endpoint: add an [llm] section (base_url, model, api_key_env) or name one with llm = \"NAME\"")]
    NoLlm {
        /// The agent's table.
        table: String,
    },
    /// An http agent's URL (one without `${VAR}`) that does not parse.
    #[error("{table}.url \"{url}\" is not a valid URL: {source}")]
    Url {
        /// The agent's table.
        table: String,
        /// The URL as written.
        url: String,
        /// Why.
        #[source]
        source: UrlParseError,
    },
    /// A hook or script with an empty command.
    #[error("[{kind}.\"{name}\"].command is empty; give the program and its arguments")]
    EmptyCommand {
        /// `hooks` or `scripts`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

/// A cassette mode name that is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown cassette mode \"{given}\"; expected auto, replay, strict, record or off")]
pub struct CassetteModeError {
    /// The name as given, trimmed.
    pub given: String,
}

// Setting up what a case runs with: agents, model endpoints, commands.

/// An agent, or a model endpoint, that cannot be built from its config: a table whose
/// keys do not fit its `type`, a `${VAR}` that is not set, a URL, header or file that
/// cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AgentSetupError {
    /// A process agent's program that does not exist.
    #[error("{table}.command in {config}: `{program}` {}", if *.on_path { "not found on PATH; install it, or give its path" } else { "does not exist (relative paths start from the agent's cwd, by default the config's folder)" })]
    NotFound {
        /// `[agent]` or `[agents."NAME"]`.
        table: String,
        /// The program as written.
        program: String,
        /// Where the config is.
        config: String,
        /// Whether it was looked for on PATH (no `/` in it).
        on_path: bool,
    },
    /// A key of another kind of agent.
    #[error("`{key}` does not apply to {kind} agents; remove it or change `type`")]
    KeyNotApplicable {
        /// The key.
        key: &'static str,
        /// The agent's kind.
        kind: &'static str,
    },
    /// A process agent without `command`.
    #[error("a process agent needs `command = [\"program\", \"arg\", ...]`")]
    NoCommand,
    /// A process agent with `command = []`.
    #[error("`command` is empty; give the program and its arguments")]
    CommandEmpty,
    /// An http, langgraph or eliza agent without `url`.
    #[error("an http, langgraph or eliza agent needs `url = \"http://...\"`")]
    NoUrl,
    /// A langgraph agent without `assistant_id`.
    #[error("a langgraph agent needs `assistant_id`: a graph name from the server's langgraph.json (its `graphs` keys) or an assistant id")]
    NoAssistantId,

    /// A langgraph agent's `stream` that is not `true` or `false`.
    #[error("`stream` of a langgraph agent is true (the run's events, from /runs/stream) or false (/runs/wait)")]
    LangGraphStream,
    /// An eliza agent without `agent_id`.
    #[error("an eliza agent needs `agent_id`: the agent's UUID, or its name as `GET /api/agents` lists it")]
    NoElizaAgent,
    /// An eliza agent's `stream` that is not `true` or `false`.
    #[error("`stream` of an eliza agent is true (transport \"sse\": the reply streamed) or false (transport \"http\": the reply waited for)")]
    ElizaStream,
    /// An a2a agent without `url` or `card`.
    #[error("an a2a agent needs `url = \"http://...\"` (its base URL: the card is read from /.well-known/agent-card.json) or `card` (a card URL or file)")]
    A2aNoUrl,
    /// An a2a agent's `binding` or `version` that agentest does not speak.
    #[error("`{key}` of an a2a agent is {expected}, not {got:?}")]
    A2aKey {
        /// The key.
        key: &'static str,
        /// The values it takes.
        expected: &'static str,
        /// What was written.
        got: String,
    },
    /// An a2a agent's `stream` that is not `true` or `false`.
    #[error("`stream` of an a2a agent is true (SendStreamingMessage / message/stream) or false (SendMessage / message/send)")]
    A2aStream,
    /// An http agent's `stream` that is not `"sse"`.
    #[error("`stream` of an http agent is \"sse\" (its answer is a text/event-stream); remove it for a JSON answer")]
    HttpStream,
    /// A key an http agent's `format` does not use.
    #[error("`{key}` does not apply to format = \"{format}\"; {fix}")]
    WireKey {
        /// The key.
        key: &'static str,
        /// The agent's `format`.
        format: &'static str,
        /// What to do instead.
        fix: &'static str,
    },
    /// A `custom` http agent without `body` or `reply`.
    #[error("format = \"custom\" needs `{key}`: {what}")]
    CustomNeeds {
        /// `body` or `reply`.
        key: &'static str,
        /// What it is for.
        what: &'static str,
    },
    /// A `{{...}}` in a body template that names nothing.
    #[error("{key}: unknown placeholder {{{{{placeholder}}}}}; the known ones are {}", .known)]
    Placeholder {
        /// Where in the table, like `body.user`.
        key: String,
        /// The name inside the braces.
        placeholder: String,
        /// The placeholders this template may use.
        known: String,
    },
    /// A body template string that cannot be read.
    #[error("{key}: {problem}")]
    Template {
        /// Where in the table, like `body.user`.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// A `reply` or `session` JSONPath that does not parse.
    #[error("{key}: invalid JSONPath \"{path}\" ({reason}); write an RFC 9535 path such as \"$.items[0].name\"")]
    ReplyPath {
        /// Like `reply.content`.
        key: String,
        /// The path as written.
        path: String,
        /// The parser's message.
        reason: String,
    },
    /// Both `system` and `system_file`.
    #[error("give `system` or `system_file`, not both")]
    SystemTwice,
    /// Both `tools` and `tools_file`.
    #[error("give `tools` or `tools_file`, not both")]
    ToolsTwice,
    /// `max_tool_rounds = 0`.
    #[error("`max_tool_rounds` must be at least 1")]
    ZeroToolRounds,
    /// An agent whose command is empty, found when it is built.
    #[error("{table}.command is empty in {config}")]
    EmptyCommand {
        /// The agent's table.
        table: String,
        /// Where the config is.
        config: String,
    },
    /// A `${VAR}` that cannot be expanded.
    #[error(transparent)]
    Env(#[from] EnvError),
    /// A `${VAR}` that cannot be expanded, in a config file.
    #[error("{config}: {source}")]
    EnvIn {
        /// The config file.
        config: String,
        /// The reference and the setting.
        #[source]
        source: EnvError,
    },
    /// A duration that cannot be read.
    #[error("{key}: {source}")]
    Duration {
        /// The setting, like `[agent].timeout`.
        key: String,
        /// Why.
        #[source]
        source: DurationError,
    },
    /// A URL that does not parse once expanded.
    #[error("{key} \"{shown}\" is not a valid URL: {source}")]
    Url {
        /// The setting, like `[agent].url`.
        key: String,
        /// The URL as written, credentials masked.
        shown: String,
        /// Why.
        #[source]
        source: UrlParseError,
    },
    /// A header name that HTTP does not allow.
    #[error("{table}.headers: invalid header name `{name}`")]
    HeaderName {
        /// The table.
        table: String,
        /// The name.
        name: String,
    },
    /// A header value that HTTP does not allow (the value is never shown: it may be a secret).
    #[error("{table}.headers.{name}: invalid header value")]
    HeaderValue {
        /// The table.
        table: String,
        /// The header's name.
        name: String,
    },
    /// The HTTP client could not be built.
    #[error("failed to build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// An endpoint without a model.
    #[error("{table} needs `model`, like model = \"gpt-4o-mini\"")]
    NoModel {
        /// `[llm]` or `[llms."NAME"]`.
        table: String,
    },
    /// An openai agent names an endpoint that is not defined.
    #[error("{table}.llm names \"{name}\", which is not defined; add [llms.\"{name}\"]")]
    UndefinedLlm {
        /// The agent's table.
        table: String,
        /// The endpoint it names.
        name: String,
    },
    /// An openai agent with no endpoint to call.
    #[error("{table} needs a model endpoint: add an [llm] section to {config}")]
    NoLlm {
        /// The agent's table.
        table: String,
        /// Where the config is.
        config: String,
    },
    /// `system_file` or `tools_file` cannot be read.
    #[error("{table}.{key}: failed to read {path}: {source}")]
    ReadFile {
        /// The agent's table.
        table: String,
        /// `system_file` or `tools_file`.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `tools_file` holds JSON that is not an array.
    #[error("{table}.tools_file {file}: expected a JSON array of tool schemas")]
    ToolsNotArray {
        /// The agent's table.
        table: String,
        /// The file as written.
        file: String,
    },
    /// `tools_file` is not JSON.
    #[error("{table}.tools_file {file}: invalid JSON: {source}")]
    ToolsJson {
        /// The agent's table.
        table: String,
        /// The file as written.
        file: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A tool that is not an OpenAI tool schema.
    #[error("{table}.tools[{index}] is not an OpenAI tool schema: expected {{\"type\": \"function\", \"function\": {{\"name\", \"parameters\"}}}}")]
    NotToolSchema {
        /// The agent's table.
        table: String,
        /// The tool's index.
        index: usize,
    },
    /// A mock in the agent's `mocks` that cannot be read.
    #[error(transparent)]
    Mocks(#[from] FieldError),
}

impl AgentSetupError {
    /// Names the config file of a `${VAR}` that cannot be expanded (the reference's own
    /// message names only the setting).
    pub(crate) fn in_config(self, config: String) -> AgentSetupError {
        match self {
            AgentSetupError::Env(source) => AgentSetupError::EnvIn { config, source },
            other => other,
        }
    }
}

/// What a case runs with cannot be set up: its config, its agent, its model endpoint,
/// its hooks' and scripts' commands. Cached per config, hence `Clone`.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SetupError {
    /// The config cannot be read.
    #[error(transparent)]
    Config(Arc<ConfigError>),
    /// A value in the config cannot be used.
    #[error(transparent)]
    Value(#[from] ConfigValueError),
    /// The cassette mode is unknown.
    #[error(transparent)]
    CassetteMode(#[from] CassetteModeError),
    /// The agent (or endpoint) cannot be built.
    #[error(transparent)]
    Agent(Arc<AgentSetupError>),
    /// The trace receiver cannot start.
    #[error(transparent)]
    Traces(Arc<TraceSetupError>),
    /// A name that no config table and no registered agent has.
    #[error("agent `{name}` is not defined; add [agents.\"{name}\"] to {config} or register it with Harness::agent{}", agent_hint(.suggestion.as_deref(), .known))]
    UndefinedAgent {
        /// The name.
        name: String,
        /// Where the config is.
        config: String,
        /// The known name it most resembles.
        suggestion: Option<String>,
        /// Every known name.
        known: Vec<String>,
    },
    /// `-c/--connector` names no `[llms.NAME]`, and the agent under test is an `openai`
    /// agent, whose connector is its model endpoint.
    #[error("the connector `{connector}` (-c/--connector) is not an [llms.\"{connector}\"] in {config}, and the agent `{agent}` is an `openai` agent, whose connector is the model endpoint it calls; {}", if .known.is_empty() { format!("add [llms.\"{connector}\"] with its base_url and model") } else { format!("use one of: {}, or add [llms.\"{connector}\"]", .known.join(", ")) })]
    UnknownConnector {
        /// The `-c` value.
        connector: String,
        /// The agent under test.
        agent: String,
        /// Where the config is.
        config: String,
        /// The `[llms.NAME]` names there are.
        known: Vec<String>,
    },
    /// No agent for cases that name none.
    #[error("no agent to test: {where_}. {}:\n\n    [agent]\n    type = \"process\"\n    command = [\"python3\", \"agent.py\"]\n\nor give each case an `agent`, or {}", match .create { None => "Add an [agent] section to it, for example".to_string(), Some(file) => format!("Create {file} with, for example") }, if *.harness { "set AGENTEST_AGENT=NAME for an [agents.NAME], or register an agent in Rust with Harness::agent / Harness::default_agent" } else { "pass -n NAME for an [agents.NAME]" })]
    NoAgent {
        /// Where agentest looked: `agent-tests/agentest.toml has no [agent] section`, or
        /// `no agentest.toml in DIR, any folder above it or DIR/agent-tests`.
        where_: String,
        /// The file to create, when no config file was found.
        create: Option<String>,
        /// Under `cargo test` (the advice differs: no `-n` there).
        harness: bool,
    },
    /// The built-in simulator or judge without `[llm]`.
    #[error("the built-in {} needs a model: add an [llm] section (base_url, model, api_key_env) to {config}, or {}", .role.name(), match .role {
        crate::protocol::Role::Simulator => "give the case a scripted simulator or an agent to play the user",
        _ => "judge with an agent (`\"type\": \"agent\", \"use\": \"agents:NAME\"`)",
    })]
    NoLlm {
        /// The role that needs it.
        role: crate::protocol::Role,
        /// Where the config is.
        config: String,
    },
    /// A case names a persona the config does not define.
    #[error("the persona \"{name}\" is not defined; add [personas.\"{name}\"] with system_prompt (and description) to {config} or a persona of that name to its personas_file, or write the persona on the case")]
    UndefinedPersona {
        /// The persona's name.
        name: String,
        /// Where the config is.
        config: String,
    },
    /// A role's endpoint names an `[llms.NAME]` that does not exist.
    #[error(
        "the {role}'s model endpoint `{name}` is not defined; add [llms.\"{name}\"] to {config}"
    )]
    UndefinedLlm {
        /// `simulator` or `judge`.
        role: &'static str,
        /// The endpoint's name.
        name: String,
        /// Where the config is.
        config: String,
    },
    /// `[run].timeout` cannot be read.
    #[error("[run].timeout in {config}: {source}")]
    RunTimeout {
        /// Where the config is.
        config: String,
        /// Why.
        #[source]
        source: DurationError,
    },
    /// A hook or script whose command is empty.
    #[error("{what}.command is empty in {config}")]
    EmptyCommand {
        /// The hook's or script's table.
        what: String,
        /// Where the config is.
        config: String,
    },
    /// A `${VAR}` in a command that cannot be expanded.
    #[error(transparent)]
    Env(#[from] EnvError),
    /// A command's own timeout cannot be read.
    #[error("{key}: {source}")]
    Duration {
        /// The setting, like `[hooks."seed"].timeout`.
        key: String,
        /// Why.
        #[source]
        source: DurationError,
    },
}

impl From<ConfigError> for SetupError {
    fn from(e: ConfigError) -> SetupError {
        SetupError::Config(Arc::new(e))
    }
}

impl From<AgentSetupError> for SetupError {
    fn from(e: AgentSetupError) -> SetupError {
        SetupError::Agent(Arc::new(e))
    }
}

/// `; did you mean `x`?`, `; known agents: a, b`, or nothing.
fn agent_hint(suggestion: Option<&str>, known: &[String]) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None if known.is_empty() => String::new(),
        None => format!("; known agents: {}", known.join(", ")),
    }
}

/// Everything the check before a run found wrong with its set-up, by config file, each
/// said once (exit code 2): every broken config, not only the first.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n\n")).collect::<Vec<_>>().join("\n\nerror: "))]
pub(crate) struct SetupErrors(pub(crate) Vec<Vec<SetupError>>);

/// A generator or a reporter, an agent or a script asked outside any case, that gave
/// nothing to use; `who` names it (`agents:gen`, ``reporter `r` ``).
#[derive(Debug, thiserror::Error)]
#[error("{}{fault}", self.lead())]
pub(crate) struct HelperError {
    /// The generator's label or ``reporter `NAME` ``.
    pub(crate) who: String,
    /// What went wrong.
    pub(crate) fault: HelperFault,
}

impl HelperError {
    pub(crate) fn new(who: impl Into<String>, fault: impl Into<HelperFault>) -> Self {
        HelperError {
            who: who.into(),
            fault: fault.into(),
        }
    }

    /// What goes before the fault: the answer's own error names who already; the rest
    /// say `who: ...` or `who did ...`.
    fn lead(&self) -> String {
        match &self.fault {
            HelperFault::Answer(_) => String::new(),
            f if f.after_colon() => format!("{}: ", self.who),
            _ => format!("{} ", self.who),
        }
    }

    /// The message where the reader already sees who (`-i agents:NAME` errors are
    /// located at `agents:NAME`): `who: ` left off.
    pub(crate) fn without_who(&self) -> String {
        match self.fault.after_colon() {
            true => self.fault.to_string(),
            false => self.to_string(),
        }
    }
}

/// What went wrong with a generator or reporter ([`HelperError`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum HelperFault {
    /// Its suite's config, or its agent, cannot be used.
    #[error(transparent)]
    Setup(Box<SetupError>),
    /// Its agent could not be started.
    #[error("failed to start the agent `{label}`: {source}")]
    Start {
        /// The agent.
        label: String,
        /// Why.
        #[source]
        source: Box<AgentError>,
    },
    /// It took longer than a case may.
    #[error("did not answer within {}; raise --timeout or [run] timeout", crate::util::format_duration(*.0))]
    Timeout(std::time::Duration),
    /// Its answer was unusable twice, or its agent broke (the error names it).
    #[error(transparent)]
    Answer(#[from] StepError),
    /// Its model calls' cassette could not be written.
    #[error(transparent)]
    Cassette(#[from] LlmError),
    /// Its script could not be run.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// A generator registered in Rust panicked.
    #[error("panicked: {0}")]
    Panicked(String),
    /// A generator registered in Rust returned an error: its own text.
    #[error("failed: {0}")]
    Failed(String),
    /// A script generator printed an array that is not JSON.
    #[error("printed invalid JSON: {source}; print a JSON array of cases or one case per line; it printed: {shown}")]
    Json {
        /// What it printed, clipped.
        shown: String,
        /// Where the JSON broke.
        #[source]
        source: serde_json::Error,
    },
    /// A script generator printed a line that is not JSON.
    #[error("printed a line that is not JSON (line {line}: {source}): {shown}; print a JSON array of cases or one case per line")]
    Line {
        /// The line's number, from 1.
        line: usize,
        /// The line, clipped.
        shown: String,
        /// Where the JSON broke.
        #[source]
        source: serde_json::Error,
    },
}

// Boxed: the two are large, and a fault travels through every step of a generator.
impl From<SetupError> for HelperFault {
    fn from(e: SetupError) -> Self {
        HelperFault::Setup(Box::new(e))
    }
}

impl HelperFault {
    /// Whether the message reads `who: fault` rather than `who fault`.
    fn after_colon(&self) -> bool {
        matches!(
            self,
            HelperFault::Setup(_)
                | HelperFault::Start { .. }
                | HelperFault::Cassette(_)
                | HelperFault::Script(_)
        )
    }
}

// The steps of a case, and how each kind of failure becomes a `StepError`.

/// Why a step of a case (an agent's turn, a model call, a judge, a simulator, a script,
/// a hook) gave no usable answer. One type for every step, so that one function,
/// `run::outcome::status_of`, decides what it does to the case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// Something broke: the agent crashed or broke the protocol, a judge or simulator
    /// answered nonsense twice, a script crashed. The case is an `error`.
    #[error("{0}")]
    Broken(String),
    /// Something the test demands did not hold (a tool call no mock answers, a model call
    /// with no recording on CI): the case `failed`.
    #[error("{0}")]
    Failed(String),
    /// A model is needed and cannot be reached (no recording, no API key): outside CI the
    /// case is skipped with this reason, on CI it fails.
    #[error("{0}")]
    Unavailable(String),
    /// What carries the conversation failed, not a party to it: a transport error, a
    /// server's 5xx, an HTTP timeout, a model endpoint that failed after its retries.
    /// The case is an `error`, blamed on infrastructure.
    #[error("{0}")]
    Infrastructure(String),
}

impl StepError {
    /// The same error with `what` before its message (`judge \`critic\`: ...`).
    pub(crate) fn context(self, what: impl std::fmt::Display) -> StepError {
        let wrap = |m: String| format!("{what}: {m}");
        match self {
            StepError::Broken(m) => StepError::Broken(wrap(m)),
            StepError::Failed(m) => StepError::Failed(wrap(m)),
            StepError::Unavailable(m) => StepError::Unavailable(wrap(m)),
            StepError::Infrastructure(m) => StepError::Infrastructure(wrap(m)),
        }
    }
}

impl From<SetupError> for StepError {
    /// A role (a judge, a simulator) whose agent or model cannot be set up is broken.
    fn from(e: SetupError) -> StepError {
        StepError::Broken(e.to_string())
    }
}

/// A model call that did not produce an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No recording and no way to call the model (no API key, or replay-only mode).
    /// Outside CI such a case is ignored with this reason; on CI it fails.
    #[error("{0}")]
    Unavailable(String),
    /// The endpoint refused or failed, after any retries.
    #[error("{0}")]
    Failed(String),
    /// The endpoint answered with an error no retry would change (a 4xx, the same 500
    /// twice, a body that is not a completion). Recorded in the cassette and replayed.
    #[error("{0}")]
    Refused(String),
    /// A call that must be replayed (on CI, or in `replay` mode) has no recording.
    #[error("{0}")]
    NotRecorded(String),
    /// A cassette file could not be read or written.
    #[error("{0}")]
    Cassette(String),
    /// The case's or the run's budget is spent: the call was not made.
    #[error(transparent)]
    OverBudget(#[from] BudgetError),
}

/// Why a model call may not be made under the case's or the run's budget.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// A meter is spent (`why` says which, and how much so far).
    #[error("budget: {why}; raise it, or lower `runs`")]
    Spent { why: String },
    /// A money budget, and an endpoint without a price: its spending cannot be counted.
    #[error("budget: {owner} budget sets max_cost, but model endpoint {endpoint} has no price, so what it spends cannot be counted; add its pricing table (input_per_million, output_per_million)")]
    Unpriced { owner: String, endpoint: String },
}

/// A repeated case whose gate its runs cannot meet: the case's error, before it runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{from} min_pass {min_pass} is more than the {runs} runs; lower min_pass or raise runs (the case's `runs`, --runs / AGENTEST_RUNS, or [run] runs)")]
pub(crate) struct GateError {
    /// `the case's` or `[run]`: whose `min_pass` it is.
    pub from: &'static str,
    pub min_pass: u32,
    pub runs: u32,
}

impl From<LlmError> for StepError {
    /// The one place a failed model call becomes a step's error.
    fn from(e: LlmError) -> StepError {
        match e {
            LlmError::Unavailable(m) => StepError::Unavailable(m),
            LlmError::NotRecorded(m) => StepError::Failed(m),
            LlmError::OverBudget(e) => StepError::Broken(e.to_string()),
            // After its retries: the endpoint or the way to it failed (5xx, 429s,
            // transport, timeout), not what was asked.
            LlmError::Failed(m) => StepError::Infrastructure(format!("model call failed: {m}")),
            LlmError::Refused(m) | LlmError::Cassette(m) => {
                StepError::Broken(format!("model call failed: {m}"))
            }
        }
    }
}

/// Why a judge gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The judge could not be built: no config, no `[llm]`, an invalid setting.
    #[error("{0}")]
    Setup(String),
    /// No model to be had (no recording, no API key): skipped outside CI, failed on CI.
    #[error("{0}")]
    Unavailable(String),
    /// The judge broke: it could not be reached, or answered twice without a verdict.
    #[error("{0}")]
    Broken(String),
}

impl From<StepError> for JudgeError {
    fn from(e: StepError) -> JudgeError {
        match e {
            StepError::Unavailable(m) => JudgeError::Unavailable(m),
            StepError::Broken(m) | StepError::Failed(m) | StepError::Infrastructure(m) => {
                JudgeError::Broken(m)
            }
        }
    }
}

/// An agent under test that gave no usable reply: it could not be started, it crashed,
/// timed out, or broke the protocol. The case is an `error`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// A process agent with no program.
    #[error("the agent command is empty")]
    EmptyCommand,
    /// A process agent that could not be started.
    #[error("failed to start agent `{shown}` in {cwd}: {source}")]
    Spawn {
        /// The command as the config writes it.
        shown: String,
        /// Where it was to run.
        cwd: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The request could not be encoded.
    #[error("failed to encode the request: {0}")]
    Encode(#[source] serde_json::Error),
    /// A process agent that was gone before it read the request.
    #[error("agent process exited before reading the request{note}: {source}{stderr}")]
    ExitedBeforeRequest {
        /// How it ended, like ` (exit status: 1)`.
        note: String,
        /// The failed write.
        #[source]
        source: std::io::Error,
        /// `; agent stderr (last lines): ...`.
        stderr: String,
    },
    /// A process agent's own `timeout` passed.
    #[error("agent process did not reply within {}{trace}", crate::util::format_duration(*.timeout))]
    Timeout {
        /// The agent's `timeout`.
        timeout: std::time::Duration,
        /// What it did meanwhile: `; the agent wrote nothing on stdout ...; agent stderr ...`.
        trace: String,
    },
    /// Its stdout could not be read.
    #[error("failed to read the agent's stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// A reply line longer than the limit.
    #[error(
        "{} (no newline in the first {} bytes of stdout){stderr}",
        crate::protocol::reply_too_large(),
        crate::protocol::MAX_REPLY_BYTES
    )]
    LineTooLong {
        /// `; agent stderr (last lines): ...`.
        stderr: String,
    },
    /// A process agent that ended without replying.
    #[error("agent process exited before replying{note}{stderr}")]
    Exited {
        /// How it ended, like ` (exit status: 1)`.
        note: String,
        /// `; agent stderr (last lines): ...`.
        stderr: String,
    },
    /// A reply line that is not UTF-8.
    #[error("agent process printed a line that is not UTF-8: {0}")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// A reply line that is not JSON.
    #[error("agent process printed a line that is not JSON ({source}): {line}{stderr}\nhint: a process agent must print exactly one JSON reply per line on stdout; write logs to stderr")]
    NotJson {
        /// The line, clipped.
        line: String,
        /// Why.
        #[source]
        source: serde_json::Error,
        /// `; agent stderr (last lines): ...`.
        stderr: String,
    },
    /// A reply that does not fit the protocol (see `Reply::from_json`).
    #[error("agent reply broke the protocol: {0}")]
    Protocol(String),
    /// A process agent that wrote more lines than it was sent requests: the extra line
    /// would be taken as the next turn's reply, shifting every later one.
    #[error("agent process wrote more lines than it was sent requests: a line after its reply to turn {turn} was still unread {when}: {line}\nhint: a process agent must write exactly one line (its JSON reply) per request on stdout; write progress and logs to stderr")]
    ExtraLine {
        /// The turn whose reply the line followed.
        turn: u32,
        /// When it was found: `when the next request was due`, `when the conversation ended`.
        when: &'static str,
        /// The line, clipped.
        line: String,
    },
    /// An HTTP agent that did not answer within its timeout.
    #[error("agent at {shown} did not answer within {}", crate::util::format_duration(*.timeout))]
    HttpTimeout {
        /// The URL as the config writes it, masked.
        shown: String,
        /// The request's timeout.
        timeout: std::time::Duration,
    },
    /// An HTTP agent that could not be reached.
    #[error("failed to connect to agent at {shown}: {}", crate::util::root_cause(.source))]
    Connect {
        /// The URL as the config writes it, masked.
        shown: String,
        /// Why (without the expanded URL).
        #[source]
        source: reqwest::Error,
    },
    /// An HTTP request that failed otherwise.
    #[error("request to agent at {shown} failed: {}", crate::util::root_cause(.source))]
    Request {
        /// The URL as the config writes it, masked.
        shown: String,
        /// Why (without the expanded URL).
        #[source]
        source: reqwest::Error,
    },
    /// A LangGraph run that ended in an error (`__error__` in its state, HTTP 200).
    #[error("LangGraph agent at {shown}: the run failed: {error}: {message}")]
    LangGraphRun {
        /// The URL as the config writes it, masked, with the path called.
        shown: String,
        /// The error's type, as the server names it.
        error: String,
        /// The server's message.
        message: String,
    },
    /// An A2A agent's answer of an unexpected shape, or an unusable agent card.
    #[error("A2A agent at {shown}: expected {expected}, got: {body}")]
    A2aShape {
        /// The URL as the config writes it (or the card's endpoint), masked.
        shown: String,
        /// What was expected.
        expected: String,
        /// What came, clipped.
        body: String,
    },
    /// A JSON-RPC error answer of an A2A agent (HTTP 200 with `error`).
    #[error("A2A agent at {shown}: JSON-RPC error {code}: {message}")]
    A2aRpc {
        /// The endpoint, masked.
        shown: String,
        /// The error's code.
        code: i64,
        /// Its message (and data, clipped).
        message: String,
    },
    /// An A2A task that ended `failed`, `rejected` or `canceled`.
    #[error("A2A agent at {shown}: the task ended {state}: {message}")]
    A2aTask {
        /// The endpoint, masked.
        shown: String,
        /// The state, as the server wrote it.
        state: String,
        /// The status message's text.
        message: String,
    },
    /// An ElizaOS server's answer of an unexpected shape (a reply with neither text nor
    /// actions, a session without an id).
    #[error("ElizaOS agent at {shown}: expected {expected}, got: {body}")]
    ElizaShape {
        /// The URL as the config writes it, masked, with the path called.
        shown: String,
        /// What was expected.
        expected: String,
        /// The answer, clipped.
        body: String,
    },
    /// An ElizaOS server that said its agent failed to answer.
    #[error("ElizaOS agent at {shown}: {message}")]
    ElizaFailed {
        /// The URL as the config writes it, masked, with the path called.
        shown: String,
        /// The server's message.
        message: String,
    },
    /// An eliza agent's name that `GET /api/agents` does not list once.
    #[error("ElizaOS server at {shown}: {problem}")]
    ElizaAgent {
        /// The agents list's URL, masked.
        shown: String,
        /// What is wrong, with the agents it lists.
        problem: String,
    },
    /// A LangGraph server's answer of an unexpected shape.
    #[error("LangGraph agent at {shown}: expected {expected}, got: {body}")]
    LangGraphShape {
        /// The URL as the config writes it, masked, with the path called.
        shown: String,
        /// What was expected.
        expected: &'static str,
        /// The answer, clipped.
        body: String,
    },
    /// An HTTP agent that answered with an error status.
    #[error("agent at {shown} answered HTTP {status}: {body}")]
    Status {
        /// The URL as the config writes it, masked.
        shown: String,
        /// The status.
        status: reqwest::StatusCode,
        /// The start of the body, clipped.
        body: String,
    },
    /// An HTTP agent that announced a body over the limit.
    #[error(
        "{} (agent at {shown} announced a body of {length} bytes)",
        crate::protocol::reply_too_large()
    )]
    AnnouncedTooLarge {
        /// The URL as the config writes it, masked.
        shown: String,
        /// The announced length.
        length: u64,
    },
    /// An HTTP agent whose body went over the limit.
    #[error(
        "{} (the response body of agent at {shown})",
        crate::protocol::reply_too_large()
    )]
    BodyTooLarge {
        /// The URL as the config writes it, masked.
        shown: String,
    },
    /// A retry the server asked for (`Retry-After`) that would end past the deadline.
    #[error("{error}; the server asked to wait {asked} before trying again (Retry-After), longer than the {left} left before the case's deadline, so agentest did not wait: raise the case's `timeout` (or `[run] timeout`) above {asked} to wait for it")]
    RetryPastDeadline {
        /// The answer that asked for the wait.
        error: Box<AgentError>,
        /// How long the server asked to wait.
        asked: String,
        /// What was left of the case's time.
        left: String,
    },
    /// An HTTP agent whose body is compressed.
    #[error("agent at {shown} answered with a {encoding}-compressed body, which agentest does not decode (it sends no Accept-Encoding, so asks for none): have the server answer with plain JSON")]
    Compressed {
        /// The URL as the config writes it, masked.
        shown: String,
        /// `gzip`, `br`, ... (Content-Encoding, or `gzip` from the body's first bytes).
        encoding: String,
    },
    /// A `reply` path that matches nothing in the answer.
    #[error("agent at {shown} answered, but {key} = \"{path}\" matches nothing in {}: {body}", if *.stream { "the whole stream" } else { "the answer" })]
    ReplyPathMissed {
        /// The URL as the config writes it, masked.
        shown: String,
        /// Like `reply.content`.
        key: String,
        /// The path as written.
        path: String,
        /// Whether the answer was a stream (its events are shown).
        stream: bool,
        /// The answer, clipped.
        body: String,
    },
    /// An answer without what its `format` promises.
    #[error(
        "agent at {shown} answered with an unexpected JSON shape: expected {expected}, got: {body}"
    )]
    ReplyShape {
        /// The URL as the config writes it, masked.
        shown: String,
        /// What was expected.
        expected: &'static str,
        /// The answer, clipped.
        body: String,
    },
    /// A `stream = "sse"` agent that answered with something else.
    #[error("agent at {shown} answered with Content-Type `{content_type}`, not text/event-stream (the agent has stream = \"sse\"): {body}")]
    NotEventStream {
        /// The URL as the config writes it, masked.
        shown: String,
        /// The answer's Content-Type.
        content_type: String,
        /// The answer, clipped.
        body: String,
    },
    /// An event stream that stopped sending before it ended.
    #[error("the event stream of agent at {shown} sent nothing for {} (the agent's reply timeout) before it ended; an incomplete answer is not taken", crate::util::format_duration(*.timeout))]
    StreamIdle {
        /// The URL as the config writes it, masked.
        shown: String,
        /// The reply timeout.
        timeout: std::time::Duration,
    },
    /// An `openai-chat` stream that ended before `data: [DONE]`.
    #[error("the event stream of agent at {shown} ended before `data: [DONE]`; an incomplete answer is not taken")]
    StreamUnfinished {
        /// The URL as the config writes it, masked.
        shown: String,
    },
    /// An event whose data is not JSON.
    #[error("agent at {shown} sent an event whose data is not JSON ({source}): {data}")]
    EventNotJson {
        /// The URL as the config writes it, masked.
        shown: String,
        /// Why.
        #[source]
        source: serde_json::Error,
        /// The event's data, clipped.
        data: String,
    },
    /// An HTTP agent whose body is not JSON.
    #[error("agent at {shown} answered with a body that is not JSON ({source}): {body}")]
    BodyNotJson {
        /// The URL as the config writes it, masked.
        shown: String,
        /// Why.
        #[source]
        source: serde_json::Error,
        /// The body, clipped.
        body: String,
    },
    /// An `openai` agent's model still calling tools after `max_tool_rounds` calls.
    #[error("the model was still calling tools after {rounds} rounds in one turn; raise max_tool_rounds or check what the mocks answer")]
    ToolRounds {
        /// `max_tool_rounds`.
        rounds: u32,
    },
    /// A tool call in live mode by an `openai` agent without `tools_url`.
    #[error("live mode sends tool calls to the agent's `tools_url`, and this agent has none; add tools_url to its config or run without --live to use mocks (the call was {tool})")]
    NoToolsUrl {
        /// The tool called.
        tool: String,
    },
    /// The tool endpoint could not be reached, or its body not read.
    #[error("tool endpoint {shown}: {source}")]
    ToolEndpoint {
        /// The endpoint as the config writes it, masked.
        shown: String,
        /// Why (without the expanded URL).
        #[source]
        source: reqwest::Error,
    },
    /// The tool endpoint answered a call with a success that is not JSON.
    #[error("tool endpoint {shown} answered {tool} with invalid JSON: {source}")]
    ToolEndpointJson {
        /// The endpoint as the config writes it, masked.
        shown: String,
        /// The tool called.
        tool: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An in-process agent that panicked.
    #[error("agent panicked: {0}")]
    Panicked(String),
    /// An in-process agent's task that failed otherwise.
    #[error("agent task failed: {0}")]
    Task(#[source] tokio::task::JoinError),
    /// An in-process agent's own error, as it wrote it.
    #[error("agent error: {0}")]
    Returned(String),
}

impl From<AgentError> for StepError {
    /// The one place an agent's failure becomes a step's error: the case is an `error`,
    /// blamed on infrastructure when the way to the agent failed (it could not be
    /// reached, an HTTP timeout, a 5xx, a stream cut short), else on the agent.
    fn from(e: AgentError) -> StepError {
        let transport = match &e {
            AgentError::HttpTimeout { .. }
            | AgentError::Connect { .. }
            | AgentError::Request { .. }
            | AgentError::RetryPastDeadline { .. }
            | AgentError::StreamUnfinished { .. } => true,
            AgentError::Status { status, .. } => status.is_server_error(),
            _ => false,
        };
        if transport {
            StepError::Infrastructure(e.to_string())
        } else {
            StepError::Broken(e.to_string())
        }
    }
}

/// A tool call of an `openai` agent that no mock answers. The case fails: an unanswered
/// call must not be guessed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MockError {
    /// No mock for that tool at all.
    #[error("no mock answers the tool call {call}: there are no mocks for `{name}`; add one to the case's `setup.mocks` or the agent's `mocks`, or run with --live")]
    NoMocks {
        /// The tool.
        name: String,
        /// The call, like `search({"q":"x"})`.
        call: String,
    },
    /// Mocks for the tool, none matching these arguments.
    #[error("no mock matches the tool call {call}; the mocks for `{name}` are:\n{}", .mocks.join("\n"))]
    NoMatch {
        /// The tool.
        name: String,
        /// The call, like `search({"q":"x"})`.
        call: String,
        /// The tool's mocks, one per line: `  <where> when <conditions>`.
        mocks: Vec<String>,
    },
}

impl From<MockError> for StepError {
    /// An unanswered tool call fails the case.
    fn from(e: MockError) -> StepError {
        StepError::Failed(e.to_string())
    }
}

/// Why no person can answer for the user, or why their answer did not come.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PersonError {
    /// `--skip-interactive`.
    #[error("interactive input is off (--skip-interactive)")]
    Off,
    /// The case does not ask for a person.
    #[error("the case is not interactive")]
    NotInteractive,
    /// Nobody is there on CI.
    #[error("no person can answer on CI")]
    OnCi,
    /// Stdin is not a terminal, and `--interactive` does not say to read it anyway.
    #[error("there is no terminal to ask (stdin is not a terminal; run with --interactive to read answers from it)")]
    NoTerminal,
    /// Stdin could not be read.
    #[error("failed to read the answer: {0}")]
    Read(#[source] std::io::Error),
    /// No answer in time.
    #[error("no answer within {}", crate::util::format_duration(*.wait))]
    NoAnswer {
        /// How long the person had.
        wait: std::time::Duration,
    },
}

/// A `before` / `after` hook that did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HookError {
    /// No hook of that name in the config or the builder.
    #[error("hook `{name}` is not defined; add [hooks.\"{name}\"] with `command = [...]` to {config} or register it with Harness::hook")]
    Undefined {
        /// The hook.
        name: String,
        /// Where the config is.
        config: String,
    },
    /// A registered function still running at the case's deadline.
    #[error("hook `{name}` did not finish before the case's deadline")]
    Deadline {
        /// The hook.
        name: String,
    },
    /// A registered function panicked.
    #[error("hook `{name}` panicked: {message}")]
    Panicked {
        /// The hook.
        name: String,
        /// The panic's message.
        message: String,
    },
    /// A registered function returned its own error.
    #[error("hook `{name}` failed: {message}")]
    Returned {
        /// The hook.
        name: String,
        /// The function's error, as it wrote it.
        message: String,
    },
    /// The command cannot be built from the config.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The command did not run to its end.
    #[error("hook `{name}`: {source}")]
    Command {
        /// The hook.
        name: String,
        /// Why.
        #[source]
        source: CommandError,
    },
    /// The command exited with a failure.
    #[error("hook `{name}` failed ({status}){}", stderr_note(.stderr))]
    Exit {
        /// The hook.
        name: String,
        /// The exit status.
        status: String,
        /// The tail of its stderr.
        stderr: String,
    },
}

/// A `script` assertion's script that broke (rather than judged the reply).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScriptError {
    /// No script of that name in the config or the builder.
    #[error("script `{name}` is not defined; add [scripts.\"{name}\"] with `command = [...]` to {config} or register it with Harness::script")]
    Undefined {
        /// The script.
        name: String,
        /// Where the config is.
        config: String,
    },
    /// A registered function still running at the case's deadline.
    #[error("script `{name}` did not finish before the case's deadline")]
    Deadline {
        /// The script.
        name: String,
    },
    /// A registered function panicked.
    #[error("script `{name}` panicked: {message}")]
    Panicked {
        /// The script.
        name: String,
        /// The panic's message.
        message: String,
    },
    /// A registered function returned its own error.
    #[error("script `{name}` failed: {message}")]
    Returned {
        /// The script.
        name: String,
        /// The function's error, as it wrote it.
        message: String,
    },
    /// The command cannot be built from the config.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The command did not run to its end.
    #[error("script `{name}`: {source}")]
    Command {
        /// The script.
        name: String,
        /// Why.
        #[source]
        source: CommandError,
    },
    /// The command exited with a failure.
    #[error("script `{name}` crashed ({status}){}", stderr_note(.stderr))]
    Crashed {
        /// The script.
        name: String,
        /// The exit status.
        status: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The command's answer cannot be read.
    #[error("script `{name}` answered badly: {source}{}", stderr_note(.stderr))]
    BadAnswer {
        /// The script.
        name: String,
        /// What is wrong with the answer.
        #[source]
        source: ScriptAnswerError,
        /// The tail of its stderr.
        stderr: String,
    },
}

impl From<ScriptError> for StepError {
    /// A script that broke makes the case an `error`, never a pass or a fail.
    fn from(e: ScriptError) -> StepError {
        StepError::Broken(e.to_string())
    }
}

/// A script command's stdout that holds no verdict.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScriptAnswerError {
    /// Nothing but blank lines.
    #[error("it printed nothing; expected {{\"pass\": true|false, \"message\": \"...\"}}")]
    Nothing,
    /// The last line is not JSON.
    #[error(
        "`{line}` is not JSON ({source}); expected {{\"pass\": true|false, \"message\": \"...\"}}"
    )]
    NotJson {
        /// The line, clipped.
        line: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The JSON has no verdict.
    #[error("`{line}` has no boolean `pass` or `passed`")]
    NoVerdict {
        /// The line, clipped.
        line: String,
    },
}

/// `; stderr:\n<tail>`, or nothing when the command wrote nothing on stderr.
fn stderr_note(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; stderr:\n{tail}")
    }
}

/// A JSONPath that cannot be evaluated on a reply. Not a step's error: the assertion
/// that needs it fails with this as its reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum SelectError {
    /// The reply has nothing structured to look into.
    #[error(
        "cannot evaluate {path}: the reply has no `data` and its text is not JSON; reply: {reply}"
    )]
    NotJson {
        /// The path as written.
        path: String,
        /// The reply's text, clipped and quoted.
        reply: String,
    },
    /// The query failed.
    #[error("cannot evaluate {path}: {source}")]
    Query {
        /// The path as written.
        path: String,
        /// Why.
        #[source]
        source: jsonpath_rust::parser::errors::JsonPathError,
    },
}

// Traces: the OTLP receiver.

/// The OTLP trace receiver cannot be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TraceSetupError {
    /// The address cannot be listened on (in use, not this machine's, not allowed).
    #[error(
        "failed to listen for OpenTelemetry traces on {addr} (`[traces] listen`): {source}; {}",
        listen_hint(source)
    )]
    Listen {
        /// The address, as configured.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The receiver's thread or its runtime cannot be started.
    #[error("failed to start the OpenTelemetry trace receiver: {source}")]
    Start {
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What to do about an address that cannot be listened on.
fn listen_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "another process uses that port: set `[traces] listen` to a free port, or to 127.0.0.1:0 for any free one",
        std::io::ErrorKind::AddrNotAvailable => "that address is not one of this machine's: use 127.0.0.1 with a port",
        std::io::ErrorKind::PermissionDenied => "ports below 1024 need privileges: use a higher port, or 127.0.0.1:0 for any free one",
        _ => "set `[traces] listen` to another address, or to 127.0.0.1:0",
    }
}

/// An OTLP/HTTP request body that cannot be read. The receiver answers it with a 400
/// (a 413 for [`OtlpError::TooLarge`], a 415 for an unsupported type or encoding).
#[derive(Debug, thiserror::Error)]
pub(crate) enum OtlpError {
    /// A content type other than OTLP's two.
    #[error("unsupported content type `{0}`: OTLP/HTTP sends `application/x-protobuf` or `application/json`")]
    ContentType(String),
    /// A content encoding other than gzip or none.
    #[error("unsupported content encoding `{0}`: send the body as it is or with `Content-Encoding: gzip`")]
    ContentEncoding(String),
    /// The body, or what it decompresses to, is over the limit.
    #[error("the {what} is over the limit of {limit} bytes")]
    TooLarge {
        /// "request body" or "decompressed request body".
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// `Content-Encoding: gzip` on a body that is not gzip, or is cut short.
    #[error("the body is not valid gzip: {0}")]
    Gzip(#[source] std::io::Error),
    /// A protobuf body that is not an `ExportTraceServiceRequest`.
    #[error("the body is not a protobuf ExportTraceServiceRequest: {0}")]
    Protobuf(#[source] prost::DecodeError),
    /// A JSON body that is not an OTLP/JSON `ExportTraceServiceRequest`.
    #[error("the body is not an OTLP/JSON ExportTraceServiceRequest: {0}")]
    Json(#[source] serde_json::Error),
    /// A span whose field is wrong (an id of the wrong length, say).
    #[error("resourceSpans[{resource}].scopeSpans[{scope}].spans[{span}].{field}: {problem}")]
    Span {
        /// Where the span is in the request.
        resource: usize,
        /// Where the span is in its resource.
        scope: usize,
        /// Where the span is in its scope.
        span: usize,
        /// The field, as OTLP/JSON names it.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl OtlpError {
    /// The kind of error, to log each kind once rather than once per request.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            OtlpError::ContentType(_) => "content type",
            OtlpError::ContentEncoding(_) => "content encoding",
            OtlpError::TooLarge { .. } => "too large",
            OtlpError::Gzip(_) => "gzip",
            OtlpError::Protobuf(_) => "protobuf",
            OtlpError::Json(_) => "json",
            OtlpError::Span { .. } => "span",
        }
    }
}

/// A traced agent's turn in a cassette that does not read back as a reply.
#[derive(Debug, thiserror::Error)]
#[error("a recorded agent turn that cannot be read ({0}); record it again")]
pub(crate) struct RecordedTurnError(#[source] pub(crate) serde_json::Error);

/// An OTLP/JSON attribute's `bytesValue` that is not base64; the span reader adds where.
#[derive(Debug, thiserror::Error)]
#[error("bytesValue `{shown}` is not base64: {source}")]
pub(crate) struct OtlpBytesError {
    /// The value, clipped.
    pub(crate) shown: String,
    /// What the decoder found.
    #[source]
    pub(crate) source: base64::DecodeError,
}

// Reports, golden files and freezing.

/// The run store cannot be used. Every message ends with how to run without it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Its folder cannot be made.
    #[error("failed to create the run store {path}: {source}; set AGENTEST_STORE to another file, or AGENTEST_STORE=off to run without the store", path = path.display())]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The config's `[store]` cannot be used.
    #[error("{problem}")]
    Configured { problem: String },
    /// Its writing thread could not be started.
    #[error("failed to start writing to the run store {store}: {source}")]
    Thread {
        store: StoreAddress,
        #[source]
        source: std::io::Error,
    },
    /// The database cannot be opened: not a database, corrupt, unreadable, unreachable.
    #[error("failed to open the run store {store}: {source}; {}", open_fix(store))]
    Open {
        store: StoreAddress,
        #[source]
        source: DbError,
    },
    /// The OS will not let this process write it (or its folder).
    #[error("failed to open the run store {}: cannot write {}: {source}; {fix}", path.display(), what.display())]
    Unwritable {
        path: PathBuf,
        /// The file or folder that cannot be written.
        what: PathBuf,
        #[source]
        source: std::io::Error,
        fix: String,
    },
    /// A newer agentest wrote it.
    #[error("the run store {store} has schema version {found}, newer than this agentest's ({supported}): it was written by a newer agentest; use that version, set AGENTEST_STORE to another file, or AGENTEST_STORE=off to run without the store")]
    Newer {
        store: StoreAddress,
        found: i64,
        supported: i64,
    },
    /// `--resume` of an execution that its own process is still running.
    /// A store a reader (`agentest view`) would have to migrate, which it never does.
    #[error("the run store {store} has schema version {found}, older than this agentest's ({supported}); `agentest store migrate` brings it up to date (a reader never writes to the store)")]
    Older {
        store: StoreAddress,
        found: i64,
        supported: i64,
    },
    #[error("execution {execution} in the run store {store} is still being run by process {pid} on {host}; let it end (or stop it), then --resume")]
    StillRunning {
        store: StoreAddress,
        execution: i64,
        pid: i64,
        host: String,
    },
    /// `--resume` with no execution to resume.
    #[error("nothing to resume in the run store {store}: every execution there finished; run without --resume")]
    NothingToResume { store: StoreAddress },
    /// Writes failed while the run went on: these runs' ends are not recorded.
    #[error("the run store {store} did not record {}: {cause}; the console and any report have their results, and `agentest test --resume` runs them again (under `cargo test`, run the trials again)", unrecorded(trials))]
    Unrecorded {
        store: StoreAddress,
        trials: Vec<String>,
        cause: String,
    },
    /// The file was deleted or replaced while the run wrote to it.
    #[error("the run store {} was deleted or replaced while this run wrote to it, so this run's results are not in it (the console and any report have them); run again to record them", path.display())]
    Vanished { path: PathBuf },
    /// The file stopped being a database while the run wrote to it.
    #[error("the run store {} was overwritten while this run wrote to it and is no longer a database, so this run's results are not in it (the console and any report have them); move the file away (a new store is made) and run again", path.display())]
    Damaged { path: PathBuf },
    /// A write failed.
    #[error("failed to write to the run store {store}: {source}; set AGENTEST_STORE=off to run without the store")]
    Write {
        store: StoreAddress,
        #[source]
        source: DbError,
    },
}

/// What a store's database answered instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    /// SQLite's error, with the operating system's when SQLite's is an I/O one ("disk
    /// I/O error" says nothing of a full disk or a file size limit).
    #[error("{source}{}", os.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Sqlite {
        #[source]
        source: rusqlite::Error,
        os: Option<std::io::Error>,
    },
    /// PostgreSQL's error, with its causes (its own text is only "db error" or "error
    /// connecting to server"; the server's words are the cause). Never the URL, so
    /// never its password.
    #[error("{}", crate::util::error_chain(.0))]
    Postgres(#[source] postgres::Error),
    /// No connection to the PostgreSQL server: its URL's TLS settings, its certificate,
    /// or what the driver says. Boxed: rustls' errors would make every `StoreError`
    /// large.
    #[error("{0}")]
    Connect(#[source] Box<PgConnectError>),
}

/// A connection to a PostgreSQL store that cannot be made
/// (`record::store::postgres::connect`). No message holds the URL, so none holds its
/// password.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgConnectError {
    /// The URL's `sslrootcert` file cannot be read.
    #[error("cannot read the sslrootcert file {path}: {source}", path = path.display())]
    RootFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `sslrootcert` file is not PEM that can be read.
    #[error("the sslrootcert file {path} is not readable PEM: {problem}", path = path.display())]
    RootFilePem { path: PathBuf, problem: String },
    /// The `sslrootcert` file holds no certificate.
    #[error("the sslrootcert file {path} holds no certificate (no -----BEGIN CERTIFICATE----- section); name a PEM file with the certificate of the CA that signed the server's", path = path.display())]
    NoCertificate { path: PathBuf },
    /// A certificate in the `sslrootcert` file cannot be a trust anchor.
    #[error("the sslrootcert file {path} has a certificate that cannot be trusted as a CA: {cause}", path = path.display())]
    BadRoot { path: PathBuf, cause: rustls::Error },
    /// The server's certificate is signed by no CA agentest trusts by default.
    #[error("the PostgreSQL server's TLS certificate is not trusted ({cause}): none of the Mozilla root CAs agentest trusts by default signed it; if a private CA did (a company's, a cloud provider's such as AWS RDS's), add sslrootcert=/path/to/ca.pem to the URL, naming that CA's certificate file")]
    Untrusted { cause: rustls::Error },
    /// The server's certificate is signed by no CA of the `sslrootcert` file.
    #[error("the PostgreSQL server's TLS certificate is not trusted ({cause}): no certificate in the sslrootcert file {path} signed it; name the file of the CA that signed the server's certificate", path = path.display())]
    UntrustedByRootFile { path: PathBuf, cause: rustls::Error },
    /// The server's certificate is for another name than the URL's host.
    #[error("the PostgreSQL server's TLS certificate is not for the host agentest connected to ({cause}); use a host name the certificate has (agentest checks the name for every sslmode but disable)")]
    WrongName { cause: rustls::Error },
    /// The driver's error: a URL it cannot read, no server, a refused login, a TLS
    /// failure other than the above.
    #[error("{}", crate::util::error_chain(.0))]
    Postgres(#[source] postgres::Error),
}

/// What to do about a store that cannot be opened: a file may be damaged; a server's
/// database is not agentest's to move away.
fn open_fix(store: &StoreAddress) -> &'static str {
    match store {
        StoreAddress::File(_) => "if the file is damaged, move it away (a new store is made), or set AGENTEST_STORE=off to run without the store",
        StoreAddress::Postgres(_) => "set AGENTEST_STORE=off to run without the store",
    }
}

/// "3 runs (a, b, c)", at most ten named; or "the end of the execution" when only that
/// failed.
fn unrecorded(trials: &[String]) -> String {
    const SHOWN: usize = 10;
    match trials.len() {
        0 => "the end of the execution".into(),
        n => {
            let more = match n.saturating_sub(SHOWN) {
                0 => String::new(),
                m => format!(" and {m} more"),
            };
            format!(
                "{} ({}{more})",
                crate::util::count(n as u64, "run", "runs"),
                trials[..n.min(SHOWN)].join(", ")
            )
        }
    }
}

/// A report that cannot be written or read back.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file name whose extension names no format.
    #[error("the report {path} has no known extension; use one of: {}", known.join(", "))]
    UnknownFormat {
        /// The report.
        path: PathBuf,
        /// The extensions that name a format.
        known: &'static [&'static str],
    },
    /// A report other than JSONL under nextest, where each case runs in its own process.
    #[error("under nextest each case runs in its own process, so the report must be JSONL (got {path}); write a .jsonl file and build other formats with `agentest report {} -o report.html`", .path.with_extension("jsonl").display())]
    NotJsonl {
        /// The report.
        path: PathBuf,
    },
    /// The report cannot be opened.
    #[error("failed to open the report {path}: {source}")]
    Open {
        /// The report.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A case's record cannot be appended to a JSONL report; nothing more is written to it.
    #[error("failed to write the record of `{trial}` to the report {path}: {source}; the report holds only the records written before it, and no summary line")]
    Append {
        /// The report.
        path: PathBuf,
        /// The case whose record was lost.
        trial: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The summary line cannot be appended to a JSONL report.
    #[error("failed to write the summary line of the report {path}: {source}")]
    Summary {
        /// The report.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A rendered report cannot be written.
    #[error("failed to write the report {path}: {source}")]
    Write {
        /// The report.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A folder of reports cannot be listed.
    #[error("failed to list {path}: {source}")]
    List {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A folder without JSONL reports.
    #[error("no .jsonl reports in {path}")]
    NoReports {
        /// The folder.
        path: PathBuf,
    },
    /// A report cannot be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The report.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line that is not a case record or a summary.
    #[error("{}line {line}: {source}", .file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
    Line {
        /// The report, when the text came from a file.
        file: Option<PathBuf>,
        /// The line's number, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// A golden transcript that does not match, or golden files that cannot be read,
/// written, accepted or rejected.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GoldenError {
    /// The golden file exists but cannot be read.
    #[error(
        "failed to read the golden file {shown}: {source}{}",
        golden_read_hint(source)
    )]
    Read {
        /// The golden file, as messages show it.
        shown: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The golden file cannot be written (`AGENTEST_UPDATE=always`).
    #[error("failed to write the golden file {shown}: {source}")]
    Write {
        /// The golden file, as messages show it.
        shown: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The transcript differs from the golden file.
    #[error(
        "the transcript differs from the golden file {shown}:\n{diff}\n{new_file}{}",
        UPDATE_ADVICE
    )]
    Mismatch {
        /// The golden file, as messages show it.
        shown: String,
        /// The unified diff, golden against actual.
        diff: String,
        /// The `.new` file written for review.
        new_file: NewFile,
    },
    /// There is no golden file yet.
    #[error("there is no golden file {shown} yet (a transcript is never accepted silently);\n{new_file}{}", UPDATE_ADVICE)]
    Missing {
        /// The golden file, as messages show it.
        shown: String,
        /// The `.new` file written for review.
        new_file: NewFile,
    },
    /// A folder cannot be searched for pending files.
    #[error("failed to list {path}: {source}")]
    List {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A pending file cannot be read.
    #[error("failed to read {path}: {source}")]
    ReadPending {
        /// The `.new` file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A pending file cannot replace its golden file.
    #[error("failed to accept {path}: {source}")]
    Accept {
        /// The `.new` file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A rejected pending file cannot be deleted.
    #[error("failed to delete {path}: {source}")]
    Delete {
        /// The `.new` file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What became of the `<golden>.new` file a mismatch writes for review.
#[derive(Debug)]
pub(crate) enum NewFile {
    /// None was to be written (`AGENTEST_UPDATE=no`).
    Skipped,
    /// Written, at this path (as messages show it).
    Written(String),
    /// It could not be written.
    Failed {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for NewFile {
    /// `wrote <file>; `, `failed to write <file>: <why>; `, or nothing: the start of
    /// the advice after a mismatch.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NewFile::Skipped => Ok(()),
            NewFile::Written(p) => write!(f, "wrote {p}; "),
            NewFile::Failed { path, source } => {
                write!(f, "failed to write {}: {source}; ", path.display())
            }
        }
    }
}

/// What to do about a golden file that cannot be read, when the reason says.
fn golden_read_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::InvalidData => "; a golden file is UTF-8 text: fix it, or delete it and accept the transcript the next run writes for review",
        std::io::ErrorKind::InvalidFilename => "; the case's id makes a file name longer than the system allows: give the case a shorter id",
        _ => "",
    }
}

impl GoldenError {
    /// Whether a golden file (or its `.new`) could not be read or written: the case's
    /// `error`, with the system's reason, rather than a failure of the agent's.
    pub(crate) fn is_file_error(&self) -> bool {
        match self {
            GoldenError::Read { .. } | GoldenError::Write { .. } => true,
            GoldenError::Mismatch { new_file, .. } | GoldenError::Missing { new_file, .. } => {
                matches!(new_file, NewFile::Failed { .. })
            }
            _ => false,
        }
    }
}

/// How to update golden files, after a mismatch.
const UPDATE_ADVICE: &str = "review it with `agentest review`, accept all with `agentest accept`, or rerun with AGENTEST_UPDATE=always";

/// A case that cannot be frozen from a report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FreezeError {
    /// The report's record has no turns.
    #[error("the report's record of {trial} has no turns to freeze")]
    NoTurns {
        /// The case's trial.
        trial: String,
    },
    /// The report cannot be read.
    #[error("failed to read the report {path}: {source}")]
    Read {
        /// The report.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of the report that is not JSON.
    #[error("{path}:{line}: not a report line ({source})")]
    NotJson {
        /// The report.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A line of the report that is not a case record.
    #[error("{path}:{line}: not a case record ({source})")]
    NotRecord {
        /// The report.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// No record of the case.
    #[error("the report {path} has no record of {trial}; run the suite with -o {path} first")]
    NoRecord {
        /// The report.
        path: PathBuf,
        /// The case's trial.
        trial: String,
    },
    /// No record of the trial, and several of the id.
    #[error("the report {path} has no record of {trial}, and several cases with the id \"{id}\" ({}); run the suite again with -o to get its own record", .trials.join(", "))]
    Ambiguous {
        /// The report.
        path: PathBuf,
        /// The case's trial.
        trial: String,
        /// The case's id.
        id: String,
        /// The trials with that id.
        trials: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under `cargo test` there is no `-n`: the advice names what exists there.
    #[test]
    fn the_no_agent_advice_fits_where_it_is_read() {
        let e = SetupError::NoAgent {
            where_: "agent-tests/agentest.toml has no [agent] section".into(),
            create: None,
            harness: true,
        }
        .to_string();
        assert!(
            e.contains("AGENTEST_AGENT=NAME") && e.contains("Harness::agent"),
            "{e}"
        );
        assert!(!e.contains("-n NAME"), "{e}");
    }
}
