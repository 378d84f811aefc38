//! A case's model calls: replayed from its cassette or sent to the endpoint and
//! recorded, with usage and retries counted by role.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::cassette::{canonical, key_of, Cassette, Entry};
use super::limiter::SlotWait;
use super::spend::Meters;
use super::{ChatOutcome, ChatRequest, Endpoint};
use crate::config::CassetteMode;
use crate::errors::LlmError;
use crate::protocol::{Role, TokenUsage};
use crate::record::{CassetteStats, ModelUse, RoleCost};
use crate::settings::on_ci;
use crate::util::clip;

/// Counters of a case's model calls, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallStats {
    /// Calls made (replayed ones included).
    pub calls: u32,
    /// Retries the endpoint needed.
    pub retries: u32,
    /// Token usage by role of the calls sent to a model (spent).
    pub usage: BTreeMap<Role, TokenUsage>,
    /// Calls answered from the cassette.
    pub replayed_calls: u32,
    /// Token usage by role of the calls answered from the cassette (not spent).
    pub replayed: BTreeMap<Role, TokenUsage>,
    /// What the calls cost by role, spent and replayed (unknown where one had no price).
    pub cost: BTreeMap<Role, RoleCost>,
    /// The models called, once per role, endpoint and settings (the record's
    /// `provenance.models`).
    pub models: Vec<crate::record::ModelUse>,
}

/// The model calls of one case.
#[derive(Debug)]
pub(crate) struct ModelCalls {
    path: PathBuf,
    mode: CassetteMode,
    cassette: Mutex<Option<Cassette>>,
    stats: Mutex<CallStats>,
    /// Time these calls waited for a slot at their endpoints.
    slot_wait: SlotWait,
    /// The budgets the calls spend under.
    meters: Meters,
    /// Which repeat of its case this is, from 1: a built-in simulator's sampling seed
    /// is offset by it, so each repeat is its own conversation.
    repeat: u32,
}

impl ModelCalls {
    /// Calls for a case whose cassette is `path`, in `mode`. Nothing is read until the
    /// first call, so cases that never call a model never touch a file.
    pub(crate) fn new(path: PathBuf, mode: CassetteMode) -> Self {
        ModelCalls {
            path,
            mode,
            cassette: Mutex::new(None),
            stats: Mutex::new(CallStats::default()),
            slot_wait: SlotWait::default(),
            meters: Meters::default(),
            repeat: 1,
        }
    }

    /// The same calls spending under `meters`, as repeat `repeat` (from 1) of its case.
    pub(crate) fn spending(mut self, meters: Meters, repeat: u32) -> Self {
        self.meters = meters;
        self.repeat = repeat.max(1);
        self
    }

    /// Counts what something else spent for the case (an agent's reported usage).
    pub(crate) fn spend(&self, usage: TokenUsage, cost: Option<f64>) {
        self.meters.add(usage, cost);
    }

    /// How long these calls waited for a slot at an endpoint (one under way included),
    /// at which endpoint and with what in-flight limit; `None` when not noticeably.
    pub(crate) fn slot_wait(&self) -> Option<(std::time::Duration, String, usize)> {
        self.slot_wait.waited()
    }

    /// Answers a chat request: from the cassette when it holds it, else from the
    /// endpoint (recording the answer), as the cassette mode allows.
    pub(crate) async fn chat(
        &self,
        endpoint: &Endpoint,
        role: Role,
        request: &ChatRequest,
        deadline: Instant,
    ) -> Result<ChatOutcome, LlmError> {
        let reseeded = self.reseeded(role, request);
        let request = reseeded.as_ref().unwrap_or(request);
        self.note_use(endpoint, role, request);
        let (key, normalised) = keyed(request)?;
        if self.mode != CassetteMode::Off {
            if let Some(outcome) = self.replay(endpoint, role, request, &key, &normalised)? {
                return Ok(outcome);
            }
        }
        if self.meters.shared() {
            super::spend::learn_spent_elsewhere().await;
        }
        self.meters
            .check(endpoint.pricing().is_some(), endpoint.what())
            .map_err(LlmError::from)?;
        let on_retry = || self.stats.lock().unwrap_or_else(|e| e.into_inner()).retries += 1;
        let outcome = match endpoint
            .call_counting(request, deadline, &on_retry, &self.slot_wait)
            .await
        {
            Ok(o) => o,
            Err(LlmError::Unavailable(why)) => return Err(self.unreachable(&why)),
            Err(LlmError::Refused(refusal)) => {
                // A refusal is part of the recording: a replay gives the same error, not
                // "no recording" (and re-recording would hit the same refusal).
                self.record(Entry {
                    key,
                    role,
                    request: normalised,
                    response: Value::Null,
                    error: Some(refusal.clone()),
                })?;
                return Err(LlmError::Refused(refusal));
            }
            Err(e) => return Err(e),
        };
        self.count(endpoint, role, &outcome, false);
        self.record(Entry {
            key,
            role,
            request: normalised,
            response: outcome.response.clone(),
            error: None,
        })?;
        Ok(outcome)
    }

    /// Notes the model `request` calls, with its settings, unless already noted.
    fn note_use(&self, endpoint: &Endpoint, role: Role, request: &ChatRequest) {
        let rf = request.response_format.as_ref();
        let response_format = rf.and_then(|rf| match (rf["type"].as_str(), rf.get("schema")) {
            (Some("json_object"), Some(_)) => Some("json_object_schema".to_string()),
            (Some(t), _) => Some(t.to_string()),
            (None, _) => None,
        });
        let mut used = ModelUse {
            role,
            endpoint: endpoint.shown().to_string(),
            model: request.model.clone(),
            temperature: request.temperature,
            seed: request.seed,
            response_format,
            prompt: String::new(),
        };
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        // Once per role, endpoint and settings: the instructions' fingerprint is the
        // first call's.
        let same = |m: &ModelUse| {
            (
                m.role,
                &m.endpoint,
                &m.model,
                m.temperature,
                m.seed,
                &m.response_format,
            ) == (
                used.role,
                &used.endpoint,
                &used.model,
                used.temperature,
                used.seed,
                &used.response_format,
            )
        };
        if stats.models.iter().any(same) {
            return;
        }
        let instructions = request
            .messages
            .first()
            .filter(|m| m["role"] == "system")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        if !instructions.is_empty() {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(instructions.as_bytes());
            used.prompt = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        }
        stats.models.push(used);
    }

    /// `request` as this repeat sends it: each repeat's simulated user samples with
    /// its own seed. `None`: as it is.
    fn reseeded(&self, role: Role, request: &ChatRequest) -> Option<ChatRequest> {
        match request.seed {
            Some(seed) if role == Role::Simulator && self.repeat > 1 => {
                let mut r = request.clone();
                r.seed = Some(seed.wrapping_add(u64::from(self.repeat - 1)));
                Some(r)
            }
            _ => None,
        }
    }

    /// Whether the cassette holds an answer (a response or a refusal) to `request`, as
    /// [`ModelCalls::chat`] would send it; false when cassettes are off or being
    /// recorded anew.
    pub(crate) fn recorded(&self, role: Role, request: &ChatRequest) -> Result<bool, LlmError> {
        if matches!(self.mode, CassetteMode::Off | CassetteMode::Record) {
            return Ok(false);
        }
        let reseeded = self.reseeded(role, request);
        let (key, _) = keyed(reseeded.as_ref().unwrap_or(request))?;
        self.with_cassette(|c| Ok(c.holds(&key)))
    }

    /// The cassette's answer to a call: its recorded response or refusal, or, when the
    /// mode forbids calling the endpoint, why not. `None`: the endpoint is to be called.
    fn replay(
        &self,
        endpoint: &Endpoint,
        role: Role,
        request: &ChatRequest,
        key: &str,
        normalised: &Value,
    ) -> Result<Option<ChatOutcome>, LlmError> {
        let replayed = self.with_cassette(|c| c.replay(key, normalised))?;
        match replayed {
            Some(Ok(response)) => {
                let outcome = ChatOutcome {
                    response,
                    retries: 0,
                };
                self.count(endpoint, role, &outcome, true);
                return Ok(Some(outcome));
            }
            // The endpoint refused this call when it was recorded: so it does again.
            Some(Err(refusal)) => {
                self.stats
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .replayed_calls += 1;
                return Err(LlmError::Refused(refusal));
            }
            None => {}
        }
        let refuse = match self.mode {
            CassetteMode::Replay | CassetteMode::Strict => {
                Some(format!("cassette mode {}", self.mode.name()))
            }
            CassetteMode::Auto if on_ci() => {
                // No key either: that is the reason to give.
                if let Some(why) = endpoint.unavailable() {
                    return Err(LlmError::Unavailable(format!(
                        "the case needs a model: no recording in {}, and {why}",
                        crate::util::display_path(&self.path).display()
                    )));
                }
                Some("on CI (the CI variable is set)".to_string())
            }
            _ => None,
        };
        if let Some(why) = refuse {
            return Err(LlmError::NotRecorded(format!(
                    "no recording of this model call in {} ({why}): {}\nhint: record it where the model is reachable: AGENTEST_CASSETTES=record {}, with the API key set, then commit the cassette",
                    crate::util::display_path(&self.path).display(),
                    summary(request),
                    crate::util::invocation::get()
                )));
        }
        Ok(None)
    }

    /// A call the endpoint could not take, with why the cassette did not answer it.
    fn unreachable(&self, why: &str) -> LlmError {
        let recorded = match self.mode {
            CassetteMode::Off => "cassettes are off".to_string(),
            CassetteMode::Record => "the cassette mode is record".to_string(),
            _ => format!(
                "no recording in {}",
                crate::util::display_path(&self.path).display()
            ),
        };
        LlmError::Unavailable(format!("the case needs a model: {recorded}, and {why}"))
    }

    /// Adds a call's response or refusal to the cassette, when cassettes are on.
    fn record(&self, entry: Entry) -> Result<(), LlmError> {
        if self.mode != CassetteMode::Off {
            self.with_cassette(|c| {
                c.record(entry);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Whether the case's agent turns are replayed from the cassette rather than sent
    /// (cassette modes `replay` and `strict`, for agents whose traces are read).
    pub(crate) fn replays_agent_turns(&self) -> bool {
        matches!(self.mode, CassetteMode::Replay | CassetteMode::Strict)
    }

    /// The recorded answer to an agent turn (`request` normalised by the caller), when
    /// the cassette holds it.
    pub(crate) fn recorded_turn(&self, request: &Value) -> Result<Option<Value>, LlmError> {
        let normalised = canonical(request);
        let key = key_of(&normalised);
        let replayed = self.with_cassette(|c| c.replay(&key, &normalised))?;
        // Not a model call: the run's model-call counts leave it out.
        match replayed {
            Some(Ok(response)) => Ok(Some(response)),
            Some(Err(_)) | None => Ok(None),
        }
    }

    /// Whether agent turns are recorded: in mode `record` only. (Not in `auto`: a
    /// turn's spans carry timings that differ every run, and an agent turn recorded on
    /// every run would rewrite the cassette each time.)
    pub(crate) fn records_agent_turns(&self) -> bool {
        self.mode == CassetteMode::Record
    }

    /// Records an agent turn's answer (mode `record`).
    pub(crate) fn record_turn(&self, request: &Value, response: Value) -> Result<(), LlmError> {
        if !self.records_agent_turns() {
            return Ok(());
        }
        let normalised = canonical(request);
        let entry = Entry {
            key: key_of(&normalised),
            role: Role::Agent,
            request: normalised,
            response,
            error: None,
        };
        self.with_cassette(|c| {
            c.record(entry);
            Ok(())
        })
    }

    /// The cassette file, for messages.
    pub(crate) fn cassette_shown(&self) -> String {
        crate::util::display_path(&self.path).display().to_string()
    }

    fn with_cassette<T>(
        &self,
        f: impl FnOnce(&mut Cassette) -> Result<T, LlmError>,
    ) -> Result<T, LlmError> {
        let mut slot = self.cassette.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(Cassette::open(&self.path, self.mode)?);
        }
        f(slot.as_mut().expect("opened above"))
    }

    fn count(&self, endpoint: &Endpoint, role: Role, outcome: &ChatOutcome, replayed: bool) {
        let usage = outcome.usage();
        let cost = endpoint.pricing().map(|p| p.cost(usage));
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        // Retries are counted as they happen (see `chat`), failed calls' included.
        s.calls += 1;
        let priced = s.cost.entry(role).or_default();
        if replayed {
            priced.add_replayed(cost);
            s.replayed_calls += 1;
            s.replayed.entry(role).or_default().add(usage);
        } else {
            priced.add_spent(cost);
            s.usage.entry(role).or_default().add(usage);
            drop(s);
            self.meters.add(usage, cost);
        }
    }

    /// Counts a retry of something else the case called (an HTTP agent).
    pub(crate) fn count_retry(&self) {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).retries += 1;
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> CallStats {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Ends the case: writes what was recorded; `None` when no model was called.
    pub(crate) fn finish(&self) -> Result<Option<CassetteStats>, LlmError> {
        let taken = self
            .cassette
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        taken.map(Cassette::finish).transpose()
    }
}

/// A one-line summary of a request, for "no recording" messages.
fn summary(request: &ChatRequest) -> String {
    let last = request
        .messages
        .last()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or("?");
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Null => "(tool calls)".into(),
                other => other.to_string(),
            };
            format!("{role}: {}", clip(&content.replace('\n', " ")))
        })
        .unwrap_or_default();
    format!(
        "model {}, {} messages, {} tools, last {last}",
        request.model,
        request.messages.len(),
        request.tools.len()
    )
}

/// A request's cassette key and its canonical form.
fn keyed(request: &ChatRequest) -> Result<(String, Value), LlmError> {
    let normalised =
        canonical(&serde_json::to_value(request).map_err(|e| LlmError::Failed(e.to_string()))?);
    Ok((key_of(&normalised), normalised))
}
