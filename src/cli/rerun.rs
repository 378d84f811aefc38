//! `agentest rerun RUN_ID`: one stored result run again as it ran, and whether its
//! verdict holds.
//!
//! The run's trial is run by this same binary, as a child process (`agentest test`
//! over the execution's input, `--run` the one trial), with the seed the record's
//! `provenance` kept, and offline from the case's cassette when it had one. The child
//! records into the same store, as a run of its own. What the two records say is then
//! compared: the verdict, and whether the case, the config or agentest changed since.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use crate::record::store;
use crate::util::StoreAddress;

#[derive(clap::Args)]
pub(super) struct RerunArgs {
    /// The run's id (`agentest runs list` shows them).
    id: i64,
    /// The store (default: as `agentest test` finds it from the current folder).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long)]
    store: Option<String>,
}

/// Runs `agentest rerun ID`: exit 0 when the verdict is the recorded one, 1 when it
/// changed, 2 when the run cannot be run again.
pub(super) fn rerun(args: RerunArgs) -> Result<ExitCode, String> {
    let address =
        super::locate::existing_store(super::locate::parse_store(args.store.as_deref())?)?;
    let mut db = store::open(&address).map_err(|e| e.to_string())?;
    let failed = |e: crate::errors::DbError| format!("failed to read the run store {address}: {e}");
    let Some((row, record)) = db.show(args.id).map_err(failed)? else {
        return Err(format!(
            "no run {} in {address}; agentest runs list shows the runs",
            args.id
        ));
    };
    let Some(verdict) = row.verdict.clone() else {
        return Err(format!(
            "run {} ({}) has not ended (it is {}): there is no verdict to reproduce",
            row.id, row.trial, row.status
        ));
    };
    let Some((_, root)) = db.execution_root(Some(row.execution)).map_err(failed)? else {
        return Err(format!(
            "run {} names execution {}, which {address} does not hold",
            row.id, row.execution
        ));
    };
    if !Path::new(&root).exists() {
        return Err(format!(
            "run {} ran {root}, which is no file or folder now (a message, or moved): it cannot be run again",
            row.id
        ));
    }
    drop(db);
    let before: Value = record
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    // A folder of its own: created here (an existing one is refused), so nobody else's
    // file stands where the child writes its report.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let scratch =
        std::env::temp_dir().join(format!("agentest-rerun-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&scratch)
        .map_err(|e| format!("failed to create {}: {e}", scratch.display()))?;
    let report = scratch.join("rerun.jsonl");
    let result = run_again(&address, &root, &row.trial, &before, &report);
    let after = result.and_then(|()| {
        let text = std::fs::read_to_string(&report)
            .map_err(|e| format!("the rerun wrote no report ({e})"))?;
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["trial"] == row.trial.as_str())
            .ok_or_else(|| {
                format!(
                    "the rerun did not run {}: the case is no longer in {root}",
                    row.trial
                )
            })
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let after = after?;
    let now = after["status"].as_str().unwrap_or("unknown").to_string();
    let mut said = if now == verdict {
        format!("run {} ({}): {now} again, as recorded", row.id, row.trial)
    } else {
        format!(
            "run {} ({}): {now} now, recorded {verdict}{}",
            row.id,
            row.trial,
            after["error"]
                .as_str()
                .map(|e| format!(" ({})", crate::util::clip(e)))
                .unwrap_or_default()
        )
    };
    for change in changes(&before, &after) {
        said.push_str(&format!("\n  {change}"));
    }
    println!("{said}");
    Ok(if now == verdict {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs `trial` of the execution's input `root` again by this binary, recording into
/// `address`, writing its record to `report`.
fn run_again(
    address: &StoreAddress,
    root: &str,
    trial: &str,
    before: &Value,
    report: &Path,
) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the agentest binary to run again: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["test", "-i", root, "--run"])
        .arg(format!("^{}$", regex::escape(trial)))
        .arg("-o")
        .arg(report);
    let provenance = &before["provenance"];
    if let Some(seed) = provenance["seed"].as_u64() {
        cmd.env("AGENTEST_SEED", seed.to_string());
    }
    // Offline from the case's cassette when its calls were recorded; else as it ran.
    let cassettes = if before["cassette"].is_object() {
        Some("replay")
    } else {
        provenance["cassettes"].as_str()
    };
    if let Some(mode) = cassettes {
        cmd.env("AGENTEST_CASSETTES", mode);
    }
    match address {
        StoreAddress::File(path) => cmd.env("AGENTEST_STORE", path),
        StoreAddress::Postgres(url) => cmd.env("AGENTEST_STORE", url.expose()),
    };
    let status = cmd
        .status()
        .map_err(|e| format!("failed to run agentest again: {e}"))?;
    // 0 and 1 are verdicts; anything else stopped the run.
    match status.code() {
        Some(0 | 1) => Ok(()),
        _ => Err(format!(
            "the rerun of {trial} did not finish ({status}); its output is above"
        )),
    }
}

/// What differs between the two records' inputs: the case, the config, agentest, the
/// models called.
fn changes(before: &Value, after: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let differs = |a: &Value, b: &Value| !a.is_null() && !b.is_null() && a != b;
    if differs(&before["input_hash"], &after["input_hash"]) {
        out.push(format!(
            "the case or the options it runs with changed since (input_hash {} then, {} now; a rerun takes today's `--runs`, `--timeout` and agent)",
            before["input_hash"], after["input_hash"]
        ));
    }
    let (p, q) = (&before["provenance"], &after["provenance"]);
    if differs(&p["config_hash"], &q["config_hash"]) {
        out.push(format!(
            "the config changed since (config_hash {} then, {} now)",
            p["config_hash"], q["config_hash"]
        ));
    }
    if differs(&p["agentest"], &q["agentest"]) {
        out.push(format!(
            "agentest changed since ({} then, {} now)",
            p["agentest"], q["agentest"]
        ));
    }
    if differs(&p["models"], &q["models"]) {
        out.push(format!(
            "the models called differ: {} then, {} now",
            p["models"], q["models"]
        ));
    }
    if p.is_null() {
        out.push(
            "the record predates provenance: the seed and the cassette mode are the current ones"
                .into(),
        );
    }
    out
}
