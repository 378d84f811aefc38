//! tau2-bench task files: a JSON array of tasks (`tasks.json`, `tasks_small.json`) or one
//! task (`tasks/task_001.json`). Each task becomes one dynamic case, as a case line in
//! agentest's own format that then goes through the suite-line parser: reading a tasks
//! file and reading what `agentest import tau2` wrote from it give the same cases.
//!
//! The mapping (docs/formats/tau2.md has it as a table):
//! - `user_scenario` → the simulator's profile: `persona`; a string `instructions` is
//!   the `goal`; structured instructions give `goal` (`reason_for_call`),
//!   `task_instructions`, `known_info` and `unknown_info` (kept apart, so the simulated
//!   user is told what it does not know), and `domain`. The simulator is told tau2's
//!   stop signals (`stop_signals`).
//! - `evaluation_criteria.actions` → `tool_called` checkpoints with the arguments
//!   (`compare_args` limits them); `communicate_info` → `contains` checkpoints;
//!   `nl_assertions` → `llm_judge` checkpoints; `env_assertions` → checkpoints on what
//!   the agent reports in `data.tau2.env_assertions[i]`, since the environment is the
//!   agent's.
//! - `reward_basis` (tau2's default: DB and COMMUNICATE) decides which checkpoints are
//!   required; the rest are reported only.
//! - `initial_state`, `env_assertions`, `ticket`, `description`, `user_tools` and
//!   `required_documents` → the request's `metadata.tau2`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{json, Map, Value};

use super::document::Document;
use super::{Loaded, SEPARATOR};
use crate::errors::CaseError;
use crate::util::type_of;

/// The turn limit of a tau2 task (tau2 counts steps, tool calls included; agentest
/// counts user turns).
pub(crate) const MAX_TURNS: u32 = 30;

/// tau2's reward types.
const REWARD_TYPES: [&str; 5] = [
    "DB",
    "ENV_ASSERTION",
    "NL_ASSERTION",
    "ACTION",
    "COMMUNICATE",
];

/// The keys read at each level; any other key with a value is reported as ignored.
const TASK_KEYS: [&str; 8] = [
    "id",
    "description",
    "user_scenario",
    "ticket",
    "initial_state",
    "evaluation_criteria",
    "user_tools",
    "required_documents",
];
const SCENARIO_KEYS: [&str; 2] = ["persona", "instructions"];
const INSTRUCTION_KEYS: [&str; 5] = [
    "task_instructions",
    "domain",
    "reason_for_call",
    "known_info",
    "unknown_info",
];
const CRITERIA_KEYS: [&str; 5] = [
    "actions",
    "env_assertions",
    "communicate_info",
    "nl_assertions",
    "reward_basis",
];
const ACTION_KEYS: [&str; 6] = [
    "action_id",
    "requestor",
    "name",
    "arguments",
    "info",
    "compare_args",
];
const ENV_KEYS: [&str; 5] = [
    "env_type",
    "func_name",
    "arguments",
    "assert_value",
    "message",
];

/// Whether a file is named as tau2 names task files: `tasks.json`, `tasks_*.json`,
/// `task_*.json` (`name` lowercased).
pub(crate) fn is_task_file(name: &str) -> bool {
    name.strip_suffix(".json").is_some_and(|stem| {
        stem == "tasks" || stem.starts_with("tasks_") || stem.starts_with("task_")
    })
}

/// Whether a JSON document has the shape of tau2 tasks: a task, or an array whose first
/// item is one.
pub(crate) fn looks_like_tasks(value: &Value) -> bool {
    let first = match value {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    first
        .and_then(Value::as_object)
        .is_some_and(|o| o.contains_key("user_scenario") && o.contains_key("evaluation_criteria"))
}

/// A tasks file converted: each task's case (or why it has none), by task, and the
/// fields read nowhere.
pub(crate) struct Converted {
    /// The task's id (or `task-N`), where it is, and its case line.
    pub(crate) cases: Vec<(String, crate::case::Location, Result<Value, CaseError>)>,
    /// `annotations (50 tasks)`: fields that were given and not read.
    pub(crate) ignored: Vec<String>,
}

impl Converted {
    /// The note that says what was ignored, once for the file.
    pub(crate) fn ignored_note(&self, doc: &Document) -> Option<String> {
        (!self.ignored.is_empty()).then(|| {
            format!(
                "{}: tau2 fields agentest does not read, ignored: {}",
                doc.shown.display(),
                self.ignored.join(", ")
            )
        })
    }
}

/// Converts every task of `doc`; an error here is the whole file's (not tasks at all).
pub(crate) fn convert(doc: &Document) -> Result<Converted, CaseError> {
    let tasks: Vec<(String, &Value)> = match &doc.value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("[{i}]"), t))
            .collect(),
        task @ Value::Object(_) => vec![(String::new(), task)],
        other => {
            return Err(doc.error(
                "",
                format!(
                    "a tau2 tasks file holds an array of tasks or one task, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    let id_of = |task: &Value| match task.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    // A task without a usable id (none, or one taken) is named after its place, and two
    // trials never share a name: `task-N` may be a real id too.
    let mut taken: HashSet<String> = tasks.iter().filter_map(|(_, t)| id_of(t)).collect();
    let mut ignored: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut cases = Vec::new();
    for (i, (base, task)) in tasks.into_iter().enumerate() {
        let mut reader = Reader {
            doc,
            ignored: &mut ignored,
        };
        let id = id_of(task);
        let duplicate = id.as_ref().is_some_and(|id| !seen.insert(id.clone()));
        let shown_id = match &id {
            Some(id) if !duplicate => id.clone(),
            _ => {
                let mut name = format!("task-{}", i + 1);
                while !taken.insert(name.clone()) {
                    name.push_str("-invalid");
                }
                name
            }
        };
        let location = doc.location(&base);
        let case = match &id {
            Some(id) if duplicate => Err(doc.error(
                &join(&base, "id"),
                format!("duplicate task id \"{id}\"; each task needs its own"),
            )),
            _ => reader.task(&base, task, id.as_deref()),
        };
        let case = case.map_err(|mut e| {
            e.id = id.clone();
            e.message = format!("tau2 task \"{shown_id}\": {}", e.message);
            e
        });
        cases.push((shown_id, location, case));
    }
    Ok(Converted {
        cases,
        ignored: ignored
            .into_iter()
            .map(|(k, n)| format!("{k} ({})", crate::util::count(n as u64, "task", "tasks")))
            .collect(),
    })
}

/// Reads one tasks file into loaded cases; the ignored fields are said once, on stderr.
pub(crate) fn load(suite: &str, file: &Path, doc: &Document) -> Vec<Loaded> {
    let converted = match convert(doc) {
        Ok(c) => c,
        Err(e) => {
            return vec![Loaded {
                trial: format!("{suite}{SEPARATOR}tasks"),
                suite: suite.to_string(),
                file: file.to_path_buf(),
                entry: Err(Box::new(e)),
                generation: None,
            }]
        }
    };
    if let Some(note) = converted.ignored_note(doc) {
        eprintln!("agentest: {note}");
    }
    converted
        .cases
        .into_iter()
        .map(|(id, location, case)| {
            let entry = case.and_then(|line| {
                super::parse_case(&line.to_string(), location).map_err(|mut e| {
                    e.message = format!("tau2 task \"{id}\": {}", e.message);
                    e
                })
            });
            Loaded {
                trial: format!("{suite}{SEPARATOR}{id}"),
                suite: suite.to_string(),
                file: file.to_path_buf(),
                entry: entry.map(Box::new).map_err(Box::new),
                generation: None,
            }
        })
        .collect()
}

fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// Reads tasks, counting the fields it does not read.
struct Reader<'a> {
    doc: &'a Document,
    ignored: &'a mut BTreeMap<String, usize>,
}

impl Reader<'_> {
    /// The object at `path`, its unread keys counted under `label`.
    fn object<'v>(
        &mut self,
        path: &str,
        value: &'v Value,
        known: &[&str],
        label: &str,
        what: &str,
    ) -> Result<&'v Map<String, Value>, CaseError> {
        let Value::Object(m) = value else {
            return Err(self.doc.error(
                path,
                format!("expected {what} (an object), found {}", type_of(value)),
            ));
        };
        for (k, v) in m {
            if !known.contains(&k.as_str()) && !v.is_null() {
                let key = if label.is_empty() {
                    k.clone()
                } else {
                    format!("{label}.{k}")
                };
                *self.ignored.entry(key).or_default() += 1;
            }
        }
        Ok(m)
    }

    /// A list at `path` (absent or null is empty).
    fn list<'v>(
        &self,
        m: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Result<&'v [Value], CaseError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.doc.error(
                &join(path, key),
                format!("expected an array, found {}", type_of(other)),
            )),
        }
    }

    /// A text at `path`, or none when absent or null.
    fn text(
        &self,
        m: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Result<Option<String>, CaseError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.doc.error(
                &join(path, key),
                format!("expected a string, found {}", type_of(other)),
            )),
        }
    }

    fn task(&mut self, base: &str, task: &Value, id: Option<&str>) -> Result<Value, CaseError> {
        let t = self.object(base, task, &TASK_KEYS, "", "a task")?;
        let Some(id) = id else {
            return Err(self.doc.error(
                &join(base, "id"),
                "the task has no `id` (a string or a number); give it one",
            ));
        };
        let mut case = Map::new();
        case.insert("id".into(), json!(id));
        if let Some(Value::Object(d)) = t.get("description") {
            if let Some(Value::String(p)) = d.get("purpose") {
                case.insert("name".into(), json!(p));
            }
        }
        let scenario_path = join(base, "user_scenario");
        let scenario = t.get("user_scenario").unwrap_or(&Value::Null);
        let simulator = self.simulator(&scenario_path, scenario)?;
        let criteria_path = join(base, "evaluation_criteria");
        let criteria = t.get("evaluation_criteria").unwrap_or(&Value::Null);
        let (checkpoints, env_assertions) = self.checkpoints(&criteria_path, criteria)?;
        if checkpoints.is_empty() {
            return Err(self.doc.error(
                &criteria_path,
                "the task has nothing to check: its evaluation_criteria list no actions, env_assertions, communicate_info or nl_assertions",
            ));
        }
        // What the agent's environment needs: it is the agent's, not agentest's.
        let mut tau2 = Map::new();
        if let Some(domain) = simulator.get("domain") {
            tau2.insert("domain".into(), domain.clone());
        }
        for key in ["ticket", "description", "initial_state"] {
            if let Some(v) = t.get(key).filter(|v| !v.is_null()) {
                tau2.insert(key.into(), v.clone());
            }
        }
        if !env_assertions.is_empty() {
            tau2.insert("env_assertions".into(), Value::Array(env_assertions));
        }
        for key in ["user_tools", "required_documents"] {
            if let Some(v) = t.get(key).filter(|v| !v.is_null()) {
                tau2.insert(key.into(), v.clone());
            }
        }
        case.insert("metadata".into(), json!({"tau2": tau2}));
        case.insert("simulator".into(), Value::Object(simulator));
        case.insert("checkpoints".into(), Value::Array(checkpoints));
        case.insert("max_turns".into(), json!(MAX_TURNS));
        Ok(Value::Object(case))
    }

    /// The simulated user: persona, goal, what it knows and does not know.
    fn simulator(&mut self, path: &str, scenario: &Value) -> Result<Map<String, Value>, CaseError> {
        let s = self.object(
            path,
            scenario,
            &SCENARIO_KEYS,
            "user_scenario",
            "`user_scenario`",
        )?;
        let mut sim = Map::new();
        if let Some(p) = self.text(s, path, "persona")? {
            sim.insert("persona".into(), json!(p));
        }
        let instructions_path = join(path, "instructions");
        match s.get("instructions") {
            Some(Value::String(goal)) if !goal.trim().is_empty() => {
                sim.insert("goal".into(), json!(goal));
            }
            Some(v @ Value::Object(_)) => {
                let i = self.object(
                    &instructions_path,
                    v,
                    &INSTRUCTION_KEYS,
                    "user_scenario.instructions",
                    "`instructions`",
                )?;
                let reason = self.text(i, &instructions_path, "reason_for_call")?;
                let task = self.text(i, &instructions_path, "task_instructions")?;
                match (reason, task) {
                    (Some(r), t) => {
                        sim.insert("goal".into(), json!(r));
                        if let Some(t) = t {
                            sim.insert("task_instructions".into(), json!(t));
                        }
                    }
                    // Without a reason for the call, the instructions are the goal.
                    (None, Some(t)) => {
                        sim.insert("goal".into(), json!(t));
                    }
                    (None, None) => {
                        return Err(self.doc.error(
                            &instructions_path,
                            "the instructions give neither `reason_for_call` nor `task_instructions`: the simulated user would have no goal",
                        ))
                    }
                }
                for key in ["known_info", "unknown_info", "domain"] {
                    if let Some(v) = self.text(i, &instructions_path, key)? {
                        sim.insert(key.into(), json!(v));
                    }
                }
            }
            other => {
                return Err(self.doc.error(
                    &instructions_path,
                    format!(
                        "expected the user's instructions (a string, or an object with reason_for_call, known_info, unknown_info, task_instructions), found {}",
                        other.map_or("nothing", type_of)
                    ),
                ))
            }
        }
        sim.insert("stop_signals".into(), json!(true));
        Ok(sim)
    }

    /// The checkpoints, in tau2's order (actions, env assertions, communicate_info,
    /// nl_assertions), required as `reward_basis` says; and the env assertions as the
    /// agent is given them.
    fn checkpoints(
        &mut self,
        path: &str,
        criteria: &Value,
    ) -> Result<(Vec<Value>, Vec<Value>), CaseError> {
        let c = self.object(
            path,
            criteria,
            &CRITERIA_KEYS,
            "evaluation_criteria",
            "`evaluation_criteria`",
        )?;
        let basis = self.reward_basis(c, path)?;
        let mut out = Vec::new();
        let mut ids = HashSet::new();
        let mut unique = |id: String| {
            let mut candidate = id.clone();
            let mut n = 2;
            while !ids.insert(candidate.clone()) {
                candidate = format!("{id}-{n}");
                n += 1;
            }
            candidate
        };
        for (i, a) in self.list(c, path, "actions")?.iter().enumerate() {
            let p = self.action(&format!("{}[{i}]", join(path, "actions")), a, i, &basis)?;
            out.push(checkpoint(
                unique(p.id),
                p.about,
                p.assertion,
                p.gating,
                p.why_not,
            ));
        }
        let mut env_assertions = Vec::new();
        for (i, e) in self.list(c, path, "env_assertions")?.iter().enumerate() {
            let at = format!("{}[{i}]", join(path, "env_assertions"));
            let p = self.env_assertion(&at, e, i, &basis)?;
            out.push(checkpoint(
                unique(p.id),
                p.about,
                p.assertion,
                p.gating,
                p.why_not,
            ));
            env_assertions.push(e.clone());
        }
        let infos = self.strings(c, path, "communicate_info", "a string to communicate")?;
        for (i, info) in infos.into_iter().enumerate() {
            let assertion = json!({"type": "contains", "value": info, "case_sensitive": false});
            out.push(checkpoint(
                unique(format!("communicate-{}", i + 1)),
                format!("the agent tells the user \"{info}\""),
                assertion,
                has(&basis, "COMMUNICATE"),
                "reported only: reward_basis has no COMMUNICATE",
            ));
        }
        let nls = self.strings(c, path, "nl_assertions", "an assertion in words")?;
        for (i, nl) in nls.into_iter().enumerate() {
            let assertion = json!({"type": "llm_judge", "prompt": nl});
            out.push(checkpoint(
                unique(format!("nl-{}", i + 1)),
                nl.clone(),
                assertion,
                has(&basis, "NL_ASSERTION"),
                "reported only: reward_basis has no NL_ASSERTION",
            ));
        }
        Ok((out, env_assertions))
    }

    /// The list `key` of `c` (at `path`), each item a string (`what`, for the message).
    fn strings<'v>(
        &self,
        c: &'v Map<String, Value>,
        path: &str,
        key: &str,
        what: &str,
    ) -> Result<Vec<&'v String>, CaseError> {
        let mut out = Vec::new();
        for (i, item) in self.list(c, path, key)?.iter().enumerate() {
            let Value::String(item) = item else {
                return Err(self.doc.error(
                    &format!("{}[{i}]", join(path, key)),
                    format!("expected {what}, found {}", type_of(item)),
                ));
            };
            out.push(item);
        }
        Ok(out)
    }

    /// The checkpoint of an expected action: the tool called (with the arguments
    /// compared), required when `reward_basis` has ACTION or DB and the agent is the one
    /// to call it.
    fn action(
        &mut self,
        at: &str,
        a: &Value,
        i: usize,
        basis: &[String],
    ) -> Result<Pending, CaseError> {
        let m = self.object(
            at,
            a,
            &ACTION_KEYS,
            "evaluation_criteria.actions[]",
            "an action",
        )?;
        let Some(name) = self.text(m, at, "name")? else {
            return Err(self.doc.error(
                &join(at, "name"),
                "the action has no `name` (the tool to call)",
            ));
        };
        let args = match m.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o.clone(),
            Some(other) => {
                return Err(self.doc.error(
                    &join(at, "arguments"),
                    format!(
                        "expected the tool's arguments (an object), found {}",
                        type_of(other)
                    ),
                ))
            }
        };
        let compared = match m.get("compare_args") {
            None | Some(Value::Null) => args,
            Some(Value::Array(keys)) => {
                let keys: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
                args.into_iter()
                    .filter(|(k, _)| keys.contains(&k.as_str()))
                    .collect()
            }
            Some(other) => {
                return Err(self.doc.error(
                    &join(at, "compare_args"),
                    format!(
                        "expected the names of the arguments to compare (an array), found {}",
                        type_of(other)
                    ),
                ))
            }
        };
        let user_side = self.text(m, at, "requestor")?.is_some_and(|r| r == "user");
        let gating = (has(basis, "ACTION") || has(basis, "DB")) && !user_side;
        let mut assertion = json!({"type": "tool_called", "name": name});
        if !compared.is_empty() {
            assertion["arguments"] = Value::Object(compared);
        }
        let id = match self.text(m, at, "action_id")? {
            Some(id) => id,
            None => format!("action-{}", i + 1),
        };
        let about = self
            .text(m, at, "info")?
            .unwrap_or_else(|| format!("the agent calls {name}"));
        let why_not = if user_side {
            "reported only: a user-side action (requestor: user), and agentest's simulated user calls no tools"
        } else {
            "reported only: reward_basis has neither ACTION nor DB"
        };
        Ok(Pending {
            id,
            about,
            assertion,
            gating,
            why_not,
        })
    }

    /// The checkpoint of an env assertion: the agent reports the function's result in
    /// `data.tau2.env_assertions[i]`; required when `reward_basis` has ENV_ASSERTION and
    /// the assertion is on the agent's (assistant's) environment.
    fn env_assertion(
        &mut self,
        at: &str,
        e: &Value,
        i: usize,
        basis: &[String],
    ) -> Result<Pending, CaseError> {
        let m = self.object(
            at,
            e,
            &ENV_KEYS,
            "evaluation_criteria.env_assertions[]",
            "an env assertion",
        )?;
        let Some(func) = self.text(m, at, "func_name")? else {
            return Err(self.doc.error(
                &join(at, "func_name"),
                "the env assertion has no `func_name`",
            ));
        };
        let env = self
            .text(m, at, "env_type")?
            .unwrap_or_else(|| "assistant".into());
        let expected = match m.get("assert_value") {
            None | Some(Value::Null) => json!(true),
            Some(v @ Value::Bool(_)) => v.clone(),
            Some(other) => {
                return Err(self.doc.error(
                    &join(at, "assert_value"),
                    format!("expected true or false, found {}", type_of(other)),
                ))
            }
        };
        let args = m.get("arguments").cloned().unwrap_or(json!({}));
        let about = self.text(m, at, "message")?.unwrap_or_else(|| {
            format!(
                "{func}({}) on the {env} environment is {expected}, as the agent reports in data.tau2.env_assertions[{i}]",
                crate::util::compact(&args)
            )
        });
        let assertion = json!({
            "type": "json_path",
            "path": format!("$.tau2.env_assertions[{i}]"),
            "value": expected,
        });
        let gating = has(basis, "ENV_ASSERTION") && env == "assistant";
        let why_not = if env == "assistant" {
            "reported only: reward_basis has no ENV_ASSERTION"
        } else {
            "reported only: an assertion on the user's environment, which agentest does not simulate"
        };
        Ok(Pending {
            id: format!("env-{}", i + 1),
            about,
            assertion,
            gating,
            why_not,
        })
    }

    /// `reward_basis`, checked; tau2's default is DB and COMMUNICATE.
    fn reward_basis(&self, c: &Map<String, Value>, path: &str) -> Result<Vec<String>, CaseError> {
        let at = join(path, "reward_basis");
        match c.get("reward_basis") {
            None | Some(Value::Null) => Ok(vec!["DB".into(), "COMMUNICATE".into()]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v.as_str() {
                    Some(t) if REWARD_TYPES.contains(&t) => Ok(t.to_string()),
                    _ => Err(self.doc.error(
                        &format!("{at}[{i}]"),
                        format!(
                            "unknown reward type {}; tau2's are {}",
                            crate::util::compact(v),
                            REWARD_TYPES.join(", ")
                        ),
                    )),
                })
                .collect(),
            Some(other) => Err(self.doc.error(
                &at,
                format!(
                    "expected an array of reward types, found {}",
                    type_of(other)
                ),
            )),
        }
    }
}

/// One checkpoint line: required when `gating`, else reported only, saying why.
/// Whether `reward_basis` has `kind` (`DB`, `ACTION`, ...).
fn has(basis: &[String], kind: &str) -> bool {
    basis.iter().any(|b| b == kind)
}

/// A checkpoint read, before its id is made unique among the task's.
struct Pending {
    id: String,
    about: String,
    assertion: Value,
    gating: bool,
    why_not: &'static str,
}

fn checkpoint(id: String, about: String, assertion: Value, gating: bool, why_not: &str) -> Value {
    let description = if gating {
        about
    } else {
        format!("{about} ({why_not})")
    };
    json!({
        "id": id,
        "description": description,
        "assertions": [assertion],
        "required": gating,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_files_are_named_as_tau2_names_them() {
        for name in ["tasks.json", "tasks_small.json", "task_001.json"] {
            assert!(is_task_file(name), "{name}");
        }
        for name in ["tasks.jsonl", "scenarios.json", "mytasks.json", "task.json"] {
            assert!(!is_task_file(name), "{name}");
        }
    }
}
