//! `agentest calibrate JUDGE -i LABELS.jsonl [--runs N]`: how far a `[judges.NAME]`
//! can be trusted, measured on a labelled set, and kept in the run store for runs
//! under `[run] require_calibrated_judges`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::check::calibration::Row;
use crate::record::store::{self, StoredCalibration};
use crate::run::calibrate::{calibrate as run_calibration, CalibrationReport};
use crate::util::StoreAddress;

#[derive(clap::Args)]
pub(super) struct CalibrateArgs {
    /// The judge: the NAME of a `[judges.NAME]` table (or `judges:NAME`).
    judge: String,
    /// The labelled set: JSON Lines of `{"id", "criteria", "reply" | "conversation",
    /// "label"}`, or report records with a `label` added.
    #[arg(short = 'i', long = "input", value_name = "LABELS")]
    input: PathBuf,
    /// Times each item is judged: 2 or more show how often the judge flips.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Judgments at once (default: `[run] concurrency`, else 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    parallel: Option<u32>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The store to keep the calibration in (default: as `agentest test` finds it from
    /// the labelled set's folder).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long)]
    store: Option<String>,
}

/// Runs `agentest calibrate`: exit 0 when the judge meets its bar (or has none), 1
/// when it falls short, 2 when it cannot be calibrated.
pub(super) fn calibrate(args: CalibrateArgs) -> Result<ExitCode, String> {
    let name = args
        .judge
        .strip_prefix("judges:")
        .unwrap_or(&args.judge)
        .to_string();
    let items = crate::source::read_labels(&args.input).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        format!(
            "the labelled set cannot be used ({} problem(s)):\n{}",
            lines.len(),
            lines.join("\n")
        )
    })?;
    let contexts =
        crate::run::context::Contexts::new(crate::run::context::Registry::default(), None, None);
    let ctx = contexts.of(&args.input).map_err(|e| e.to_string())?;
    let parallel = args
        .parallel
        .map(|p| p as usize)
        .or(ctx.config.file.run.concurrency)
        .unwrap_or(4);
    let address = match super::locate::parse_store(args.store.as_deref())? {
        Some(a) => Some(a),
        None => {
            let configured = match crate::settings::get().store {
                crate::settings::StoreChoice::Default => {
                    ctx.config.store_address().map_err(|e| e.to_string())?
                }
                _ => None,
            };
            store::location(&ctx.config.dir, configured, false)
        }
    };
    let report = crate::run::runtime().block_on(run_calibration(
        ctx.clone(),
        &name,
        &args.input,
        items,
        args.runs,
        parallel,
    ))?;
    let kept = keep(address.as_ref(), &report);
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", text(&report));
    }
    match kept {
        Ok(Some(at)) => eprintln!("agentest: calibration of judges:{name} kept in {at}"),
        Ok(None) => eprintln!(
            "agentest: the run store is off (AGENTEST_STORE=off): this calibration is not kept, so runs under require_calibrated_judges cannot use it"
        ),
        Err(e) => return Err(e),
    }
    Ok(if report.short_of_bar.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Keeps the calibration in the store; where, or `None` with the store off.
fn keep(
    address: Option<&StoreAddress>,
    report: &CalibrationReport,
) -> Result<Option<String>, String> {
    let Some(address) = address else {
        return Ok(None);
    };
    let mut db = store::open(address).map_err(|e| e.to_string())?;
    let f = &report.figures;
    let row = StoredCalibration {
        judge: report.judge.clone(),
        fingerprint: report.fingerprint.clone(),
        calibrated_at: report.calibrated_at.clone(),
        items: f.items,
        runs: f.runs,
        accuracy: f.accuracy,
        kappa: f.kappa,
        flip_rate: f.flip_rate,
        report: serde_json::to_string(report).map_err(|e| e.to_string())?,
    };
    db.save_calibration(&row)
        .map_err(|e| format!("failed to keep the calibration in the run store {address}: {e}"))?;
    Ok(Some(address.to_string()))
}

/// The report for people.
fn text(r: &CalibrationReport) -> String {
    let f = &r.figures;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "judges:{} (fingerprint {}) on {}: {} item(s) × {} run(s)",
        r.judge, r.fingerprint, r.labels, f.items, f.runs
    );
    let kappa = f
        .kappa
        .map_or_else(|| "undefined".to_string(), |k| format!("{k:.3}"));
    let flips = f
        .flip_rate
        .map_or_else(|| "n/a (one run)".to_string(), |x| format!("{x:.3}"));
    let _ = writeln!(
        s,
        "  accuracy {:.3}   Cohen's κ {kappa}   flip rate {flips}",
        f.accuracy
    );
    let _ = writeln!(s, "  judged →        pass  fail  undecided  error");
    let row = |s: &mut String, what: &str, r: &Row| {
        let _ = writeln!(
            s,
            "  labelled {what}  {:>5} {:>5} {:>10} {:>6}",
            r.pass, r.fail, r.undecided, r.error
        );
    };
    row(&mut s, "pass", &f.confusion.labelled_pass);
    row(&mut s, "fail", &f.confusion.labelled_fail);
    let mut bar = Vec::new();
    if let Some(k) = r.min_kappa {
        bar.push(format!("min_kappa {k}"));
    }
    if let Some(a) = r.min_accuracy {
        bar.push(format!("min_accuracy {a}"));
    }
    match (&r.short_of_bar, bar.is_empty()) {
        (_, true) => {
            let _ = writeln!(
                s,
                "  bar: none set (add min_kappa or min_accuracy to [judges.\"{}\"])",
                r.judge
            );
        }
        (None, false) => {
            let _ = writeln!(s, "  bar: {}: met", bar.join(", "));
        }
        (Some(why), false) => {
            let _ = writeln!(s, "  bar: {}: NOT MET ({why})", bar.join(", "));
        }
    }
    if !r.wrong.is_empty() {
        let _ = writeln!(s, "  judged against the label:");
        for w in &r.wrong {
            let _ = writeln!(
                s,
                "    {} (line {}) labelled {}, judged {}",
                w.id,
                w.line,
                w.label,
                w.said.join(", ")
            );
            for (k, (said, reason)) in w.said.iter().zip(&w.reasons).enumerate() {
                if said != &w.label {
                    let _ = writeln!(s, "      run {}: {reason}", k + 1);
                }
            }
            if let Some(n) = &w.notes {
                let _ = writeln!(s, "      notes: {n}");
            }
        }
    }
    let cost = match (&r.cost, &r.currency) {
        (Some(c), Some(cur)) => format!(", {cur} {c:.4}"),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "  {} model call(s) ({} replayed), {} token(s){cost}",
        r.model_calls, r.replayed_calls, r.tokens
    );
    s
}
