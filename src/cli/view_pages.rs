//! The viewer's pages (`agentest view`): plain HTML tables, readable without
//! JavaScript, over the run store. A run's page is the HTML report of its one record.

use std::fmt::Write as _;

use crate::check::compare::{Change, Comparison, Counts};
use crate::record::format::html::esc;

/// An execution as the executions page lists it.
pub(crate) struct ExecutionLine<'a> {
    pub(crate) id: i64,
    pub(crate) started_at: &'a str,
    pub(crate) duration_ms: Option<i64>,
    pub(crate) command: String,
    pub(crate) git_commit: Option<&'a str>,
    pub(crate) counts: &'a std::collections::BTreeMap<String, u64>,
    pub(crate) total: u64,
}

/// A run as an execution's and a case's pages list it.
#[derive(Clone, Copy)]
pub(crate) struct RunLine<'a> {
    pub(crate) id: i64,
    pub(crate) execution: i64,
    pub(crate) trial: &'a str,
    pub(crate) verdict: &'a str,
    pub(crate) started_at: &'a str,
    pub(crate) latency_ms: Option<i64>,
    pub(crate) reason: &'a str,
}

/// The statuses, in the order the columns show them.
const VERDICTS: [&str; 6] = [
    "passed",
    "failed",
    "error",
    "timeout",
    "inconclusive",
    "skipped",
];

const CSS: &str =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328;background:#fff}\
a{color:#0550ae}table{border-collapse:collapse;width:100%;margin:12px 0}\
th,td{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}\
th{background:#f6f8fa}.passed{color:#116329}.failed,.timeout{color:#a40e26}.error{color:#953800}\
.inconclusive{color:#8250df}.skipped{color:#57606a}code{background:#f6f8fa;padding:1px 4px}\
nav{margin-bottom:12px}form{margin:12px 0}.strip a{text-decoration:none;font-size:18px}";

/// Runs that have not ended: their statuses before a verdict.
const UNENDED: [&str; 3] = ["queued", "pending", "running"];

/// How often a page over runs still going reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 5;

/// A page: its title and body in the viewer's frame (no script, no network).
pub(crate) fn page(title: &str, body: &str) -> String {
    framed(title, body, false)
}

/// [`page`], reloading itself every few seconds when `live` (runs still going): a long
/// CI run can be watched without a script.
fn framed(title: &str, body: &str, live: bool) -> String {
    let refresh = if live {
        format!("<meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">\n")
    } else {
        String::new()
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{refresh}\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{} · agentest</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <nav><a href=\"/\">Executions</a></nav>\n<h1>{}</h1>\n{body}</body>\n</html>\n",
        esc(title),
        esc(title)
    )
}

/// The executions page: newest first, runs by status, and a form to compare two.
pub(crate) fn executions(list: &[ExecutionLine<'_>]) -> String {
    let mut s = String::from(
        "<form action=\"/compare\" method=\"get\"><label>Compare execution \
         <input name=\"before\" size=\"6\" required></label> <label>with \
         <input name=\"after\" size=\"6\" required></label> <button>Compare</button></form>\n",
    );
    s.push_str("<table>\n<thead><tr><th>Execution</th><th>Started</th><th>Time</th>");
    for v in VERDICTS {
        let _ = write!(s, "<th class=\"{v}\">{}</th>", title_case(v));
    }
    s.push_str("<th>Total</th><th>Commit</th><th>Command</th></tr></thead>\n<tbody>\n");
    for e in list {
        let _ = write!(
            s,
            "<tr><td><a href=\"/executions/{0}\">{0}</a></td><td>{1}</td><td>{2}</td>",
            e.id,
            esc(e.started_at),
            e.duration_ms.map(ms).unwrap_or_default()
        );
        for v in VERDICTS {
            let n = e.counts.get(v).copied().unwrap_or(0);
            let _ = write!(s, "<td class=\"{v}\">{n}</td>");
        }
        let _ = writeln!(
            s,
            "<td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            e.total,
            esc(e.git_commit.map_or("", |c| &c[..c.len().min(12)])),
            esc(&e.command)
        );
    }
    s.push_str("</tbody>\n</table>\n");
    if list.is_empty() {
        s.push_str("<p>No execution in this store yet.</p>\n");
    }
    let live = list
        .iter()
        .any(|e| UNENDED.iter().any(|u| e.counts.contains_key(*u)));
    if live {
        let _ = writeln!(
            s,
            "<p>Runs are still going: this page reloads every {REFRESH_SECONDS} s.</p>"
        );
    }
    framed("Executions", &s, live)
}

/// A case's history above its runs: a strip of its statuses, oldest first, its pass
/// rate with its 95 % Wilson interval, and since when its verdict changes.
pub(crate) fn history(h: &crate::check::compare::History, oldest_first: &[RunLine<'_>]) -> String {
    let mut s = String::from("<p class=\"strip\" aria-label=\"statuses, oldest first\">");
    for r in oldest_first {
        let _ = write!(
            s,
            "<a class=\"{0}\" href=\"/runs/{1}\" title=\"execution {2}: {0}\">■</a>",
            esc(r.verdict),
            r.id,
            r.execution
        );
    }
    s.push_str("</p>\n<p>");
    match (h.pass_rate, h.wilson) {
        (Some(rate), Some([lo, hi])) => {
            let _ = write!(
                s,
                "Pass rate {:.1}% ({} of {}), 95% Wilson interval [{:.3}, {:.3}]",
                rate * 100.0,
                h.passed,
                h.passed + h.failed,
                lo,
                hi
            );
        }
        _ => s.push_str("No run passed or failed yet"),
    }
    if let Some(e) = h.changed_at {
        let _ = write!(
            s,
            "; flaky since execution <a href=\"/executions/{e}\">{e}</a>"
        );
    }
    s.push_str("</p>\n");
    s
}

/// An execution's (or a case's) runs, under `header`.
pub(crate) fn runs(title: &str, header: &str, runs: &[RunLine<'_>], by_case: bool) -> String {
    let mut s = format!("{header}<table>\n<thead><tr>");
    let first = if by_case { "Execution" } else { "Case" };
    let _ = write!(
        s,
        "<th>{first}</th><th>Run</th><th>Status</th><th>Started</th><th>Time</th><th>Reason</th></tr></thead>\n<tbody>\n"
    );
    for r in runs {
        let lead = if by_case {
            format!("<a href=\"/executions/{0}\">{0}</a>", r.execution)
        } else {
            format!(
                "<a href=\"/cases/{}\">{}</a>",
                url_part(r.trial),
                esc(r.trial)
            )
        };
        let _ = writeln!(
            s,
            "<tr><td>{lead}</td><td><a href=\"/runs/{0}\">{0}</a></td><td class=\"{1}\">{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>",
            r.id,
            esc(r.verdict),
            esc(r.started_at),
            r.latency_ms.map(ms).unwrap_or_default(),
            esc(&crate::util::clip(r.reason))
        );
    }
    s.push_str("</tbody>\n</table>\n");
    let live = runs.iter().any(|r| UNENDED.contains(&r.verdict));
    if live {
        let _ = writeln!(
            s,
            "<p>Runs are still going: this page reloads every {REFRESH_SECONDS} s.</p>"
        );
    }
    framed(title, &s, live)
}

/// Two executions compared.
pub(crate) fn comparison(c: &Comparison, before: i64, after: i64) -> String {
    let counts = |n: Counts| {
        let total = n.passed + n.failed;
        if total == 0 {
            "no counted run".to_string()
        } else {
            format!("{}/{total} passed", n.passed)
        }
    };
    let mut s = format!(
        "<p>Runs counted: {} → {}; {}</p>\n",
        counts(c.before),
        counts(c.after),
        match (c.p_value, c.regression) {
            (Some(p), true) => format!(
                "<strong class=\"failed\">regression</strong>: Fisher p = {p:.4} (α {})",
                c.alpha
            ),
            (Some(p), false) => format!("a drop within chance: Fisher p = {p:.4}"),
            (None, _) => "no drop".into(),
        }
    );
    s.push_str("<table>\n<thead><tr><th>Case</th><th>Before</th><th>After</th><th>Change</th><th>p</th></tr></thead>\n<tbody>\n");
    for x in c
        .cases
        .iter()
        .filter(|x| x.change != Change::Same || x.p_value.is_some())
    {
        let side = |st: Option<crate::record::Status>| {
            st.map_or_else(|| "—".to_string(), |st| st.label().to_lowercase())
        };
        let change = if x.regression {
            "<strong class=\"failed\">regression</strong>".to_string()
        } else {
            esc(&format!("{:?}", x.change).to_lowercase())
        };
        let _ = writeln!(
            s,
            "<tr><td><a href=\"/cases/{}\">{}</a></td><td class=\"{b}\">{b}</td><td class=\"{a}\">{a}</td><td>{change}</td><td>{}</td></tr>",
            url_part(&x.trial),
            esc(&x.trial),
            x.p_value.map(|p| format!("{p:.4}")).unwrap_or_default(),
            b = side(x.before),
            a = side(x.after),
        );
    }
    s.push_str("</tbody>\n</table>\n");
    page(&format!("Execution {before} → {after}"), &s)
}

/// Milliseconds as seconds with one decimal.
fn ms(v: i64) -> String {
    format!("{:.1}s", v as f64 / 1000.0)
}

fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Text as one URL path segment: unreserved characters kept, the rest percent-encoded.
pub(crate) fn url_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}
