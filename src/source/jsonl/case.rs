//! The case parser: one JSON line in, one [`Case`] or one located [`CaseError`] out.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::json::{parse_line, LineError};
use super::locate::{column_of_duplicate, column_of_path};
use crate::case::Assertion;
use crate::case::{Case, Checkpoint, Input, Location, Mode, ScriptRule, Simulator, Turn};
use crate::errors::CaseError;
use crate::errors::FieldError;
use crate::protocol::Message;
use crate::source::fields::{check_keys, index, join, opt_bool, opt_object, opt_str};
use crate::source::parse_assertions;
use crate::util::parse_timeout;
use crate::util::type_of;

/// Every key a case line may have.
pub const CASE_KEYS: [&str; 26] = [
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
];

const TURN_KEYS: [&str; 7] = [
    "input",
    "assertions",
    "assert",
    "options",
    "attachments",
    "name",
    "description",
];
const CHECKPOINT_KEYS: [&str; 8] = [
    "id",
    "description",
    "assertion",
    "assert",
    "assertions",
    "after",
    "required",
    "forbidden",
];
const SIMULATOR_KEYS: [&str; 12] = [
    "use",
    "options",
    "persona",
    "goal",
    "objective",
    "style",
    "constraints",
    "emotional_state",
    "knowledge_level",
    "show_checkpoints",
    "script",
    "metadata",
];
const MESSAGE_KEYS: [&str; 5] = ["role", "content", "tool_calls", "name", "tool_call_id"];
const ROLES: [&str; 4] = ["user", "assistant", "system", "tool"];

/// Parses one line of a suite file. `location` is the line's start (column 1).
pub fn parse_case(line: &str, location: Location) -> Result<Case, CaseError> {
    let value = match parse_line(line) {
        Ok(v) => v,
        Err(LineError::Syntax(e)) => {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            // serde_json counts bytes; every other column here counts characters.
            let byte_col = e.column().max(1);
            // A byte column inside a multi-byte character points at that character.
            let column = line
                .char_indices()
                .take_while(|(i, _)| *i < byte_col - 1)
                .count()
                + 1;
            return Err(CaseError {
                location: Location { column, ..location },
                id: None,
                field: None,
                message: format!("invalid JSON: {msg}; each line must be one complete JSON object"),
            });
        }
        Err(LineError::Duplicate { path, key }) => {
            // The rest of the line is fine, so its id still names the trial, unless the
            // id is the repeated key (then which one is meant is the question).
            let id = (path != "id")
                .then(|| serde_json::from_str::<Value>(line).ok())
                .flatten()
                .and_then(|v| v.as_object().and_then(|o| parse_id(o).ok()));
            return Err(CaseError {
                location: Location {
                    column: column_of_duplicate(line, &path),
                    ..location
                },
                id,
                message: format!(
                    "duplicate key `{key}` (first given at column {}); only one of them would count, so remove one or merge them into one `{key}`",
                    column_of_path(line, &path)
                ),
                field: Some(path),
            });
        }
    };
    let Value::Object(obj) = &value else {
        return Err(CaseError {
            location,
            id: None,
            field: None,
            message: format!(
                "expected a JSON object for the case, found {}",
                type_of(&value)
            ),
        });
    };
    // Only a valid id names the trial; a rejected one ("a::b", "") must not.
    let id = parse_id(obj).ok();
    let locate = |e: FieldError| CaseError {
        location: Location {
            column: column_of_path(line, &e.path),
            ..location.clone()
        },
        id: id.clone(),
        field: Some(e.path),
        message: e.message,
    };
    let id = parse_id(obj).map_err(&locate)?;
    let mut case = build(obj, id, location.clone()).map_err(locate)?;
    // The line as written, for hooks and freeze: moved, not copied.
    case.raw = Arc::new(value);
    Ok(case)
}

fn parse_id(obj: &Map<String, Value>) -> Result<String, FieldError> {
    match obj.get("id") {
        Some(Value::String(s)) if s.trim().is_empty() => Err(FieldError::new("id", "the id is empty; give the case an id unique within its file, like \"T001\"")),
        Some(Value::String(s)) if s.contains("::") => Err(FieldError::new("id", format!("the id \"{s}\" contains `::`, which separates suite and id in trial names; use `-` or `.` instead"))),
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            let c = s.chars().find(|c| c.is_control()).unwrap_or_default();
            Err(FieldError::new("id", format!("the id {s:?} contains the control character U+{:04X}; an id names a trial on one line of the test list, so use printable characters only", c as u32)))
        }
        Some(Value::String(s)) if s.trim() != s => Err(FieldError::new("id", format!("the id \"{s}\" has leading or trailing spaces; remove them"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(FieldError::new("id", format!("expected a string id like \"T001\", found {}", type_of(other)))),
        None => Err(FieldError::new("id", "missing `id`; every case needs an id unique within its file, like \"T001\"")),
    }
}

fn build(obj: &Map<String, Value>, id: String, location: Location) -> Result<Case, FieldError> {
    check_keys(obj, &CASE_KEYS, "", "a case")?;
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(parse_timeout(s).map_err(|e| FieldError::new("timeout", e))?)
        }
        Some(other) => {
            return Err(FieldError::new(
                "timeout",
                format!(
                    "expected a duration string like \"30s\" or \"2m\", found {}",
                    type_of(other)
                ),
            ))
        }
    };
    let tags = match obj.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, t)| match t {
                Value::String(s) => Ok(s.clone()),
                other => Err(FieldError::new(
                    index("tags", i),
                    format!("expected a string tag, found {}", type_of(other)),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                "tags",
                format!("expected an array of strings, found {}", type_of(other)),
            ))
        }
    };
    let mut interactive = None;
    if let Some(i) = obj.get("interactive") {
        if let Value::Object(m) = i {
            check_keys(m, &["enabled", "timeout"], "interactive", "`interactive`")?;
            let enabled = opt_bool(m, "enabled", "interactive")?.unwrap_or(false);
            let timeout = match opt_str(m, "timeout", "interactive")? {
                Some(t) => {
                    Some(parse_timeout(&t).map_err(|e| FieldError::new("interactive.timeout", e))?)
                }
                None => None,
            };
            interactive = Some(crate::case::Interactive { enabled, timeout });
        } else if !i.is_null() {
            return Err(FieldError::new(
                "interactive",
                format!(
                    "expected an object {{\"enabled\": true}}, found {}",
                    type_of(i)
                ),
            ));
        }
    }
    opt_str(obj, "description", "")?;
    let mode = parse_mode(obj)?;
    Ok(Case {
        id,
        name: opt_str(obj, "name", "")?,
        skip: opt_bool(obj, "skip", "")?.unwrap_or(false),
        timeout,
        agent: opt_str(obj, "agent", "")?,
        options: opt_object(obj, "options", "")?,
        expected: obj.get("expected").cloned(),
        tags,
        user: obj.get("user").cloned(),
        team: obj.get("team").cloned(),
        metadata: opt_object(obj, "metadata", "")?,
        before: opt_str(obj, "before", "")?,
        after: opt_str(obj, "after", "")?,
        mode,
        golden: opt_bool(obj, "golden", "")?,
        interactive,
        mocks: parse_setup(obj)?,
        location,
        raw: Arc::new(Value::Null),
    })
}

/// `setup: {"mocks": [...]}`: tool mocks for `openai` agents, checked before the agent's own.
fn parse_setup(obj: &Map<String, Value>) -> Result<Vec<crate::case::Mock>, FieldError> {
    match obj.get("setup") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => {
            check_keys(m, &["mocks"], "setup", "`setup`")?;
            match m.get("mocks") {
                Some(v) => crate::source::parse_mocks(v, "setup.mocks"),
                None => Ok(Vec::new()),
            }
        }
        Some(other) => Err(FieldError::new(
            "setup",
            format!(
                "expected an object {{\"mocks\": [...]}}, found {}",
                type_of(other)
            ),
        )),
    }
}

/// Reads `assertions` or `assert` (not both).
fn assertion_list(
    obj: &Map<String, Value>,
    path: &str,
    keys: [&str; 2],
) -> Result<Vec<Assertion>, FieldError> {
    match (obj.get(keys[0]), obj.get(keys[1])) {
        (Some(_), Some(_)) => Err(FieldError::new(
            join(path, keys[1]),
            format!(
                "both `{}` and `{}` are given; use one of them",
                keys[0], keys[1]
            ),
        )),
        (Some(v), None) => parse_assertions(v, &join(path, keys[0])),
        (None, Some(v)) => parse_assertions(v, &join(path, keys[1])),
        (None, None) => Ok(Vec::new()),
    }
}

fn parse_mode(obj: &Map<String, Value>) -> Result<Mode, FieldError> {
    let has_turns = obj.get("turns").is_some_and(|v| !v.is_null());
    let has_sim = obj.get("simulator").is_some_and(|v| !v.is_null());
    let has_cps = obj.get("checkpoints").is_some_and(|v| !v.is_null());
    let mode = opt_str(obj, "mode", "")?;
    if has_turns && (has_sim || has_cps) {
        let key = if has_sim { "simulator" } else { "checkpoints" };
        return Err(FieldError::new(
            key,
            "a case has either `turns` (static mode) or `simulator` + `checkpoints` (dynamic mode), not both; split it into two cases",
        ));
    }
    match mode.as_deref() {
        None | Some("static") | Some("dynamic") | Some("single") => {}
        Some(other) => {
            return Err(FieldError::new(
                "mode",
                format!("unknown mode \"{other}\"; expected \"static\" (with `turns`), \"dynamic\" (with `simulator` + `checkpoints`) or \"single\" (with `input`)"),
            ))
        }
    }
    if has_sim || has_cps || mode.as_deref() == Some("dynamic") {
        if mode.as_deref().is_some_and(|m| m != "dynamic") {
            return Err(FieldError::new("mode", format!("`mode` is \"{}\" but the case has `simulator`/`checkpoints`; dynamic cases take `mode: \"dynamic\"` or no mode", mode.unwrap_or_default())));
        }
        return parse_dynamic(obj, has_sim, has_cps);
    }
    for key in ["max_turns"] {
        if obj.contains_key(key) {
            return Err(FieldError::new(
                key,
                format!("`{key}` only applies to dynamic cases (with `simulator` + `checkpoints`)"),
            ));
        }
    }
    if !has_turns && mode.as_deref() == Some("static") {
        return Err(FieldError::new(
            "mode",
            "`mode` is \"static\" but the case has no `turns`; write the conversation as `turns: [{\"input\": ...}, ...]`, or drop `mode` for a single-turn case",
        ));
    }
    if has_turns {
        if mode.as_deref() == Some("single") {
            return Err(FieldError::new(
                "mode",
                "`mode` is \"single\" but the case has `turns`; use `mode: \"static\"` or no mode",
            ));
        }
        for key in ["input", "assertions", "assert", "expected"] {
            if obj.contains_key(key) {
                let fix = match key {
                    "input" => "put the first message in turns[0].input",
                    "expected" => "compare the last reply with `final_assertions: [{\"type\": \"equals\", ...}]`",
                    _ => "put per-turn checks in each turn and checks on the last reply in `final_assertions`",
                };
                return Err(FieldError::new(
                    key,
                    format!("a static case with `turns` takes no top-level `{key}`; {fix}"),
                ));
            }
        }
        let turns = match obj.get("turns") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, t)| parse_turn(t, &index("turns", i)))
                .collect::<Result<Vec<_>, _>>()?,
            Some(Value::Array(_)) => {
                return Err(FieldError::new(
                    "turns",
                    "`turns` is empty; give at least one {\"input\": ...}",
                ))
            }
            Some(other) => {
                return Err(FieldError::new(
                    "turns",
                    format!("expected an array of turns, found {}", type_of(other)),
                ))
            }
            None => unreachable!(),
        };
        let final_assertions = match obj.get("final_assertions") {
            Some(v) => parse_assertions(v, "final_assertions")?,
            None => Vec::new(),
        };
        return Ok(Mode::Static {
            turns,
            final_assertions,
        });
    }
    if obj.contains_key("final_assertions") {
        return Err(FieldError::new("final_assertions", "`final_assertions` applies to static cases with `turns`; a single-turn case takes `assertions`"));
    }
    let input = match obj.get("input") {
        Some(v) => parse_input(v, "input")?,
        None => {
            return Err(FieldError::new(
                "input",
                "missing `input`; a case needs `input` (single turn), `turns` (static) or `simulator` + `checkpoints` (dynamic)",
            ))
        }
    };
    let assertions = assertion_list(obj, "", ["assertions", "assert"])?;
    Ok(Mode::Single { input, assertions })
}

fn parse_dynamic(
    obj: &Map<String, Value>,
    has_sim: bool,
    has_cps: bool,
) -> Result<Mode, FieldError> {
    if !has_sim {
        return Err(FieldError::new(
            "simulator",
            "a dynamic case needs `simulator`, such as {\"use\": \"script\", \"script\": [...]}",
        ));
    }
    if !has_cps {
        return Err(FieldError::new(
            "checkpoints",
            "a dynamic case needs `checkpoints`: what the agent must reach",
        ));
    }
    for key in ["assertions", "assert", "final_assertions"] {
        if obj.contains_key(key) {
            return Err(FieldError::new(
                key,
                format!("a dynamic case takes no `{key}`; express checks as `checkpoints`"),
            ));
        }
    }
    let sim = match obj.get("simulator") {
        Some(v @ Value::Object(m)) => {
            check_keys(m, &SIMULATOR_KEYS, "simulator", "`simulator`")?;
            opt_object(m, "options", "simulator")?;
            opt_bool(m, "show_checkpoints", "simulator")?;
            let use_ = opt_str(m, "use", "simulator")?;
            let script = match m.get("script") {
                None | Some(Value::Null) => None,
                Some(Value::Array(rules)) => Some(
                    rules
                        .iter()
                        .enumerate()
                        .map(|(i, r)| parse_rule(r, &index("simulator.script", i)))
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                Some(other) => {
                    return Err(FieldError::new(
                        "simulator.script",
                        format!(
                            "expected an array of {{\"when\", \"say\"}} rules, found {}",
                            type_of(other)
                        ),
                    ))
                }
            };
            match (use_.as_deref(), &script) {
                (Some("script"), None) => {
                    return Err(FieldError::new(
                        "simulator.script",
                        "a scripted simulator (`use: \"script\"`) needs `script: [{\"when\": \"<regex>\", \"say\": \"...\"}, ...]`",
                    ))
                }
                (Some("script"), Some(rules)) if rules.is_empty() => {
                    return Err(FieldError::new("simulator.script", "the script is empty; give at least one rule"))
                }
                (other, Some(_)) if other != Some("script") => {
                    return Err(FieldError::new(
                        "simulator.script",
                        "`script` only applies to `use: \"script\"`; set `use` to \"script\" or remove `script`",
                    ))
                }
                _ => {}
            }
            Simulator {
                use_,
                script: script.unwrap_or_default(),
                show_checkpoints: opt_bool(m, "show_checkpoints", "simulator")?.unwrap_or(false),
                raw: v.clone(),
            }
        }
        Some(other) => {
            return Err(FieldError::new(
                "simulator",
                format!("expected an object, found {}", type_of(other)),
            ))
        }
        None => unreachable!(),
    };
    let checkpoints = match obj.get("checkpoints") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, c)| parse_checkpoint(c, &index("checkpoints", i)))
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Array(_)) => {
            return Err(FieldError::new(
                "checkpoints",
                "`checkpoints` is empty; give at least one",
            ))
        }
        Some(other) => {
            return Err(FieldError::new(
                "checkpoints",
                format!("expected an array of checkpoints, found {}", type_of(other)),
            ))
        }
        None => unreachable!(),
    };
    for (i, c) in checkpoints.iter().enumerate() {
        if checkpoints[..i].iter().any(|p| p.id == c.id) {
            return Err(FieldError::new(
                join(&index("checkpoints", i), "id"),
                format!("duplicate checkpoint id \"{}\"", c.id),
            ));
        }
        for (j, a) in c.after.iter().enumerate() {
            if a == &c.id {
                return Err(FieldError::new(
                    index(&join(&index("checkpoints", i), "after"), j),
                    format!("checkpoint \"{a}\" cannot come after itself"),
                ));
            }
            if !checkpoints.iter().any(|p| &p.id == a) {
                let ids: Vec<&str> = checkpoints.iter().map(|p| p.id.as_str()).collect();
                return Err(FieldError::new(
                    index(&join(&index("checkpoints", i), "after"), j),
                    format!(
                        "`after` names \"{a}\", which is not a checkpoint of this case; known: {}",
                        ids.join(", ")
                    ),
                ));
            }
        }
    }
    if let Some((i, j, cycle)) = after_cycle(&checkpoints) {
        let named: Vec<String> = cycle.iter().map(|id| format!("\"{id}\"")).collect();
        return Err(FieldError::new(
            index(&join(&index("checkpoints", i), "after"), j),
            format!(
                "the `after` order makes a cycle: {}, so none of them can be reached first; remove one of these `after` entries",
                named.join(" after ")
            ),
        ));
    }
    let max_turns = match obj.get("max_turns") {
        None | Some(Value::Null) => 20,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if (1..=10_000).contains(&v) => v as u32,
            _ => {
                return Err(FieldError::new(
                    "max_turns",
                    format!("expected a whole number from 1 to 10000, found {n}"),
                ))
            }
        },
        Some(other) => {
            return Err(FieldError::new(
                "max_turns",
                format!("expected a whole number, found {}", type_of(other)),
            ))
        }
    };
    let input = match obj.get("input") {
        Some(v) => Some(parse_input(v, "input")?),
        None => None,
    };
    Ok(Mode::Dynamic {
        input,
        simulator: sim,
        checkpoints,
        max_turns,
    })
}

/// The first cycle in the checkpoints' `after` order, found in checkpoint order: the
/// index of the checkpoint and of its `after` entry that closes it, and the ids along it
/// (`[a, b, a]`: a after b after a). Every `after` must name a known checkpoint.
fn after_cycle(checkpoints: &[Checkpoint]) -> Option<(usize, usize, Vec<&str>)> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let at = |id: &str| checkpoints.iter().position(|c| c.id == id);
    let mut state = vec![State::New; checkpoints.len()];
    for start in 0..checkpoints.len() {
        if state[start] != State::New {
            continue;
        }
        // Depth-first: each frame is a checkpoint and the next `after` entry to follow.
        let mut stack = vec![(start, 0usize)];
        state[start] = State::Open;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let Some(dep) = checkpoints[node].after.get(*next) else {
                state[node] = State::Done;
                stack.pop();
                continue;
            };
            let j = *next;
            *next += 1;
            let Some(dep) = at(dep) else { continue };
            match state[dep] {
                State::New => {
                    state[dep] = State::Open;
                    stack.push((dep, 0));
                }
                State::Open => {
                    let from = stack.iter().position(|&(n, _)| n == dep).unwrap_or(0);
                    let mut ids: Vec<&str> = stack[from..]
                        .iter()
                        .map(|&(n, _)| checkpoints[n].id.as_str())
                        .collect();
                    ids.push(checkpoints[dep].id.as_str());
                    return Some((node, j, ids));
                }
                State::Done => {}
            }
        }
    }
    None
}

/// One rule of a scripted simulator: `{"when": "<regex on the agent's reply>", "say": "..."}`,
/// `{"say": "..."}`, or `{"goal_achieved": true}`.
fn parse_rule(v: &Value, path: &str) -> Result<ScriptRule, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::new(
            path,
            format!(
                "expected a rule {{\"when\", \"say\"}}, found {}",
                type_of(v)
            ),
        ));
    };
    check_keys(m, &["when", "say", "goal_achieved"], path, "a script rule")?;
    let when = match opt_str(m, "when", path)? {
        Some(p) => Some(crate::source::compile_regex(&p, &join(path, "when"))?),
        None => None,
    };
    let say = opt_str(m, "say", path)?;
    let goal_achieved = opt_bool(m, "goal_achieved", path)?.unwrap_or(false);
    if say.is_none() && !goal_achieved {
        return Err(FieldError::new(
            join(path, "say"),
            "a script rule needs `say` (what the user says) or `goal_achieved: true`",
        ));
    }
    Ok(ScriptRule {
        when,
        say,
        goal_achieved,
    })
}

fn parse_checkpoint(v: &Value, path: &str) -> Result<Checkpoint, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::new(
            path,
            format!(
                "expected a checkpoint object {{\"id\", \"assertion\"}}, found {}",
                type_of(v)
            ),
        ));
    };
    check_keys(m, &CHECKPOINT_KEYS, path, "a checkpoint")?;
    let id = opt_str(m, "id", path)?
        .ok_or_else(|| FieldError::new(join(path, "id"), "a checkpoint needs an `id`"))?;
    let given: Vec<&str> = ["assertion", "assert", "assertions"]
        .into_iter()
        .filter(|k| m.contains_key(*k))
        .collect();
    let assertions = match given.as_slice() {
        [key] => parse_assertions(&m[*key], &join(path, key))?,
        [] => {
            return Err(FieldError::new(
                join(path, "assertion"),
                "a checkpoint needs `assertion` (or `assert`): what the reply must satisfy",
            ))
        }
        [_, second, ..] => {
            return Err(FieldError::new(
                join(path, second),
                format!("give one of {}, not several", given.join(", ")),
            ))
        }
    };
    if assertions.is_empty() {
        return Err(FieldError::new(
            join(path, given[0]),
            "the checkpoint's assertion list is empty",
        ));
    }
    let after = match m.get("after") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.as_str().map(str::to_string).ok_or_else(|| {
                    FieldError::new(
                        index(&join(path, "after"), i),
                        format!("expected a checkpoint id, found {}", type_of(a)),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                join(path, "after"),
                format!(
                    "expected an array of checkpoint ids, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    Ok(Checkpoint {
        id,
        description: opt_str(m, "description", path)?,
        assertions,
        after,
        required: opt_bool(m, "required", path)?.unwrap_or(true),
        forbidden: opt_bool(m, "forbidden", path)?.unwrap_or(false),
    })
}

fn parse_turn(v: &Value, path: &str) -> Result<Turn, FieldError> {
    let m = match v {
        Value::Object(m) => m,
        other => {
            return Err(FieldError::new(
                path,
                format!(
                    "expected a turn object {{\"input\": ..., \"assertions\": [...]}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    check_keys(m, &TURN_KEYS, path, "a turn")?;
    opt_str(m, "name", path)?;
    opt_str(m, "description", path)?;
    let input = match m.get("input") {
        Some(v) => parse_input(v, &join(path, "input"))?,
        None => {
            return Err(FieldError::new(
                join(path, "input"),
                "each turn needs `input`: what the user says",
            ))
        }
    };
    let attachments = match m.get("attachments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            return Err(FieldError::new(
                join(path, "attachments"),
                format!("expected an array, found {}", type_of(other)),
            ))
        }
    };
    Ok(Turn {
        input,
        assertions: assertion_list(m, path, ["assertions", "assert"])?,
        options: opt_object(m, "options", path)?,
        attachments,
    })
}

fn parse_input(v: &Value, path: &str) -> Result<Input, FieldError> {
    let messages = match v {
        Value::String(s) => vec![Message::user(s.clone())],
        Value::Object(_) => vec![parse_message(v, path)?],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, m)| match m {
                Value::String(s) => Ok(Message::user(s.clone())),
                _ => parse_message(m, &index(path, i)),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Value::Array(_) => return Err(FieldError::new(path, "the message list is empty; give at least one user message")),
        other => {
            return Err(FieldError::new(
                path,
                format!("expected a string, a message {{\"role\", \"content\"}} or an array of messages, found {}", type_of(other)),
            ))
        }
    };
    if messages.last().is_some_and(|m| m.role != "user") {
        let at = if v.is_array() {
            index(path, messages.len() - 1)
        } else {
            path.to_string()
        };
        return Err(FieldError::new(
            join(&at, "role"),
            "the last input message must have role \"user\": the agent answers it",
        ));
    }
    Ok(Input { messages })
}

fn parse_message(v: &Value, path: &str) -> Result<Message, FieldError> {
    let Value::Object(m) = v else {
        return Err(FieldError::new(
            path,
            format!(
                "expected a message {{\"role\", \"content\"}}, found {}",
                type_of(v)
            ),
        ));
    };
    check_keys(m, &MESSAGE_KEYS, path, "a message")?;
    let role = opt_str(m, "role", path)?.ok_or_else(|| {
        FieldError::new(
            join(path, "role"),
            "a message needs `role`: user, assistant, system or tool",
        )
    })?;
    if !ROLES.contains(&role.as_str()) {
        return Err(FieldError::new(
            join(path, "role"),
            format!("unknown role \"{role}\"; expected user, assistant, system or tool"),
        ));
    }
    let content = m.get("content").cloned().unwrap_or(Value::Null);
    if content.is_null() && role == "user" {
        return Err(FieldError::new(
            join(path, "content"),
            "a user message needs `content`",
        ));
    }
    Ok(Message {
        role,
        content,
        tool_calls: m.get("tool_calls").cloned(),
        name: opt_str(m, "name", path)?,
        tool_call_id: opt_str(m, "tool_call_id", path)?,
    })
}
