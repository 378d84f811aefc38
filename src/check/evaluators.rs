//! The scenario evaluators that are not agentest assertions: files in the environment,
//! a command's exit code, the agent's trajectory and the step's time.

use std::path::Path;
use std::time::Duration;

use crate::case::scenario::Evaluator;
use crate::check::Verdict;
use crate::errors::StepError;

/// What a step left for its evaluators.
pub(crate) struct StepResult<'a> {
    /// How long the step took (the agent's reply, or the code's run).
    pub(crate) duration_ms: u64,
    /// The tools the agent called and the actions it reported during the step (every
    /// turn of a conversation), in order.
    pub(crate) trajectory: &'a [String],
}

/// An action or tool name in one spelling: `CREATE_ISSUE`, `create-issue` and
/// `create.issue` are all `create_issue`.
fn normal(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            '-' | '.' | ' ' | '/' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Whether the agent's `name` (a tool or an action) is the `action` asked for: the same
/// once spelled alike, or its last part after a namespace (`github.create_issue`,
/// `github__create_issue`).
fn same_action(name: &str, action: &str) -> bool {
    let wanted = normal(action);
    if normal(name) == wanted {
        return true;
    }
    let last = name.rsplit(['.', '/']).next().unwrap_or(name);
    let last = last.rsplit("__").next().unwrap_or(last);
    normal(last) == wanted
}

/// The file `path` of the environment folder `dir`. The loader keeps paths inside it;
/// this holds for cases made otherwise, and for a symlink the run left pointing out.
fn within(dir: &Path, path: &str) -> Result<std::path::PathBuf, StepError> {
    let outside = || {
        StepError::Broken(format!(
            "\"{path}\" is outside the environment folder; file evaluators look inside it only"
        ))
    };
    if !crate::case::scenario::inside_environment(path) {
        return Err(outside());
    }
    let full = dir.join(path);
    if let (Ok(real), Ok(root)) = (full.canonicalize(), dir.canonicalize()) {
        if !real.starts_with(root) {
            return Err(outside());
        }
    }
    Ok(full)
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Evaluates one evaluator that is not an assertion.
pub(crate) async fn check(
    e: &Evaluator,
    step: &StepResult<'_>,
    dir: &Path,
    deadline: tokio::time::Instant,
) -> Result<Verdict, StepError> {
    Ok(match e {
        Evaluator::Assertion(_) => {
            return Err(StepError::Broken(
                "an assertion is evaluated as one, not here".into(),
            ))
        }
        Evaluator::FileExists { path } => {
            let found = within(dir, path)?.exists();
            Verdict {
                passed: Some(found),
                label: format!("file_exists \"{path}\""),
                detail: Some(if found {
                    format!("{path} exists")
                } else {
                    format!("no file {path} in the environment")
                }),
                judgment: None,
                broken: None,
            }
        }
        Evaluator::FileContains { path, value } => {
            let label = format!("file_contains \"{path}\" \"{value}\"");
            match std::fs::read(within(dir, path)?) {
                Err(_) => Verdict {
                    passed: Some(false),
                    label,
                    detail: Some(format!("no file {path} in the environment")),
                    judgment: None,
                    broken: None,
                },
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let found = text.contains(value.as_str());
                    Verdict {
                        passed: Some(found),
                        label,
                        detail: Some(if found {
                            format!("{path} contains \"{value}\"")
                        } else {
                            format!(
                                "{path} does not contain \"{value}\"; it holds {}",
                                serde_json::Value::String(crate::util::clip(&text))
                            )
                        }),
                        judgment: None,
                        broken: None,
                    }
                }
            }
        }
        Evaluator::CommandExitCodeIs {
            command,
            expected_code,
        } => {
            let out = crate::check::code::shell(command, dir, deadline)
                .await
                .map_err(|e| e.context(format!("command_exit_code_is `{command}`")))?;
            let passed = out.exit_code == Some(*expected_code);
            let code = out.exit_code.map_or_else(
                || "no exit code (a signal ended it)".into(),
                |c| c.to_string(),
            );
            Verdict {
                passed: Some(passed),
                label: format!("command_exit_code_is `{command}` {expected_code}"),
                detail: Some(if passed {
                    format!("`{command}` exited with {code}")
                } else if out.stderr.trim().is_empty() {
                    format!("`{command}` exited with {code}, expected {expected_code}")
                } else {
                    format!(
                        "`{command}` exited with {code}, expected {expected_code}; its stderr: {}",
                        out.stderr.trim()
                    )
                }),
                judgment: None,
                broken: None,
            }
        }
        Evaluator::TrajectoryContainsAction { action } => {
            let names: Vec<&str> = step.trajectory.iter().map(String::as_str).collect();
            let found = names.iter().any(|n| same_action(n, action));
            Verdict {
                passed: Some(found),
                label: format!("trajectory_contains_action \"{action}\""),
                detail: Some(if found {
                    format!("the agent took the action {action}")
                } else if names.is_empty() {
                    format!("expected the action {action}; the agent called no tool and reported no action")
                } else {
                    format!(
                        "expected the action {action}; the agent's were: {}",
                        names.join(", ")
                    )
                }),
                judgment: None,
                broken: None,
            }
        }
        Evaluator::ExecutionTime { max, min, target } => {
            let took = u128::from(step.duration_ms);
            let over = max.filter(|m| took > ms(*m));
            let under = min.filter(|m| took < ms(*m));
            let target = target
                .map(|t| format!(" (target {} ms)", ms(t)))
                .unwrap_or_default();
            let bounds = match (min, max) {
                (Some(lo), Some(hi)) => format!("{}..{} ms", ms(*lo), ms(*hi)),
                (Some(lo), None) => format!("at least {} ms", ms(*lo)),
                (None, Some(hi)) => format!("at most {} ms", ms(*hi)),
                (None, None) => "any time".into(),
            };
            Verdict {
                passed: Some(over.is_none() && under.is_none()),
                label: format!("execution_time {bounds}"),
                detail: Some(match (over, under) {
                    (Some(m), _) => format!(
                        "the step took {took} ms, over the {} ms allowed{target}",
                        ms(m)
                    ),
                    (_, Some(m)) => format!(
                        "the step took {took} ms, under the {} ms required{target}",
                        ms(m)
                    ),
                    _ => format!("the step took {took} ms{target}"),
                }),
                judgment: None,
                broken: None,
            }
        }
        Evaluator::ConversationLength { .. }
        | Evaluator::ConversationFlow { .. }
        | Evaluator::UserSatisfaction { .. }
        | Evaluator::ContextRetention { .. } => {
            return Err(StepError::Broken(
                "a conversation evaluator needs a conversation".into(),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_match_across_spellings_and_namespaces() {
        for (name, action) in [
            ("CREATE_ISSUE", "create_issue"),
            ("create-issue", "CREATE_ISSUE"),
            ("create.issue", "create_issue"),
            ("github.create_issue", "CREATE_ISSUE"),
            ("github__create_issue", "create_issue"),
            ("LIST_ISSUES", "list-issues"),
        ] {
            assert!(same_action(name, action), "{name} ~ {action}");
        }
        for (name, action) in [
            ("create_issues", "create_issue"),
            ("recreate_issue", "create_issue"),
            ("REPLY", "create_issue"),
        ] {
            assert!(!same_action(name, action), "{name} !~ {action}");
        }
    }
}
