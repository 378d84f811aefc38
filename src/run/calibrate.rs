//! Calibrating a judge: every item of a labelled set judged `runs` times by a
//! `[judges.NAME]` exactly as a run would judge it, and the verdicts compared with the
//! labels ([`crate::check::calibration`] computes the figures).
//!
//! Each judgment has a cassette of its own,
//! `<labels folder>/.cassettes/<labels stem>/<id>#<k>.jsonl`, so a calibration replays
//! offline under the run's cassette mode, and its repeats are separate recordings (a
//! repeat replayed from the first's recording could never flip).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::agent::CaseScope;
use crate::case::{JudgeChoice, JudgeRef, ModelSettings};
use crate::check::calibration::{figures, meets, Figures, Said};
use crate::check::judge::JudgeRequest;
use crate::check::jury::decide;
use crate::llm::ModelCalls;
use crate::protocol::Role;
use crate::run::context::Context;
use crate::run::roles::judge::CaseJudges;
use crate::source::LabelledItem;

/// What `agentest calibrate` reports, and the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CalibrationReport {
    /// The `[judges.NAME]` name.
    pub(crate) judge: String,
    /// What the judge was (see [`crate::run::roles::judge::fingerprint`]).
    pub(crate) fingerprint: String,
    /// The labelled set.
    pub(crate) labels: String,
    /// When, RFC 3339.
    pub(crate) calibrated_at: String,
    /// Accuracy, κ, flip rate, confusion matrix.
    pub(crate) figures: Figures,
    /// The judge's bar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_kappa: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_accuracy: Option<f64>,
    /// Why the figures fall short of the bar; `None` when they meet it (or it has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) short_of_bar: Option<String>,
    /// The items a judgment got wrong (or left undecided), with what each run said.
    #[serde(default)]
    pub(crate) wrong: Vec<WrongItem>,
    /// Model calls made, and of those answered from cassettes.
    pub(crate) model_calls: u32,
    pub(crate) replayed_calls: u32,
    /// Tokens spent (not replayed).
    pub(crate) tokens: u64,
    /// What the calls cost, when the endpoints have prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) currency: Option<String>,
}

/// An item some judgment disagreed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WrongItem {
    pub(crate) id: String,
    /// Its line in the labelled set.
    pub(crate) line: usize,
    /// The person's label.
    pub(crate) label: String,
    /// What each run said: `pass`, `fail`, `undecided` or `error`.
    pub(crate) said: Vec<String>,
    /// The judge's reason (or the error) of each run.
    pub(crate) reasons: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) notes: Option<String>,
}

/// How long one judgment may take.
const JUDGMENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Calibrates the judge `name` of `ctx`'s config on `items` from `labels`: each judged
/// `runs` times, at most `parallel` judgments at once.
pub(crate) async fn calibrate(
    ctx: Arc<Context>,
    name: &str,
    labels: &Path,
    items: Vec<LabelledItem>,
    runs: u32,
    parallel: usize,
) -> Result<CalibrationReport, String> {
    let def = ctx.config.judges.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = ctx.config.judges.keys().map(String::as_str).collect();
        format!(
            "no [judges.\"{name}\"] table in {} (its judges: {}); define the judge there first",
            ctx.config.describe(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )
    })?;
    let cassettes = cassette_dir(labels);
    let items = Arc::new(items);
    let limit = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..items.len() {
        for k in 1..=runs {
            let (ctx, items, limit, name) =
                (ctx.clone(), items.clone(), limit.clone(), name.to_string());
            let cassette = cassettes.join(format!(
                "{}#{k}.jsonl",
                crate::util::file_name_for_id(&items[i].id)
            ));
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let (said, reason, stats, fingerprint) =
                    judge_once(&ctx, &name, &items[i], cassette).await;
                (i, k, said, reason, stats, fingerprint)
            });
        }
    }
    let mut said = vec![vec![Said::Error; runs as usize]; items.len()];
    let mut reasons = vec![vec![String::new(); runs as usize]; items.len()];
    let (mut calls, mut replayed, mut tokens) = (0u32, 0u32, 0u64);
    let mut cost: Option<f64> = Some(0.0);
    let mut priced = false;
    let mut fingerprint = None;
    while let Some(done) = tasks.join_next().await {
        let (i, k, s, reason, stats, fp) =
            done.map_err(|e| format!("a judgment stopped unexpectedly: {e}"))?;
        said[i][k as usize - 1] = s;
        reasons[i][k as usize - 1] = reason;
        calls += stats.calls;
        replayed += stats.replayed_calls;
        tokens += stats.usage.values().map(|u| u.total()).sum::<u64>();
        for c in stats.cost.values() {
            priced = true;
            cost = cost.zip(c.spent).map(|(a, b)| a + b);
        }
        match (fp, &fingerprint) {
            (Err(e), _) => return Err(format!("the judge `judges:{name}` cannot be reached: {e}")),
            (Ok(fp), None) => fingerprint = Some(fp),
            (Ok(_), Some(_)) => {}
        }
    }
    let judged: Vec<(bool, Vec<Said>)> = items
        .iter()
        .zip(&said)
        .map(|(it, s)| (it.label, s.clone()))
        .collect();
    let figures = figures(&judged);
    let wrong = items
        .iter()
        .zip(said.iter().zip(&reasons))
        .filter(|(it, (s, _))| {
            s.iter()
                .any(|x| *x != if it.label { Said::Pass } else { Said::Fail })
        })
        .map(|(it, (s, r))| WrongItem {
            id: it.id.clone(),
            line: it.location.line,
            label: if it.label { "pass" } else { "fail" }.into(),
            said: s.iter().map(|x| said_name(*x).to_string()).collect(),
            reasons: r.clone(),
            notes: it.notes.clone(),
        })
        .collect();
    let short_of_bar = meets(&figures, def.min_kappa, def.min_accuracy).err();
    Ok(CalibrationReport {
        judge: name.to_string(),
        fingerprint: fingerprint.unwrap_or_default(),
        labels: labels.display().to_string(),
        calibrated_at: crate::record::rfc3339(std::time::SystemTime::now()),
        figures,
        min_kappa: def.min_kappa,
        min_accuracy: def.min_accuracy,
        short_of_bar,
        wrong,
        model_calls: calls,
        replayed_calls: replayed,
        tokens,
        cost: cost.filter(|_| priced),
        currency: ctx.currency.clone(),
    })
}

fn said_name(s: Said) -> &'static str {
    match s {
        Said::Pass => "pass",
        Said::Fail => "fail",
        Said::Undecided => "undecided",
        Said::Error => "error",
    }
}

/// `<labels folder>/.cassettes/<labels stem>/`.
fn cassette_dir(labels: &Path) -> PathBuf {
    let stem = labels
        .file_stem()
        .map_or_else(|| "labels".into(), |s| s.to_string_lossy().into_owned());
    labels
        .parent()
        .unwrap_or(Path::new("."))
        .join(".cassettes")
        .join(stem)
}

/// One judgment of one item: what was said, the reason (or the error), the calls'
/// figures, and the judge's fingerprint.
async fn judge_once(
    ctx: &Context,
    name: &str,
    item: &LabelledItem,
    cassette: PathBuf,
) -> (Said, String, crate::llm::CallStats, Result<String, String>) {
    let calls = Arc::new(ModelCalls::new(cassette, ctx.cassettes));
    let scope = CaseScope {
        calls: calls.clone(),
        mocks: Vec::new(),
        seed: ctx.seed,
        salt: item.id.clone(),
        live: false,
        deadline: Instant::now() + JUDGMENT_TIMEOUT,
        role: Role::Judge,
        trace: Default::default(),
        workdir: None,
        source_llms: None,
        tracer: None,
    };
    // The judge as it is, not as a run under `require_calibrated_judges` would trust it.
    let judges = CaseJudges {
        ctx,
        scope: &scope,
        check_calibration: false,
    };
    let request = JudgeRequest {
        input: item.input.clone(),
        conversation: item.conversation.clone(),
        ..JudgeRequest::new(item.criteria.clone(), item.reply.clone())
    };
    let choice = JudgeChoice {
        judges: vec![JudgeRef::Named(name.to_string())],
        ..JudgeChoice::default()
    };
    let model = ModelSettings::default();
    let fingerprint = judges.named_fingerprint(name).map_err(|e| e.to_string());
    let outcome = match crate::check::jury::Judges::panel(&judges, &choice, &model).await {
        Ok(panel) => decide(&judges, &panel, &request).await.map_err(|u| u.error),
        Err(e) => Err(e),
    };
    let (said, reason) = match outcome {
        Ok(d) => (Said::from(d.passed), d.judgment.reason),
        Err(e) => (Said::Error, e.to_string()),
    };
    let finished = calls.finish();
    let reason = match finished {
        Err(e) => format!("{reason}; cassette: {e}"),
        Ok(_) => reason,
    };
    (said, reason, calls.stats(), fingerprint)
}
