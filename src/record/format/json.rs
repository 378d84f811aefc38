//! The JSON report (`-o report.json`): one document with the summary, the environment
//! and every case's full record.

use serde_json::{json, Value};

use super::common::{sorted, summary_for};
use crate::record::RunInfo;
use crate::record::{CaseReport, Summary};

/// One pretty-printed JSON document, keys in a fixed order:
///
/// ```text
/// {
///   "summary": { "type": "summary", "total": ..., "passed": ..., ... },
///   "environment": { "version", "os", "arch", "started_at", "command", "agent", "input" },
///   "results": [ case records, as in the JSONL report, sorted by trial name ]
/// }
/// ```
///
/// `summary` deserialises back into [`Summary`] and each result into [`CaseReport`]. The
/// summary's `duration_ms` is the run's when the summary has none.
pub fn render(run: &RunInfo, summary: &Summary, cases: &[CaseReport]) -> String {
    let (summary, environment, results) = parts(run, summary, cases);
    let doc = json!({
        "summary": summary,
        "environment": environment,
        "results": results,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// The report's three parts: the summary, the environment and the sorted results. A
/// reporter agent (`-r`) receives them as `{summary, metadata, results}`.
pub(crate) fn parts(
    run: &RunInfo,
    summary: &Summary,
    cases: &[CaseReport],
) -> (Value, Value, Value) {
    let results: Vec<Value> = sorted(cases)
        .into_iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect();
    let summary = serde_json::to_value(summary_for(run, summary, cases)).unwrap_or(Value::Null);
    let environment = json!({
        "version": run.agentest_version,
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "started_at": run.started_at,
        "command": run.command,
        "agent": run.agent,
        "input": run.input,
    });
    (summary, environment, Value::Array(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::format::common::sample;

    #[test]
    fn parses_back_with_fixed_key_order() {
        let (run, summary, cases) = sample();
        let text = render(&run, &summary, &cases);
        let doc: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, ["summary", "environment", "results"]);
        let env: Vec<&str> = doc["environment"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            env,
            [
                "version",
                "os",
                "arch",
                "started_at",
                "command",
                "agent",
                "input"
            ]
        );
        let back: Summary = serde_json::from_value(doc["summary"].clone()).unwrap();
        assert_eq!(back, summary);
        let results: Vec<CaseReport> = serde_json::from_value(doc["results"].clone()).unwrap();
        assert_eq!(results.len(), cases.len());
        let trials: Vec<&str> = results.iter().map(|c| c.trial.as_str()).collect();
        let mut want = trials.clone();
        want.sort();
        assert_eq!(trials, want, "sorted by trial");
        for c in &cases {
            assert!(results.contains(c), "{} survives the round trip", c.trial);
        }
        assert_eq!(doc["environment"]["command"][0], "agentest");
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn summary_takes_the_run_time_when_it_has_none() {
        let (run, mut summary, cases) = sample();
        summary.duration_ms = 0;
        let doc: Value = serde_json::from_str(&render(&run, &summary, &cases)).unwrap();
        assert_eq!(doc["summary"]["duration_ms"], 410);
        assert_eq!(doc["summary"]["type"], "summary");
    }
}
