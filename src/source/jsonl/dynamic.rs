//! Dynamic cases: the simulator, its script, and the checkpoints with their order.

use serde_json::{Map, Value};

use super::keys::CRITERIA_KEYS;
use super::turn::{parse_input, parse_message};
use crate::case::{Checkpoint, Criteria, FailureMode, Mode, ModelSettings, ScriptRule, Simulator};
use crate::errors::FieldError;
use crate::protocol::Message;
use crate::source::fields::{
    check_keys, index, join, model_settings, opt_bool, opt_object, opt_str,
};
use crate::source::parse_assertions;
use crate::util::type_of;

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
/// The keys of `simulator` besides its profile ([`Simulator::PROFILE_KEYS`]).
const SIMULATOR_KEYS: [&str; 6] = [
    "use",
    "options",
    "show_checkpoints",
    "stop_signals",
    "script",
    "metadata",
];

pub(super) fn parse_dynamic(
    obj: &Map<String, Value>,
    sim: Option<&Value>,
    cps: Option<&Value>,
) -> Result<Mode, FieldError> {
    if CRITERIA_KEYS.iter().any(|k| obj.contains_key(*k)) {
        return parse_criteria_case(obj, sim, cps);
    }
    let Some(sim) = sim else {
        return Err(FieldError::new(
            "simulator",
            "a dynamic case needs `simulator`, such as {\"use\": \"script\", \"script\": [...]}",
        ));
    };
    let Some(cps) = cps else {
        return Err(FieldError::new(
            "checkpoints",
            "a dynamic case needs `checkpoints`: what the agent must reach",
        ));
    };
    for key in ["assertions", "assert", "final_assertions"] {
        if obj.contains_key(key) {
            return Err(FieldError::new(
                key,
                format!("a dynamic case takes no `{key}`; express checks as `checkpoints`"),
            ));
        }
    }
    let sim = parse_simulator(sim)?;
    let checkpoints = checkpoints(cps)?;
    let max_turns = max_turns(obj)?;
    let input = match obj.get("input") {
        Some(v) => Some(parse_input(v, "input")?),
        None => None,
    };
    Ok(Mode::Dynamic {
        input,
        simulator: Box::new(sim),
        checkpoints,
        max_turns,
    })
}

/// A dynamic case's `checkpoints`: at least one, ids unique, and an `after` order that
/// names only its checkpoints and has no cycle.
fn checkpoints(cps: &Value) -> Result<Vec<Checkpoint>, FieldError> {
    let checkpoints = match cps {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, c)| parse_checkpoint(c, &index("checkpoints", i)))
            .collect::<Result<Vec<_>, _>>()?,
        Value::Array(_) => {
            return Err(FieldError::new(
                "checkpoints",
                "`checkpoints` is empty; give at least one",
            ))
        }
        other => {
            return Err(FieldError::new(
                "checkpoints",
                format!("expected an array of checkpoints, found {}", type_of(other)),
            ))
        }
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
    Ok(checkpoints)
}

/// `max_turns`: 20 unless given, at most 10000.
fn max_turns(obj: &Map<String, Value>) -> Result<u32, FieldError> {
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
    Ok(max_turns)
}

/// A dynamic case decided by EvalStudio's criteria: no checkpoints; the simulator is
/// optional (the built-in one, told the `instructions`).
fn parse_criteria_case(
    obj: &Map<String, Value>,
    sim: Option<&Value>,
    cps: Option<&Value>,
) -> Result<Mode, FieldError> {
    if cps.is_some() {
        return Err(FieldError::new(
            "checkpoints",
            "a case is decided by `checkpoints` or by `success_criteria`/`failure_criteria`, not both; split it into two cases",
        ));
    }
    for key in ["assertions", "assert", "final_assertions", "max_turns"] {
        if obj.contains_key(key) {
            let why = if key == "max_turns" {
                "a case with criteria ends by `max_messages` (user and assistant messages, default 10)".to_string()
            } else {
                format!("a case with criteria takes no `{key}`; say what must hold in `success_criteria`")
            };
            return Err(FieldError::new(key, why));
        }
    }
    let success = opt_str(obj, "success_criteria", "")?.filter(|t| !t.trim().is_empty());
    let failure = opt_str(obj, "failure_criteria", "")?.filter(|t| !t.trim().is_empty());
    if success.is_none() && failure.is_none() {
        // Located at what made it a case with criteria.
        let at = CRITERIA_KEYS
            .iter()
            .find(|k| obj.contains_key(**k))
            .copied()
            .unwrap_or("success_criteria");
        return Err(FieldError::new(
            at,
            "give `success_criteria` (what the agent must achieve), `failure_criteria`, or both",
        ));
    }
    let mode = failure_mode(obj)?;
    let max_messages = max_messages(obj)?;
    let seed = seed_messages(obj)?;
    let instructions = opt_str(obj, "instructions", "")?;
    let mut simulator = match sim {
        Some(v) => parse_simulator(v)?,
        None => Simulator {
            use_: None,
            script: Vec::new(),
            show_checkpoints: false,
            stop_signals: false,
            profile: Map::new(),
            model: ModelSettings::default(),
            raw: Value::Null,
        },
    };
    // The simulated user pursues the instructions, unless its profile says otherwise.
    if let Some(text) = &instructions {
        simulator
            .profile
            .entry("goal".to_string())
            .or_insert_with(|| Value::String(text.clone()));
    }
    let input = match obj.get("input") {
        Some(v) => Some(parse_input(v, "input")?),
        None => None,
    };
    Ok(Mode::Criteria {
        input,
        simulator: Box::new(simulator),
        criteria: Box::new(Criteria {
            success,
            failure,
            mode,
            max_messages,
            instructions,
            seed,
        }),
    })
}

/// `failure_criteria_mode`: when the failure criteria are judged.
fn failure_mode(obj: &Map<String, Value>) -> Result<FailureMode, FieldError> {
    let mode = match opt_str(obj, "failure_criteria_mode", "")?.as_deref() {
        None | Some("on_max_messages") => FailureMode::OnMaxMessages,
        Some("every_turn") => FailureMode::EveryTurn,
        Some(other) => {
            return Err(FieldError::new(
                "failure_criteria_mode",
                format!("unknown mode \"{other}\"; expected \"on_max_messages\" (the default: the last evaluation decides) or \"every_turn\" (failure met at any turn fails the case)"),
            ))
        }
    };
    Ok(mode)
}

/// `max_messages`: what ends a case with criteria, 10 unless given (2 to 1000).
fn max_messages(obj: &Map<String, Value>) -> Result<u32, FieldError> {
    let max_messages = match obj.get("max_messages") {
        None | Some(Value::Null) => 10,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if (2..=1000).contains(&v) => v as u32,
            _ => {
                return Err(FieldError::new(
                    "max_messages",
                    format!("expected a whole number from 2 to 1000 (user and assistant messages), found {n}"),
                ))
            }
        },
        Some(other) => {
            return Err(FieldError::new(
                "max_messages",
                format!("expected a whole number, found {}", type_of(other)),
            ))
        }
    };
    Ok(max_messages)
}

/// `messages`: the conversation a case with criteria starts from.
fn seed_messages(obj: &Map<String, Value>) -> Result<Vec<Message>, FieldError> {
    let seed = match obj.get("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, m)| parse_message(m, &index("messages", i)))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(FieldError::new(
                "messages",
                format!(
                    "expected an array of messages {{\"role\", \"content\"}}, found {}",
                    type_of(other)
                ),
            ))
        }
    };
    Ok(seed)
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

/// `simulator`: who plays the user (`use`), its script, and what it may see.
fn parse_simulator(v: &Value) -> Result<Simulator, FieldError> {
    let sim = match v {
        Value::Object(m) => {
            let known = [
                &SIMULATOR_KEYS[..],
                &Simulator::PROFILE_KEYS[..],
                &ModelSettings::KEYS[..],
            ]
            .concat();
            check_keys(m, &known, "simulator", "`simulator`")?;
            opt_object(m, "options", "simulator")?;
            opt_bool(m, "show_checkpoints", "simulator")?;
            opt_bool(m, "stop_signals", "simulator")?;
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
            let owner = match use_.as_deref() {
                None => None,
                Some("script") => Some("the script".to_string()),
                Some(name) => Some(format!("the simulator agent `{name}`")),
            };
            Simulator {
                model: model_settings(m, "simulator", owner.as_deref())?,
                use_,
                script: script.unwrap_or_default(),
                show_checkpoints: opt_bool(m, "show_checkpoints", "simulator")?.unwrap_or(false),
                stop_signals: opt_bool(m, "stop_signals", "simulator")?.unwrap_or(false),
                profile: profile(v),
                raw: v.clone(),
            }
        }
        other => {
            return Err(FieldError::new(
                "simulator",
                format!("expected an object, found {}", type_of(other)),
            ))
        }
    };
    Ok(sim)
}

/// Who the simulator plays: `simulator.options.metadata`, `simulator.metadata`, then the
/// seed's fields written directly on `simulator` (persona, goal, objective, ...).
fn profile(raw: &Value) -> Map<String, Value> {
    let mut profile = Map::new();
    for source in [&raw["options"]["metadata"], &raw["metadata"]] {
        if let Value::Object(m) = source {
            profile.extend(m.clone());
        }
    }
    for key in Simulator::PROFILE_KEYS {
        if let Some(v) = raw.get(key) {
            profile.insert(key.into(), v.clone());
        }
    }
    profile
}
