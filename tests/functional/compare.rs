//! `agentest runs compare A B`: two executions of the same suite, recorded in a run
//! store by real runs of the binary against a process agent whose answers a file
//! decides, compared case by case, with Fisher's exact test computed here by hand.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{clean, Scratch, BIN};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![two_executions_are_compared_and_only_a_significant_drop_regresses]
}

fn run(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let out = clean(Command::new(BIN))
        .current_dir(s.path())
        .args(args)
        .env("AGENTEST_STORE", s.join("runs.db"))
        .output()
        .expect("run agentest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// C(n, k), exactly.
fn choose(n: u128, k: u128) -> u128 {
    (1..=k).fold(1, |acc, i| acc * (n + 1 - i) / i)
}

/// Fisher's one-sided p-value for the second's passes being this low or lower.
fn fisher(before: (u128, u128), after: (u128, u128)) -> f64 {
    let (pa, fa) = before;
    let (pb, fb) = after;
    let (n, passes, nb) = (pa + fa + pb + fb, pa + pb, pb + fb);
    let low = passes.saturating_sub(n - nb);
    let hits: u128 = (low..=pb)
        .map(|k| choose(passes, k) * choose(n - passes, nb - k))
        .sum();
    hits as f64 / choose(n, nb) as f64
}

fn counts(v: &Value) -> (u128, u128) {
    (
        v["passed"].as_u64().expect("passed").into(),
        v["failed"].as_u64().expect("failed").into(),
    )
}

/// Execution A: the agent passes everything. Execution B: it fails everything; one case
/// is removed and one added. A single run that flips is listed as now failing, with
/// Fisher's p of 1/2: not a regression. The repeated case (ten runs under a Wilson gate)
/// and the whole run drop significantly, with the p-values computed here from the
/// counts the comparison reports; `--fail-on-regression` exits 1, and a comparison of
/// an execution with itself finds nothing.
fn two_executions_are_compared_and_only_a_significant_drop_regresses() {
    let s = Scratch::named("compare", "two");
    s.write("agent.py", crate::common::MODE_AGENT);
    s.write(
        "agentest.toml",
        "[agent]\ntype = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n",
    );
    let passes = json!({"type": "contains", "value": "pass:"});
    let line = |id: &str, extra: Value| {
        let mut case = json!({"id": id, "input": "hi", "assert": passes});
        if let (Value::Object(c), Value::Object(e)) = (&mut case, extra) {
            c.extend(e);
        }
        format!("{case}\n")
    };
    let repeated = json!({"runs": 10, "pass_rate": 0.5, "confidence": 0.95});
    let steady = json!({"assert": {"type": "contains", "value": "You said"}});
    s.write("mode.txt", "pass");
    s.write(
        "suites/s.jsonl",
        &[
            line("flips", json!({})),
            line("steady", steady.clone()),
            line("repeated", repeated.clone()),
            line("gone", json!({})),
        ]
        .concat(),
    );
    let (code, _, err) = run(&s, &["test", "-i", "suites"]);
    assert_eq!(code, 0, "{err}");
    s.write("mode.txt", "fail");
    s.write(
        "suites/s.jsonl",
        &[
            line("flips", json!({})),
            line("steady", steady),
            line("repeated", repeated),
            line("fresh", json!({})),
        ]
        .concat(),
    );
    let (code, _, err) = run(&s, &["test", "-i", "suites"]);
    assert_eq!(code, 1, "{err}");

    let (code, out, err) = run(&s, &["runs", "compare", "1", "2", "--format", "json"]);
    assert_eq!(code, 0, "without --fail-on-regression: {err}");
    let c: Value = serde_json::from_str(&out).expect("JSON");
    let case = |t: &str| -> &Value {
        c["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["trial"] == t)
            .unwrap_or_else(|| panic!("{t} in {c}"))
    };
    assert_eq!(case("s::flips")["change"], "now_failing");
    assert_eq!(case("s::flips")["p_value"], 0.5);
    assert_eq!(case("s::flips")["regression"], false);
    assert_eq!(case("s::steady")["change"], "same");
    assert!(case("s::steady")["p_value"].is_null());
    assert_eq!(case("s::gone")["change"], "removed");
    assert_eq!(case("s::fresh")["change"], "new");
    let r = case("s::repeated");
    let (before, after) = (counts(&r["before_counts"]), counts(&r["after_counts"]));
    assert!(
        before.0 >= 3 && before.1 == 0 && after.0 == 0 && after.1 >= 3,
        "{r}"
    );
    let p = fisher(before, after);
    assert!(
        (r["p_value"].as_f64().unwrap() - p).abs() < 1e-12,
        "{r} vs {p}"
    );
    assert!(p < 0.05, "{p}");
    assert_eq!(r["regression"], true);
    // The whole: the cases in both (steady, flips, repeated).
    let (wa, wb) = (counts(&c["before"]), counts(&c["after"]));
    assert_eq!(wa, (before.0 + 2, 0));
    assert_eq!(wb, (1, after.1 + 1));
    let whole = fisher(wa, wb);
    assert!(
        (c["p_value"].as_f64().unwrap() - whole).abs() < 1e-12,
        "{c} vs {whole}"
    );
    assert_eq!(c["regression"], whole < 0.05);

    let (code, md, _) = run(&s, &["runs", "compare", "1", "2", "--fail-on-regression"]);
    assert_eq!(code, 1, "{md}");
    assert!(md.starts_with("# agentest runs compare 1 → 2\n"), "{md}");
    for part in [
        "## Regressions (significant drops)",
        &format!(
            "| `s::repeated` | passed, {}/{} passed (100.0%) | failed, 0/{} passed (0.0%) | {p:.4} |",
            before.0, before.0, after.1
        ),
        "## Now failing",
        "| `s::flips` | passed | failed | 0.5000 |",
        "## New cases",
        "| `s::fresh` | — | failed |",
        "## Removed cases",
        "| `s::gone` | passed | — |",
    ] {
        assert!(md.contains(part), "{part}\n{md}");
    }
    let (code, same, err) = run(&s, &["runs", "compare", "2", "2", "--fail-on-regression"]);
    assert_eq!(code, 0, "{err}");
    assert!(same.contains("No case changed."), "{same}");
    let (code, _, err) = run(&s, &["runs", "compare", "1", "9"]);
    assert_eq!(code, 2);
    assert!(err.contains("no execution 9 in"), "{err}");
}
