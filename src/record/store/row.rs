//! What every backend decides the same way: a run's columns from its case report, who
//! this process is when it claims, which `running` runs a dead process left, and how a
//! resumed execution's ended runs are sorted. The backends only read and write rows.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::record::{rfc3339, CaseReport, Status};

use super::model::{Claim, FlakyCase, FlakyRow, Resumed};

/// How long a `running` run holds without its process marking it alive, when `[store]
/// lease` does not say: after that (on any host) it is taken to be abandoned.
pub(crate) const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// How often a process marks its running runs alive: three times per lease, so that a
/// late heartbeat or two never lets a live run's lease lapse.
pub(crate) fn heartbeat(lease: std::time::Duration) -> std::time::Duration {
    lease / 3
}

/// A run's columns once its case ended.
pub(crate) struct RunEnd {
    /// The seed's lifecycle status: `completed` or `error`.
    pub(crate) status: &'static str,
    /// agentest's status.
    pub(crate) verdict: &'static str,
    /// When it ended (RFC 3339).
    pub(crate) completed_at: String,
    /// When it started: its end less its duration (a run claimed when it started keeps
    /// the claim's time).
    pub(crate) started_at: String,
    pub(crate) success: Option<bool>,
    pub(crate) score: Option<f64>,
    pub(crate) reason: Option<String>,
    pub(crate) error: Option<String>,
    /// The seed's messages, as JSON.
    pub(crate) messages: String,
    /// Latency, usage, cost, stability and the input hash, as JSON.
    pub(crate) metadata: String,
    /// The whole report line.
    pub(crate) record: String,
    /// A matrix case's parameters, as JSON.
    pub(crate) parameters: Option<String>,
    /// The case file (without its line).
    pub(crate) file: String,
    /// Whose fault it was that it did not pass.
    pub(crate) blame: Option<&'static str>,
    /// A repeated case whose repeats both passed and failed.
    pub(crate) flaky: bool,
    /// Its `run_usage` rows: each role that spent or replayed anything.
    pub(crate) usage: Vec<RoleUsage>,
    /// The currency its costs are in, when it was priced.
    pub(crate) currency: Option<String>,
}

/// One `run_usage` row: a role's tokens and cost, spent and replayed. The migration to
/// schema 10 fills the rows of runs stored before from their metadata with
/// `backend::usage_rows_sql`, to the same figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoleUsage {
    pub(crate) role: &'static str,
    pub(crate) tokens: i64,
    pub(crate) replayed_tokens: i64,
    pub(crate) cost: Option<f64>,
    pub(crate) replayed_cost: Option<f64>,
}

/// A report's `run_usage` rows (see [`RoleUsage`]).
fn usage_of(r: &CaseReport) -> Vec<RoleUsage> {
    super::model::ROLES
        .iter()
        .filter_map(|role| {
            let tokens = |u: &std::collections::BTreeMap<
                crate::protocol::Role,
                crate::protocol::TokenUsage,
            >| {
                u.get(role)
                    .map_or(0, |t| (t.prompt_tokens + t.completion_tokens) as i64)
            };
            let cost = r.cost.as_ref().and_then(|c| c.by_role.get(role));
            let row = RoleUsage {
                role: role.name(),
                tokens: tokens(&r.usage),
                replayed_tokens: tokens(&r.replayed_usage),
                cost: cost.and_then(|c| c.spent),
                replayed_cost: cost.and_then(|c| c.replayed),
            };
            let some = |v: Option<f64>| v.is_some_and(|v| v > 0.0);
            (row.tokens > 0 || row.replayed_tokens > 0 || some(row.cost) || some(row.replayed_cost))
                .then_some(row)
        })
        .collect()
}

impl RunEnd {
    pub(crate) fn of(r: &CaseReport) -> RunEnd {
        let now = std::time::SystemTime::now();
        let (status, success) = lifecycle(r.status);
        // A case with criteria has EvalStudio's result: its score and reason.
        let reason = match (&r.result, r.status) {
            (Some(res), _) => Some(res.reason.clone()),
            (None, Status::Passed) => Some("passed".to_string()),
            (None, _) => r.error.clone(),
        };
        // Written straight from the report (no JSON tree built first): this runs for
        // every case, on the store's thread.
        let metadata = Metadata {
            latency_ms: r.duration_ms,
            usage: &r.usage,
            replayed_usage: &r.replayed_usage,
            model_calls: r.model_calls,
            replayed_calls: r.replayed_calls,
            cassette: &r.cassette,
            cost: &r.cost,
            stability: &r.stability,
            input_hash: &r.input_hash,
        };
        RunEnd {
            status,
            verdict: status_word(r.status),
            completed_at: rfc3339(now),
            started_at: rfc3339(
                now.checked_sub(std::time::Duration::from_millis(r.duration_ms))
                    .unwrap_or(now),
            ),
            success,
            score: r.result.as_ref().and_then(|res| res.score),
            reason,
            error: matches!(status, "error").then(|| r.error.clone()).flatten(),
            messages: serde_json::to_string(&Messages(&r.turns)).unwrap_or_default(),
            metadata: serde_json::to_string(&metadata).unwrap_or_default(),
            record: serde_json::to_string(r).unwrap_or_default(),
            parameters: (!r.parameters.is_empty())
                .then(|| Value::Object(r.parameters.clone()).to_string()),
            file: r.location.split(':').next().unwrap_or_default().to_string(),
            blame: r.blame.as_ref().map(|b| b.party.name()),
            flaky: r
                .stability
                .as_ref()
                .is_some_and(|st| st.passed > 0 && st.failed > 0),
            usage: usage_of(r),
            currency: r.cost.as_ref().map(|c| c.currency.clone()),
        }
    }
}

/// The seed's status for agentest's: a verdict is `completed` (failed ones with
/// `success` false), what could not run properly is `error`; a skipped case is
/// `completed` with no verdict.
fn lifecycle(s: Status) -> (&'static str, Option<bool>) {
    match s {
        Status::Passed => ("completed", Some(true)),
        Status::Failed => ("completed", Some(false)),
        // A verdict nobody could give: ended, with no success either way.
        Status::Skipped | Status::Inconclusive => ("completed", None),
        Status::Error | Status::Timeout => ("error", None),
    }
}

/// Whether a run's status (the seed's lifecycle word) is an end: `completed` or `error`.
pub(crate) fn ended(status: &str) -> bool {
    matches!(status, "completed" | "error")
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Error => "error",
        Status::Skipped => "skipped",
        Status::Timeout => "timeout",
        Status::Inconclusive => "inconclusive",
    }
}

/// A run's metadata column: latency, usage, cost, stability and the input hash, in
/// this order.
#[derive(serde::Serialize)]
struct Metadata<'a> {
    latency_ms: u64,
    usage: &'a std::collections::BTreeMap<crate::protocol::Role, crate::protocol::TokenUsage>,
    replayed_usage:
        &'a std::collections::BTreeMap<crate::protocol::Role, crate::protocol::TokenUsage>,
    model_calls: u32,
    replayed_calls: u32,
    cassette: &'a Option<crate::record::CassetteStats>,
    cost: &'a Option<crate::record::Cost>,
    stability: &'a Option<crate::record::Stability>,
    input_hash: &'a Option<String>,
}

/// The conversation as the seed's messages: each turn's user message and the reply
/// (text as it is; a structured reply as its JSON text).
struct Messages<'a>(&'a [crate::record::TurnReport]);

impl serde::Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        #[derive(serde::Serialize)]
        struct Message<'a> {
            role: &'static str,
            content: Option<std::borrow::Cow<'a, str>>,
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len() * 2))?;
        for t in self.0 {
            seq.serialize_element(&Message {
                role: "user",
                content: Some(std::borrow::Cow::Borrowed(&t.input)),
            })?;
            let content = match &t.output {
                Value::String(s) => Some(std::borrow::Cow::Borrowed(s.as_str())),
                Value::Null => None,
                other => Some(std::borrow::Cow::Owned(other.to_string())),
            };
            seq.serialize_element(&Message {
                role: "assistant",
                content,
            })?;
        }
        seq.end()
    }
}

/// Who claims: this process on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) pid: u32,
    pub(crate) host: &'static str,
}

impl Owner {
    pub(crate) fn me() -> Owner {
        Owner {
            pid: std::process::id(),
            host: host(),
        }
    }

    /// The answer to a claim that found the run taken, by the owner its row names
    /// (`None`: the trial was never queued). The run's unique key (execution, trial) is
    /// shared by every case of one name, so a claim this process already holds is no
    /// other process's run.
    pub(crate) fn claim_lost_to(self, owner: Option<(Option<i64>, Option<String>)>) -> Claim {
        match owner {
            // Never queued: nobody else has it, so it runs here, as without a store.
            None => Claim::Granted,
            Some((Some(pid), Some(host))) if pid == i64::from(self.pid) && host == self.host => {
                Claim::Twice
            }
            Some(_) => Claim::Elsewhere,
        }
    }
}

/// This machine's name, to tell whose `running` runs a dead process left.
fn host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_default()
    })
}

/// When a heartbeat older than this makes a running run abandoned (RFC 3339).
pub(crate) fn lease_cutoff(lease: std::time::Duration) -> String {
    rfc3339(std::time::SystemTime::now() - lease)
}

/// Whether a `running` run with this owner and last heartbeat was left by a dead
/// process: on this host, its process is gone; on any host, it has not marked the run
/// alive within the lease (`cutoff`).
pub(crate) fn abandoned(
    pid: Option<i64>,
    owner_host: Option<&str>,
    beat: Option<&str>,
    cutoff: &str,
) -> bool {
    let me = Owner::me();
    let stale = beat.is_none_or(|b| b < cutoff);
    let gone =
        owner_host == Some(me.host) && pid.is_some_and(|p| p != i64::from(me.pid) && !alive(p));
    stale || gone
}

/// Whether a process with this id runs on this machine.
fn alive(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sorts a resumed execution's ended runs (id, trial, record) by the cases `present`
/// now (trial to `input_hash`): kept while their case is there unchanged, left out when
/// it is gone, and queued again (the ids returned) when it changed or its record cannot
/// be read.
pub(crate) fn sort_ended(
    rows: Vec<(i64, String, Option<String>)>,
    present: &HashMap<String, Option<String>>,
) -> (Resumed, Vec<i64>) {
    let mut resumed = Resumed::default();
    let mut again = Vec::new();
    for (id, trial, record) in rows {
        let Some(now) = present.get(&trial) else {
            resumed.gone.push(trial);
            continue;
        };
        let record = record.and_then(|r| serde_json::from_str::<CaseReport>(&r).ok());
        match record {
            // A line that did not load has no hash: it is read again, as it is now.
            Some(r) if r.input_hash.is_some() && r.input_hash == *now => resumed.ended.push(r),
            _ => {
                again.push(id);
                resumed.stale.push(trial);
            }
        }
    }
    (resumed, again)
}

/// The git folder of the repository `from` is in (a worktree's own folder).
fn git_dir(from: &Path) -> Option<std::path::PathBuf> {
    let from = std::path::absolute(from).ok()?;
    let git = from
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    // A worktree's `.git` is a file naming the real folder.
    if git.is_file() {
        let text = std::fs::read_to_string(&git).ok()?;
        let dir = text.strip_prefix("gitdir:")?.trim();
        return Some(git.parent()?.join(dir));
    }
    Some(git)
}

/// The branch checked out in the repository `from` is in; None when HEAD is detached
/// (as on most CIs) or there is no repository.
pub(crate) fn git_branch(from: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir(from)?.join("HEAD")).ok()?;
    let name = head.trim().strip_prefix("ref:")?.trim();
    Some(name.strip_prefix("refs/heads/").unwrap_or(name).to_string())
}

/// The commit checked out in the repository around `from`, read from `.git` (no `git`
/// process): `HEAD`, the branch's ref file or `packed-refs`.
pub(crate) fn git_commit(from: &Path) -> Option<String> {
    let git = git_dir(from)?;
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref:").map(str::trim) else {
        return Some(head.to_string()).filter(|h| h.len() >= 40);
    };
    if let Ok(id) = std::fs::read_to_string(git.join(name)) {
        return Some(id.trim().to_string());
    }
    // A worktree keeps refs in the common folder.
    let common = std::fs::read_to_string(git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or(git);
    if let Ok(id) = std::fs::read_to_string(common.join(name)) {
        return Some(id.trim().to_string());
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (id, r) = l.split_once(' ')?;
        (r == name).then(|| id.to_string())
    })
}

/// The cases among `rows` (by trial, then execution) whose verdict was `passed` in some
/// executions and `failed` in others, with the same definition (the record's
/// `input_hash`).
pub(crate) fn flaky(rows: Vec<FlakyRow>) -> Vec<FlakyCase> {
    type History = Vec<(i64, String, f64)>;
    let mut by_case: std::collections::BTreeMap<(String, Option<String>), History> =
        Default::default();
    for (execution, trial, input, verdict, rate) in rows {
        let rate = rate.unwrap_or(if verdict == "passed" { 1.0 } else { 0.0 });
        by_case
            .entry((trial, input))
            .or_default()
            .push((execution, verdict, rate));
    }
    by_case
        .into_iter()
        .filter(|(_, h)| {
            h.iter().any(|(_, v, _)| v == "passed") && h.iter().any(|(_, v, _)| v == "failed")
        })
        .map(|((trial, _), history)| FlakyCase { trial, history })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::record::TurnReport;

    use super::Messages;

    /// The seed's messages, streamed from the turns, are the ones the JSON tree gave:
    /// the user's input, then the reply as text (structured replies as their JSON
    /// text, no reply as null).
    #[test]
    fn messages_are_each_turns_input_then_its_reply() {
        let turn = |input: &str, output: Value| TurnReport {
            input: input.into(),
            output,
            ..TurnReport::default()
        };
        let turns = [
            turn("hi \"there\"", json!("hello\n")),
            turn("order", json!({"id": 7})),
            turn("silence", Value::Null),
        ];
        let written: Value =
            serde_json::from_str(&serde_json::to_string(&Messages(&turns)).unwrap()).unwrap();
        assert_eq!(
            written,
            json!([
                {"role": "user", "content": "hi \"there\""},
                {"role": "assistant", "content": "hello\n"},
                {"role": "user", "content": "order"},
                {"role": "assistant", "content": "{\"id\":7}"},
                {"role": "user", "content": "silence"},
                {"role": "assistant", "content": null},
            ])
        );
    }
}
