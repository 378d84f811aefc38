//! EvalStudio projects through the real binary: the example project in
//! `agent-tests/evalstudio/` offline from its cassettes, a version-3 workspace whose
//! `llmSettings` call a real HTTP model server on loopback with the key from the file,
//! connectors mapped to agents, and mistakes located in the JSON files.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::chat::ChatServer;
use crate::common::{finish, toml_str, Report, Run, Scratch, BIN, EXPENSE_AGENT};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        the_example_project_runs_offline_one_trial_per_eval_scenario_and_persona,
        llm_settings_call_the_provider_with_the_key_from_the_file_and_keep_it_out_of_every_file,
        connectors_map_evals_to_agents,
        connectors_alone_need_no_default_agent,
        mistakes_are_located_in_evalstudio_terms_and_fail_only_their_trials,
        a_personas_file_names_personas_for_jsonl_cases,
        unclear_store_mistakes_say_the_file_the_field_and_the_fix,
    ]
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `agentest <args>` in `dir`, the run store at `store`.
fn agentest(dir: &Path, store: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(args)
        .env("AGENTEST_STORE", store)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("AGENTEST_CASSETTES")
        // A CI run replays cassettes only; these runs call loopback servers.
        .env_remove("CI")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    finish(&mut cmd)
}

fn trials(report: &Report) -> Vec<&str> {
    let mut t: Vec<&str> = report
        .cases
        .iter()
        .map(|c| c["trial"].as_str().unwrap_or_default())
        .collect();
    t.sort_unstable();
    t
}

/// The user's messages of a case record, turn by turn.
fn user_messages(case: &Value) -> Vec<String> {
    case["turns"]
        .as_array()
        .map(|turns| {
            turns
                .iter()
                .map(|t| t["input"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn the_example_project_runs_offline_one_trial_per_eval_scenario_and_persona() {
    let s = Scratch::named("evalstudio", "example");
    let report = s.join("r.jsonl");
    let store = s.join("runs.db");
    let r = agentest(
        repo(),
        &store,
        &[
            "test",
            "-i",
            "agent-tests/evalstudio",
            "-o",
            report.to_str().unwrap(),
            "--color",
            "never",
        ],
        &[("AGENTEST_CASSETTES", "strict")],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let rep = Report::read(&report);
    let eval = "booking-cancellation-test";
    assert_eq!(
        trials(&rep),
        [
            format!("{eval}::booking-cancellation::impatient-user"),
            format!("{eval}::booking-cancellation::polite-regular"),
            format!("{eval}::cancellation-with-reference"),
        ]
    );
    for c in &rep.cases {
        let trial = c["trial"].as_str().unwrap();
        assert_eq!(c["status"], "passed", "{trial}: {c}");
        // `[connectors]` maps the eval's connector (by its name) to the booking agent.
        assert_eq!(c["agent"], "booking", "{trial}");
        assert_eq!(c["mode"], "dynamic");
        assert_eq!(
            c["evalstudio"]["evalId"],
            "987fcdeb-51a2-3bc4-d567-890123456789"
        );
        assert_eq!(c["evalstudio"]["connectorId"], "connector-uuid");
        // Every turn keeps the judge's evaluation; the last one met the success criteria.
        let turns = c["turns"].as_array().unwrap();
        for t in turns {
            let e = &t["criteria"];
            assert!(
                e["successMet"].is_boolean() && e["failureMet"] == false,
                "{trial}: {t}"
            );
            assert!(
                e["reasoning"].as_str().is_some_and(|r| !r.is_empty()),
                "{t}"
            );
        }
        assert_eq!(turns.last().unwrap()["criteria"]["successMet"], true);
        assert!(turns[..turns.len() - 1]
            .iter()
            .all(|t| t["criteria"]["successMet"] == false));
        assert_eq!(c["result"]["success"], true);
        assert_eq!(c["result"]["score"], 0.9);
    }
    let impatient = rep.case(&format!("{eval}::booking-cancellation::impatient-user"));
    let polite = rep.case(&format!("{eval}::booking-cancellation::polite-regular"));
    assert_eq!(impatient["persona"], "impatient-user");
    assert_eq!(
        impatient["evalstudio"]["personaId"],
        "987fcdeb-51a2-3bc4-d567-890123456789"
    );
    assert_eq!(
        polite["evalstudio"]["personaId"],
        "5d0c2b1e-7f4a-4c36-9a53-2f1d8e6b7c40"
    );
    // The persona's system prompt drives the simulated user: each has its own words.
    assert_eq!(
        user_messages(impatient),
        ["Cancel my appointment.", "ABC123", "Yes. Do it."]
    );
    assert_eq!(
        user_messages(polite),
        [
            "Hi, I need to cancel my haircut appointment for tomorrow.",
            "Sure, it is ABC123.",
            "Yes, please cancel it."
        ]
    );
    // The seed's last user message is sent as it is; the simulator writes the rest.
    let seeded = rep.case(&format!("{eval}::cancellation-with-reference"));
    assert_eq!(
        user_messages(seeded),
        ["It's ABC123", "Yes, please cancel it."]
    );
    assert!(seeded.get("persona").is_none());

    // Exported for EvalStudio, the runs point at its records.
    let out = agentest(
        repo(),
        &store,
        &["runs", "export", "--format", "evalstudio"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let runs: Value = serde_json::from_str(&out.stdout).expect("runs.json");
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let mut ids: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            assert_eq!(r["evalId"], "987fcdeb-51a2-3bc4-d567-890123456789");
            assert_eq!(r["connectorId"], "connector-uuid");
            assert_eq!(r["status"], "completed");
            assert_eq!(r["result"]["success"], true);
            (
                r["scenarioId"].as_str().unwrap().to_string(),
                r["personaId"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            (
                "0b7e4c1a-93d2-4f5e-8a61-c4d2e9f0a713".to_string(),
                "-".to_string()
            ),
            (
                "987fcdeb-51a2-3bc4-d567-890123456789".into(),
                "5d0c2b1e-7f4a-4c36-9a53-2f1d8e6b7c40".into()
            ),
            (
                "987fcdeb-51a2-3bc4-d567-890123456789".into(),
                "987fcdeb-51a2-3bc4-d567-890123456789".into()
            ),
        ]
    );
}

use crate::criteria::route;

const SECRET: &str = "sk-test-SECRET-4242";

/// A scenario store with one scenario and one eval named `eval`.
fn store(s: &Scratch, dir: &str, eval: &str) {
    s.write(
        &format!("{dir}/scenarios.json"),
        &serde_json::to_string_pretty(&json!([{
            "id": "s-1", "name": "expense", "instructions": "File a travel expense of $120",
            "successCriteria": "The assistant drafts the expense", "maxMessages": 4,
            "createdAt": "2026-01-28T10:00:00.000Z", "updatedAt": "2026-01-28T10:00:00.000Z"
        }]))
        .unwrap(),
    );
    s.write(
        &format!("{dir}/evals.json"),
        &serde_json::to_string_pretty(
            &json!([{"id": "e-1", "name": eval, "connectorId": "c", "scenarioIds": ["s-1"]}]),
        )
        .unwrap(),
    );
}

fn llm_settings_call_the_provider_with_the_key_from_the_file_and_keep_it_out_of_every_file() {
    let server = ChatServer::routed(route);
    let evaluation =
        json!({"successMet": true, "failureMet": false, "confidence": 0.8, "reasoning": "drafted"})
            .to_string();
    let says = json!({"message": "Travel, $120", "goal_achieved": false, "reasoning": "asked"})
        .to_string();
    server.answer("judge", &[evaluation.clone(), evaluation]);
    server.answer("user", &[says.clone(), says]);
    let s = Scratch::named("evalstudio", "llm");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            toml_str(EXPENSE_AGENT)
        ),
    );
    // A workspace of two projects: the first takes the workspace's settings (with the
    // key), the second its own (no key: OPENAI_API_KEY).
    s.write(
        "suites/evalstudio.config.json",
        &serde_json::to_string_pretty(&json!({
            "version": 3, "name": "ws",
            "projects": [
                {"id": "p-1", "name": "Alpha"},
                {"id": "p-2", "name": "Beta", "llmSettings": {"provider": "openai", "models": {"evaluation": "beta-judge"}}}
            ],
            "llmSettings": {"provider": "openai", "apiKey": SECRET, "models": {"evaluation": "judge-model", "persona": "user-model"}},
            "storage": {"type": "filesystem"}
        }))
        .unwrap(),
    );
    store(&s, "suites/projects/p-1/data", "Eval A");
    store(&s, "suites/projects/p-2/data", "Eval B");
    let r = agentest(
        s.path(),
        &s.join("runs.db"),
        &[
            "test",
            "-i",
            "suites",
            "-o",
            "r.jsonl",
            "--color",
            "never",
            "--parallel",
            "1",
        ],
        &[
            ("OPENAI_BASE_URL", &server.url()),
            ("OPENAI_API_KEY", "sk-env-777"),
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    assert_eq!(
        trials(&rep),
        ["alpha/eval-a::expense", "beta/eval-b::expense"]
    );
    let seen: Vec<(String, String, String)> = server
        .requests()
        .iter()
        .map(|q| {
            (
                route(&q.body),
                q.body["model"].as_str().unwrap_or_default().to_string(),
                q.header("authorization").unwrap_or_default().to_string(),
            )
        })
        .collect();
    let bearer = format!("Bearer {SECRET}");
    for expected in [
        ("user".to_string(), "user-model".to_string(), bearer.clone()),
        ("judge".into(), "judge-model".into(), bearer.clone()),
        // Beta's own settings replace the workspace's whole: its judge model for both.
        (
            "user".into(),
            "beta-judge".into(),
            "Bearer sk-env-777".into(),
        ),
        (
            "judge".into(),
            "beta-judge".into(),
            "Bearer sk-env-777".into(),
        ),
    ] {
        assert!(
            seen.contains(&expected),
            "no request {expected:?} in {seen:?}"
        );
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    // The key went to the server, and nowhere else: not the output, a report, a
    // cassette or the run store.
    assert!(
        !r.stdout.contains("SECRET") && !r.stderr.contains("SECRET"),
        "{r:?}"
    );
    let cassettes = s
        .files()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains(".cassettes"))
        .count();
    assert!(cassettes >= 2, "cassettes were recorded: {:?}", s.files());
    for f in s.files() {
        if f.ends_with("evalstudio.config.json") {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap();
        let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!found, "the key is in {}", f.display());
    }
}

fn connectors_map_evals_to_agents() {
    let s = Scratch::named("evalstudio", "connectors");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[agents.booking]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[connectors]\nc-1 = \"booking\"\n\"Named Connector\" = \"booking\"\nc-4 = \"nope\"\n",
            toml_str(EXPENSE_AGENT),
            toml_str(&repo().join("examples/booking-agent/agent.py").display().to_string()),
        ),
    );
    s.write(
        "suites/data/scenarios.json",
        r#"[{"id": "s", "name": "cancel", "messages": [{"role": "user", "content": "I want to cancel my booking", "id": "m-1", "metadata": {"k": 1}}], "successCriteria": "cancelled"}]"#,
    );
    let evals: Vec<Value> = (1..=4)
        .map(|i| json!({"id": format!("e-{i}"), "name": format!("eval {i}"), "connectorId": format!("c-{i}"), "scenarioIds": ["s"]}))
        .collect();
    s.write("suites/data/evals.json", &Value::Array(evals).to_string());
    s.write(
        "suites/data/connectors.json",
        r#"[{"id": "c-2", "name": "Named Connector", "type": "langgraph", "baseUrl": "http://localhost:8123"}]"#,
    );
    let r = agentest(
        s.path(),
        &s.join("runs.db"),
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    // No model for the judge: one exchange, passed when the agent answered.
    for (trial, agent, reply) in [
        (
            "eval-1::cancel",
            "booking",
            "What is your booking reference?",
        ),
        (
            "eval-2::cancel",
            "booking",
            "What is your booking reference?",
        ),
        ("eval-3::cancel", "default", "I can help with expenses"),
    ] {
        let c = rep.case(trial);
        assert_eq!(
            (c["status"].as_str(), c["agent"].as_str()),
            (Some("passed"), Some(agent)),
            "{c}"
        );
        let said = c["turns"][0]["output"].to_string();
        assert!(said.contains(reply), "{trial}: {said}");
    }
    let e = rep.error("eval-4::cancel");
    assert!(e.contains("\"nope\"") || e.contains("`nope`"), "{e}");
}

/// A config with only `[connectors]` and `[agents.NAME]` runs, and dry-runs, an
/// EvalStudio project whose every eval's connector is mapped: no default `[agent]` needed.
fn connectors_alone_need_no_default_agent() {
    let s = Scratch::named("evalstudio", "connectors-alone");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agents.booking]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[connectors]\nc-1 = \"booking\"\n\"Named Connector\" = \"booking\"\n",
            toml_str(&repo().join("examples/booking-agent/agent.py").display().to_string()),
        ),
    );
    s.write(
        "suites/data/scenarios.json",
        r#"[{"id": "s", "name": "cancel", "messages": [{"role": "user", "content": "I want to cancel my booking"}], "successCriteria": "cancelled"}]"#,
    );
    s.write(
        "suites/data/evals.json",
        r#"[{"id": "e-1", "name": "eval 1", "connectorId": "c-1", "scenarioIds": ["s"]}, {"id": "e-2", "name": "eval 2", "connectorId": "c-2", "scenarioIds": ["s"]}]"#,
    );
    s.write(
        "suites/data/connectors.json",
        r#"[{"id": "c-2", "name": "Named Connector", "type": "langgraph", "baseUrl": "http://localhost:8123"}]"#,
    );
    let store = s.join("runs.db");
    let dry = agentest(
        s.path(),
        &store,
        &["test", "-i", "suites", "--dry-run"],
        &[],
    );
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(!dry.stderr.contains("no agent to test"), "{dry:?}");
    let r = agentest(
        s.path(),
        &store,
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    for trial in ["eval-1::cancel", "eval-2::cancel"] {
        let c = rep.case(trial);
        assert_eq!(
            (c["status"].as_str(), c["agent"].as_str()),
            (Some("passed"), Some("booking")),
            "{c}"
        );
    }
    // A case no connector maps still needs the default agent, said once as before.
    s.write(
        "suites/data/evals.json",
        r#"[{"id": "e-1", "name": "eval 1", "connectorId": "c-1", "scenarioIds": ["s"]}, {"id": "e-3", "name": "eval 3", "connectorId": "c-3", "scenarioIds": ["s"]}]"#,
    );
    let r = agentest(
        s.path(),
        &store,
        &["test", "-i", "suites", "--dry-run"],
        &[],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("no agent to test"), "{r:?}");
}

fn mistakes_are_located_in_evalstudio_terms_and_fail_only_their_trials() {
    let s = Scratch::named("evalstudio", "mistakes");
    s.write(
        "suites/agentest.toml",
        &format!(
            "[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            toml_str(EXPENSE_AGENT)
        ),
    );
    s.write(
        "suites/shop/data/scenarios.json",
        r#"[
  {"id": "s-1", "name": "ok", "successCriteria": "helps", "personaIds": ["p-1", "ghost"], "messages": [{"role": "user", "content": "hello"}]},
  {"id": "s-2", "name": "typo", "sucessCriteria": "helps"},
  {"id": "s-3", "name": "count", "successCriteria": "helps", "maxMessages": "ten"},
  {"id": "s-4", "name": "mode", "successCriteria": "helps", "failureCriteriaMode": "always"},
  {"id": "s-5", "name": "nothing", "instructions": "just chat"}
]
"#,
    );
    s.write(
        "suites/shop/data/personas.json",
        r#"[{"id": "p-1", "name": "Terse Tom", "systemPrompt": "You are terse.", "createdAt": "2026-01-28T10:00:00.000Z"}]"#,
    );
    s.write(
        "suites/shop/data/evals.json",
        r#"[
  {"id": "e-1", "name": "Eval A", "connectorId": "c", "scenarioIds": ["s-1", "s-2", "missing"]},
  {"id": "e-2", "name": "Eval B", "connectorId": "c", "scenarioIds": ["s-3", "s-4", "s-5"]},
  {"id": "e-3", "name": "eval a", "connectorId": "c", "scenarioIds": ["s-1"]}
]
"#,
    );
    // Two scenarios of a lone scenarios file whose names make one trial name.
    s.write(
        "suites/loose/scenarios.json",
        "[\n  {\"id\": \"x\", \"name\": \"A b\", \"successCriteria\": \"helps\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]},\n  {\"id\": \"y\", \"name\": \"a-b\", \"successCriteria\": \"helps\"}\n]\n",
    );
    // A broken file is one error; a storage agentest cannot read is one too.
    s.write(
        "suites/torn/data/evals.json",
        "[\n  {\"id\": \"e\",\n    \"name\": }\n]\n",
    );
    s.write("suites/pg/evalstudio.config.json", r#"{"version": 2, "name": "pg", "storage": {"type": "postgres", "connectionString": "postgres://x"}}"#);
    let r = agentest(
        s.path(),
        &s.join("runs.db"),
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    let scenarios = "suites/shop/data/scenarios.json";
    let evals = "suites/shop/data/evals.json";
    assert_eq!(rep.status("shop/eval-a::ok::terse-tom"), "passed");
    assert_eq!(rep.status("loose/scenarios::a-b"), "passed");
    for (trial, expected) in [
        ("shop/eval-a::ok::ghost", format!("{scenarios}:2:81: field `[0].personaIds[1]`: \"ghost\" is no persona's id")),
        ("shop/eval-a::typo", format!("{scenarios}:3:33: field `[1].sucessCriteria`: unknown key `sucessCriteria` in a scenario; did you mean `successCriteria`?")),
        ("shop/eval-a::missing", format!("{evals}:2:85: field `[0].scenarioIds[2]`: \"missing\" is no scenario's id in {scenarios}; known: s-1 (ok), s-3 (count), s-4 (mode), s-5 (nothing)")),
        ("shop/eval-b::count", format!("{scenarios}:4:62: field `[2].maxMessages`: expected a whole number, found a string")),
        ("shop/eval-b::mode", format!("{scenarios}:5:61: field `[3].failureCriteriaMode`: unknown mode \"always\"")),
        ("shop/eval-b::nothing", format!("{scenarios}:6:3: field `[4]`: scenario \"nothing\" has no `successCriteria` or `failureCriteria`")),
        ("shop/eval-a::ok::terse-tom-2", format!("{evals}:4:17: field `[2].name`: another record gives the same trial name, shop/eval-a::ok::terse-tom; rename one of them")),
        ("loose/scenarios::a-b-2", "suites/loose/scenarios.json:3:15: field `[1].name`: another record gives the same trial name, loose/scenarios::a-b; rename one of them".to_string()),
        ("torn/evalstudio::evals", "suites/torn/data/evals.json:3:13: invalid JSON: expected value".to_string()),
        ("pg/evalstudio::config", "suites/pg/evalstudio.config.json:1:30: field `storage`: this workspace keeps its records in postgres storage; agentest reads EvalStudio's filesystem store only".to_string()),
    ] {
        assert_eq!(rep.status(trial), "error", "{trial}");
        let e = rep.error(trial);
        assert!(e.contains(&expected), "{trial}:\nexpected {expected}\n     got {e}");
    }
    assert_eq!(rep.cases.len(), 13, "{}", rep.text);
}

fn a_personas_file_names_personas_for_jsonl_cases() {
    let s = Scratch::named("evalstudio", "personas-file");
    s.write(
        "suites/agentest.toml",
        &format!(
            "personas_file = \"people.json\"\n\n[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n\n[personas.local]\nsystem_prompt = \"You are local.\"\n",
            toml_str(EXPENSE_AGENT)
        ),
    );
    s.write(
        "suites/people.json",
        r#"[{"id": "p", "name": "impatient-user", "description": "d", "systemPrompt": "You are impatient.", "createdAt": "2026-01-28T10:00:00.000Z"},
            {"name": "agentest-style", "system_prompt": "You are patient."}]"#,
    );
    s.write_suite(
        "suites/s.jsonl",
        &[r#"{"id": "c", "input": "hello", "success_criteria": "greets", "personas": ["impatient-user", "agentest-style", "local"]}"#],
    );
    let r = agentest(
        s.path(),
        &s.join("runs.db"),
        &["test", "-i", "suites", "-o", "r.jsonl"],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let rep = Report::read(&s.join("r.jsonl"));
    assert_eq!(
        trials(&rep),
        [
            "s::c::agentest-style",
            "s::c::impatient-user",
            "s::c::local"
        ]
    );
    // A persona in both places, or a broken file, is a config error naming it.
    s.write(
        "suites/people.json",
        r#"[{"name": "local", "system_prompt": "x"}]"#,
    );
    let r = agentest(s.path(), &s.join("runs.db"), &["test", "-i", "suites"], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("persona \"local\" is both a [personas.\"local\"] table and in people.json"),
        "{r:?}"
    );
    s.write(
        "suites/people.json",
        r#"[{"name": "x", "systemPromt": "x"}]"#,
    );
    let r = agentest(s.path(), &s.join("runs.db"), &["test", "-i", "suites"], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("personas_file: ") && r.stderr.contains("people.json:1:16: field `[0].systemPromt`: unknown key `systemPromt` in a persona; did you mean `systemPrompt`?"),
        "{r:?}"
    );
}

/// Store and config mistakes said in EvalStudio's terms, each naming the file, the
/// field and the fix: a missing `scenarios.json`, an id listed twice, a project id that
/// is not one folder name (`a/b`, `..`: never read outside `projects/`), an unknown
/// config version.
fn unclear_store_mistakes_say_the_file_the_field_and_the_fix() {
    let s = Scratch::named("evalstudio", "unclear");
    s.write(
        "suites/agentest.toml",
        "[agent]\ntype = \"http\"\nurl = \"http://127.0.0.1:9/\"\n",
    );
    s.write(
        "suites/nosc/data/evals.json",
        r#"[{"id": "e-1", "name": "E", "connectorId": "c", "scenarioIds": ["s-1"]}]"#,
    );
    s.write(
        "suites/rep/data/scenarios.json",
        r#"[{"id": "s-1", "name": "ok", "successCriteria": "helps", "personaIds": ["p-1", "p-1"]}]"#,
    );
    s.write(
        "suites/rep/data/personas.json",
        r#"[{"id": "p-1", "name": "Tom", "systemPrompt": "terse"}]"#,
    );
    s.write(
        "suites/rep/data/evals.json",
        r#"[{"id": "e-1", "name": "E", "connectorId": "c", "scenarioIds": ["s-1", "s-1"]}]"#,
    );
    s.write(
        "suites/slash/evalstudio.config.json",
        r#"{"version": 3, "projects": [{"id": "a/b", "name": "A"}]}"#,
    );
    s.write(
        "suites/up/evalstudio.config.json",
        r#"{"version": 3, "projects": [{"id": "..", "name": "Up"}]}"#,
    );
    // What `..` would read: a store one level up, outside `projects/`.
    s.write(
        "suites/up/data/scenarios.json",
        r#"[{"id": "s-9", "name": "escaped", "successCriteria": "x"}]"#,
    );
    s.write(
        "suites/v99/evalstudio.config.json",
        r#"{"version": 99, "name": "x"}"#,
    );
    let r = agentest(
        s.path(),
        &s.join("runs.db"),
        &["test", "-i", "suites", "--dry-run", "--color", "never"],
        &[],
    );
    assert_eq!(r.code, 1, "{r:?}");
    for expected in [
        "error: suites/nosc/data/evals.json:1:65: field `[0].scenarioIds[0]`: the eval runs scenario \"s-1\", but suites/nosc/data/scenarios.json does not exist: EvalStudio keeps a project's scenarios there; restore it, or create the scenarios in EvalStudio",
        "error: suites/rep/data/evals.json:1:72: field `[0].scenarioIds[1]`: scenario id \"s-1\" is listed twice (first at `scenarioIds[0]`); remove the repeated id",
        "error: suites/rep/data/scenarios.json:1:80: field `[0].personaIds[1]`: persona id \"p-1\" is listed twice (first at `personaIds[0]`); remove the repeated id",
        "error: suites/slash/evalstudio.config.json:1:30: field `projects[0].id`: project id \"a/b\" is not a folder name: the id names the project's folder under projects/, so it must be one path component (no `/` or `\\`, not `.` or `..`)",
        "error: suites/up/evalstudio.config.json:1:30: field `projects[0].id`: project id \"..\" is not a folder name",
        "error: suites/v99/evalstudio.config.json:1:2: field `version`: unknown EvalStudio config version 99; agentest reads versions 2 and 3",
    ] {
        assert!(r.stdout.contains(expected), "{expected:?} not in {r:?}");
    }
    assert!(r.stdout.contains("rep/e::ok::tom "), "{r:?}");
    for unclear in ["rename", "it has none", "a project needs", "escaped"] {
        assert!(!r.stdout.contains(unclear), "{unclear:?} in {r:?}");
    }
}
