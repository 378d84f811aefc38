//! An EvalStudio project as trials: for each eval, each of its scenarios, each of the
//! scenario's personas (one run without a persona when it names none), one trial
//! `eval::scenario::persona`, named by the records' names, as EvalStudio's
//! `createRuns` makes one run each.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::config::{projects, ProjectEntry};
use super::records::{self, records, Connector, Eval, Persona, Record, Scenario, MESSAGE_EXTRAS};
use super::Listed;
use crate::case::{Case, EvalStudioRef, Location, Origin, PersonaRef, SourceLlms};
use crate::errors::{CaseError, FieldError};
use crate::source::document::Document;
use crate::source::jsonl::case_from_object;
use crate::source::{Loaded, SEPARATOR};
use crate::util::slug;

/// EvalStudio's scenario keys and the case keys they become.
const CASE_KEYS: [(&str, &str); 6] = [
    ("instructions", "instructions"),
    ("messages", "messages"),
    ("maxMessages", "max_messages"),
    ("successCriteria", "success_criteria"),
    ("failureCriteria", "failure_criteria"),
    ("failureCriteriaMode", "failure_criteria_mode"),
];

/// How a path under the suites root is named as a suite ([`crate::source::suite_name`]).
/// Handed in by the file reader rather than imported: discovery, which names suites,
/// knows every format, this one included.
pub(crate) type SuiteNamer = fn(&Path, &Path) -> String;

/// Loads what `file` (listed by [`super::listed`]) holds, trials named under `root`.
pub(crate) fn load(root: &Path, file: &Path, what: Listed, suite_name: SuiteNamer) -> Vec<Loaded> {
    let out = Out {
        file,
        prefix: prefix(suite_name(root, project_dir(file, what))),
    };
    match what {
        Listed::Config => match Document::read(file) {
            Ok(Some(doc)) => {
                let dir = file.parent().unwrap_or(Path::new("."));
                match projects(&doc, dir) {
                    Ok(list) => list.iter().flat_map(|p| out.project(p)).collect(),
                    Err(e) => vec![out.broken("evalstudio", "config", e)],
                }
            }
            Ok(None) => Vec::new(),
            Err(e) => vec![out.broken("evalstudio", "config", e)],
        },
        Listed::Evals => out.project(&ProjectEntry {
            level: None,
            store: file.parent().unwrap_or(Path::new(".")).to_path_buf(),
            llms: None,
        }),
        Listed::Scenarios => out.lone_scenarios(suite_of(suite_name(root, file))),
        Listed::Seed => out.seed(suite_of(suite_name(root, file))),
    }
}

/// The folder whose path names the trials: a project's (the parent of `data/`).
fn project_dir(file: &Path, what: Listed) -> &Path {
    let parent = file.parent().unwrap_or(Path::new(""));
    match what {
        Listed::Config => parent,
        Listed::Evals if parent.file_name().is_some_and(|n| n == "data") => {
            parent.parent().unwrap_or(parent)
        }
        _ => parent,
    }
}

/// A project directory's suite name (`shop`) as the start of trial names: `shop/`, or
/// nothing at the root.
fn prefix(s: String) -> String {
    if s.is_empty() || s == "." {
        String::new()
    } else {
        format!("{s}/")
    }
}

struct Out<'a> {
    file: &'a Path,
    prefix: String,
}

/// The trials made so far and their names: two never share one.
struct Trials {
    out: Vec<Loaded>,
    taken: HashSet<String>,
}

/// An eval, the document it is read from, and its suite (`shop/checkout`).
struct EvalAt<'a> {
    eval: &'a Eval,
    doc: &'a Document,
    suite: String,
}

/// The records of a project's store.
struct Store {
    /// The store's directory.
    dir: std::path::PathBuf,
    scenarios: Vec<Record<Scenario>>,
    scenarios_doc: Option<Document>,
    personas: Vec<Record<Persona>>,
    connectors: Vec<Record<Connector>>,
    /// The place of the first scenario, and of the first persona, with each id: an eval
    /// may name thousands of scenarios.
    scenario_at: HashMap<String, usize>,
    persona_at: HashMap<String, usize>,
}

impl Out<'_> {
    fn loaded(&self, suite: &str, id: &str, entry: Result<Case, CaseError>) -> Loaded {
        Loaded {
            generation: None,
            suite: suite.to_string(),
            trial: format!("{suite}{SEPARATOR}{id}"),
            file: self.file.to_path_buf(),
            entry: entry.map(Box::new).map_err(Box::new),
        }
    }

    /// A problem with a whole file: one trial, `<project>/evalstudio::<what>`.
    fn broken(&self, level: &str, what: &str, e: CaseError) -> Loaded {
        self.loaded(&format!("{}{level}", self.prefix), what, Err(e))
    }

    fn project(&self, p: &ProjectEntry) -> Vec<Loaded> {
        let level = match &p.level {
            Some(name) => format!("{}{}/", self.prefix, slug(name)),
            None => self.prefix.clone(),
        };
        let llms = match &p.llms {
            None => None,
            Some(Ok(l)) => Some(l.clone()),
            Some(Err(e)) => {
                return vec![self.loaded(
                    &format!("{level}evalstudio"),
                    "llm-settings",
                    Err(e.clone()),
                )]
            }
        };
        let mut out = Vec::new();
        let store = match self.store(&p.store, &level, &mut out) {
            Some(s) => s,
            None => return out,
        };
        let Some((evals_doc, evals)) = self.evals(&p.store, &level, &mut out) else {
            return out;
        };
        let mut trials = Trials {
            out,
            taken: HashSet::new(),
        };
        for (i, eval) in evals.into_iter().enumerate() {
            let eval = match eval {
                Ok(e) => e,
                Err(e) => {
                    trials.out.push(self.loaded(
                        &format!("{level}evalstudio"),
                        &format!("evals-{}", i + 1),
                        Err(e),
                    ));
                    continue;
                }
            };
            let suite = match slug(&eval.name) {
                s if s.is_empty() => format!("{level}eval-{}", i + 1),
                s => format!("{level}{s}"),
            };
            let at = EvalAt {
                eval: &eval,
                doc: &evals_doc,
                suite,
            };
            self.eval_trials(&store, &at, &llms, &mut trials);
        }
        trials.out
    }

    /// The trials of one eval: each scenario it lists, once per persona, run against
    /// the eval's connector.
    fn eval_trials(
        &self,
        store: &Store,
        at: &EvalAt,
        llms: &Option<Arc<SourceLlms>>,
        trials: &mut Trials,
    ) {
        let (eval, evals_doc, suite) = (at.eval, at.doc, &at.suite);
        let connector = eval.connector_id.as_ref().and_then(|id| {
            store
                .connectors
                .iter()
                .filter_map(|c| c.as_ref().ok())
                .find(|c| c.id.as_deref() == Some(id))
        });
        let mut listed = HashMap::new();
        for (j, scenario_id) in eval.scenario_ids.iter().enumerate() {
            if let Some(first) = earlier(&mut listed, scenario_id, j) {
                let e = evals_doc.error(
                    &format!("[{}].scenarioIds[{j}]", eval.index),
                    repeated("scenario", scenario_id, "scenarioIds", first),
                );
                let id = format!("{}-repeated", store.scenario_name(scenario_id));
                self.push_unique(trials, suite, &id, Err(e), || {
                    (evals_doc, format!("[{}].name", eval.index))
                });
                continue;
            }
            let scenario = store.scenario(scenario_id);
            let context = Context {
                eval: Some(eval),
                eval_slug: Some(suite.rsplit('/').next().unwrap_or(suite).to_string()),
                evals_doc: Some(evals_doc),
                connector,
                llms: llms.clone(),
            };
            let produced = match scenario {
                None => {
                    let e = evals_doc.error(
                        &format!("[{}].scenarioIds[{j}]", eval.index),
                        store.no_such_scenario(scenario_id),
                    );
                    vec![(slug(scenario_id), Err(e))]
                }
                // A broken scenario is named as a good one would be, when it can be.
                Some(Err(e)) => vec![(store.scenario_name(scenario_id), Err(e.clone()))],
                Some(Ok(s)) => self.scenario_trials(s, store, &context),
            };
            for (id, entry) in produced {
                // Eval names need not be unique in EvalStudio; trial names must.
                self.push_unique(trials, suite, &id, entry, || {
                    (evals_doc, format!("[{}].name", eval.index))
                });
            }
        }
    }

    /// The evals of the store in `store_dir` and the document they are read from; when
    /// there are none to read, the one broken trial saying why is in `out`.
    fn evals(
        &self,
        store_dir: &Path,
        level: &str,
        out: &mut Vec<Loaded>,
    ) -> Option<(Document, Vec<Record<Eval>>)> {
        let evals_file = store_dir.join("evals.json");
        let evals_doc = match Document::read(&evals_file) {
            Ok(d) => d,
            Err(e) => {
                out.push(self.loaded(&format!("{level}evalstudio"), "evals", Err(e)));
                return None;
            }
        };
        let Some(evals_doc) = evals_doc else {
            out.push(self.loaded(
                &format!("{level}evalstudio"),
                "evals",
                Err(CaseError {
                    location: Location {
                        file: Arc::new(crate::util::display_path(&evals_file)),
                        line: 1,
                        column: 1,
                    },
                    id: None,
                    field: None,
                    message: "the project has no evals: create one in EvalStudio (an eval names the scenarios to run and the connector), or put `scenarios.json` alone in a folder to run each scenario".into(),
                }),
            ));
            return None;
        };
        match records(&evals_doc, records::eval) {
            Ok(evals) => Some((evals_doc, evals)),
            Err(e) => {
                out.push(self.loaded(&format!("{level}evalstudio"), "evals", Err(e)));
                None
            }
        }
    }

    /// The scenarios, personas and connectors of `dir`; a file that cannot be read is
    /// one broken trial in `out`.
    fn store(&self, dir: &Path, level: &str, out: &mut Vec<Loaded>) -> Option<Store> {
        let suite = format!("{level}evalstudio");
        let (scenarios, scenarios_doc) =
            self.store_file(dir, "scenarios", records::scenario, &suite, out)?;
        let (personas, _) = self.store_file(dir, "personas", records::persona, &suite, out)?;
        let (connectors, _) =
            self.store_file(dir, "connectors", records::connector, &suite, out)?;
        Some(Store {
            dir: dir.to_path_buf(),
            scenario_at: places(&scenarios),
            persona_at: places(&personas),
            scenarios,
            scenarios_doc,
            personas,
            connectors,
        })
    }

    /// The records of `<dir>/<name>.json` and the document they are read from (none, and
    /// no document, when there is no such file); a broken record keeps its `id`, so what
    /// refers to it gets its error.
    fn store_file<T>(
        &self,
        dir: &Path,
        name: &str,
        read: impl Fn(&Document, usize, &Map<String, Value>) -> Record<T>,
        suite: &str,
        out: &mut Vec<Loaded>,
    ) -> Option<(Vec<Record<T>>, Option<Document>)> {
        let doc = match Document::read(&dir.join(format!("{name}.json"))) {
            Ok(Some(d)) => d,
            Ok(None) => return Some((Vec::new(), None)),
            Err(e) => {
                out.push(self.loaded(suite, name, Err(e)));
                return None;
            }
        };
        let list = match records(&doc, read) {
            Ok(list) => list
                .into_iter()
                .enumerate()
                .map(|(i, r)| {
                    r.map_err(|mut e| {
                        e.id = doc.value[i]
                            .get("id")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        e
                    })
                })
                .collect(),
            Err(e) => {
                out.push(self.loaded(suite, name, Err(e)));
                return None;
            }
        };
        Some((list, Some(doc)))
    }

    /// A `scenarios.json` read alone: each scenario a trial (per persona, from a
    /// `personas.json` beside it), run against the default agent.
    fn lone_scenarios(&self, suite: String) -> Vec<Loaded> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let mut out = Vec::new();
        let Some(store) = self.store(dir, &format!("{suite}/"), &mut out) else {
            return out;
        };
        let context = Context {
            eval: None,
            eval_slug: None,
            evals_doc: None,
            connector: None,
            llms: None,
        };
        let mut trials = Trials {
            out,
            taken: HashSet::new(),
        };
        for s in &store.scenarios {
            let produced = match s {
                Ok(s) => self.scenario_trials(s, &store, &context),
                Err(e) => vec![(
                    e.id.as_deref()
                        .map(|id| store.scenario_name(id))
                        .unwrap_or_else(|| format!("scenario-line-{}", e.location.line)),
                    Err(e.clone()),
                )],
            };
            let index = match s {
                Ok(s) => Some(s.index),
                Err(_) => None,
            };
            for (id, entry) in produced {
                self.push_unique(&mut trials, &suite, &id, entry, || {
                    let doc = store.scenarios_doc.as_ref().expect("scenarios were read");
                    (
                        doc,
                        index.map_or_else(String::new, |i| format!("[{i}].name")),
                    )
                });
            }
        }
        trials.out
    }

    /// Adds the trial `suite::id`, or when an earlier one has that name, an error
    /// located where `blame` says (`suite::id-2`, ...): two trials never share a name, and
    /// neither is dropped.
    fn push_unique<'d>(
        &self,
        trials: &mut Trials,
        suite: &str,
        id: &str,
        entry: Result<Case, CaseError>,
        blame: impl FnOnce() -> (&'d Document, String),
    ) {
        let trial = format!("{suite}{SEPARATOR}{id}");
        if trials.taken.insert(trial.clone()) {
            trials.out.push(self.loaded(suite, id, entry));
            return;
        }
        let (doc, field) = blame();
        let e = doc.error(
            &field,
            format!("another record gives the same trial name, {trial}; rename one of them"),
        );
        let mut k = 2;
        while !trials.taken.insert(format!("{trial}-{k}")) {
            k += 1;
        }
        trials
            .out
            .push(self.loaded(suite, &format!("{id}-{k}"), Err(e)));
    }

    /// A conversation seed file: the messages EvalStudio's `scenario create -m` takes,
    /// sent as one exchange that passes when the agent answers.
    fn seed(&self, suite: String) -> Vec<Loaded> {
        let entry = match Document::read(self.file) {
            Ok(Some(doc)) => {
                let messages = match &doc.value {
                    Value::Array(items) => Ok(items.iter().map(strip_message).collect::<Vec<_>>()),
                    other => Err(doc.error(
                        "",
                        format!(
                            "expected a JSON array of messages {{\"role\", \"content\"}}, found {}",
                            crate::util::type_of(other)
                        ),
                    )),
                };
                messages.and_then(|m| {
                    let mut obj = Map::new();
                    obj.insert("id".into(), "seed".into());
                    obj.insert("input".into(), Value::Array(m));
                    case_from_object(obj, "seed".into(), doc.location("")).map_err(|e| {
                        let field = e.path.strip_prefix("input").unwrap_or(&e.path).to_string();
                        doc.error(&field, e.message)
                    })
                })
            }
            Ok(None) => return Vec::new(),
            Err(e) => Err(e),
        };
        vec![self.loaded(&suite, "seed", entry)]
    }

    /// The trials of one scenario: one per persona, or one without.
    fn scenario_trials(
        &self,
        s: &Scenario,
        store: &Store,
        context: &Context<'_>,
    ) -> Vec<(String, Result<Case, CaseError>)> {
        let id = match slug(&s.name) {
            x if x.is_empty() => format!("scenario-{}", s.index + 1),
            x => x,
        };
        let doc = store
            .scenarios_doc
            .as_ref()
            .expect("a scenario was read from its document");
        // The case's id names its cassettes and golden files: with the eval's name, so
        // that two evals running one scenario keep theirs apart.
        let case_id = match &context.eval_slug {
            Some(e) => format!("{e}{SEPARATOR}{id}"),
            None => id.clone(),
        };
        let case = match build_case(s, &case_id, doc, context) {
            Ok(c) => c,
            Err(e) => return vec![(id, Err(e))],
        };
        if s.persona_ids.is_empty() {
            let mut case = case;
            case.origin = Some(Arc::new(Origin::EvalStudio(context.reference(s, None))));
            return vec![(id, Ok(case))];
        }
        let mut listed = HashMap::new();
        s.persona_ids
            .iter()
            .enumerate()
            .map(|(j, pid)| match earlier(&mut listed, pid, j) {
                Some(first) => {
                    let e = doc.error(
                        &format!("[{}].personaIds[{j}]", s.index),
                        repeated("persona", pid, "personaIds", first),
                    );
                    (format!("{id}{SEPARATOR}{}-repeated", slug(pid)), Err(e))
                }
                None => match store.persona(pid) {
                    Some(Ok(p)) => {
                        let mut one = case.clone();
                        one.name = Some(format!("{} as {}", s.name, p.name));
                        one.persona = Some(Box::new(PersonaRef {
                            name: p.name.clone(),
                            description: p.description.clone(),
                            system_prompt: p.system_prompt.clone(),
                            inline: true,
                        }));
                        one.origin = Some(Arc::new(Origin::EvalStudio(
                            context.reference(s, Some((pid, p))),
                        )));
                        (format!("{id}{SEPARATOR}{}", slug(&p.name)), Ok(one))
                    }
                    Some(Err(e)) => (format!("{id}{SEPARATOR}{}", slug(pid)), Err(e.clone())),
                    None => {
                        let e = doc.error(
                            &format!("[{}].personaIds[{j}]", s.index),
                            format!("\"{pid}\" is no persona's id in the personas.json beside it"),
                        );
                        (format!("{id}{SEPARATOR}{}", slug(pid)), Err(e))
                    }
                },
            })
            .collect()
    }
}

/// Where `id`, listed at `j`, was listed before, if it was; `listed` keeps the first
/// place of each.
fn earlier<'a>(listed: &mut HashMap<&'a str, usize>, id: &'a str, j: usize) -> Option<usize> {
    match listed.entry(id) {
        std::collections::hash_map::Entry::Occupied(first) => Some(*first.get()),
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(j);
            None
        }
    }
}

/// What an id listed twice is: one run twice under two names, never what is meant.
fn repeated(what: &str, id: &str, list: &str, first: usize) -> String {
    format!(
        "{what} id \"{id}\" is listed twice (first at `{list}[{first}]`); remove the repeated id"
    )
}

/// The place of the first record with each id (a broken record keeps its id on its error).
fn places<T: HasId>(records: &[Record<T>]) -> HashMap<String, usize> {
    let mut at = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let id = match r {
            Ok(r) => r.id(),
            Err(e) => e.id.as_deref(),
        };
        if let Some(id) = id {
            at.entry(id.to_string()).or_insert(i);
        }
    }
    at
}

/// A store record's `id`.
trait HasId {
    fn id(&self) -> Option<&str>;
}

impl HasId for Scenario {
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

impl HasId for Persona {
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

impl Store {
    /// Why an eval's scenario id names no scenario of the store: there is no
    /// `scenarios.json`, or which ids it does hold.
    fn no_such_scenario(&self, scenario_id: &str) -> String {
        if self.scenarios_doc.is_none() {
            return format!(
                "the eval runs scenario \"{scenario_id}\", but {} does not exist: EvalStudio keeps a project's scenarios there; restore it, or create the scenarios in EvalStudio",
                self.scenarios_file_name(),
            );
        }
        let known: Vec<String> = self
            .scenarios
            .iter()
            .filter_map(|s| s.as_ref().ok())
            .filter_map(|s| s.id.as_ref().map(|id| format!("{id} ({})", s.name)))
            .collect();
        format!(
            "\"{scenario_id}\" is no scenario's id in {}; {}",
            self.scenarios_file_name(),
            if known.is_empty() {
                "it holds no scenario with an id".to_string()
            } else {
                format!("known: {}", known.join(", "))
            }
        )
    }

    fn scenario(&self, id: &str) -> Option<&Record<Scenario>> {
        self.scenario_at.get(id).map(|&i| &self.scenarios[i])
    }

    fn persona(&self, id: &str) -> Option<&Record<Persona>> {
        self.persona_at.get(id).map(|&i| &self.personas[i])
    }

    /// The trial id of scenario `id` as written: its name's slug, else the id's.
    fn scenario_name(&self, id: &str) -> String {
        let at = self.scenario_at.get(id);
        self.scenarios_doc
            .as_ref()
            .and_then(|d| d.value.as_array())
            .zip(at)
            .and_then(|(a, &i)| a.get(i))
            .and_then(|v| v.get("name").and_then(Value::as_str))
            .map(slug)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| slug(id))
    }

    fn scenarios_file_name(&self) -> String {
        crate::util::display_path(&self.dir.join("scenarios.json"))
            .display()
            .to_string()
    }
}

/// What an eval adds to its scenarios' cases.
struct Context<'a> {
    eval: Option<&'a Eval>,
    /// The eval's name in trial names.
    eval_slug: Option<String>,
    evals_doc: Option<&'a Document>,
    /// The eval's connector, when `connectors.json` has it.
    connector: Option<&'a Connector>,
    llms: Option<Arc<SourceLlms>>,
}

impl Context<'_> {
    fn reference(&self, s: &Scenario, persona: Option<(&String, &Persona)>) -> EvalStudioRef {
        // The persona's headers over the connector's, as EvalStudio sends them.
        let agent = self.connector.and_then(|c| c.agent.clone()).map(|mut a| {
            if let Some((_, p)) = persona {
                a.headers.extend(p.headers.clone());
            }
            Arc::new(a)
        });
        EvalStudioRef {
            eval_id: self.eval.and_then(|e| e.id.clone()),
            scenario_id: s.id.clone(),
            persona_id: persona.map(|(id, _)| id.clone()),
            connector_id: self.eval.and_then(|e| e.connector_id.clone()),
            connector_name: self.connector.map(|c| c.name.clone()),
            connector_agent: agent,
            llms: self.llms.clone(),
        }
    }
}

/// A message as a case takes it: without the `id` and `metadata` EvalStudio keeps.
fn strip_message(m: &Value) -> Value {
    match m {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !MESSAGE_EXTRAS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The scenario as a case with criteria, checked by the case parser; its errors are
/// located at the scenario's (or the eval's) own fields, named as EvalStudio names them.
fn build_case(
    s: &Scenario,
    id: &str,
    doc: &Document,
    context: &Context<'_>,
) -> Result<Case, CaseError> {
    let at = format!("[{}]", s.index);
    if !["successCriteria", "failureCriteria"].iter().any(|k| {
        s.fields
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty())
    }) {
        return Err(CaseError {
            id: s.id.clone(),
            ..doc.error(&at, format!("scenario \"{}\" has no `successCriteria` or `failureCriteria`, so nothing can decide its runs (EvalStudio puts them in error too); say in `successCriteria` what the agent must achieve", s.name))
        });
    }
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(id.to_string()));
    obj.insert("name".into(), Value::String(s.name.clone()));
    for (from, to) in CASE_KEYS {
        if let Some(v) = s.fields.get(from) {
            let v = match (from, v) {
                ("messages", Value::Array(items)) => {
                    Value::Array(items.iter().map(strip_message).collect())
                }
                _ => v.clone(),
            };
            obj.insert(to.into(), v);
        }
    }
    // The older evals' `input`: sent after the scenario's messages.
    let own = s
        .fields
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let input: Vec<Value> = context
        .eval
        .map(|e| e.input.iter().map(strip_message).collect())
        .unwrap_or_default();
    if !input.is_empty() {
        let mut all = obj
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        all.extend(input);
        obj.insert("messages".into(), Value::Array(all));
    }
    let location = doc.location(&at);
    case_from_object(obj, id.to_string(), location).map_err(|e: FieldError| {
        let (doc, field) = evalstudio_field(&e.path, s.index, own, doc, context);
        CaseError {
            id: s.id.clone(),
            ..doc.error(&field, evalstudio_words(&e.message))
        }
    })
}

/// Where a case field's error belongs: the scenario's field of that name, or for a
/// message past the scenario's own, the eval's `input`.
fn evalstudio_field<'d>(
    path: &str,
    scenario: usize,
    own: usize,
    doc: &'d Document,
    context: &Context<'d>,
) -> (&'d Document, String) {
    if let Some(rest) = path.strip_prefix("messages[") {
        let (n, tail) = rest.split_once(']').unwrap_or((rest, ""));
        if let (Ok(n), Some(eval), Some(evals)) =
            (n.parse::<usize>(), context.eval, context.evals_doc)
        {
            if n >= own {
                return (evals, format!("[{}].input[{}]{tail}", eval.index, n - own));
            }
        }
    }
    let mut field = path.to_string();
    for (from, to) in CASE_KEYS {
        match field.strip_prefix(to) {
            Some(rest) if rest.is_empty() || rest.starts_with(['.', '[']) => {
                field = format!("{from}{rest}");
                break;
            }
            _ => {}
        }
    }
    (doc, format!("[{scenario}].{field}"))
}

/// A case parser's message in EvalStudio's words (`maxMessages`, not `max_messages`).
fn evalstudio_words(message: &str) -> String {
    let mut out = message.to_string();
    for (from, to) in CASE_KEYS {
        out = out.replace(&format!("`{to}`"), &format!("`{from}`"));
    }
    out
}

/// The suite of a file read alone, from its suite name: without `.json`.
fn suite_of(s: String) -> String {
    s.strip_suffix(".json").map(str::to_string).unwrap_or(s)
}

/// The personas of a personas file (`personas_file` in `agentest.toml`).
pub(crate) fn read_personas_file(path: &Path) -> Result<Vec<PersonaRef>, CaseError> {
    let doc = Document::read(path)?.ok_or_else(|| CaseError {
        location: Location {
            file: Arc::new(crate::util::display_path(path)),
            line: 1,
            column: 1,
        },
        id: None,
        field: None,
        message: "no such file; `personas_file` is relative to agentest.toml".into(),
    })?;
    let mut out: Vec<PersonaRef> = Vec::new();
    for (i, p) in records(&doc, records::any_persona)?.into_iter().enumerate() {
        let p = p?;
        if out.iter().any(|q| q.name == p.name) {
            return Err(doc.error(
                &format!("[{i}].name"),
                format!("a second persona named \"{}\"; names must differ", p.name),
            ));
        }
        out.push(PersonaRef {
            name: p.name,
            description: p.description,
            system_prompt: p.system_prompt,
            inline: true,
        });
    }
    Ok(out)
}
