//! `evalstudio.config.json`: a project (EvalStudio's version 2, one file per project,
//! its store in `data/`) or a workspace (version 3: `projects`, each stored in
//! `projects/<id>/data/`), and what `llmSettings` says about the judge's and the
//! simulated user's models.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::records::{provider, records};
use crate::case::{Provider, SourceLlms};
use crate::errors::CaseError;
use crate::source::document::Document;
use crate::source::fields::check_keys;
use crate::util::type_of;
use crate::util::ApiKey;

const CONFIG_KEYS: [&str; 6] = [
    "version",
    "name",
    "projects",
    "llmSettings",
    "maxConcurrency",
    "storage",
];
/// The config versions EvalStudio has written; another may lay out its store otherwise.
const KNOWN_VERSIONS: [u64; 2] = [2, 3];
const PROJECT_KEYS: [&str; 4] = ["id", "name", "llmSettings", "maxConcurrency"];

/// One project of a config file.
pub(super) struct ProjectEntry {
    /// The project's name, when the workspace holds several (it then names a level of
    /// the trials).
    pub(super) level: Option<String>,
    /// Its filesystem store.
    pub(super) store: PathBuf,
    /// Its `llmSettings` (the project's own, else the workspace's), as endpoints.
    pub(super) llms: Option<Result<Arc<SourceLlms>, CaseError>>,
}

/// The projects `doc` (an `evalstudio.config.json` in `dir`) describes.
pub(super) fn projects(doc: &Document, dir: &Path) -> Result<Vec<ProjectEntry>, CaseError> {
    let Value::Object(m) = &doc.value else {
        return Err(doc.error(
            "",
            format!("expected a JSON object, found {}", type_of(&doc.value)),
        ));
    };
    known_keys(doc, m, "", &CONFIG_KEYS, "an EvalStudio config")?;
    if let Some(v) = m.get("version") {
        if !v.as_u64().is_some_and(|n| KNOWN_VERSIONS.contains(&n)) {
            return Err(doc.error(
                "version",
                format!(
                    "unknown EvalStudio config version {v}; agentest reads versions {} (2: one project, its records in data/; 3: a workspace of `projects`)",
                    KNOWN_VERSIONS.map(|n| n.to_string()).join(" and ")
                ),
            ));
        }
    }
    if let Some(storage) = m.get("storage") {
        let kind = storage.get("type").and_then(Value::as_str);
        if kind != Some("filesystem") {
            return Err(doc.error(
                "storage",
                format!(
                    "this workspace keeps its records in {} storage; agentest reads EvalStudio's filesystem store only (`data/*.json`)",
                    kind.unwrap_or("an unknown")
                ),
            ));
        }
    }
    let Some(list) = m.get("projects") else {
        // Version 2: the config is the project's, beside its `data/`.
        return Ok(vec![ProjectEntry {
            level: None,
            store: dir.join("data"),
            llms: m
                .get("llmSettings")
                .map(|s| llms(doc, "llmSettings", s, &dir.join("data"))),
        }]);
    };
    let Value::Array(list) = list else {
        return Err(doc.error(
            "projects",
            format!(
                "expected an array of projects {{\"id\", \"name\"}}, found {}",
                type_of(list)
            ),
        ));
    };
    let several = list.len() > 1;
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let at = format!("projects[{i}]");
        let Value::Object(p) = p else {
            return Err(doc.error(&at, "expected a project {\"id\", \"name\"}"));
        };
        known_keys(doc, p, &at, &PROJECT_KEYS, "a project")?;
        let field = |key: &str, what: &str| -> Result<String, CaseError> {
            p.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| doc.error(&at, format!("a project needs `{key}` ({what})")))
        };
        let id = field(
            "id",
            "a string; it names the project's folder under projects/",
        )?;
        if !one_component(&id) {
            return Err(doc.error(
                &format!("{at}.id"),
                format!("project id \"{id}\" is not a folder name: the id names the project's folder under projects/, so it must be one path component (no `/` or `\\`, not `.` or `..`)"),
            ));
        }
        let name = field("name", "a string; it names the project's trials")?;
        let store = dir.join("projects").join(&id).join("data");
        // The project's own settings replace the workspace's whole.
        let settings = match p.get("llmSettings") {
            Some(s) => Some((format!("{at}.llmSettings"), s)),
            None => m.get("llmSettings").map(|s| ("llmSettings".to_string(), s)),
        };
        out.push(ProjectEntry {
            level: several.then_some(name),
            llms: settings.map(|(path, s)| llms(doc, &path, s, &store)),
            store,
        });
    }
    Ok(out)
}

/// Whether `id` is one path component: a folder's name, never a way out of `projects/`.
fn one_component(id: &str) -> bool {
    let mut parts = Path::new(id).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) && !id.contains(['/', '\\'])
}

fn known_keys(
    doc: &Document,
    m: &Map<String, Value>,
    at: &str,
    known: &[&str],
    what: &str,
) -> Result<(), CaseError> {
    check_keys(m, known, at, what).map_err(|e| doc.error(&e.path, e.message))
}

/// `llmSettings` at `path` of `doc`: EvalStudio's current shape `{provider, apiKey,
/// models: {evaluation, persona}}`, or the older `{evaluation: {providerId, model},
/// persona: {...}}` whose providers are in the store's `llm-providers.json`.
fn llms(
    doc: &Document,
    path: &str,
    settings: &Value,
    store: &Path,
) -> Result<Arc<SourceLlms>, CaseError> {
    let Value::Object(s) = settings else {
        return Err(doc.error(
            path,
            format!(
                "expected an object {{\"provider\", \"apiKey\", \"models\"}}, found {}",
                type_of(settings)
            ),
        ));
    };
    // The older shape names its providers; the current one holds its own.
    let chosen = if s.contains_key("evaluation") && !s.contains_key("provider") {
        older_llms(doc, path, s, store)?
    } else {
        current_llms(doc, path, s)?
    };
    let Chosen {
        provider,
        key,
        judge,
        simulator,
    } = chosen;
    let provider = Provider::parse(&provider).ok_or_else(|| {
        doc.error(
            &format!("{path}.provider"),
            format!("unknown provider \"{provider}\"; EvalStudio has \"openai\" and \"anthropic\""),
        )
    })?;
    // EvalStudio's API shows keys shortened (`sk-1...cdef`): such a key, or none, means
    // the provider's variable.
    let api_key = key
        .filter(|k| !k.trim().is_empty() && !k.contains("..."))
        .map(ApiKey::new);
    Ok(Arc::new(SourceLlms {
        label: format!("{} {path}", doc.shown.display()),
        provider,
        judge,
        simulator,
        api_key,
    }))
}

/// The models `llmSettings` chooses, before they are checked: the provider's name, its
/// API key as written, and the judge's and the simulator's models.
struct Chosen {
    provider: String,
    key: Option<String>,
    judge: Option<String>,
    simulator: Option<String>,
}

/// The older `llmSettings`, `{evaluation: {providerId, model}, persona: {...}}`, its
/// provider found in the store's `llm-providers.json`.
fn older_llms(
    doc: &Document,
    path: &str,
    s: &Map<String, Value>,
    store: &Path,
) -> Result<Chosen, CaseError> {
    known_keys(doc, s, path, &["evaluation", "persona"], "`llmSettings`")?;
    let evaluation = model_choice(doc, s, path, "evaluation")?
        .ok_or_else(|| doc.error(path, "needs `evaluation`: {\"providerId\", \"model\"}"))?;
    let persona = model_choice(doc, s, path, "persona")?;
    let file = store.join("llm-providers.json");
    let providers = match Document::read(&file)? {
        Some(d) => records(&d, provider)?,
        None => Vec::new(),
    };
    let found = providers
        .iter()
        .filter_map(|p| p.as_ref().ok())
        .find(|p| p.id.as_deref() == Some(evaluation.0.as_str()))
        .ok_or_else(|| {
            doc.error(
                &format!("{path}.evaluation.providerId"),
                format!(
                    "\"{}\" is no provider's id in {}",
                    evaluation.0,
                    crate::util::display_path(&file).display()
                ),
            )
        })?;
    let persona_model = persona.and_then(|p| p.1);
    Ok(Chosen {
        provider: found.provider.clone(),
        key: found.api_key.clone(),
        judge: evaluation.1.clone(),
        simulator: persona_model.or(evaluation.1),
    })
}

/// The current `llmSettings`, `{provider, apiKey, models: {evaluation, persona}}`.
fn current_llms(doc: &Document, path: &str, s: &Map<String, Value>) -> Result<Chosen, CaseError> {
    known_keys(
        doc,
        s,
        path,
        &["provider", "apiKey", "models"],
        "`llmSettings`",
    )?;
    let provider = text(doc, s, "provider", path)?
        .ok_or_else(|| doc.error(path, "needs `provider`: \"openai\" or \"anthropic\""))?;
    let (mut judge, mut simulator) = (None, None);
    match s.get("models") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let at = format!("{path}.models");
            known_keys(doc, m, &at, &["evaluation", "persona"], "`models`")?;
            judge = text(doc, m, "evaluation", &at)?;
            simulator = text(doc, m, "persona", &at)?;
        }
        Some(other) => {
            return Err(doc.error(
                &format!("{path}.models"),
                format!(
                    "expected an object {{\"evaluation\", \"persona\"}}, found {}",
                    type_of(other)
                ),
            ))
        }
    }
    let simulator = simulator.or_else(|| judge.clone());
    Ok(Chosen {
        provider,
        key: text(doc, s, "apiKey", path)?,
        judge,
        simulator,
    })
}

/// The older shape's choice for `role` (`evaluation`, `persona`): the provider's id and
/// the model.
fn model_choice(
    doc: &Document,
    s: &Map<String, Value>,
    path: &str,
    role: &str,
) -> Result<Option<(String, Option<String>)>, CaseError> {
    let at = format!("{path}.{role}");
    match s.get(role) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(r)) => {
            known_keys(doc, r, &at, &["providerId", "model"], "a model choice")?;
            let id = text(doc, r, "providerId", &at)?.ok_or_else(|| {
                doc.error(
                    &at,
                    "needs `providerId`: the id of a provider in llm-providers.json",
                )
            })?;
            Ok(Some((id, text(doc, r, "model", &at)?)))
        }
        Some(other) => Err(doc.error(
            &at,
            format!(
                "expected an object {{\"providerId\", \"model\"}}, found {}",
                type_of(other)
            ),
        )),
    }
}

/// The string `key` of `m` (at `at`), or none when absent or null.
fn text(
    doc: &Document,
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, CaseError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(v)) => Ok(Some(v.clone())),
        Some(other) => Err(doc.error(
            &format!("{at}.{key}"),
            format!("expected a string, found {}", type_of(other)),
        )),
    }
}
