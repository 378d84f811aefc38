//! `agentest runs`: what the run store holds. `list` the runs (newest first), `show` one
//! with its transcript and result, `delete` runs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use crate::record::store::{self, Backend, Doomed, Filter, RunRow, LIFECYCLE, VERDICTS};
use crate::record::CaseReport;

#[derive(clap::Args)]
pub(super) struct RunsArgs {
    #[command(subcommand)]
    command: RunsCommand,
    /// The store (default: as `agentest test` finds it from the current folder:
    /// AGENTEST_STORE, `[store] path`, target/agentest/runs.db or .agentest/runs.db).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long, global = true)]
    store: Option<String>,
}

#[derive(Subcommand)]
enum RunsCommand {
    /// The runs, newest first: id, execution, status, verdict, trial, start, time, reason.
    List {
        /// A status (queued, pending, running, completed, error) or a verdict (passed,
        /// failed, skipped, timeout, inconclusive).
        #[arg(long)]
        status: Option<String>,
        /// Runs that did not pass by this party's fault: agent, simulator, judge or
        /// infrastructure.
        #[arg(long)]
        blame: Option<String>,
        /// A suite, with the suites under it.
        #[arg(long)]
        suite: Option<String>,
        /// An execution: its id, or its key (AGENTEST_EXECUTION, the CI's run).
        #[arg(long)]
        execution: Option<String>,
        /// At most this many (default 50).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Cases whose verdict changed between executions on the same inputs (the case
    /// as written unchanged), with their pass rate in each, oldest first.
    Flaky {
        /// Look at the last N executions (default 10).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
        last: u32,
    },
    /// One run: its result and transcript.
    Show {
        /// The run's id (from `runs list`).
        id: i64,
    },
    /// An execution's ended runs as EvalStudio's `runs.json` (a JSON array its UI reads)
    /// or as agentest's JSONL report (for `agentest report`).
    Export {
        /// `evalstudio` or `jsonl`.
        #[arg(long, value_parser = ["evalstudio", "jsonl"])]
        format: String,
        /// The execution: its id or its key (default: the newest).
        #[arg(long)]
        execution: Option<String>,
        /// The file to write (default: stdout).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// What changed from execution A to execution B: cases now failing or passing, new
    /// and removed ones, and pass rates compared by Fisher's exact test (only a
    /// significant drop is a regression).
    Compare {
        /// The first execution: its id or its key.
        before: String,
        /// The second execution: its id or its key.
        after: String,
        /// `md` (Markdown, the default) or `json`.
        #[arg(long, default_value = "md", value_parser = ["md", "json"])]
        format: String,
        /// The significance level of a regression.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// Exit 1 when anything regressed significantly (for CI gates).
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// Run again the runs of an execution that ended in error (a crash, a timeout, a
    /// judge with no verdict), as new runs linked to them; passed and failed runs are
    /// not retried.
    Retry {
        /// The execution: its id or its key (default: the newest).
        #[arg(long)]
        execution: Option<String>,
    },
    /// Delete a run, an execution's runs, or every run of executions that started
    /// before a date.
    Delete {
        /// The run's id.
        id: Option<i64>,
        /// Every run of this execution (its id or its key), and the execution.
        #[arg(long, conflicts_with = "id")]
        execution: Option<String>,
        /// Every execution that started before this date (YYYY-MM-DD, or RFC 3339).
        #[arg(long, conflicts_with_all = ["id", "execution"])]
        before: Option<String>,
    },
}

/// Runs `agentest runs ...`.
pub(super) fn runs(args: RunsArgs) -> Result<ExitCode, String> {
    let address =
        super::locate::existing_store(super::locate::parse_store(args.store.as_deref())?)?;
    let mut db = store::open(&address).map_err(|e| e.to_string())?;
    let failed = |e: crate::errors::DbError| format!("failed to read the run store {address}: {e}");
    let mut out = std::io::stdout().lock();
    match args.command {
        RunsCommand::List {
            status,
            suite,
            execution,
            blame,
            limit,
        } => {
            if let Some(b) = &blame {
                crate::case::Party::parse(b).map_err(|why| format!("--blame: {why}"))?;
            }
            if let Some(s) = &status {
                if !LIFECYCLE.contains(&s.as_str()) && !VERDICTS.contains(&s.as_str()) {
                    return Err(format!(
                        "--status {s}: expected a status ({}) or a verdict ({})",
                        LIFECYCLE.join(", "),
                        VERDICTS.join(", ")
                    ));
                }
            }
            let filter = Filter {
                status,
                suite,
                execution: execution_id(db.as_mut(), execution.as_deref())?,
                blame,
                trial: None,
                limit,
            };
            let rows = db.list(&filter).map_err(failed)?;
            let _ = write_rows(&mut out, &rows);
        }
        RunsCommand::Flaky { last } => {
            let cases = db.flaky(last as usize).map_err(failed)?;
            let _ = std::io::Write::write_all(&mut out, flaky_text(&cases, last).as_bytes());
        }
        RunsCommand::Show { id } => {
            let Some((row, record)) = db.show(id).map_err(failed)? else {
                return Err(format!("no run {id} in {address}"));
            };
            let _ =
                std::io::Write::write_all(&mut out, show_text(&row, record.as_deref()).as_bytes());
        }
        RunsCommand::Export {
            format,
            execution,
            output,
        } => {
            let execution = execution_id(db.as_mut(), execution.as_deref())?;
            export(db.as_mut(), &format, execution, output)?
        }
        RunsCommand::Retry { execution } => {
            let execution = execution_id(db.as_mut(), execution.as_deref())?;
            return retry(db, execution);
        }
        RunsCommand::Compare {
            before,
            after,
            format,
            alpha,
            fail_on_regression,
        } => {
            if !(alpha > 0.0 && alpha < 1.0) {
                return Err(format!(
                    "--alpha {alpha}: expected a level between 0 and 1, like 0.05"
                ));
            }
            let mut stored = |given: &str| -> Result<crate::record::store::Stored, String> {
                let id = execution_id(db.as_mut(), Some(given))?.unwrap_or_default();
                db.stored(Some(id)).map_err(failed)?.ok_or_else(|| {
                    format!("no execution {given} in {address}; agentest runs list shows them")
                })
            };
            let (a, b) = (stored(&before)?, stored(&after)?);
            let comparison = crate::check::compare::compare(&a.cases, &b.cases, alpha);
            let text = match format.as_str() {
                "json" => {
                    serde_json::to_string_pretty(&comparison).map_err(|e| e.to_string())? + "\n"
                }
                _ => compare_text(&comparison, a.execution, b.execution),
            };
            let _ = std::io::Write::write_all(&mut out, text.as_bytes());
            if fail_on_regression && comparison.regressed() {
                return Ok(ExitCode::from(1));
            }
        }
        RunsCommand::Delete {
            id,
            execution,
            before,
        } => {
            let execution = execution_id(db.as_mut(), execution.as_deref())?;
            let doomed = match (id, execution, before) {
                (Some(id), _, _) => Doomed::Run(id),
                (_, Some(e), _) => Doomed::Execution(e),
                (_, _, Some(date)) => Doomed::Before(date_bound(&date)?),
                _ => {
                    return Err(
                        "say what to delete: a run's id, --execution N or --before DATE".into(),
                    )
                }
            };
            let n = db.delete(&doomed).map_err(failed)?;
            eprintln!("deleted {}", crate::util::count(n as u64, "run", "runs"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The execution `given` names: the one with that key, else the one with that id;
/// `None` when none is given.
pub(super) fn execution_id(
    db: &mut dyn Backend,
    given: Option<&str>,
) -> Result<Option<i64>, String> {
    let Some(given) = given else {
        return Ok(None);
    };
    let address = db.address().clone();
    if let Some(id) = db
        .execution_by_key(given)
        .map_err(|e| format!("failed to read the run store {address}: {e}"))?
    {
        return Ok(Some(id));
    }
    given.trim().parse::<i64>().map(Some).map_err(|_| {
        format!("no execution with the key `{given}` in {address}; give an execution's key (AGENTEST_EXECUTION, the CI's run) or its id (agentest runs list shows them)")
    })
}

/// `runs export`: an execution's runs as JSONL, or as EvalStudio's records.
fn export(
    db: &mut dyn Backend,
    format: &str,
    execution: Option<i64>,
    output: Option<std::path::PathBuf>,
) -> Result<(), String> {
    let stored = stored_execution(db, execution)?;
    let text = if format == "evalstudio" {
        let mut t = serde_json::to_string_pretty(&store::evalstudio(&stored)).unwrap_or_default();
        t.push('\n');
        t
    } else {
        let mut t = String::new();
        for c in &stored.cases {
            t.push_str(&serde_json::to_string(c).unwrap_or_default());
            t.push('\n');
        }
        t
    };
    match output {
        Some(file) => {
            crate::util::write_atomically(&file, &text)
                .map_err(|e| format!("failed to write {}: {e}", file.display()))?;
            eprintln!("wrote {} ({} runs)", file.display(), stored.cases.len());
        }
        None => {
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
        }
    }
    Ok(())
}

/// `runs retry`: the cases of an execution whose last run was an error, run again.
fn retry(mut db: Box<dyn Backend>, execution: Option<i64>) -> Result<ExitCode, String> {
    let address = db.address().clone();
    let Some((id, root)) = db
        .execution_root(execution)
        .map_err(|e| format!("failed to read the run store {address}: {e}"))?
    else {
        return Err(match execution {
            Some(e) => format!("no execution {e} in {address}"),
            None => format!("no execution in {address}"),
        });
    };
    if !Path::new(&root).exists() {
        return Err(format!(
            "execution {id} ran {root}, which is no file or folder (a message, or moved); run it again with agentest test"
        ));
    }
    drop(db);
    let args = super::TestArgs {
        retry_execution: Some(id),
        store: Some(address),
        ..super::TestArgs::plain(root)
    };
    super::test::test(args)
}

/// `runs flaky`: a line per case, its verdicts and pass rates oldest first.
fn flaky_text(cases: &[store::FlakyCase], last: u32) -> String {
    if cases.is_empty() {
        return format!(
            "no case changed its verdict on the same inputs in the last {last} executions\n"
        );
    }
    let width = cases.iter().map(|c| c.trial.len()).max().unwrap_or(0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<width$}  {:>6}  {:>9}  history (execution: verdict pass-rate, oldest first)",
        "trial", "passed", "pass rate"
    );
    for c in cases {
        let passed = c.history.iter().filter(|(_, v, _)| v == "passed").count();
        let rate = c.history.iter().map(|(_, _, r)| r).sum::<f64>() / c.history.len() as f64;
        let history: Vec<String> = c
            .history
            .iter()
            .map(|(e, v, r)| format!("#{e}: {v} {}", crate::record::format::common::percent(*r)))
            .collect();
        let _ = writeln!(
            s,
            "{:<width$}  {:>6}  {:>9}  {}",
            c.trial,
            format!("{passed}/{}", c.history.len()),
            crate::record::format::common::percent(rate),
            history.join(", ")
        );
    }
    s
}

/// Execution `id` (the newest without one) with its ended runs.
pub(super) fn stored_execution(
    db: &mut dyn Backend,
    id: Option<i64>,
) -> Result<store::Stored, String> {
    let address = db.address().clone();
    db.stored(id)
        .map_err(|e| format!("failed to read the run store {address}: {e}"))?
        .ok_or_else(|| match id {
            Some(e) => format!("no execution {e} in {address}"),
            None => format!("no execution in {address}"),
        })
}

/// `YYYY-MM-DD` as the start of that day (UTC), or an RFC 3339 time as given.
fn date_bound(date: &str) -> Result<String, String> {
    let d = date.trim();
    let day = d.len() == 10
        && d.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    let full = d.len() >= 20 && d.as_bytes().get(10) == Some(&b'T');
    if day {
        Ok(format!("{d}T00:00:00Z"))
    } else if full {
        Ok(d.to_string())
    } else {
        Err(format!(
            "--before {date}: expected a date (2026-11-01) or an RFC 3339 time (2026-11-01T12:00:00Z)"
        ))
    }
}

fn write_rows(out: &mut impl std::io::Write, rows: &[RunRow]) -> std::io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "no runs");
    }
    let width = rows
        .iter()
        .map(|r| r.trial.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    writeln!(
        out,
        "{:>6}  {:>5}  {:<9}  {:<12}  {:<width$}  {:<20}  {:>8}  REASON",
        "ID", "EXEC", "STATUS", "VERDICT", "TRIAL", "STARTED", "TIME"
    )?;
    for r in rows {
        let reason = r
            .reason
            .as_deref()
            .and_then(|t| t.lines().next())
            .unwrap_or("")
            .chars()
            .take(80)
            .collect::<String>();
        let time = r
            .latency_ms
            .map(|ms| format!("{:.2}s", ms as f64 / 1000.0))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>6}  {:>5}  {:<9}  {:<12}  {:<width$}  {:<20}  {:>8}  {reason}",
            r.id,
            r.execution,
            r.status,
            r.verdict.as_deref().unwrap_or("-"),
            r.trial,
            r.started_at.as_deref().unwrap_or("-"),
            time,
        )?;
    }
    Ok(())
}

/// A run: its row's facts, then its case's transcript as the reports show it.
fn show_text(r: &RunRow, record: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "run {} (execution {}): {}", r.id, r.execution, r.trial);
    let _ = writeln!(
        s,
        "status: {}{}",
        r.status,
        r.verdict
            .as_deref()
            .map(|v| format!(" ({v})"))
            .unwrap_or_default()
    );
    if let Some(t) = &r.started_at {
        let _ = writeln!(s, "started: {t}");
    }
    if let Some(t) = &r.completed_at {
        let _ = writeln!(s, "completed: {t}");
    }
    if let Some(id) = r.retry_of {
        let _ = writeln!(s, "retries run {id}");
    }
    match record.and_then(|j| serde_json::from_str::<CaseReport>(j).ok()) {
        Some(report) => {
            let _ = writeln!(s);
            s.push_str(&crate::record::format::common::transcript(&report));
        }
        None => {
            let _ = writeln!(s, "\n(no transcript: the run has not ended)");
        }
    }
    s
}

/// `runs compare` in Markdown: the whole's pass counts and test, then the cases by how
/// they changed.
fn compare_text(c: &crate::check::compare::Comparison, a: i64, b: i64) -> String {
    use crate::check::compare::{Change, Counts};
    use std::fmt::Write as _;
    let counts = |n: Option<Counts>| {
        n.map_or_else(String::new, |n| {
            let total = n.passed + n.failed;
            if total == 0 {
                "no counted run".to_string()
            } else {
                format!(
                    "{}/{total} passed ({:.1}%)",
                    n.passed,
                    f64::from(n.passed) * 100.0 / f64::from(total)
                )
            }
        })
    };
    let status = |s: Option<crate::record::Status>| {
        s.map_or_else(|| "—".to_string(), |s| s.label().to_lowercase())
    };
    let p = |p: Option<f64>| p.map_or_else(String::new, |p| format!("{p:.4}"));
    let mut s = format!("# agentest runs compare {a} → {b}\n\n");
    let verdict = match (c.p_value, c.regression) {
        (Some(_), true) => format!("a significant drop: REGRESSION (α {})", c.alpha),
        (Some(_), false) => format!("a drop within chance (α {})", c.alpha),
        (None, _) => "no drop".to_string(),
    };
    let _ = writeln!(
        s,
        "Runs counted: {} → {}; Fisher p = {}: {verdict}\n",
        counts(Some(c.before)),
        counts(Some(c.after)),
        if c.p_value.is_some() {
            p(c.p_value)
        } else {
            "—".into()
        },
    );
    type Keep<'a> = &'a dyn Fn(&crate::check::compare::CaseChange) -> bool;
    let sections: [(&str, Keep<'_>); 6] = [
        ("Regressions (significant drops)", &|x| x.regression),
        ("Now failing", &|x| {
            x.change == Change::NowFailing && !x.regression
        }),
        ("Now passing", &|x| x.change == Change::NowPassing),
        ("Other changes", &|x| {
            !x.regression
                && (x.change == Change::Other || (x.change == Change::Same && x.p_value.is_some()))
        }),
        ("New cases", &|x| x.change == Change::New),
        ("Removed cases", &|x| x.change == Change::Removed),
    ];
    let mut any = false;
    for (title, keep) in sections {
        let rows: Vec<_> = c.cases.iter().filter(|x| keep(x)).collect();
        if rows.is_empty() {
            continue;
        }
        any = true;
        let _ = writeln!(
            s,
            "## {title}\n\n| case | before | after | p |\n|---|---|---|---|"
        );
        for x in rows {
            // A repeated case's counts beside its status; a lone run's status says it all.
            let side = |st, n: Option<Counts>| match n {
                Some(n) if n.passed + n.failed > 1 => {
                    format!("{}, {}", status(st), counts(Some(n)))
                }
                _ => status(st),
            };
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                x.trial,
                side(x.before, x.before_counts),
                side(x.after, x.after_counts),
                p(x.p_value)
            );
        }
        s.push('\n');
    }
    if !any {
        s.push_str("No case changed.\n");
    }
    s
}
