//! Conformance against test files written by others, gathered in `shared/corpus/`
//! (see `shared/corpus/SOURCES.md`): every line must read into a case with the
//! shape its authors meant, and the assertion vectors must give the verdicts the
//! upstream test table expects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{need, Missing, Needs};
use agentest::__private::assertion::{evaluate, EvalEnv, Subject};
use agentest::__private::case::{parse_case, Case, Location, Mode};
use agentest::__private::scripts::Scripts;
use agentest::__private::suite::{load_file, Loaded};
use agentest::Reply;
use serde_json::{json, Value};

/// The corpus directory, beside the repository. A conformance test that finds no corpus
/// has checked nothing, so without it each test needs it (see [`need`]): failed on CI,
/// ignored with the reason elsewhere (a plain clone without `shared/`).
fn corpus() -> Result<PathBuf, Missing> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.join("SOURCES.md").is_file() {
        return Ok(dir);
    }
    need(
        "the conformance corpus",
        format!(
            "expected {} (with SOURCES.md) beside the repository; clone the `shared/` \
             directory next to this crate",
            dir.display()
        ),
    )
}

/// The corpus, as the registration of the tests that read it declares it.
fn corpus_present() -> Needs {
    corpus().map(drop)
}

/// Loads one corpus file through the suite loader and returns the cases, failing
/// with every broken line's rendered error.
fn load(rel: &str) -> Result<(Vec<Loaded>, Vec<Case>), Missing> {
    let root = corpus()?;
    let file = root.join(rel);
    assert!(file.is_file(), "corpus file {} is missing", file.display());
    let loaded = load_file(&root, &file);
    let errors: Vec<String> = loaded
        .iter()
        .filter_map(|l| l.entry.as_ref().err().map(|e| format!("{}: {e}", l.trial)))
        .collect();
    assert!(
        errors.is_empty(),
        "{rel}: lines failed to parse:\n{}",
        errors.join("\n")
    );
    let cases = loaded
        .iter()
        .map(|l| *l.entry.clone().expect("checked above"))
        .collect();
    Ok((loaded, cases))
}

fn ids(cases: &[Case]) -> Vec<&str> {
    cases.iter().map(|c| c.id.as_str()).collect()
}

/// The single-turn assertions of a case (panics on other modes).
fn single(case: &Case) -> (String, Vec<&'static str>) {
    match &case.mode {
        Mode::Single { input, assertions } => (
            input.text(),
            assertions.iter().map(|a| a.type_name()).collect(),
        ),
        other => panic!(
            "{}: expected a single-turn case, got {}",
            case.id,
            other.name()
        ),
    }
}

fn corpus_directory_is_present() -> Needs {
    let dir = corpus()?;
    for rel in [
        "yao-designer/inputs.jsonl",
        "yao-dev-app/hooks-test/inputs.jsonl",
        "yao-engine/inputs.jsonl",
        "yao-engine/dynamic-inputs.jsonl",
        "yao-engine/assert-vectors.jsonl",
    ] {
        assert!(
            dir.join(rel).is_file(),
            "corpus file {rel} is missing under {}",
            dir.display()
        );
    }
    Ok(())
}

fn yao_designer_inputs_parse_with_assert_arrays() -> Needs {
    let (loaded, cases) = load("yao-designer/inputs.jsonl")?;
    assert_eq!(
        ids(&cases),
        [
            "basic-planning",
            "color-palette-request",
            "font-availability",
            "design-spec-generation",
            "page-creation"
        ]
    );
    let trials: Vec<&str> = loaded.iter().map(|l| l.trial.as_str()).collect();
    assert_eq!(
        trials,
        [
            "yao-designer/inputs::basic-planning",
            "yao-designer/inputs::color-palette-request",
            "yao-designer/inputs::font-availability",
            "yao-designer/inputs::design-spec-generation",
            "yao-designer/inputs::page-creation"
        ]
    );
    let shapes: Vec<Vec<&str>> = cases.iter().map(|c| single(c).1).collect();
    assert_eq!(
        shapes,
        vec![
            vec!["contains", "not_contains"],
            vec!["contains", "not_contains", "not_contains"],
            vec!["contains", "not_contains"],
            vec!["contains", "contains", "not_contains", "not_contains"],
            vec!["contains", "not_contains", "not_contains"],
        ]
    );
    let (input, _) = single(&cases[0]);
    assert!(input.starts_with("I want to design a SaaS admin dashboard"));
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(c.location.line, i + 1, "{}", c.id);
        assert_eq!(c.mode.name(), "single");
        assert!(!c.skip && c.before.is_none() && c.after.is_none());
    }
    Ok(())
}

fn yao_dev_app_hooks_read_before_and_after() -> Needs {
    let (_, cases) = load("yao-dev-app/hooks-test/inputs.jsonl")?;
    assert_eq!(ids(&cases), ["T001", "T002", "T003"]);
    let hooks: Vec<(Option<&str>, Option<&str>)> = cases
        .iter()
        .map(|c| (c.before.as_deref(), c.after.as_deref()))
        .collect();
    assert_eq!(
        hooks,
        [
            (Some("env_test.Before"), Some("env_test.After")),
            (Some("env_test.Before"), Some("env_test.After")),
            (None, None),
        ]
    );
    // `assert` given as one object reads as a list of one.
    for (case, (text, value)) in cases.iter().zip([
        ("Hello from T001", "Hello"),
        ("Test case T002", "T002"),
        ("No hooks test", "hooks"),
    ]) {
        let (input, types) = single(case);
        assert_eq!(input, text);
        assert_eq!(types, ["contains"], "{}", case.id);
        let Mode::Single { assertions, .. } = &case.mode else {
            unreachable!()
        };
        assert_eq!(assertions[0].raw.value()["value"], json!(value));
        // Hooks receive the line as written.
        assert_eq!(case.raw.value()["id"], json!(case.id));
    }
    Ok(())
}

fn yao_engine_inputs_parse() -> Needs {
    let (loaded, cases) = load("yao-engine/inputs.jsonl")?;
    assert_eq!(cases.len(), 10);
    assert_eq!(
        ids(&cases),
        [
            "greeting-hello",
            "greeting-hi",
            "greeting-morning",
            "hook-test-1",
            "parallel-1",
            "parallel-2",
            "parallel-3",
            "parallel-4",
            "fail-first",
            "should-skip"
        ]
    );
    assert!(loaded
        .iter()
        .all(|l| l.suite == "yao-engine/inputs" && l.trial.starts_with("yao-engine/inputs::")));
    let types: Vec<&str> = cases.iter().map(|c| single(c).1[0]).collect();
    assert_eq!(
        types,
        [
            "regex", "regex", "regex", "contains", "regex", "regex", "regex", "regex", "contains",
            "contains"
        ]
    );
    assert!(cases.iter().all(|c| single(c).1.len() == 1));
    let hook = &cases[3];
    assert_eq!(hook.before.as_deref(), Some("env_test.Before"));
    assert_eq!(hook.after.as_deref(), Some("env_test.After"));
    assert!(cases
        .iter()
        .filter(|c| c.id != "hook-test-1")
        .all(|c| c.before.is_none() && c.after.is_none()));
    // Yao writes regexes in `value`, with inline flags.
    let Mode::Single { assertions, .. } = &cases[0].mode else {
        unreachable!()
    };
    assert_eq!(assertions[0].raw.value()["value"], json!("(?i)hello"));
    Ok(())
}

fn yao_engine_dynamic_inputs_parse() -> Needs {
    let (_, cases) = load("yao-engine/dynamic-inputs.jsonl")?;
    assert_eq!(
        ids(&cases),
        [
            "coffee-order-flow",
            "coffee-with-initial",
            "optional-checkpoint-test",
            "max-turns-test",
            "ordered-checkpoints"
        ]
    );
    struct Expect {
        name: &'static str,
        input: &'static str,
        max_turns: u32,
        /// (checkpoint id, after, required)
        checkpoints: Vec<(&'static str, Vec<&'static str>, bool)>,
    }
    let expected = [
        Expect {
            name: "Complete Coffee Order",
            input: "Hi, I would like to order a coffee please",
            max_turns: 8,
            checkpoints: vec![
                ("greeting", vec![], true),
                ("ask_size", vec!["greeting"], true),
                ("confirm_order", vec!["ask_size"], true),
            ],
        },
        Expect {
            name: "Coffee Order with Initial Message",
            input: "Hi, I want to order a coffee",
            max_turns: 5,
            checkpoints: vec![
                ("acknowledge", vec![], true),
                ("ask_details", vec!["acknowledge"], true),
            ],
        },
        Expect {
            name: "Test with Optional Checkpoint",
            input: "Hello",
            max_turns: 3,
            checkpoints: vec![
                ("greeting_response", vec![], true),
                ("special_offer", vec![], false),
            ],
        },
        Expect {
            name: "Test Max Turns Exceeded",
            input: "Hello",
            max_turns: 2,
            checkpoints: vec![("impossible", vec![], true)],
        },
        Expect {
            name: "Test Checkpoint Ordering",
            input: "I want to order coffee",
            max_turns: 10,
            checkpoints: vec![
                ("step1_greeting", vec![], true),
                ("step2_size", vec!["step1_greeting"], true),
                ("step3_confirm", vec!["step2_size"], true),
            ],
        },
    ];
    for (case, want) in cases.iter().zip(&expected) {
        assert_eq!(case.name.as_deref(), Some(want.name), "{}", case.id);
        let Mode::Dynamic {
            input,
            simulator,
            checkpoints,
            max_turns,
            ..
        } = &case.mode
        else {
            panic!("{}: expected dynamic, got {}", case.id, case.mode.name());
        };
        assert_eq!(*max_turns, want.max_turns, "{}", case.id);
        assert_eq!(
            input.as_ref().map(|i| i.text()).as_deref(),
            Some(want.input),
            "{}",
            case.id
        );
        assert_eq!(
            simulator.use_.as_deref(),
            Some("tests.simulator-agent"),
            "{}",
            case.id
        );
        assert!(
            simulator.raw["options"]["metadata"]["persona"].is_string(),
            "{}: the simulator's persona is kept",
            case.id
        );
        assert_eq!(
            checkpoints.len(),
            want.checkpoints.len(),
            "{}: checkpoint count",
            case.id
        );
        for (cp, (id, after, required)) in checkpoints.iter().zip(&want.checkpoints) {
            assert_eq!(cp.id, *id, "{}", case.id);
            assert_eq!(cp.after, *after, "{}.{}", case.id, cp.id);
            assert_eq!(cp.required, *required, "{}.{}", case.id, cp.id);
            assert!(!cp.forbidden, "{}.{}", case.id, cp.id);
            assert_eq!(cp.assertions.len(), 1, "{}.{}", case.id, cp.id);
            assert!(cp.description.is_some(), "{}.{}", case.id, cp.id);
        }
    }
    let optional = &cases[2];
    let Mode::Dynamic { checkpoints, .. } = &optional.mode else {
        unreachable!()
    };
    assert_eq!(checkpoints[1].assertions[0].type_name(), "contains");
    Ok(())
}

fn assert_reads_as_object_and_as_array() {
    let at = || Location {
        file: Arc::new(PathBuf::from("inline.jsonl")),
        line: 1,
        column: 1,
    };
    let object = parse_case(
        r#"{"id": "o", "input": "hi", "assert": {"type": "contains", "value": "Hello"}}"#,
        at(),
    )
    .unwrap();
    let array = parse_case(
        r#"{"id": "a", "input": "hi", "assert": [{"type": "contains", "value": "Hello"}, {"type": "regex", "value": "x"}]}"#,
        at(),
    )
    .unwrap();
    assert_eq!(single(&object).1, ["contains"]);
    assert_eq!(single(&array).1, ["contains", "regex"]);
}

/// One line of `assert-vectors.jsonl`.
struct Vector {
    name: String,
    assert: Value,
    output: Value,
    expected_pass: bool,
}

/// The vectors.
fn vectors() -> Result<Vec<Vector>, Missing> {
    let file = corpus()?.join("yao-engine/assert-vectors.jsonl");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("assert-vectors.jsonl line {}: {e}", i + 1));
            Vector {
                name: v["name"].as_str().expect("name").to_string(),
                assert: v["assert"].clone(),
                output: v["output"].clone(),
                expected_pass: v["expected_pass"].as_bool().expect("expected_pass"),
            }
        })
        .collect())
}

/// Runs a vector's assertions against a reply whose content is its output:
/// `Ok(passed)` when all assertions could be evaluated, with the failures' details.
fn run_vector(v: &Vector, rt: &tokio::runtime::Runtime) -> Result<(bool, Vec<String>), String> {
    let line = json!({"id": "vector", "input": "x", "assert": v.assert}).to_string();
    let case = parse_case(
        &line,
        Location {
            file: Arc::new(PathBuf::from("assert-vectors.jsonl")),
            line: 1,
            column: 1,
        },
    )
    .map_err(|e| format!("the assertion does not parse: {e}"))?;
    let Mode::Single { assertions, .. } = &case.mode else {
        return Err(format!(
            "expected a single-turn case, got {}",
            case.mode.name()
        ));
    };
    if assertions.is_empty() {
        return Err("no assertions were read".into());
    }
    let reply = Reply::json(v.output.clone());
    let scripts = Scripts::default();
    let metadata = Value::Null;
    rt.block_on(async {
        let env = EvalEnv {
            scripts: &scripts,
            metadata: &metadata,
            deadline: tokio::time::Instant::now() + Duration::from_secs(30),
            judges: None,
        };
        let subject = Subject {
            reply: &reply,
            input: "x",
            conversation: &[],
            latency: &[],
        };
        let mut all = true;
        let mut details = Vec::new();
        for a in assertions {
            let verdict = evaluate(a, subject, &env)
                .await
                .map_err(|e| e.to_string())?;
            if verdict.passed != Some(true) {
                all = false;
                details.push(format!(
                    "{}: {}",
                    verdict.label,
                    verdict.detail.unwrap_or_default()
                ));
            }
        }
        Ok((all, details))
    })
}

fn yao_engine_assert_vectors_give_the_expected_verdicts() -> Needs {
    let vectors = vectors()?;
    assert_eq!(vectors.len(), 16, "assert-vectors.jsonl holds 16 vectors");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut wrong = Vec::new();
    for v in &vectors {
        match run_vector(v, &rt) {
            Ok((passed, details)) if passed != v.expected_pass => wrong.push(format!(
                "{:?}: expected pass={}, got pass={passed} {details:?}",
                v.name, v.expected_pass
            )),
            Ok(_) => {}
            Err(e) => wrong.push(format!("{:?}: could not be evaluated: {e}", v.name)),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} vectors gave the wrong verdict:\n{}",
        wrong.len(),
        vectors.len(),
        wrong.join("\n")
    );
    Ok(())
}

fn assert_vectors_cover_the_upstream_table() -> Needs {
    let vectors = vectors()?;
    let passing = vectors.iter().filter(|v| v.expected_pass).count();
    assert_eq!(passing, 11, "11 vectors pass, 5 fail upstream");
    let types: Vec<String> = vectors
        .iter()
        .flat_map(|v| match &v.assert {
            Value::Array(items) => items.clone(),
            one => vec![one.clone()],
        })
        .map(|a| a["type"].as_str().unwrap_or_default().to_string())
        .collect();
    for t in ["json_path", "contains", "regex"] {
        assert!(types.iter().any(|x| x == t), "no {t} vector");
    }
    assert!(vectors.iter().any(|v| v.output.is_object()));
    assert!(vectors.iter().any(|v| v.output.is_string()));
    Ok(())
}

/// Every ElizaOS scenario in the corpus reads into a scenario trial named after its
/// file and `name`, with the steps its authors wrote; the one meant to fail validation
/// fails naming each missing field.
fn eliza_scenarios_load_and_the_invalid_one_names_each_missing_field() -> Needs {
    let root = corpus()?.join("eliza");
    let mut trials = Vec::new();
    for entry in std::fs::read_dir(&root).expect("list the eliza corpus") {
        let file = entry.expect("a directory entry").path();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".scenario.yaml") {
            continue;
        }
        let loaded = load_file(&root, &file);
        assert_eq!(loaded.len(), 1, "{name}: one trial per scenario");
        let l = &loaded[0];
        trials.push(l.trial.clone());
        match (&l.entry, name.as_str()) {
            (Err(e), "invalid-missing-fields.scenario.yaml") => {
                let text = e.to_string();
                assert!(
                    text.contains(":1:1: missing required fields `environment`, `run`, `judgment`"),
                    "{text}"
                );
            }
            (Err(e), _) => panic!("{name}: {e}"),
            (Ok(case), _) => {
                let Mode::Scenario(sc) = &case.mode else {
                    panic!("{name}: read as {}", case.mode.name())
                };
                assert!(!sc.steps.is_empty(), "{name}");
            }
        }
    }
    trials.sort();
    assert_eq!(
        trials,
        [
            "basic-conversation::basic-multi-turn-conversation-test",
            "customer-support-conversation::advanced-customer-support-multi-turn-test",
            "execution-time-test::execution-time-test",
            "failing-test::failing-test-scenario",
            "invalid-missing-fields::invalid-scenario-missing-fields",
            "knowledge-transfer::knowledge-transfer-effectiveness-test",
            "legacy-compatibility::legacy-compatibility-test",
            "mock-test::test-mocking-engine",
            "natural-language-test::natural-language-agent-interaction-test",
            "test-github-issues::test-github-issues-listing",
        ]
    );
    Ok(())
}

/// The corpus's matrix expands to 2×2×2×2 = 16 trials, every one a valid scenario
/// with its four parameters.
fn eliza_matrix_expands_to_sixteen_trials() -> Needs {
    let root = corpus()?.join("eliza");
    let loaded = load_file(&root, &root.join("conversation-matrix.matrix.yaml"));
    assert_eq!(loaded.len(), 16);
    for l in &loaded {
        assert!(
            l.trial.starts_with("conversation-matrix::persona="),
            "{}",
            l.trial
        );
        assert!(l.trial.ends_with("::run-1"), "{}", l.trial);
        match &l.entry {
            Ok(case) => {
                let Mode::Scenario(sc) = &case.mode else {
                    panic!("{}", l.trial)
                };
                assert_eq!(sc.parameters.len(), 4, "{}", l.trial);
            }
            Err(e) => panic!("{}: {e}", l.trial),
        }
    }
    Ok(())
}

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        corpus_directory_is_present (needs corpus_present),
        yao_designer_inputs_parse_with_assert_arrays (needs corpus_present),
        yao_dev_app_hooks_read_before_and_after (needs corpus_present),
        yao_engine_inputs_parse (needs corpus_present),
        yao_engine_dynamic_inputs_parse (needs corpus_present),
        assert_reads_as_object_and_as_array,
        yao_engine_assert_vectors_give_the_expected_verdicts (needs corpus_present),
        assert_vectors_cover_the_upstream_table (needs corpus_present),
        eliza_scenarios_load_and_the_invalid_one_names_each_missing_field (needs corpus_present),
        eliza_matrix_expands_to_sixteen_trials (needs corpus_present),
        evalstudio_files_load_as_evalstudio_wrote_them (needs corpus_present),
        evalstudio_export_has_the_corpus_run_shape (needs corpus_present),
        tau2_task_files_load_and_import_to_the_same_cases (needs corpus_present),
    ]
}

/// `agentest <args>` with the store off, in the repository.
fn agentest(args: &[&str]) -> crate::common::Run {
    let mut cmd = std::process::Command::new(crate::common::BIN);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("AGENTEST_STORE", "off")
        .stdin(std::process::Stdio::null());
    crate::common::finish(&mut cmd)
}

/// The EvalStudio corpus: the lone scenarios file is one case with criteria; the
/// folder (its `evals.json` names scenarios that are not there) gives one located error
/// per missing scenario and the conversation seed one exchange; the personas file names
/// personas; the runs file is said to be no cases.
fn evalstudio_files_load_as_evalstudio_wrote_them() -> Needs {
    let dir = corpus()?.join("evalstudio");
    let shown = |f: &str| dir.join(f).display().to_string();
    let scenarios = shown("scenarios.json");
    let out = crate::common::Scratch::named("corpus", "evalstudio");
    let cases = out.join("cases.jsonl");
    let cases_arg = cases.display().to_string();
    let first_case = || -> Value {
        let text = std::fs::read_to_string(&cases).expect("the validated cases");
        serde_json::from_str(text.lines().next().unwrap_or_default()).expect("a case line")
    };
    let r = agentest(&["test", "-i", &scenarios, "--dry-run", "-o", &cases_arg]);
    assert_eq!(r.code, 0, "{r:?}");
    let case = first_case();
    assert!(
        r.stdout.contains("scenarios::booking-cancellation "),
        "{r:?}"
    );
    // The validated case, in agentest's own JSON Lines shape.
    assert_eq!(case["id"], "booking-cancellation");
    assert_eq!(case["success_criteria"], "Agent confirms cancellation");
    assert_eq!(case["max_messages"], 10);
    assert_eq!(case["failure_criteria_mode"], "on_max_messages");

    let r = agentest(&[
        "test",
        "-i",
        &dir.display().to_string(),
        "--dry-run",
        "--color",
        "never",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    // Paths are shown relative to the working directory: compare from `corpus/` on.
    let evals = "corpus/evalstudio/evals.json";
    let scenarios = "corpus/evalstudio/scenarios.json";
    for (n, col) in [(1, 21), (2, 40)] {
        let line = r
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("booking-cancellation-test::scenario-uuid-{n} ")))
            .unwrap_or_else(|| panic!("{r:?}"));
        let expected = [
            format!("{evals}:6:{col}: field `[0].scenarioIds[{}]`: \"scenario-uuid-{n}\" is no scenario's id in ", n - 1),
            format!("{scenarios}; known: 987fcdeb-51a2-3bc4-d567-890123456789 (booking-cancellation)"),
        ];
        for part in expected {
            assert!(line.contains(&part), "{line}\nexpected {part}");
        }
    }
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("conversation-seed::seed ") && l.ends_with("single")),
        "{r:?}"
    );
    assert!(r.stdout.contains("3 cases, 2 with errors"), "{r:?}");

    let seed = shown("conversation-seed.json");
    let r = agentest(&["test", "-i", &seed, "--dry-run", "-o", &cases_arg]);
    assert_eq!(r.code, 0, "{r:?}");
    let case = first_case();
    let input = case["input"].as_array().expect("the seed as input");
    assert_eq!(input.len(), 3);
    assert_eq!(input[2]["content"], "It's ABC123");

    let r = agentest(&["test", "-i", &shown("runs.json")]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("EvalStudio run store"), "{r:?}");

    // The personas file, named by a config, gives the persona to a case.
    let s = crate::common::Scratch::named("corpus", "personas");
    s.write(
        "agentest.toml",
        &format!(
            "personas_file = {}\n\n[agent]\ntype = \"process\"\ncommand = [\"python3\", {}]\n",
            crate::common::toml_str(&shown("personas.json")),
            crate::common::toml_str(crate::common::EXPENSE_AGENT)
        ),
    );
    s.write_suite(
        "s.jsonl",
        &[r#"{"id": "c", "input": "hello", "success_criteria": "greets", "personas": ["impatient-user"]}"#],
    );
    let r = agentest(&[
        "test",
        "-i",
        &s.join("s.jsonl").display().to_string(),
        "--dry-run",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("s::c::impatient-user"), "{r:?}");
    Ok(())
}

/// What `runs export --format evalstudio` writes for a completed run has every field
/// of the corpus's run, each of the same JSON type.
fn evalstudio_export_has_the_corpus_run_shape() -> Needs {
    let corpus_run: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus()?.join("evalstudio/runs.json")).expect("runs.json"),
    )
    .expect("runs.json is JSON");
    let corpus_run = &corpus_run[0];
    let s = crate::common::Scratch::named("corpus", "export");
    let store = s.join("runs.db");
    let store = store.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(crate::common::BIN);
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .env("AGENTEST_STORE", store)
            .env("AGENTEST_CASSETTES", "strict")
            .stdin(std::process::Stdio::null());
        crate::common::finish(&mut cmd)
    };
    let r = run(&["test", "-i", "agent-tests/evalstudio"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = run(&["runs", "export", "--format", "evalstudio"]);
    assert_eq!(r.code, 0, "{r:?}");
    let ours: Value = serde_json::from_str(&r.stdout).expect("an array of runs");
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    for run in ours.as_array().expect("an array") {
        for (key, theirs) in corpus_run.as_object().expect("a run") {
            // A run without a persona has no `personaId`, as EvalStudio writes it.
            if key == "personaId" && run.get("personaId").is_none() {
                continue;
            }
            let mine = run
                .get(key)
                .unwrap_or_else(|| panic!("no `{key}` in {run}"));
            assert_eq!(kind(mine), kind(theirs), "`{key}`: {mine} vs {theirs}");
        }
        for key in ["success", "score", "reason"] {
            assert_eq!(
                kind(&run["result"][key]),
                kind(&corpus_run["result"][key]),
                "result.{key}"
            );
        }
        let first = &run["messages"][0];
        assert!(
            first["role"].is_string() && first["content"].is_string(),
            "{first}"
        );
    }
    Ok(())
}

/// What a case is, without where it was read from: for comparing a tau2 tasks file with
/// the suite `agentest import tau2` made of it.
fn tau2_shape(case: &Case) -> Value {
    let Mode::Dynamic {
        simulator,
        checkpoints,
        max_turns,
        ..
    } = &case.mode
    else {
        panic!(
            "{}: a tau2 task is a dynamic case, got {}",
            case.id,
            case.mode.name()
        );
    };
    json!({
        "id": case.id,
        "name": case.name,
        "metadata": case.metadata,
        "profile": simulator.profile,
        "stop_signals": simulator.stop_signals,
        "max_turns": max_turns,
        "checkpoints": checkpoints.iter().map(|c| json!({
            "id": c.id,
            "required": c.required,
            "description": c.description,
            "assertions": c.assertions.iter().map(|a| a.raw.value()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// All four tau2-bench files load, every task a case (the array files and the
/// single-task file); structured instructions keep known and unknown information apart;
/// `reward_basis` decides what is required (user-side actions never are); and the suite
/// `agentest import tau2` writes holds the same cases.
fn tau2_task_files_load_and_import_to_the_same_cases() -> Needs {
    let root = corpus()?.join("tau2-bench");
    let out = crate::common::Scratch::named("corpus", "tau2");
    for (rel, count) in [
        ("mock/tasks.json", 10),
        ("airline/tasks.json", 50),
        ("telecom/tasks_small.json", 20),
        ("banking_knowledge/task_001.json", 1),
    ] {
        let (loaded, cases) = load(&format!("tau2-bench/{rel}"))?;
        assert_eq!(cases.len(), count, "{rel}");
        assert!(loaded.iter().all(|l| l
            .trial
            .starts_with(&format!("tau2-bench/{}::", rel.trim_end_matches(".json")))));
        let suite = out.join(&rel.replace('/', "-").replace(".json", ".jsonl"));
        let r = agentest(&[
            "import",
            "tau2",
            &root.join(rel).display().to_string(),
            "-o",
            &suite.display().to_string(),
        ]);
        assert_eq!(r.code, 0, "{rel}: {r:?}");
        let imported = load_file(out.path(), &suite);
        let imported: Vec<Case> = imported
            .into_iter()
            .map(|l| {
                *l.entry
                    .unwrap_or_else(|e| panic!("{rel}: imported line: {e}"))
            })
            .collect();
        let shapes = |cs: &[Case]| cs.iter().map(tau2_shape).collect::<Vec<_>>();
        assert_eq!(shapes(&imported), shapes(&cases), "{rel}");
    }
    let (_, airline) = load("tau2-bench/airline/tasks.json")?;
    let first = tau2_shape(&airline[0]);
    assert_eq!(
        first["profile"]["known_info"],
        "You are Emma Kim.\nYour user id is emma_kim_9957."
    );
    assert!(first["profile"]["goal"]
        .as_str()
        .unwrap_or_default()
        .starts_with("You want to cancel reservation EHGLP3."));
    assert_eq!(first["profile"]["domain"], "airline");
    // DB and COMMUNICATE gate; the nl assertion is reported only.
    assert_eq!(first["checkpoints"][0]["id"], "nl-1");
    assert_eq!(first["checkpoints"][0]["required"], false);
    let (_, telecom) = load("tau2-bench/telecom/tasks_small.json")?;
    let t = tau2_shape(&telecom[0]);
    let action = &t["checkpoints"][0];
    assert_eq!(action["id"], "toggle_roaming_0");
    assert_eq!(action["required"], false, "a user-side action: {action}");
    assert!(t["metadata"]["tau2"]["initial_state"]["initialization_actions"].is_array());
    let (_, banking) = load("tau2-bench/banking_knowledge/task_001.json")?;
    let b = tau2_shape(&banking[0]);
    assert_eq!(
        b["metadata"]["tau2"]["user_tools"],
        json!(["apply_for_credit_card"])
    );
    assert_eq!(
        b["checkpoints"][0]["assertions"][0]["arguments"]["card_type"],
        "Gold Rewards Card"
    );
    Ok(())
}
