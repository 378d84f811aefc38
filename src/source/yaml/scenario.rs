//! Reading an ElizaOS scenario (its YAML tree) into the case model, checked against the
//! scenario schema: required fields, types, numeric bounds and known keys, each error
//! with the field's path (its `line:column` comes from the tree).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::case::scenario::{
    Action, Conversation, EndCondition, Environment, Evaluation, Evaluator, Judgment, Lang,
    SatisfactionMethod, Scenario, Step, TerminationKind, UserSimulator, EVALUATOR_TYPES,
};
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, join, model_settings, opt_str, suggest};

/// The top-level keys; `plugins` is read by ElizaOS to load its plugins and has no
/// meaning here: it is accepted and ignored (and said so in docs/formats/eliza.md).
const ROOT_KEYS: [&str; 7] = [
    "name",
    "description",
    "environment",
    "setup",
    "run",
    "judgment",
    "plugins",
];
const REQUIRED: [&str; 5] = ["name", "description", "environment", "run", "judgment"];
const STEP_KEYS: [&str; 6] = [
    "name",
    "lang",
    "code",
    "input",
    "evaluations",
    "conversation",
];
const CONVERSATION_KEYS: [&str; 8] = [
    "max_turns",
    "timeout_per_turn_ms",
    "total_timeout_ms",
    "user_simulator",
    "termination_conditions",
    "turn_evaluations",
    "final_evaluations",
    // Logging switches of ElizaOS's runner: accepted, ignored.
    "debug_options",
];
const SIMULATOR_KEYS: [&str; 9] = [
    "model_type",
    "temperature",
    "max_tokens",
    "persona",
    "objective",
    "style",
    "constraints",
    "emotional_state",
    "knowledge_level",
];
/// The evaluators that read a whole conversation.
const CONVERSATION_EVALUATORS: [&str; 4] = [
    "conversation_length",
    "conversation_flow",
    "user_satisfaction",
    "context_retention",
];

/// A scenario read: its `name`, the scenario, and its mocks as tool mocks.
pub(crate) type Read = (String, Scenario, Vec<crate::case::Mock>);

/// Reads a scenario's JSON view.
pub(crate) fn read(v: &Value) -> Result<Read, FieldError> {
    let Value::Object(root) = v else {
        return Err(FieldError::new(
            "",
            format!(
                "a scenario is a mapping with name, description, environment, run and judgment; found {}",
                type_of(v)
            ),
        ));
    };
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|k| root.get(*k).is_none_or(Value::is_null))
        .collect();
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let what = if missing.len() == 1 {
            "field"
        } else {
            "fields"
        };
        return Err(FieldError::new(
            "",
            format!("missing required {what} {list}; a scenario needs name, description, environment (type: local), run (a list of steps) and judgment (strategy: all_pass or any_pass)"),
        ));
    }
    check_keys(root, &ROOT_KEYS, "", "a scenario")?;
    let name = req_str(root, "name", "")?;
    let description = req_str(root, "description", "")?;
    let environment = environment(root.get("environment").unwrap_or(&Value::Null))?;
    let (virtual_fs, mocks, tool_mocks) = match root.get("setup") {
        None | Some(Value::Null) => (Vec::new(), Vec::new(), Vec::new()),
        Some(s) => setup(s)?,
    };
    let Some(Value::Array(run)) = root.get("run") else {
        return Err(FieldError::new(
            "run",
            format!("expected a list of steps, found {}", type_of(&root["run"])),
        ));
    };
    if run.is_empty() {
        return Err(FieldError::new(
            "run",
            "the scenario has no steps; add one, like `- input: \"Hello\"`",
        ));
    }
    let steps = run
        .iter()
        .enumerate()
        .map(|(i, s)| step(s, &index("run", i)))
        .collect::<Result<Vec<_>, _>>()?;
    let judgment = judgment(&root["judgment"])?;
    Ok((
        name,
        Scenario {
            description,
            environment,
            virtual_fs,
            mocks,
            steps,
            judgment,
            parameters: Vec::new(),
        },
        tool_mocks,
    ))
}

/// A value's type in YAML's words (`util::json::type_of` says "array" and "object",
/// which a YAML file's author does not write).
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn object<'a>(v: &'a Value, path: &str, what: &str) -> Result<&'a Map<String, Value>, FieldError> {
    v.as_object().ok_or_else(|| {
        FieldError::new(
            path,
            format!("expected {what} (a mapping), found {}", type_of(v)),
        )
    })
}

fn req_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, FieldError> {
    match opt_str(obj, key, path)? {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(FieldError::new(
            join(path, key),
            format!("`{key}` is empty"),
        )),
        None => Err(FieldError::new(join(path, key), format!("missing `{key}`"))),
    }
}

/// A whole number within `lo..=hi` (bounds from the scenario schema).
fn opt_int(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    lo: i64,
    hi: i64,
) -> Result<Option<i64>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(FieldError::new(
                join(path, key),
                if hi == i64::MAX {
                    format!("expected a whole number, at least {lo}; found {v}")
                } else {
                    format!("expected a whole number from {lo} to {hi}, found {v}")
                },
            )),
        },
    }
}

/// A number within `lo..=hi`.
fn opt_num(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    lo: f64,
    hi: f64,
) -> Result<Option<f64>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(FieldError::new(
                join(path, key),
                format!("expected a number from {lo} to {hi}, found {v}"),
            )),
        },
    }
}

fn strings(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Vec<String>, FieldError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_string).ok_or_else(|| {
                    FieldError::new(
                        index(&join(path, key), i),
                        format!("expected a string, found {}", type_of(s)),
                    )
                })
            })
            .collect(),
        Some(other) => Err(FieldError::new(
            join(path, key),
            format!("expected a list of strings, found {}", type_of(other)),
        )),
    }
}

/// One of `names`, with a suggestion when it is not.
fn choice<'a>(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    names: &[&'a str],
) -> Result<Option<&'a str>, FieldError> {
    let Some(s) = opt_str(obj, key, path)? else {
        return Ok(None);
    };
    match names.iter().find(|n| **n == s) {
        Some(n) => Ok(Some(n)),
        None => {
            let hint = suggest(&s, names)
                .map(|n| format!("did you mean \"{n}\"? "))
                .unwrap_or_default();
            Err(FieldError::new(
                join(path, key),
                format!(
                    "unknown {key} \"{s}\"; {hint}expected one of: {}",
                    names.join(", ")
                ),
            ))
        }
    }
}

fn environment(v: &Value) -> Result<Environment, FieldError> {
    let obj = object(v, "environment", "the environment")?;
    check_keys(obj, &["type"], "environment", "the environment")?;
    match choice(obj, "type", "environment", &["local", "e2b"])? {
        Some("local") => Ok(Environment::Local),
        Some(_) => Ok(Environment::E2b),
        None => Err(FieldError::new(
            "environment.type",
            "missing `type`; use `type: local`",
        )),
    }
}

/// `virtual_fs`, the mocks as written (sent to agents in requests), and the mocks read
/// (answering an `openai` agent's tool calls).
type Setup = (Vec<(String, String)>, Vec<Value>, Vec<crate::case::Mock>);

/// `path` (at field `at`) must stay inside the environment folder.
fn inside_environment(path: &str, at: &str) -> Result<(), FieldError> {
    if crate::case::scenario::inside_environment(path) {
        return Ok(());
    }
    Err(FieldError::new(
        at,
        format!("\"{path}\" must be a relative path inside the environment, without `..`"),
    ))
}

/// A file evaluator's `path`: inside the environment, as `virtual_fs` keys are.
fn file_path(obj: &Map<String, Value>, at: &str) -> Result<String, FieldError> {
    let path = req_str(obj, "path", at)?;
    inside_environment(&path, &join(at, "path"))?;
    Ok(path)
}

fn setup(v: &Value) -> Result<Setup, FieldError> {
    let obj = object(v, "setup", "the setup")?;
    check_keys(obj, &["mocks", "virtual_fs"], "setup", "the setup")?;
    let mut files = Vec::new();
    if let Some(fs) = obj.get("virtual_fs").filter(|v| !v.is_null()) {
        let fs = object(fs, "setup.virtual_fs", "files by path")?;
        for (path, text) in fs {
            let at = format!("setup.virtual_fs.{path}");
            let Some(text) = text.as_str() else {
                return Err(FieldError::new(
                    at,
                    format!(
                        "expected the file's text (a string), found {}",
                        type_of(text)
                    ),
                ));
            };
            inside_environment(path, &at)?;
            if path.ends_with(['/', '\\']) {
                return Err(FieldError::new(
                    at,
                    format!("\"{path}\" ends in `{}`, so it names a folder; a `virtual_fs` key names a file (its folders are made for it): give the file's name after it", &path[path.len() - 1..]),
                ));
            }
            files.push((path.clone(), text.to_string()));
        }
    }
    let mut mocks = Vec::new();
    let mut parsed = Vec::new();
    match obj.get("mocks") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, m) in list.iter().enumerate() {
                js_matcher(m, &index("setup.mocks", i))?;
            }
            parsed = crate::source::parse_mocks(&Value::Array(list.clone()), "setup.mocks")?;
            mocks = list.clone();
        }
        Some(other) => {
            return Err(FieldError::new(
                "setup.mocks",
                format!("expected a list of mocks, found {}", type_of(other)),
            ))
        }
    }
    Ok((files, mocks, parsed))
}

/// A mock: ElizaOS evaluates `when.matcher` as JavaScript, which cannot run here (in
/// agentest's own cases `matcher` is a regex, which would read the same text
/// differently), so it is an error; the rest is agentest's mock schema, read by the
/// parser JSONL cases use.
fn js_matcher(v: &Value, path: &str) -> Result<(), FieldError> {
    if v.get("when").and_then(|w| w.get("matcher")).is_some() {
        return Err(FieldError::new(
            join(&join(path, "when"), "matcher"),
            "`matcher` is JavaScript in ElizaOS, which agentest does not run; match with `args`, `partialArgs` or `input` instead",
        ));
    }
    Ok(())
}

fn judgment(v: &Value) -> Result<Judgment, FieldError> {
    let obj = object(v, "judgment", "the judgment")?;
    check_keys(obj, &["strategy"], "judgment", "the judgment")?;
    match choice(obj, "strategy", "judgment", &["all_pass", "any_pass"])? {
        Some("all_pass") => Ok(Judgment::AllPass),
        Some(_) => Ok(Judgment::AnyPass),
        None => Err(FieldError::new(
            "judgment.strategy",
            "missing `strategy`; use `strategy: all_pass` or `any_pass`",
        )),
    }
}

fn step(v: &Value, path: &str) -> Result<Step, FieldError> {
    let obj = object(v, path, "a step")?;
    check_keys(obj, &STEP_KEYS, path, "a step")?;
    let name = opt_str(obj, "name", path)?;
    let input = opt_str(obj, "input", path)?;
    let code = opt_str(obj, "code", path)?;
    let lang = opt_str(obj, "lang", path)?;
    let action = match (obj.get("conversation").filter(|c| !c.is_null()), &code) {
        (Some(c), None) => Action::Conversation {
            input,
            conversation: Box::new(conversation(c, &join(path, "conversation"))?),
        },
        (Some(_), Some(_)) => {
            return Err(FieldError::new(
                join(path, "code"),
                "a step is a message (`input`), code (`lang` + `code`) or a `conversation`, not several; split it into two steps",
            ))
        }
        (None, Some(code)) => {
            if input.is_some() {
                return Err(FieldError::new(
                    join(path, "input"),
                    "a step is a message (`input`) or code (`lang` + `code`), not both; split it into two steps",
                ));
            }
            let Some(lang) = lang else {
                return Err(FieldError::new(
                    join(path, "lang"),
                    "a code step needs `lang`: bash, sh, python, python3, node, javascript or typescript",
                ));
            };
            Action::Code {
                lang: language(&lang, &join(path, "lang"))?,
                code: code.clone(),
            }
        }
        (None, None) => match input {
            Some(i) => {
                if lang.is_some() {
                    return Err(FieldError::new(
                        join(path, "lang"),
                        "`lang` goes with `code`; a message step has only `input`",
                    ));
                }
                Action::Message(i)
            }
            None => {
                return Err(FieldError::new(
                    path,
                    "a step needs `input` (a message), `lang` + `code` (code to run) or `conversation`",
                ))
            }
        },
    };
    no_conversation_evaluators(obj, &action, path)?;
    // The schema requires `evaluations`; real files write `evaluations: []`, and a
    // conversation step may check only through its turn and final evaluations.
    let evaluations =
        match obj.get("evaluations") {
            None if matches!(action, Action::Conversation { .. }) => Vec::new(),
            None => return Err(FieldError::new(
                join(path, "evaluations"),
                "missing `evaluations`; list the checks on this step (`evaluations: []` for none)",
            )),
            Some(e) => evaluations(e, &join(path, "evaluations"))?,
        };
    Ok(Step {
        name,
        action,
        evaluations,
    })
}

/// Conversation evaluators read a conversation: only a conversation step has one.
fn no_conversation_evaluators(
    obj: &serde_json::Map<String, Value>,
    action: &Action,
    path: &str,
) -> Result<(), FieldError> {
    if !matches!(action, Action::Conversation { .. }) {
        if let Some(Value::Array(list)) = obj.get("evaluations") {
            for (i, e) in list.iter().enumerate() {
                let t = e.get("type").and_then(Value::as_str).unwrap_or_default();
                if CONVERSATION_EVALUATORS.contains(&t) {
                    return Err(FieldError::new(
                    join(&index(&join(path, "evaluations"), i), "type"),
                    format!("`{t}` judges a conversation, and this step has none; move it into a step with `conversation`"),
                ));
                }
            }
        }
    }
    Ok(())
}

fn language(lang: &str, path: &str) -> Result<Lang, FieldError> {
    Ok(match lang.to_ascii_lowercase().as_str() {
        "bash" | "sh" | "shell" => Lang::Shell,
        "python" | "python3" | "py" => Lang::Python,
        "node" | "javascript" | "js" => Lang::Node,
        "typescript" | "ts" => Lang::TypeScript,
        other => {
            return Err(FieldError::new(
                path,
                format!("unknown language \"{other}\"; agentest runs bash, sh, python, python3, node, javascript and typescript"),
            ))
        }
    })
}

fn conversation(v: &Value, path: &str) -> Result<Conversation, FieldError> {
    let obj = object(v, path, "the conversation")?;
    check_keys(obj, &CONVERSATION_KEYS, path, "a conversation")?;
    let Some(max_turns) = opt_int(obj, "max_turns", path, 2, 20)? else {
        return Err(FieldError::new(
            join(path, "max_turns"),
            "missing `max_turns` (from 2 to 20)",
        ));
    };
    let ms = |key: &str, lo: i64, default: u64| -> Result<Duration, FieldError> {
        Ok(Duration::from_millis(
            opt_int(obj, key, path, lo, i64::MAX)?.map_or(default, |n| n as u64),
        ))
    };
    let timeout_per_turn = ms("timeout_per_turn_ms", 1000, 30_000)?;
    let total_timeout = ms("total_timeout_ms", 10_000, 300_000)?;
    let simulator = match obj.get("user_simulator") {
        None | Some(Value::Null) => {
            return Err(FieldError::new(
                join(path, "user_simulator"),
                "missing `user_simulator` (with at least `persona` and `objective`)",
            ))
        }
        Some(s) => user_simulator(s, &join(path, "user_simulator"))?,
    };
    let termination = match obj.get("termination_conditions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, t)| termination(t, &index(&join(path, "termination_conditions"), i)))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                join(path, "termination_conditions"),
                format!("expected a list of conditions, found {}", type_of(other)),
            ))
        }
    };
    let list = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(e) => evaluations(e, &join(path, key)),
    };
    Ok(Conversation {
        max_turns: max_turns as u32,
        timeout_per_turn,
        total_timeout,
        simulator,
        termination,
        turn_evaluations: list("turn_evaluations")?,
        final_evaluations: list("final_evaluations")?,
    })
}

fn user_simulator(v: &Value, path: &str) -> Result<UserSimulator, FieldError> {
    let obj = object(v, path, "the user simulator")?;
    check_keys(obj, &SIMULATOR_KEYS, path, "a user simulator")?;
    let persona = req_str(obj, "persona", path)?;
    let objective = req_str(obj, "objective", path)?;
    opt_str(obj, "style", path)?;
    opt_str(obj, "emotional_state", path)?;
    strings(obj, "constraints", path)?;
    choice(
        obj,
        "knowledge_level",
        path,
        &["beginner", "intermediate", "expert"],
    )?;
    // The schema's bounds first, then the settings every built-in role takes.
    opt_num(obj, "temperature", path, 0.0, 2.0)?;
    opt_int(obj, "max_tokens", path, 50, 500)?;
    let mut settings = Map::new();
    for (from, to) in [
        ("model_type", "llm"),
        ("temperature", "temperature"),
        ("max_tokens", "max_tokens"),
    ] {
        if let Some(v) = obj.get(from).filter(|v| !v.is_null()) {
            settings.insert(to.into(), v.clone());
        }
    }
    let mut model = model_settings(&settings, path, None).map_err(|e| FieldError {
        path: e
            .path
            .replace(&join(path, "llm"), &join(path, "model_type")),
        message: e.message,
    })?;
    model.temperature.get_or_insert(0.7);
    model.max_tokens.get_or_insert(200);
    let profile = ["style", "constraints", "emotional_state", "knowledge_level"]
        .iter()
        .filter_map(|k| obj.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    Ok(UserSimulator {
        persona,
        objective,
        profile,
        model,
    })
}

fn termination(v: &Value, path: &str) -> Result<EndCondition, FieldError> {
    let obj = object(v, path, "a termination condition")?;
    check_keys(
        obj,
        &["type", "description", "keywords", "llm_judge"],
        path,
        "a termination condition",
    )?;
    let kind = match choice(obj, "type", path, &TerminationKind::NAMES)? {
        Some("max_turns_reached") => TerminationKind::MaxTurnsReached,
        Some("user_expresses_satisfaction") => TerminationKind::UserExpressesSatisfaction,
        Some("agent_provides_solution") => TerminationKind::AgentProvidesSolution,
        Some("conversation_stuck") => TerminationKind::ConversationStuck,
        Some("escalation_needed") => TerminationKind::EscalationNeeded,
        Some("goal_achieved") => TerminationKind::GoalAchieved,
        Some(_) => TerminationKind::CustomCondition,
        None => {
            return Err(FieldError::new(
                join(path, "type"),
                format!(
                    "missing `type`; one of: {}",
                    TerminationKind::NAMES.join(", ")
                ),
            ))
        }
    };
    opt_str(obj, "description", path)?;
    let keywords = strings(obj, "keywords", path)?;
    let judge = match obj.get("llm_judge").filter(|j| !j.is_null()) {
        None => None,
        Some(j) => {
            let jpath = join(path, "llm_judge");
            let j = object(j, &jpath, "the judge")?;
            check_keys(
                j,
                &["prompt", "threshold"],
                &jpath,
                "a condition's `llm_judge`",
            )?;
            let prompt = req_str(j, "prompt", &jpath)?;
            let threshold = opt_num(j, "threshold", &jpath, 0.0, 1.0)?.unwrap_or(0.8);
            Some((prompt, threshold))
        }
    };
    if kind == TerminationKind::CustomCondition && judge.is_none() {
        return Err(FieldError::new(
            join(path, "llm_judge"),
            "a `custom_condition` needs `llm_judge: {prompt, threshold}` to decide it",
        ));
    }
    Ok(EndCondition {
        kind,
        keywords,
        judge,
    })
}

fn evaluations(v: &Value, path: &str) -> Result<Vec<Evaluation>, FieldError> {
    let Value::Array(list) = v else {
        return Err(FieldError::new(
            path,
            format!("expected a list of evaluations, found {}", type_of(v)),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, e)| evaluation(e, &index(path, i)))
        .collect()
}

fn evaluation(v: &Value, path: &str) -> Result<Evaluation, FieldError> {
    let obj = object(v, path, "an evaluation")?;
    let Some(type_name) = choice(obj, "type", path, &EVALUATOR_TYPES)? else {
        return Err(FieldError::new(
            join(path, "type"),
            format!("missing `type`; one of: {}", EVALUATOR_TYPES.join(", ")),
        ));
    };
    // `description` documents an evaluation in real files; it is not a check.
    let keys = |extra: &[&str]| -> Result<(), FieldError> {
        let mut known = vec!["type", "description"];
        known.extend_from_slice(extra);
        check_keys(obj, &known, path, &format!("a `{type_name}` evaluation"))
    };
    let check = match type_name {
        "string_contains" | "regex_match" | "llm_judge" => {
            let (as_type, allowed) = assertion_spelling(type_name);
            keys(allowed)?;
            assertion(obj, path, type_name, as_type)?
        }
        "file_exists" => {
            keys(&["path"])?;
            Evaluator::FileExists {
                path: file_path(obj, path)?,
            }
        }
        "file_contains" => {
            keys(&["path", "value"])?;
            Evaluator::FileContains {
                path: file_path(obj, path)?,
                value: req_str(obj, "value", path)?,
            }
        }
        "command_exit_code_is" => {
            keys(&["command", "expected_code"])?;
            Evaluator::CommandExitCodeIs {
                command: req_str(obj, "command", path)?,
                expected_code: opt_int(obj, "expected_code", path, 0, 255)?.unwrap_or(0) as i32,
            }
        }
        "trajectory_contains_action" => {
            keys(&["action"])?;
            Evaluator::TrajectoryContainsAction {
                action: req_str(obj, "action", path)?,
            }
        }
        "execution_time" => {
            keys(&["max_duration_ms", "min_duration_ms", "target_duration_ms"])?;
            execution_time(obj, path)?
        }
        "conversation_length" => {
            keys(&["min_turns", "max_turns", "optimal_turns", "target_range"])?;
            conversation_length(obj, path)?
        }
        "conversation_flow" => {
            keys(&["required_patterns", "flow_quality_threshold"])?;
            conversation_flow(obj, path)?
        }
        "user_satisfaction" => {
            keys(&["satisfaction_threshold", "indicators", "measurement_method"])?;
            user_satisfaction(obj, path)?
        }
        _ => {
            keys(&[
                "test_memory_of",
                "retention_turns",
                "memory_accuracy_threshold",
            ])?;
            context_retention(obj, path)?
        }
    };
    Ok(Evaluation {
        type_name: type_name.to_string(),
        raw: v.clone(),
        check,
    })
}

/// What an ElizaOS evaluation that is one of agentest's own assertions is called among
/// them, and the keys it may have.
fn assertion_spelling(type_name: &str) -> (&'static str, &'static [&'static str]) {
    match type_name {
        "string_contains" => ("contains", &["value", "case_sensitive"]),
        "regex_match" => ("regex", &["pattern"]),
        _ => (
            "llm_judge",
            &[
                "prompt",
                "expected",
                "capabilities",
                "json_schema",
                "model_type",
                "temperature",
                "max_tokens",
            ],
        ),
    }
}

/// An evaluation that is one of agentest's own assertions (`string_contains`,
/// `regex_match`, `llm_judge`): the same check, read in ElizaOS's spelling.
fn assertion(
    obj: &Map<String, Value>,
    path: &str,
    type_name: &str,
    as_type: &str,
) -> Result<Evaluator, FieldError> {
    let mut a = Map::new();
    a.insert("type".into(), as_type.into());
    for (k, v) in obj {
        match k.as_str() {
            "type" | "description" => {}
            "model_type" => {
                a.insert("llm".into(), v.clone());
            }
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
    if type_name == "string_contains" && !a.contains_key("case_sensitive") {
        // ElizaOS compares case-insensitively unless told otherwise.
        a.insert("case_sensitive".into(), false.into());
    }
    let mut parsed =
        crate::source::parse_assertions(&Value::Object(a), path).map_err(|e| FieldError {
            path: e
                .path
                .replace(&join(path, "llm"), &join(path, "model_type")),
            message: e.message,
        })?;
    Ok(Evaluator::Assertion(Box::new(parsed.remove(0))))
}

/// An `execution_time` evaluation: at most and/or at least so long.
fn execution_time(obj: &Map<String, Value>, path: &str) -> Result<Evaluator, FieldError> {
    let ms = |k: &str| {
        opt_int(obj, k, path, 0, i64::MAX).map(|n| n.map(|n| Duration::from_millis(n as u64)))
    };
    let (max, min, target) = (
        ms("max_duration_ms")?,
        ms("min_duration_ms")?,
        ms("target_duration_ms")?,
    );
    if max.is_none() && min.is_none() {
        return Err(FieldError::new(
            join(path, "max_duration_ms"),
            "an `execution_time` evaluation needs `max_duration_ms`, `min_duration_ms` or both",
        ));
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(FieldError::new(
                join(path, "min_duration_ms"),
                "`min_duration_ms` is above `max_duration_ms`; no run can pass",
            ));
        }
    }
    Ok(Evaluator::ExecutionTime { max, min, target })
}

/// A `conversation_length` evaluation: bounds on the number of turns.
fn conversation_length(obj: &Map<String, Value>, path: &str) -> Result<Evaluator, FieldError> {
    let turns = |k: &str| opt_int(obj, k, path, 0, 1000).map(|n| n.map(|n| n as u32));
    let target_range = match obj.get("target_range") {
        None | Some(Value::Null) => None,
        Some(Value::Array(r)) if r.len() == 2 && r.iter().all(|n| n.as_u64().is_some()) => {
            let (a, b) = (
                r[0].as_u64().unwrap_or(0) as u32,
                r[1].as_u64().unwrap_or(0) as u32,
            );
            Some((a.min(b), a.max(b)))
        }
        Some(other) => {
            return Err(FieldError::new(
                join(path, "target_range"),
                format!("expected two whole numbers, like [3, 6]; found {other}"),
            ))
        }
    };
    let (min, max) = (turns("min_turns")?, turns("max_turns")?);
    if min.is_none() && max.is_none() && target_range.is_none() {
        return Err(FieldError::new(
            join(path, "min_turns"),
            "a `conversation_length` evaluation needs `min_turns`, `max_turns` or `target_range`",
        ));
    }
    Ok(Evaluator::ConversationLength {
        min,
        max,
        optimal: turns("optimal_turns")?,
        target_range,
    })
}

/// A `conversation_flow` evaluation: patterns the conversation must show, from a
/// fixed list.
fn conversation_flow(obj: &Map<String, Value>, path: &str) -> Result<Evaluator, FieldError> {
    const PATTERNS: [&str; 5] = [
        "question_then_answer",
        "problem_then_solution",
        "clarification_cycle",
        "empathy_then_solution",
        "escalation_pattern",
    ];
    let patterns = strings(obj, "required_patterns", path)?;
    if patterns.is_empty() {
        return Err(FieldError::new(
            join(path, "required_patterns"),
            format!("list the patterns to find: {}", PATTERNS.join(", ")),
        ));
    }
    for (i, p) in patterns.iter().enumerate() {
        if !PATTERNS.contains(&p.as_str()) {
            let hint = suggest(p, &PATTERNS)
                .map(|n| format!("did you mean \"{n}\"? "))
                .unwrap_or_default();
            return Err(FieldError::new(
                index(&join(path, "required_patterns"), i),
                format!(
                    "unknown pattern \"{p}\"; {hint}expected one of: {}",
                    PATTERNS.join(", ")
                ),
            ));
        }
    }
    Ok(Evaluator::ConversationFlow {
        patterns,
        threshold: opt_num(obj, "flow_quality_threshold", path, 0.0, 1.0)?.unwrap_or(0.7),
    })
}

/// A `user_satisfaction` evaluation: its indicators and how it is measured.
fn user_satisfaction(obj: &Map<String, Value>, path: &str) -> Result<Evaluator, FieldError> {
    let (positive, negative) = match obj.get("indicators").filter(|v| !v.is_null()) {
        None => (Vec::new(), Vec::new()),
        Some(i) => {
            let ipath = join(path, "indicators");
            let i = object(i, &ipath, "the indicators")?;
            check_keys(i, &["positive", "negative"], &ipath, "`indicators`")?;
            (
                strings(i, "positive", &ipath)?,
                strings(i, "negative", &ipath)?,
            )
        }
    };
    let method = match choice(
        obj,
        "measurement_method",
        path,
        &["keyword_analysis", "sentiment_analysis", "llm_judge"],
    )? {
        Some("keyword_analysis") => SatisfactionMethod::KeywordAnalysis,
        Some("sentiment_analysis") => SatisfactionMethod::SentimentAnalysis,
        Some(_) => SatisfactionMethod::LlmJudge,
        None => SatisfactionMethod::KeywordAnalysis,
    };
    Ok(Evaluator::UserSatisfaction {
        threshold: opt_num(obj, "satisfaction_threshold", path, 0.0, 1.0)?.unwrap_or(0.7),
        positive,
        negative,
        method,
    })
}

/// A `context_retention` evaluation: what the agent must remember.
fn context_retention(obj: &Map<String, Value>, path: &str) -> Result<Evaluator, FieldError> {
    let memory_of = strings(obj, "test_memory_of", path)?;
    if memory_of.is_empty() {
        return Err(FieldError::new(
            join(path, "test_memory_of"),
            "list what the agent must remember, like [\"the user's name\"]",
        ));
    }
    Ok(Evaluator::ContextRetention {
        memory_of,
        retention_turns: opt_int(obj, "retention_turns", path, 1, 1000)?.map(|n| n as u32),
        threshold: opt_num(obj, "memory_accuracy_threshold", path, 0.0, 1.0)?.unwrap_or(0.7),
    })
}
