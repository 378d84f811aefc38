//! `[golden]`: which suites are pinned, and the redactions applied before comparing.

use serde::Deserialize;

use crate::errors::ConfigValueError;

/// `[[golden.redactions]]`: text replaced before comparing, for one suite or all.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// The suite it applies to (`expense`, `billing/refunds`); all suites when absent.
    pub suite: Option<String>,
    /// A regex.
    pub pattern: String,
    /// Its replacement (`$1` refers to groups).
    pub replace: String,
}

/// `[golden]` in `agentest.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenConfig {
    /// Pin every case of every suite.
    #[serde(default)]
    pub enabled: bool,
    /// Pin every case of these suites.
    #[serde(default)]
    pub suites: Vec<String>,
    /// Redactions, applied in order.
    #[serde(default)]
    pub redactions: Vec<RedactionConfig>,
}

impl GoldenConfig {
    /// Whether a suite's cases are pinned by the config. A suite may go by several names
    /// (from the config's folder, and from the folder the run started in); any counts.
    pub fn covers(&self, names: &[&str]) -> bool {
        self.enabled || self.suites.iter().any(|s| names.contains(&s.as_str()))
    }
}

/// A compiled redaction.
#[derive(Debug, Clone)]
pub(crate) struct Redaction {
    pub(crate) suite: Option<String>,
    pub(crate) regex: regex::Regex,
    pub(crate) replace: String,
}

impl Redaction {
    /// Compiles the config's redactions; an invalid regex names its entry.
    pub(crate) fn compile_all(golden: &GoldenConfig) -> Result<Vec<Redaction>, ConfigValueError> {
        golden
            .redactions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Ok(Redaction {
                    suite: r.suite.clone(),
                    regex: regex::Regex::new(&r.pattern).map_err(|source| {
                        ConfigValueError::Redaction {
                            number: i + 1,
                            pattern: r.pattern.clone(),
                            source,
                        }
                    })?,
                    replace: r.replace.clone(),
                })
            })
            .collect()
    }
}
