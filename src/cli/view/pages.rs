//! The viewer's pages: plain HTML tables and forms, readable without JavaScript, over
//! what [`super::routes`] read from the store. Script only adds copy buttons
//! (`/assets/view.js`); a page over runs still going reloads itself (a meta refresh).
//! A run's page is the HTML report of its one record, under a banner.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::charts;
use super::query::{url_part, Query};
use crate::case::Party;
use crate::check::compare::{Change, Comparison, Counts, History};
use crate::record::format::html::esc;
use crate::record::store::{ExecutionRow, RoleTotals, RunRow, LIFECYCLE, VERDICTS};

/// The statuses, in the order the columns show them.
const STATUSES: [&str; 6] = [
    "passed",
    "failed",
    "error",
    "timeout",
    "inconclusive",
    "skipped",
];

/// Colours meet WCAG AA contrast (4.5:1) on white; focus is always visible.
const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328;background:#fff}\
a{color:#0550ae}a:focus,button:focus,input:focus,select:focus,summary:focus{outline:3px solid #0969da;outline-offset:1px}\
table{border-collapse:collapse;width:100%;margin:12px 0}\
th,td{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}\
th{background:#f6f8fa}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
.passed{color:#116329}.failed,.timeout,.regression{color:#a40e26}.error{color:#953800}\
.inconclusive{color:#8250df}.skipped,.muted{color:#57606a}code{background:#f6f8fa;padding:1px 4px}\
nav{margin-bottom:12px}form{margin:12px 0;display:flex;flex-wrap:wrap;gap:8px;align-items:end}\
label{display:flex;flex-direction:column;font-size:12px;color:#57606a}\
input,select,button{font:inherit;padding:4px 6px}.strip a{text-decoration:none;font-size:18px}\
tr.suite th{background:#eaeef2}.when{white-space:nowrap}.roles{font-size:12px;color:#57606a}\
figure{margin:12px 0}figcaption{font-size:12px;color:#57606a}svg text{font:11px system-ui,sans-serif;fill:#57606a}\
.commands code{display:inline-block;margin:2px 0}.banner{padding:8px 12px;background:#f6f8fa;border:1px solid #d0d7de;margin:0 0 12px}";

/// The statuses of runs not ended yet (no verdict).
const UNENDED: [&str; 3] = ["queued", "pending", "running"];

/// How often a page over runs still going reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 5;

/// A page that says what is not there (or went wrong).
pub(super) fn not_here(message: &str) -> String {
    framed("Not here", &format!("<p>{}</p>\n", esc(message)), None)
}

/// A page: its title and body in the viewer's frame (no network; the one script is
/// the viewer's own), reloading itself every few seconds when `live` (runs still
/// going): a long CI run can be watched without a script.
fn framed(title: &str, body: &str, live: Option<&str>) -> String {
    // With script, the page asks the API every few seconds and reloads only when what
    // it shows changed (a form being filled is not lost); without, it reloads anyway.
    let (refresh, watch) = match live {
        Some(api) => (
            format!("<noscript><meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\"></noscript>\n"),
            format!(" data-live=\"{}\" data-every=\"{REFRESH_SECONDS}\"", esc(api)),
        ),
        None => (String::new(), String::new()),
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{refresh}\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'\">\n\
         <title>{} · agentest</title>\n<style>{CSS}</style>\n</head>\n<body{watch}>\n\
         <nav><a href=\"/\">Executions</a></nav>\n<main>\n<h1>{}</h1>\n{body}</main>\n\
         <script src=\"/assets/view.js\"></script>\n</body>\n</html>\n",
        esc(title),
        esc(title)
    )
}

/// The line that says the page reloads, when runs are still going.
fn live_note(live: bool) -> String {
    match live {
        true => format!(
            "<p role=\"status\">Runs are still going: this page follows them (every {REFRESH_SECONDS} s).</p>\n"
        ),
        false => String::new(),
    }
}

/// A filter form's text field, refilled from the query.
fn text_field(q: &Query, name: &str, label: &str, hint: &str) -> String {
    format!(
        "<label>{label}<input name=\"{name}\" value=\"{}\" placeholder=\"{}\"></label>",
        esc(q.get(name).unwrap_or("")),
        esc(hint)
    )
}

/// A filter form's choice, refilled from the query.
fn select_field(q: &Query, name: &str, label: &str, choices: &[&str]) -> String {
    let chosen = q.get(name);
    let mut s = format!("<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    for c in choices {
        let selected = if chosen == Some(*c) { " selected" } else { "" };
        let _ = write!(s, "<option{selected}>{}</option>", esc(c));
    }
    s.push_str("</select></label>");
    s
}

/// The executions page: filters, the trend of pass rate and cost, a form to compare
/// two, and the executions newest first with their trigger, runs by status, flaky
/// cases, tokens and cost by role.
pub(super) fn executions(list: &[ExecutionRow], q: &Query) -> String {
    let statuses: Vec<&str> = VERDICTS.iter().chain(LIFECYCLE.iter()).copied().collect();
    let mut s = format!(
        "<form method=\"get\" action=\"/\" aria-label=\"filter executions\">{}{}{}<button>Filter</button> <a href=\"/\">Clear</a></form>\n",
        text_field(q, "suite", "Suite", "billing"),
        select_field(q, "status", "With a run that is", &statuses),
        text_field(q, "q", "Branch, commit, CI run or command", "main"),
    );
    let oldest_first: Vec<charts::Point> = list
        .iter()
        .rev()
        .map(|e| {
            let all = totals(e);
            charts::Point {
                label: format!("execution {}", e.id),
                rate: pass_rate(&e.counts),
                cost: all.cost,
                replayed: all.replayed_cost,
            }
        })
        .collect();
    s.push_str(&charts::trend(&oldest_first, currency(e_currency(list))));
    s.push_str(
        "<form action=\"/compare\" method=\"get\" aria-label=\"compare two executions\"><label>Compare execution \
         <input name=\"before\" size=\"6\" required inputmode=\"numeric\"></label> <label>with \
         <input name=\"after\" size=\"6\" required inputmode=\"numeric\"></label> <button>Compare</button></form>\n",
    );
    s.push_str(
        "<table id=\"executions\">\n<thead><tr><th scope=\"col\">Execution</th><th scope=\"col\">Started</th><th scope=\"col\" class=\"n\">Time</th><th scope=\"col\">Trigger</th>",
    );
    for v in STATUSES {
        let _ = write!(
            s,
            "<th scope=\"col\" class=\"n {v}\">{}</th>",
            title_case(v)
        );
    }
    s.push_str("<th scope=\"col\" class=\"n\">Total</th><th scope=\"col\" class=\"n\">Pass rate</th><th scope=\"col\" class=\"n\">Flaky</th><th scope=\"col\" class=\"n\">Tokens spent</th><th scope=\"col\" class=\"n\">Cost spent</th></tr></thead>\n<tbody>\n");
    for e in list {
        let _ = write!(
            s,
            "<tr data-execution=\"{0}\"><td><a href=\"/executions/{0}\">{0}</a></td><td class=\"when\">{1}</td><td class=\"n\">{2}</td><td>{3}</td>",
            e.id,
            esc(&e.started_at.replace('T', " ").replace('Z', "")),
            e.duration_ms.map(seconds).unwrap_or_default(),
            trigger(e)
        );
        for v in STATUSES {
            let n = e.counts.get(v).copied().unwrap_or(0);
            let _ = write!(s, "<td class=\"n {v}\">{n}</td>");
        }
        let all = totals(e);
        let _ = writeln!(
            s,
            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            e.total,
            pass_rate(&e.counts).map(percent).unwrap_or_else(|| "—".into()),
            e.flaky,
            tokens_cell(&all, &e.usage),
            match e.currency.as_deref() {
                Some(c) => cost_cell(&all, &e.usage, c),
                None => NOT_PRICED.to_string(),
            },
        );
    }
    s.push_str("</tbody>\n</table>\n");
    if list.is_empty() {
        s.push_str("<p>No execution matches.</p>\n");
    }
    let live = list
        .iter()
        .any(|e| UNENDED.iter().any(|u| e.counts.contains_key(*u)));
    s.push_str(&live_note(live));
    let api = format!("/api/executions{}", q.encoded());
    framed("Executions", &s, live.then_some(api.as_str()))
}

/// The currency the first priced execution names.
fn e_currency(list: &[ExecutionRow]) -> Option<&str> {
    list.iter().find_map(|e| e.currency.as_deref())
}

/// What started an execution: its command, branch, commit and CI run.
fn trigger(e: &ExecutionRow) -> String {
    let mut s = format!("<code>{}</code>", esc(&command_line(&e.command)));
    let mut facts = Vec::new();
    if let Some(b) = &e.git_branch {
        facts.push(format!("branch <code>{}</code>", esc(b)));
    }
    if let Some(c) = &e.git_commit {
        facts.push(format!(
            "commit <code title=\"{}\">{}</code>",
            esc(c),
            esc(&c[..c.len().min(12)])
        ));
    }
    if let Some(ci) = &e.ci_run {
        facts.push(format!("CI <code>{}</code>", esc(ci)));
    } else if let Some(k) = &e.key {
        facts.push(format!("key <code>{}</code>", esc(k)));
    }
    if !facts.is_empty() {
        let _ = write!(s, "<div class=\"roles\">{}</div>", facts.join(" · "));
    }
    s
}

/// A command line as one string, each argument quoted when it needs it.
fn command_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every role's totals together.
fn totals(e: &ExecutionRow) -> RoleTotals {
    let mut all = RoleTotals::default();
    for t in e.usage.values() {
        all.add(t);
    }
    all
}

/// Passed over passed and failed (timeouts count as failed), when any ran.
fn pass_rate(counts: &BTreeMap<String, u64>) -> Option<f64> {
    let get = |k: &str| counts.get(k).copied().unwrap_or(0) as f64;
    let (p, f) = (get("passed"), get("failed") + get("timeout"));
    (p + f > 0.0).then(|| p / (p + f))
}

/// Tokens spent and replayed, with each role's below.
fn tokens_cell(all: &RoleTotals, by_role: &BTreeMap<crate::protocol::Role, RoleTotals>) -> String {
    let mut s = crate::util::grouped(all.tokens);
    if all.replayed_tokens > 0 {
        let _ = write!(
            s,
            "<br>+{} replayed",
            crate::util::grouped(all.replayed_tokens)
        );
    }
    let roles: Vec<String> = by_role
        .iter()
        .map(|(r, t)| {
            let replayed = match t.replayed_tokens {
                0 => String::new(),
                n => format!(" (+{} replayed)", crate::util::grouped(n)),
            };
            format!("{} {}{replayed}", r.name(), crate::util::grouped(t.tokens))
        })
        .collect();
    if !roles.is_empty() {
        let _ = write!(
            s,
            "<details class=\"roles\"><summary>by role</summary>{}</details>",
            roles.join("<br>")
        );
    }
    s
}

/// Cost spent and replayed, with each role's below.
fn cost_cell(
    all: &RoleTotals,
    by_role: &BTreeMap<crate::protocol::Role, RoleTotals>,
    currency: &str,
) -> String {
    let mut s = money(all.cost, currency);
    if all.replayed_cost > 0.0 {
        let _ = write!(s, "<br>+{} replayed", money(all.replayed_cost, currency));
    }
    let roles: Vec<String> = by_role
        .iter()
        .filter(|(_, t)| t.cost > 0.0 || t.replayed_cost > 0.0)
        .map(|(r, t)| {
            let replayed = match t.replayed_cost > 0.0 {
                true => format!(" (+{} replayed)", money(t.replayed_cost, currency)),
                false => String::new(),
            };
            format!("{} {}{replayed}", r.name(), money(t.cost, currency))
        })
        .collect();
    if !roles.is_empty() {
        let _ = write!(
            s,
            "<details class=\"roles\"><summary>by role</summary>{}</details>",
            roles.join("<br>")
        );
    }
    s
}

/// An execution: its facts, tokens and cost by role, filters, and its runs grouped by
/// suite.
pub(super) fn execution(
    e: &ExecutionRow,
    before: Option<i64>,
    runs: &[RunRow],
    q: &Query,
) -> String {
    let mut s = format!("<p>{}</p>\n<p>Started {}", trigger(e), esc(&e.started_at));
    if let Some(d) = e.duration_ms {
        let _ = write!(s, ", took {}", seconds(d));
    }
    let counted: Vec<String> = e
        .counts
        .iter()
        .map(|(v, n)| format!("<span class=\"{0}\">{n} {0}</span>", esc(v)))
        .collect();
    let _ = write!(s, "; {} runs: {}", e.total, counted.join(", "));
    if e.flaky > 0 {
        let _ = write!(s, "; {} flaky", e.flaky);
    }
    s.push_str(".</p>\n<p>");
    let _ = write!(
        s,
        "<a href=\"/executions/{}/report\">The whole HTML report</a>",
        e.id
    );
    if let Some(b) = before {
        let _ = write!(
            s,
            " · <a href=\"/compare?before={b}&amp;after={}\">Compare with execution {b}</a>",
            e.id
        );
    }
    s.push_str("</p>\n");
    s.push_str(&roles_table(e));
    let statuses: Vec<&str> = VERDICTS.iter().chain(LIFECYCLE.iter()).copied().collect();
    let _ = writeln!(
        s,
        "<form method=\"get\" action=\"/executions/{}\" aria-label=\"filter runs\">{}{}{}{}<button>Filter</button> <a href=\"/executions/{}\">Clear</a></form>",
        e.id,
        text_field(q, "q", "Case or reason", "refund"),
        select_field(q, "status", "Status", &statuses),
        select_field(q, "blame", "Blame", &Party::ALL.map(Party::name)),
        text_field(q, "suite", "Suite", "billing"),
        e.id
    );
    // By suite, then by case.
    let mut sorted: Vec<&RunRow> = runs.iter().collect();
    sorted.sort_by(|a, b| a.suite.cmp(&b.suite).then_with(|| a.trial.cmp(&b.trial)));
    s.push_str("<table id=\"runs\">\n<thead><tr><th scope=\"col\">Case</th><th scope=\"col\">Run</th><th scope=\"col\">Status</th><th scope=\"col\" class=\"n\">Turns</th><th scope=\"col\" class=\"n\">Time</th><th scope=\"col\" class=\"n\">Tokens</th><th scope=\"col\" class=\"n\">Cost</th><th scope=\"col\">Blame</th><th scope=\"col\">Reason</th></tr></thead>\n");
    let cur = e.currency.as_deref();
    for group in sorted.chunk_by(|a, b| a.suite == b.suite) {
        let suite = &group[0].suite;
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in group {
            *counts.entry(r.verdict()).or_default() += 1;
        }
        let counted: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        let _ = writeln!(
            s,
            "<tbody data-suite=\"{0}\"><tr class=\"suite\"><th colspan=\"9\" scope=\"colgroup\">{0} <span class=\"muted\">({1})</span></th></tr>",
            esc(suite),
            esc(&counted.join(", "))
        );
        for r in group {
            let v = r.verdict();
            let _ = writeln!(
                s,
                "<tr data-trial=\"{t}\"><td><a href=\"/cases/{u}\">{t}</a></td><td><a href=\"/runs/{id}#case-1\">{id}</a></td><td class=\"{v}\">{v}</td><td class=\"n\">{turns}</td><td class=\"n\">{time}</td><td class=\"n\">{tokens}</td><td class=\"n\">{cost}</td><td>{blame}</td><td>{reason}</td></tr>",
                t = esc(&r.trial),
                u = url_part(&r.trial),
                id = r.id,
                v = esc(v),
                turns = r.turns.map(|n| n.to_string()).unwrap_or_default(),
                time = r.latency_ms.map(seconds).unwrap_or_default(),
                tokens = r.tokens.filter(|_| ended(v)).map(|n| crate::util::grouped(n.max(0) as u64)).unwrap_or_default(),
                cost = r.cost.map(|c| money(c, currency(r.currency.as_deref().or(cur)))).unwrap_or_default(),
                blame = esc(r.blame.as_deref().unwrap_or("")),
                reason = esc(&crate::util::clip(r.reason.as_deref().unwrap_or(""))),
            );
        }
        s.push_str("</tbody>\n");
    }
    s.push_str("</table>\n");
    if runs.is_empty() {
        s.push_str("<p>No run matches.</p>\n");
    }
    let live = runs.iter().any(|r| !ended(r.verdict()));
    s.push_str(&live_note(live));
    let api = format!("/api/executions/{}{}", e.id, q.encoded());
    framed(
        &format!("Execution {}", e.id),
        &s,
        live.then_some(api.as_str()),
    )
}

/// Whether a run's verdict (or status) is an end.
fn ended(verdict: &str) -> bool {
    !UNENDED.contains(&verdict)
}

/// What a cost cell says when no run was priced (no endpoint has `pricing`): not 0.
const NOT_PRICED: &str = "<span class=\"muted\">not priced</span>";

/// An execution's tokens and cost by role, spent and replayed.
fn roles_table(e: &ExecutionRow) -> String {
    if e.usage.is_empty() {
        return "<p class=\"muted\">No model call was made or replayed.</p>\n".into();
    }
    let cost = |v: f64| match e.currency.as_deref() {
        Some(c) => money(v, c),
        None => NOT_PRICED.to_string(),
    };
    let mut s = String::from("<table id=\"roles\" aria-label=\"tokens and cost by role\">\n<thead><tr><th scope=\"col\">Role</th><th scope=\"col\" class=\"n\">Tokens spent</th><th scope=\"col\" class=\"n\">Tokens replayed</th><th scope=\"col\" class=\"n\">Cost spent</th><th scope=\"col\" class=\"n\">Cost replayed</th></tr></thead>\n<tbody>\n");
    let all = totals(e);
    for (name, t) in e
        .usage
        .iter()
        .map(|(r, t)| (r.name(), t))
        .chain([("all", &all)])
    {
        let _ = writeln!(
            s,
            "<tr><th scope=\"row\">{name}</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            crate::util::grouped(t.tokens),
            crate::util::grouped(t.replayed_tokens),
            cost(t.cost),
            cost(t.replayed_cost)
        );
    }
    s.push_str("</tbody>\n</table>\n");
    s
}

/// A case: its history (a strip of statuses, its pass rate with its Wilson interval,
/// since when it flips, its durations and cost over time), the commands that show and
/// rerun its newest run, and its runs newest first.
pub(super) fn case(trial: &str, h: &History, newest_first: &[RunRow]) -> String {
    let oldest: Vec<&RunRow> = newest_first.iter().rev().collect();
    let mut s = String::from("<p class=\"strip\" aria-label=\"statuses, oldest first\">");
    for r in &oldest {
        let _ = write!(
            s,
            "<a class=\"{0}\" href=\"/runs/{1}#case-1\" title=\"execution {2}: {0}\" aria-label=\"run {1}, execution {2}: {0}\">■</a>",
            esc(r.verdict()),
            r.id,
            r.execution
        );
    }
    s.push_str("</p>\n<p id=\"history\">");
    match (h.pass_rate, h.wilson) {
        (Some(rate), Some([lo, hi])) => {
            let _ = write!(
                s,
                "Pass rate {} ({} of {}), 95% Wilson interval [{:.3}, {:.3}]",
                percent(rate),
                h.passed,
                h.passed + h.failed,
                lo,
                hi
            );
        }
        _ => s.push_str("No run passed or failed yet"),
    }
    match h.changed_at {
        Some(e) => {
            let _ = write!(
                s,
                "; flaky since execution <a href=\"/executions/{e}\">{e}</a>"
            );
        }
        None if h.passed + h.failed > 1 => s.push_str("; never flipped"),
        None => {}
    }
    s.push_str(".</p>\n");
    let durations: Vec<charts::Bar> = oldest
        .iter()
        .filter_map(|r| {
            r.latency_ms.map(|ms| charts::Bar {
                label: format!("execution {}: {}", r.execution, seconds(ms)),
                value: ms as f64 / 1000.0,
                class: r.verdict().to_string(),
            })
        })
        .collect();
    let costs: Vec<charts::Bar> = oldest
        .iter()
        .filter_map(|r| {
            r.cost.map(|c| charts::Bar {
                label: format!(
                    "execution {}: {}",
                    r.execution,
                    money(c, currency(r.currency.as_deref()))
                ),
                value: c,
                class: r.verdict().to_string(),
            })
        })
        .collect();
    s.push_str(&charts::bars(
        "Duration of each run, oldest first (seconds)",
        &durations,
    ));
    if costs.iter().any(|b| b.value > 0.0) {
        s.push_str(&charts::bars("Cost of each run, oldest first", &costs));
    }
    if let Some(newest) = newest_first.first() {
        s.push_str(&commands(newest.id));
    }
    s.push_str("<table id=\"case-runs\">\n<thead><tr><th scope=\"col\">Execution</th><th scope=\"col\">Run</th><th scope=\"col\">Status</th><th scope=\"col\">Started</th><th scope=\"col\" class=\"n\">Turns</th><th scope=\"col\" class=\"n\">Time</th><th scope=\"col\" class=\"n\">Tokens</th><th scope=\"col\" class=\"n\">Cost</th><th scope=\"col\">Blame</th><th scope=\"col\">Reason</th></tr></thead>\n<tbody>\n");
    for r in newest_first {
        let v = r.verdict();
        let _ = writeln!(
            s,
            "<tr><td><a href=\"/executions/{e}\">{e}</a></td><td><a href=\"/runs/{id}#case-1\">{id}</a></td><td class=\"{v}\">{v}</td><td>{started}</td><td class=\"n\">{turns}</td><td class=\"n\">{time}</td><td class=\"n\">{tokens}</td><td class=\"n\">{cost}</td><td>{blame}</td><td>{reason}</td></tr>",
            e = r.execution,
            id = r.id,
            v = esc(v),
            started = esc(r.started_at.as_deref().unwrap_or("")),
            turns = r.turns.map(|n| n.to_string()).unwrap_or_default(),
            time = r.latency_ms.map(seconds).unwrap_or_default(),
            tokens = r.tokens.filter(|_| ended(v)).map(|n| crate::util::grouped(n.max(0) as u64)).unwrap_or_default(),
            cost = r.cost.map(|c| money(c, currency(r.currency.as_deref()))).unwrap_or_default(),
            blame = esc(r.blame.as_deref().unwrap_or("")),
            reason = esc(&crate::util::clip(r.reason.as_deref().unwrap_or(""))),
        );
    }
    s.push_str("</tbody>\n</table>\n");
    let live = newest_first.iter().any(|r| !ended(r.verdict()));
    s.push_str(&live_note(live));
    let api = format!("/api/cases/{}", url_part(trial));
    framed(&format!("Case {trial}"), &s, live.then_some(api.as_str()))
}

/// The commands that show and rerun run `id`, each with a copy button (shown by the
/// script; without it the text is there to select).
fn commands(id: i64) -> String {
    let mut s = String::from("<p class=\"commands\">");
    for (n, (what, cmd)) in [
        ("Show it", format!("agentest runs show {id}")),
        ("Run it again", format!("agentest rerun {id}")),
    ]
    .iter()
    .enumerate()
    {
        let _ = write!(
            s,
            "{what}: <code id=\"cmd-{id}-{n}\">{cmd}</code> <button type=\"button\" data-copy=\"cmd-{id}-{n}\" hidden>Copy</button> "
        );
    }
    s.push_str("</p>\n");
    s
}

/// The viewer's script, for a report's banner (copy buttons).
pub(super) const SCRIPT: &str = include_str!("view.js");

/// Above a run's report: where it belongs, and its commands.
pub(super) fn run_banner(r: &RunRow) -> String {
    format!(
        "<nav class=\"banner\" aria-label=\"viewer\"><a href=\"/\">Executions</a> › <a href=\"/executions/{e}\">Execution {e}</a> › <a href=\"/cases/{u}\">{t}</a> › run {id}{cmds}</nav>\n",
        e = r.execution,
        u = url_part(&r.trial),
        t = esc(&r.trial),
        id = r.id,
        cmds = commands(r.id)
    )
}

/// Above an execution's whole report: the way back.
pub(super) fn report_banner(execution: i64) -> String {
    format!(
        "<nav class=\"banner\" aria-label=\"viewer\"><a href=\"/\">Executions</a> › <a href=\"/executions/{execution}\">Execution {execution}</a> › report</nav>\n"
    )
}

/// Two executions compared.
pub(super) fn comparison(c: &Comparison, before: i64, after: i64) -> String {
    let counts = |n: Counts| {
        let total = n.passed + n.failed;
        if total == 0 {
            "no counted run".to_string()
        } else {
            format!("{}/{total} passed", n.passed)
        }
    };
    let mut s = format!(
        "<p id=\"verdict\">Runs counted: {} → {}; {}</p>\n",
        counts(c.before),
        counts(c.after),
        match (c.p_value, c.regression) {
            (Some(p), true) => format!(
                "<strong class=\"regression\">regression</strong>: Fisher p = {p:.4} (α {})",
                c.alpha
            ),
            (Some(p), false) => format!("a drop within chance: Fisher p = {p:.4} (α {})", c.alpha),
            (None, _) => "no drop".into(),
        }
    );
    s.push_str("<table id=\"changes\">\n<thead><tr><th scope=\"col\">Case</th><th scope=\"col\">Before</th><th scope=\"col\">After</th><th scope=\"col\">Change</th><th scope=\"col\" class=\"n\">p</th></tr></thead>\n<tbody>\n");
    let mut shown = 0;
    for x in c
        .cases
        .iter()
        .filter(|x| x.change != Change::Same || x.p_value.is_some())
    {
        shown += 1;
        let side = |st: Option<crate::record::Status>, n: Option<Counts>| {
            let word = st.map_or_else(|| "—".to_string(), |st| st.label().to_lowercase());
            match n {
                Some(n) if n.passed + n.failed > 1 => {
                    format!("{word} ({}/{})", n.passed, n.passed + n.failed)
                }
                _ => word,
            }
        };
        let class = |st: Option<crate::record::Status>| {
            st.map_or_else(String::new, |st| st.label().to_lowercase())
        };
        let change = if x.regression {
            "<strong class=\"regression\">regression</strong>".to_string()
        } else {
            esc(&format!("{:?}", x.change).to_lowercase())
        };
        let _ = writeln!(
            s,
            "<tr data-trial=\"{t}\"><td><a href=\"/cases/{u}\">{t}</a></td><td class=\"{bc}\">{b}</td><td class=\"{ac}\">{a}</td><td>{change}</td><td class=\"n\">{p}</td></tr>",
            u = url_part(&x.trial),
            t = esc(&x.trial),
            p = x.p_value.map(|p| format!("{p:.4}")).unwrap_or_default(),
            b = esc(&side(x.before, x.before_counts)),
            a = esc(&side(x.after, x.after_counts)),
            bc = class(x.before),
            ac = class(x.after),
        );
    }
    s.push_str("</tbody>\n</table>\n");
    if shown == 0 {
        s.push_str("<p>No case changed.</p>\n");
    }
    framed(&format!("Execution {before} → {after}"), &s, None)
}

/// Milliseconds as seconds with one decimal.
fn seconds(v: i64) -> String {
    format!("{:.1}s", v as f64 / 1000.0)
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// The currency costs are shown in (`USD` unless a pricing named another).
fn currency(c: Option<&str>) -> &str {
    c.unwrap_or("USD")
}

/// A cost: `$0.0123`, or `0.0123 EUR` in another currency.
fn money(v: f64, currency: &str) -> String {
    match currency {
        "USD" => format!("${v:.4}"),
        other => format!("{v:.4} {}", esc(other)),
    }
}

fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(money(0.01234, "USD"), "$0.0123");
        assert_eq!(money(2.0, "EUR"), "2.0000 EUR");
        assert_eq!(
            command_line(&[
                "agentest".into(),
                "test".into(),
                "-i".into(),
                "my suite".into()
            ]),
            "agentest test -i 'my suite'"
        );
    }
}
