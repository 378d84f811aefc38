//! Reporter agents (`-r/--reporter NAME`, the Yao tool's custom reporters): when a run
//! ends, the named agent receives the whole report and its answer is the report file.
//!
//! The agent (any kind) receives `{test_mode: "reporter", report: {summary, results,
//! metadata}, format, options}` as the request's `metadata` and, for a model-backed one,
//! instructions and the same JSON as messages. It answers the report as text (a string
//! `content`; one fenced block around the whole answer is taken off) or as JSON (written
//! pretty-printed), with one repair attempt when the answer is empty or cut off. Its
//! model calls are never recorded: a report differs every run (times, durations), so a
//! recording could never be replayed.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::config::CassetteMode;
use crate::errors::HelperError;
use crate::llm::ModelCalls;
use crate::protocol::Message;
use crate::record::format::json::parts;
use crate::record::{CaseReport, RunInfo, Summary};
use crate::run::engine::Engine;
use crate::run::roles::ask::{ask, helper_session, Answer, Question, Respondent};

/// What a reporter is asked for.
pub(crate) struct ReportRequest<'a> {
    /// The reporter agent's name.
    pub(crate) name: &'a str,
    /// A suite file of the run: the reporter is an agent of its config.
    pub(crate) suite: &'a Path,
    /// The report file to write; its extension names the format.
    pub(crate) output: &'a Path,
    pub(crate) run: &'a RunInfo,
    pub(crate) summary: &'a Summary,
    pub(crate) cases: &'a [CaseReport],
    /// `-v`.
    pub(crate) verbose: bool,
}

impl Engine {
    /// Asks the reporter agent for the report and returns its text, or why there is none.
    pub(crate) async fn report_with(&self, r: &ReportRequest<'_>) -> Result<String, HelperError> {
        let who = format!("reporter `{}`", r.name);
        let ctx = self
            .contexts
            .of(r.suite)
            .map_err(|e| HelperError::new(&who, e))?;
        let (ctx, who) = (&ctx, &who);
        self.within_timeout(ctx, who, |deadline| async move {
            let calls = Arc::new(ModelCalls::new(Default::default(), CassetteMode::Off));
            let (mut session, template, _) =
                helper_session(ctx, r.name, "reporter", calls, deadline).await?;
            let question = question(&self.reporter_input(r));
            let mut respondent = Respondent::Agent {
                session: &mut session,
                template,
            };
            let answer = ask(&mut respondent, who, &question, read_report).await;
            drop(respondent);
            session.close().await;
            Ok(answer?)
        })
        .await
    }

    /// The Yao tool's reporter input: the report (its `metadata` is the JSON report's
    /// `environment`, with `-c`/`-u`/`-t` when given), the format and the options.
    fn reporter_input(&self, r: &ReportRequest<'_>) -> Map<String, Value> {
        let (summary, mut metadata, results) = parts(r.run, r.summary, r.cases);
        let o = &self.options.overrides;
        for (key, value) in [
            ("connector", &o.connector),
            ("user", &o.user),
            ("team", &o.team),
        ] {
            if let (Some(v), Value::Object(m)) = (value, &mut metadata) {
                m.insert(key.into(), json!(v));
            }
        }
        let mut input = Map::new();
        input.insert("test_mode".into(), json!("reporter"));
        input.insert(
            "report".into(),
            json!({"summary": summary, "results": results, "metadata": metadata}),
        );
        input.insert("format".into(), json!(format_name(r.output)));
        input.insert(
            "options".into(),
            json!({"verbose": r.verbose, "include_outputs": true}),
        );
        input
    }
}

/// The format a report file's extension names, as the Yao tool's reporters take it:
/// `html`, `markdown`, `json`, `text`, else the extension itself.
pub(crate) fn format_name(path: &Path) -> String {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "htm" | "html" => "html".into(),
        "md" | "markdown" => "markdown".into(),
        "" | "txt" | "text" => "text".into(),
        other => other.into(),
    }
}

/// The reporter's instructions, with the input as JSON to read.
fn question(input: &Map<String, Value>) -> Question {
    let format = input["format"].as_str().unwrap_or("text").to_string();
    let report = serde_json::to_string(&input["report"]).unwrap_or_default();
    Question {
        instructions: format!(
            "You are a test report generator. Write a report of the test run below in {format} format: \
             show the summary prominently, then every case with its status and, for failures, why. \
             Answer with the report only, no commentary."
        ),
        messages: vec![Message::user(format!("The test run, as JSON:\n{report}"))],
        input: format!("Write the {format} report of this test run."),
        metadata: Value::Object(input.clone()),
        repair: format!("Answer with the whole report in {format}, and nothing else."),
        wanted: "a report (text, or JSON)",
        schema: Value::Null,
        schema_name: "report",
        model: Default::default(),
    }
}

/// The report in a reporter's answer: text as it is (less one fence around all of it),
/// JSON pretty-printed.
fn read_report(answer: &Answer) -> Result<String, String> {
    if answer.truncated {
        return Err("the answer was cut off at the token limit".into());
    }
    match &answer.value {
        Value::String(s) if s.trim().is_empty() => Err("the answer is empty".into()),
        Value::String(s) => Ok(unfence(s)),
        Value::Null => Err("the answer has no content".into()),
        other => Ok(serde_json::to_string_pretty(other).unwrap_or_default() + "\n"),
    }
}

/// `text` without one fenced block around all of it (```html ... ```), as models write.
fn unfence(text: &str) -> String {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .and_then(|rest| rest.split_once('\n'))
        .filter(|(lang, body)| !lang.contains(' ') && !body.contains("```"));
    match inner {
        Some((_, body)) => format!("{}\n", body.trim_end()),
        None if text.ends_with('\n') => text.to_string(),
        None => format!("{text}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_yao_reporters_take_them() {
        assert_eq!(format_name(Path::new("r.html")), "html");
        assert_eq!(format_name(Path::new("r.MD")), "markdown");
        assert_eq!(format_name(Path::new("r")), "text");
        assert_eq!(format_name(Path::new("r.csv")), "csv");
    }

    #[test]
    fn one_fence_around_the_whole_answer_is_taken_off() {
        assert_eq!(unfence("```html\n<h1>x</h1>\n```"), "<h1>x</h1>\n");
        assert_eq!(
            unfence("# Report\n\n```sh\nls\n```"),
            "# Report\n\n```sh\nls\n```\n"
        );
        assert_eq!(unfence("plain"), "plain\n");
    }

    #[test]
    fn empty_or_cut_off_answers_are_not_reports() {
        let answer = |value: Value, truncated| Answer { value, truncated };
        assert_eq!(
            read_report(&answer(json!("  "), false)).unwrap_err(),
            "the answer is empty"
        );
        assert!(read_report(&answer(json!("<p>"), true)).is_err());
        assert_eq!(
            read_report(&answer(json!({"ok": true}), false)).unwrap(),
            "{\n  \"ok\": true\n}\n"
        );
    }
}
