//! The viewer's charts: inline SVG drawn on the server (no script, no library), each
//! with a title and a text description for screen readers, and a `<title>` per mark
//! that a pointer shows.

use std::fmt::Write as _;

use crate::record::format::html::esc;

/// An execution on the trend chart.
pub(super) struct Point {
    pub(super) label: String,
    /// Passed over passed and failed; None when nothing passed or failed.
    pub(super) rate: Option<f64>,
    /// Spent.
    pub(super) cost: f64,
    /// Replayed from cassettes (what those calls cost when recorded).
    pub(super) replayed: f64,
}

/// A bar of a bar chart.
pub(super) struct Bar {
    /// What a pointer (and a screen reader) reads for it.
    pub(super) label: String,
    pub(super) value: f64,
    /// Its status, which colours it.
    pub(super) class: String,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 150.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 110.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 10.0;

/// Pass rate (a line, left axis, 0 to 100 %) and cost (bars, right axis) of
/// executions given oldest first.
pub(super) fn trend(points: &[Point], currency: &str) -> String {
    if points.is_empty() {
        return String::new();
    }
    let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let step = w / points.len() as f64;
    let max_cost = points
        .iter()
        .map(|p| p.cost + p.replayed)
        .fold(0.0, f64::max);
    let mut s = format!(
        "<figure id=\"trend\"><svg role=\"img\" aria-labelledby=\"trend-title trend-desc\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\">\
         <title id=\"trend-title\">Pass rate and cost of the last {} executions, oldest first</title><desc id=\"trend-desc\">{}</desc>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"#d0d7de\"/>\
         <line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d0d7de\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">100%</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0%</text>",
        points.len(),
        esc(&describe(points, currency)),
        TOP + h,
        TOP + h,
        LEFT + w,
        TOP + h,
        LEFT - 4.0,
        TOP + 8.0,
        LEFT - 4.0,
        TOP + h,
    );
    if max_cost > 0.0 {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            LEFT + w + 4.0,
            TOP + 8.0,
            esc(&format!("{max_cost:.4} {currency}"))
        );
        for (i, p) in points.iter().enumerate() {
            // Spent at the bottom, replayed stacked on it, lighter.
            let x = LEFT + i as f64 * step + step * 0.15;
            let spent = p.cost / max_cost * h;
            let replayed = p.replayed / max_cost * h;
            for (class, fill, height, top, value, what) in [
                ("cost", "#0969da", spent, TOP + h - spent, p.cost, "spent"),
                (
                    "replayed",
                    "#b6e3ff",
                    replayed,
                    TOP + h - spent - replayed,
                    p.replayed,
                    "replayed",
                ),
            ] {
                if height > 0.0 {
                    let _ = write!(
                        s,
                        "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{fill}\"><title>{}: {value:.4} {} {what}</title></rect>",
                        step * 0.7,
                        esc(&p.label),
                        esc(currency)
                    );
                }
            }
        }
    }
    let at = |i: usize, rate: f64| (LEFT + (i as f64 + 0.5) * step, TOP + h - rate * h);
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.rate.map(|r| at(i, r)))
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    if line.len() > 1 {
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#116329\" stroke-width=\"2\"/>",
            line.join(" ")
        );
    }
    for (i, p) in points.iter().enumerate() {
        if let Some(r) = p.rate {
            let (x, y) = at(i, r);
            let _ = write!(
                s,
                "<circle class=\"rate\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"#116329\"><title>{}: {:.1}% passed</title></circle>",
                esc(&p.label),
                r * 100.0
            );
        }
    }
    s.push_str(
        "</svg><figcaption>Line: pass rate (passed of passed and failed). Bars: cost spent (dark) and replayed from cassettes (light: what those calls cost when recorded).</figcaption></figure>\n",
    );
    s
}

/// The trend in words, for those who cannot see it.
fn describe(points: &[Point], currency: &str) -> String {
    let rates: Vec<(&str, f64)> = points
        .iter()
        .filter_map(|p| p.rate.map(|r| (p.label.as_str(), r)))
        .collect();
    let mut s = match (rates.first(), rates.last()) {
        (Some((a, ra)), Some((b, rb))) => format!(
            "Pass rate {:.1}% at {a}, {:.1}% at {b}.",
            ra * 100.0,
            rb * 100.0
        ),
        _ => "No execution passed or failed a case.".into(),
    };
    let cost: f64 = points.iter().map(|p| p.cost).sum();
    let replayed: f64 = points.iter().map(|p| p.replayed).sum();
    let _ = write!(
        s,
        " Cost in all: {cost:.4} {currency} spent, {replayed:.4} {currency} replayed."
    );
    s
}

/// A bar per value, in order, coloured by status, scaled to the largest.
pub(super) fn bars(caption: &str, bars: &[Bar]) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let step = w / bars.len() as f64;
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let mut s = format!(
        "<figure><svg role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\">\
         <line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d0d7de\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>",
        esc(caption),
        TOP + h,
        LEFT + w,
        TOP + h,
        LEFT - 4.0,
        TOP + 8.0,
        esc(&short(max)),
        LEFT - 4.0,
        TOP + h
    );
    for (i, b) in bars.iter().enumerate() {
        let bh = if max > 0.0 { b.value / max * h } else { 0.0 };
        let _ = write!(
            s,
            "<rect class=\"bar {}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
            esc(&b.class),
            LEFT + i as f64 * step + step * 0.15,
            TOP + h - bh,
            (step * 0.7).max(1.0),
            bh.max(1.0),
            colour(&b.class),
            esc(&b.label)
        );
    }
    let _ = writeln!(
        s,
        "</svg><figcaption>{}</figcaption></figure>",
        esc(caption)
    );
    s
}

/// A status's colour (the text colours of the pages).
fn colour(status: &str) -> &'static str {
    match status {
        "passed" => "#116329",
        "failed" | "timeout" => "#a40e26",
        "error" => "#953800",
        "inconclusive" => "#8250df",
        _ => "#57606a",
    }
}

/// An axis's top value, short.
fn short(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trend_draws_a_point_per_rate_and_a_bar_per_cost_and_says_it_in_words() {
        let p = |l: &str, rate, cost| Point {
            label: l.into(),
            rate,
            cost,
            replayed: 0.25,
        };
        let svg = trend(
            &[
                p("execution 1", Some(1.0), 0.5),
                p("execution 2", None, 0.0),
                p("execution 3", Some(0.25), 1.0),
            ],
            "USD",
        );
        assert_eq!(svg.matches("<circle class=\"rate\"").count(), 2);
        // No bar for nothing spent; a replayed bar each.
        assert_eq!(svg.matches("<rect class=\"cost\"").count(), 2);
        assert_eq!(svg.matches("<rect class=\"replayed\"").count(), 3);
        assert!(svg.contains("Pass rate 100.0% at execution 1, 25.0% at execution 3."));
        assert!(svg.contains("execution 3: 25.0% passed"));
        // The costliest stack (1.25) fills the plot's height (130): 1.0 is 104 of it.
        assert!(
            svg.contains("height=\"104.0\" fill=\"#0969da\"><title>execution 3: 1.0000 USD spent"),
            "{svg}"
        );
        assert!(
            svg.contains(
                "height=\"26.0\" fill=\"#b6e3ff\"><title>execution 3: 0.2500 USD replayed"
            ),
            "{svg}"
        );
        assert!(
            svg.contains("height=\"52.0\" fill=\"#0969da\"><title>execution 1: 0.5000 USD spent"),
            "{svg}"
        );
        assert_eq!(trend(&[], "USD"), "");
    }
}
