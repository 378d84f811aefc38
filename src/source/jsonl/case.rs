//! The case parser: one JSON line in, one [`Case`] or one located [`CaseError`] out.

use serde_json::{Map, Value};

use super::dynamic::parse_dynamic;
use super::json::{parse_line, LineError};
use super::keys::{CASE_KEYS, CRITERIA_KEYS};
use super::locate::{column_of_duplicate, column_of_path};
use super::turn::{assertion_list, parse_input, parse_turn};
use crate::case::{check_cost, check_runs, Budget, Gate, Repeats};
use crate::case::{Case, Location, Mode, PersonaRef};
use crate::errors::CaseError;
use crate::errors::FieldError;
use crate::source::fields::{check_keys, index, opt_bool, opt_object, opt_str};
use crate::source::parse_assertions;
use crate::util::parse_timeout;
use crate::util::type_of;

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
            if let Some((message, column)) =
                crate::source::bom::stray_bom(line, location.line, byte_col - 1)
            {
                return Err(CaseError {
                    location: Location { column, ..location },
                    id: None,
                    field: None,
                    message,
                });
            }
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
    // The line as written, for hooks and freeze.
    case.raw = crate::case::Raw::new(&value);
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

/// A case from a JSON object another format was translated into (an EvalStudio
/// scenario): checked as a suite line is, with `raw` the object itself.
pub(crate) fn case_from_object(
    obj: Map<String, Value>,
    id: String,
    location: Location,
) -> Result<Case, FieldError> {
    let mut case = build(&obj, id, location)?;
    case.raw = crate::case::Raw::new(&Value::Object(obj));
    Ok(case)
}

fn build(obj: &Map<String, Value>, id: String, location: Location) -> Result<Case, FieldError> {
    check_keys(obj, &CASE_KEYS, "", "a case")?;
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(parse_timeout(s).map_err(|e| FieldError::new("timeout", e.to_string()))?)
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
                Some(t) => Some(
                    parse_timeout(&t)
                        .map_err(|e| FieldError::new("interactive.timeout", e.to_string()))?,
                ),
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
    let personas = parse_personas(obj, &mode)?;
    Ok(Case {
        id,
        name: opt_str(obj, "name", "")?,
        skip: opt_bool(obj, "skip", "")?.unwrap_or(false),
        timeout,
        agent: opt_str(obj, "agent", "")?,
        options: opt_object(obj, "options", "")?.map(Box::new),
        expected: obj.get("expected").cloned().map(Box::new),
        tags,
        user: obj.get("user").cloned().map(Box::new),
        team: obj.get("team").cloned().map(Box::new),
        metadata: opt_object(obj, "metadata", "")?.map(Box::new),
        before: opt_str(obj, "before", "")?,
        after: opt_str(obj, "after", "")?,
        mode,
        golden: opt_bool(obj, "golden", "")?,
        interactive,
        mocks: parse_setup(obj)?,
        personas,
        persona: None,
        origin: None,
        repeats: parse_repeats(obj)?,
        location,
        raw: crate::case::Raw::default(),
    })
}

/// `runs`, the gate (`min_pass`, or `pass_rate` with `confidence`) and the budget
/// (`max_cost`, `max_tokens`).
fn parse_repeats(obj: &Map<String, Value>) -> Result<Repeats, FieldError> {
    let whole = |key: &str| -> Result<Option<u64>, FieldError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| FieldError::new(key, format!("expected a whole number, found {n}"))),
            Some(other) => Err(FieldError::new(
                key,
                format!("expected a whole number, found {}", type_of(other)),
            )),
        }
    };
    let number = |key: &str| -> Result<Option<f64>, FieldError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(FieldError::new(
                key,
                format!("expected a number like 0.8, found {}", type_of(other)),
            )),
        }
    };
    let runs = whole("runs")?
        .map(check_runs)
        .transpose()
        .map_err(|e| FieldError::new("runs", e.to_string()))?;
    let gate = Gate::from_fields(
        whole("min_pass")?,
        number("pass_rate")?,
        number("confidence")?,
        runs,
    )
    .map_err(|e| FieldError::new(e.field(), e.to_string()))?;
    let max_cost = number("max_cost")?
        .map(check_cost)
        .transpose()
        .map_err(|e| FieldError::new("max_cost", e.to_string()))?;
    let max_tokens = match whole("max_tokens")? {
        Some(0) => {
            return Err(FieldError::new(
                "max_tokens",
                "expected a whole number of tokens above 0, found 0",
            ))
        }
        t => t,
    };
    Ok(Repeats {
        runs,
        gate,
        budget: Budget {
            max_cost,
            max_tokens,
        },
    })
}

/// `personas`: inline `{name, description, system_prompt}` objects, or names of
/// `[personas.NAME]` tables in the config.
fn parse_personas(obj: &Map<String, Value>, mode: &Mode) -> Result<Vec<PersonaRef>, FieldError> {
    let items = match obj.get("personas") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(FieldError::new(
                "personas",
                "`personas` is empty; give at least one, or leave it out",
            ))
        }
        Some(other) => {
            return Err(FieldError::new(
                "personas",
                format!(
                    "expected an array of personas (objects {{\"name\", \"description\", \"system_prompt\"}} or names of [personas.NAME] in agentest.toml), found {}",
                    type_of(other)
                ),
            ))
        }
    };
    if !matches!(mode, Mode::Dynamic { .. } | Mode::Criteria { .. }) {
        return Err(FieldError::new(
            "personas",
            "`personas` apply to dynamic cases, where a simulated user impersonates each; this case has no simulated user",
        ));
    }
    let mut out: Vec<PersonaRef> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = index("personas", i);
        let p = match item {
            Value::String(name) if !name.trim().is_empty() => PersonaRef {
                name: name.trim().to_string(),
                description: None,
                system_prompt: None,
                inline: false,
            },
            Value::Object(m) => {
                check_keys(m, &["name", "description", "system_prompt"], &path, "a persona")?;
                let name = opt_str(m, "name", &path)?
                    .filter(|n| !n.trim().is_empty())
                    .ok_or_else(|| FieldError::new(&path, "a persona needs a `name` (it names the trial)"))?;
                PersonaRef {
                    name,
                    description: opt_str(m, "description", &path)?,
                    system_prompt: opt_str(m, "system_prompt", &path)?,
                    inline: true,
                }
            }
            other => {
                return Err(FieldError::new(
                    &path,
                    format!(
                        "expected a persona {{\"name\", \"description\", \"system_prompt\"}} or a persona's name, found {}",
                        type_of(other)
                    ),
                ))
            }
        };
        let slug = crate::util::slug(&p.name);
        if out.iter().any(|q| crate::util::slug(&q.name) == slug) {
            return Err(FieldError::new(
                &path,
                format!(
                    "two personas named \"{}\": each names a trial, so names must differ",
                    p.name
                ),
            ));
        }
        out.push(p);
    }
    Ok(out)
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

fn parse_mode(obj: &Map<String, Value>) -> Result<Mode, FieldError> {
    // A key set to null counts as absent.
    let present = |key: &str| obj.get(key).filter(|v| !v.is_null());
    let (turns, sim, cps) = (
        present("turns"),
        present("simulator"),
        present("checkpoints"),
    );
    let (has_turns, has_sim, has_cps) = (turns.is_some(), sim.is_some(), cps.is_some());
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
    let has_criteria = CRITERIA_KEYS.iter().any(|k| obj.contains_key(*k));
    if has_turns && has_criteria {
        return Err(FieldError::new(
            "turns",
            "a case with success or failure criteria is a dynamic conversation; it takes no `turns`",
        ));
    }
    if has_sim || has_cps || has_criteria || mode.as_deref() == Some("dynamic") {
        if mode.as_deref().is_some_and(|m| m != "dynamic") {
            return Err(FieldError::new("mode", format!("`mode` is \"{}\" but the case has `simulator`/`checkpoints`; dynamic cases take `mode: \"dynamic\"` or no mode", mode.unwrap_or_default())));
        }
        return parse_dynamic(obj, sim, cps);
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
    if let Some(turns) = turns {
        return parse_static(obj, turns, mode.as_deref());
    }
    parse_single(obj)
}

/// A static case: its `turns` (given) and `final_assertions`, and no top-level
/// single-turn keys.
fn parse_static(
    obj: &Map<String, Value>,
    turns: &Value,
    mode: Option<&str>,
) -> Result<Mode, FieldError> {
    if mode == Some("single") {
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
    let turns = match turns {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, t)| parse_turn(t, &index("turns", i)))
            .collect::<Result<Vec<_>, _>>()?,
        Value::Array(_) => {
            return Err(FieldError::new(
                "turns",
                "`turns` is empty; give at least one {\"input\": ...}",
            ))
        }
        other => {
            return Err(FieldError::new(
                "turns",
                format!("expected an array of turns, found {}", type_of(other)),
            ))
        }
    };
    let final_assertions = match obj.get("final_assertions") {
        Some(v) => parse_assertions(v, "final_assertions")?,
        None => Vec::new(),
    };
    Ok(Mode::Static {
        turns,
        final_assertions,
    })
}

/// A single-turn case: `input` and `assertions`.
fn parse_single(obj: &Map<String, Value>) -> Result<Mode, FieldError> {
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
