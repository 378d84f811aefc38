//! The subcommands around runs: `report` (other formats from JSONL reports), `freeze`
//! (a run's transcript into a regression case) and `import` (other tools' files into
//! suites).

use std::process::ExitCode;

use super::{FreezeArgs, ReportArgs};
use crate::config::Config;
use crate::errors::ReportError;
use crate::plan::parent_dir;
use crate::record::{Format, RunInfo};
use crate::source::load_file;
use crate::util::write_atomically;

pub(super) fn report(args: ReportArgs) -> Result<ExitCode, String> {
    let format = Format::from_path(&args.output).ok_or_else(|| {
        ReportError::UnknownFormat {
            path: args.output.clone(),
            known: Format::EXTENSIONS,
        }
        .to_string()
    })?;
    let (cases, summary, mut run) = match (&args.input, args.execution) {
        (Some(input), _) => {
            let (cases, summary) = crate::record::read_reports(input).map_err(|e| e.to_string())?;
            let run = RunInfo::new(
                "(from a report)",
                input.display().to_string(),
                crate::util::shown_args(std::env::args()),
            );
            (cases, summary, run)
        }
        (None, execution) => {
            let given = super::locate::parse_store(args.store.as_deref())?;
            let address = super::locate::existing_store(given)?;
            let mut db = crate::record::store::open(&address).map_err(|e| e.to_string())?;
            let execution = super::runs::execution_id(db.as_mut(), execution.as_deref())?;
            let stored = super::runs::stored_execution(db.as_mut(), execution)?;
            let mut summary = crate::record::Summary::new();
            for c in &stored.cases {
                summary.add(c);
            }
            summary.duration_ms = stored.duration_ms;
            let mut run = RunInfo::new(
                format!("(execution {} from the run store)", stored.execution),
                stored.root,
                stored.command,
            );
            run.started_at = stored.started_at;
            (stored.cases, summary, run)
        }
    };
    run.duration_ms = summary.duration_ms;
    let text = format.render(&run, &summary, &cases);
    write_atomically(&args.output, &text)
        .map_err(|e| format!("failed to write {}: {e}", args.output.display()))?;
    eprintln!("wrote {} ({} cases)", args.output.display(), cases.len());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn freeze(args: FreezeArgs) -> Result<ExitCode, String> {
    let file = &args.input;
    if !file.is_file() {
        return Err(format!("suite file `{}` does not exist", file.display()));
    }
    let root = parent_dir(file);
    let loaded = load_file(&root, file);
    let found = loaded
        .iter()
        .find(|l| matches!(&l.entry, Ok(c) if c.id == args.id));
    let Some(l) = found else {
        let ids: Vec<String> = loaded
            .iter()
            .filter_map(|l| l.entry.as_ref().ok().map(|c| c.id.clone()))
            .collect();
        return Err(format!(
            "{} has no case with id \"{}\"; its cases are: {}",
            file.display(),
            args.id,
            ids.join(", ")
        ));
    };
    let case = l.entry.as_ref().expect("matched Ok above");
    if loaded
        .iter()
        .any(|o| matches!(&o.entry, Ok(c) if c.id == format!("{}-frozen", args.id)))
    {
        return Err(format!(
            "{} already has a case \"{}-frozen\"",
            file.display(),
            args.id
        ));
    }
    let loader = crate::run::context::config_loader(crate::settings::get().config.as_ref());
    let config = Config::discover(&root, &loader).map_err(|e| e.to_string())?;
    let report = args
        .report
        .clone()
        .or_else(|| crate::settings::get().report.clone())
        .or_else(|| config.file.run.report.as_ref().map(|r| config.dir.join(r)))
        .ok_or("no report to read: pass --report FILE (a JSONL report written with -o or AGENTEST_REPORT)")?;
    let record = crate::record::freeze::find_record(&report, file, &l.trial, &args.id)
        .map_err(|e| e.to_string())?;
    let frozen = crate::record::freeze::freeze(case, &record).map_err(|e| e.to_string())?;
    let line = serde_json::to_string(&frozen).map_err(|e| e.to_string())?;
    if args.write {
        let mut text = std::fs::read_to_string(file)
            .map_err(|e| format!("failed to read {}: {e}", file.display()))?;
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
        text.push('\n');
        write_atomically(file, &text)
            .map_err(|e| format!("failed to write {}: {e}", file.display()))?;
        eprintln!("appended {}-frozen to {}", args.id, file.display());
    } else {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads a `.env` file: `KEY=VALUE` lines (an `export ` before the key, quotes around
/// the value and `#` comments allowed); a variable already set keeps its value. Values
/// are never printed: they are often secrets.
pub(super) fn load_env_file(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("failed to read the env file {}: {e}", path.display()))?;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{}:{}: expected KEY=VALUE, found a line without `=`",
                path.display(),
                n + 1
            ));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "{}:{}: `{key}` is not a variable name (letters, digits and _)",
                path.display(),
                n + 1
            ));
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        if std::env::var_os(key).is_none() {
            // Single-threaded here: the runtime and its threads start later.
            std::env::set_var(key, value);
        }
    }
    Ok(())
}

/// `agentest import tau2 FILE -o SUITE`: each task's case line, as `-i FILE` reads it,
/// checked by the suite parser. A task that cannot be converted is said with its place
/// and left out (exit 1); the others are written.
pub(super) fn import_tau2(
    file: &std::path::Path,
    output: &std::path::Path,
) -> Result<ExitCode, String> {
    // Writing the suite over the tasks file it is made from would lose the tasks.
    super::overwrite::not_the_input(file, output, "the suite").map_err(|e| e.to_string())?;
    let doc = match crate::source::document::Document::read(file) {
        Ok(Some(doc)) => doc,
        Ok(None) => return Err(format!("no tasks file at {}", file.display())),
        Err(e) => return Err(e.to_string()),
    };
    let converted = crate::source::tau2::convert(&doc).map_err(|e| e.to_string())?;
    if let Some(note) = converted.ignored_note(&doc) {
        eprintln!("note: {note}");
    }
    let tasks = converted.cases.len();
    let mut lines = String::new();
    let mut failed = 0;
    for (id, location, case) in converted.cases {
        // Checked as `-i FILE` would read it, so that the suite never holds a line the
        // tasks file would not run.
        let checked = case.and_then(|line| {
            let text = line.to_string();
            crate::source::parse_case(&text, location)
                .map(|_| text)
                .map_err(|mut e| {
                    e.message = format!("tau2 task \"{id}\": {}", e.message);
                    e
                })
        });
        match checked {
            Ok(text) => {
                lines.push_str(&text);
                lines.push('\n');
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed += 1;
            }
        }
    }
    write_atomically(output, &lines)
        .map_err(|e| format!("failed to write {}: {e}", output.display()))?;
    eprintln!(
        "wrote {} ({} cases from {tasks} tau2 tasks{})",
        output.display(),
        tasks - failed,
        if failed > 0 {
            format!("; {failed} left out, see above")
        } else {
            String::new()
        }
    );
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
