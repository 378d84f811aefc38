//! How far a judge can be trusted: its verdicts on a labelled set, repeated, against
//! the human labels. Accuracy, Cohen's κ, the flip rate across repeats and the
//! confusion matrix; and whether a calibration meets a judge's bar.

use serde::{Deserialize, Serialize};

/// One judgment of a labelled item: what the judge said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    /// It passed the item.
    Pass,
    /// It failed the item.
    Fail,
    /// It could not decide (`passed: null`).
    Undecided,
    /// It gave no verdict at all (malformed answer, transport error).
    Error,
}

impl From<Option<bool>> for Said {
    fn from(p: Option<bool>) -> Said {
        match p {
            Some(true) => Said::Pass,
            Some(false) => Said::Fail,
            None => Said::Undecided,
        }
    }
}

/// Counts of what the judge said, for items labelled one way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Row {
    /// Judged pass.
    pub pass: u64,
    /// Judged fail.
    pub fail: u64,
    /// The judge could not decide.
    pub undecided: u64,
    /// No verdict.
    pub error: u64,
}

impl Row {
    fn add(&mut self, s: Said) {
        match s {
            Said::Pass => self.pass += 1,
            Said::Fail => self.fail += 1,
            Said::Undecided => self.undecided += 1,
            Said::Error => self.error += 1,
        }
    }

    fn total(&self) -> u64 {
        self.pass + self.fail + self.undecided + self.error
    }
}

/// The confusion matrix: rows by human label, columns by what the judge said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Confusion {
    /// Items labelled `pass`.
    pub labelled_pass: Row,
    /// Items labelled `fail`.
    pub labelled_fail: Row,
}

/// A calibration's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Figures {
    /// Labelled items.
    pub items: u64,
    /// Times each was judged.
    pub runs: u64,
    /// Judgments that agree with the label, over every judgment (an undecided or
    /// failed judgment is not an agreement).
    pub accuracy: f64,
    /// Cohen's κ between the labels and the judgments (categories pass, fail and
    /// no verdict); `None` when chance agreement is total (every label and every
    /// judgment the same), where κ is undefined.
    pub kappa: Option<f64>,
    /// Items whose judgments were not all the same, over the items; `None` with one run.
    pub flip_rate: Option<f64>,
    /// The confusion matrix.
    pub confusion: Confusion,
}

/// The figures of `judged`: per item, its label (`true`: pass) and what each run said.
pub(crate) fn figures(judged: &[(bool, Vec<Said>)]) -> Figures {
    let mut confusion = Confusion::default();
    let mut flips = 0u64;
    let mut runs = 0u64;
    for (label, said) in judged {
        let row = if *label {
            &mut confusion.labelled_pass
        } else {
            &mut confusion.labelled_fail
        };
        for s in said {
            row.add(*s);
        }
        runs = runs.max(said.len() as u64);
        if said.windows(2).any(|w| w[0] != w[1]) {
            flips += 1;
        }
    }
    let (p, f) = (confusion.labelled_pass, confusion.labelled_fail);
    let n = (p.total() + f.total()) as f64;
    let agree = (p.pass + f.fail) as f64;
    let accuracy = if n > 0.0 { agree / n } else { 0.0 };
    // Chance agreement: the share of labels of a kind times the share of judgments of
    // that kind, summed over the kinds a label can be.
    let expected = if n > 0.0 {
        let labels_pass = p.total() as f64 / n;
        let labels_fail = f.total() as f64 / n;
        let said_pass = (p.pass + f.pass) as f64 / n;
        let said_fail = (p.fail + f.fail) as f64 / n;
        labels_pass * said_pass + labels_fail * said_fail
    } else {
        1.0
    };
    let kappa = ((1.0 - expected).abs() > 1e-12).then(|| (accuracy - expected) / (1.0 - expected));
    Figures {
        items: judged.len() as u64,
        runs,
        accuracy,
        kappa,
        flip_rate: (runs > 1 && !judged.is_empty()).then(|| flips as f64 / judged.len() as f64),
        confusion,
    }
}

/// Whether figures meet a judge's bar (`min_kappa`, `min_accuracy`); `Err` says which
/// figure fell short.
pub(crate) fn meets(
    figures: &Figures,
    min_kappa: Option<f64>,
    min_accuracy: Option<f64>,
) -> Result<(), String> {
    if let Some(bar) = min_kappa {
        match figures.kappa {
            None => {
                return Err(format!(
                    "κ is undefined on its labelled set (min_kappa {bar}); label items both ways"
                ))
            }
            Some(k) if k < bar => return Err(format!("κ {k:.3} < min_kappa {bar}")),
            Some(_) => {}
        }
    }
    if let Some(bar) = min_accuracy {
        if figures.accuracy < bar {
            return Err(format!(
                "accuracy {:.3} < min_accuracy {bar}",
                figures.accuracy
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Said::*;

    #[test]
    fn figures_match_a_hand_computation() {
        // Four items, two runs each. Labels: pass, pass, fail, fail.
        // Item 1 pass/pass (right twice); item 2 pass/fail (a flip); item 3 fail/fail;
        // item 4 undecided/fail (a flip, one wrong).
        let judged = vec![
            (true, vec![Pass, Pass]),
            (true, vec![Pass, Fail]),
            (false, vec![Fail, Fail]),
            (false, vec![Undecided, Fail]),
        ];
        let f = figures(&judged);
        // Agreements: 2 + 1 + 2 + 1 = 6 of 8.
        assert_eq!(f.accuracy, 0.75);
        // Labels: pass 4/8, fail 4/8. Said pass 3/8, fail 4/8, undecided 1/8.
        // p_e = 0.5 * 3/8 + 0.5 * 4/8 = 0.4375; κ = (0.75 - 0.4375) / 0.5625 = 0.5556.
        assert!((f.kappa.unwrap() - 0.3125 / 0.5625).abs() < 1e-12);
        assert_eq!(f.flip_rate, Some(0.5));
        assert_eq!(
            f.confusion.labelled_pass,
            Row {
                pass: 3,
                fail: 1,
                undecided: 0,
                error: 0
            }
        );
        assert_eq!(f.confusion.labelled_fail.undecided, 1);
        assert_eq!((f.items, f.runs), (4, 2));
        assert_eq!(meets(&f, Some(0.5), Some(0.75)), Ok(()));
        assert_eq!(
            meets(&f, Some(0.6), None).unwrap_err(),
            "κ 0.556 < min_kappa 0.6"
        );
        assert_eq!(
            meets(&f, None, Some(0.8)).unwrap_err(),
            "accuracy 0.750 < min_accuracy 0.8"
        );
    }

    #[test]
    fn kappa_is_undefined_when_chance_agreement_is_total() {
        let f = figures(&[(true, vec![Pass]), (true, vec![Pass])]);
        assert_eq!(f.accuracy, 1.0);
        assert_eq!(f.kappa, None);
        assert_eq!(f.flip_rate, None, "one run cannot flip");
        assert!(meets(&f, Some(0.6), None)
            .unwrap_err()
            .contains("undefined"));
        assert_eq!(meets(&f, None, Some(0.9)), Ok(()));
    }
}
