//! Modes a run may be in: how cassettes are used, what golden mismatches may write.

use crate::errors::CassetteModeError;

/// How cassettes are used, from `AGENTEST_CASSETTES` or `[run] cassettes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CassetteMode {
    /// Replay what is recorded; on a miss call the model and record, except on CI,
    /// where a miss fails the case.
    #[default]
    Auto,
    /// Never call a model; a miss fails the case.
    Replay,
    /// Replay only, and fail a passing case that left recorded entries unused.
    Strict,
    /// Always call the model and rewrite the file.
    Record,
    /// No files at all: every call goes to the model.
    Off,
}

impl CassetteMode {
    /// Reads a mode name.
    pub fn parse(text: &str) -> Result<CassetteMode, CassetteModeError> {
        match text.trim() {
            "auto" => Ok(CassetteMode::Auto),
            "replay" => Ok(CassetteMode::Replay),
            "strict" => Ok(CassetteMode::Strict),
            "record" => Ok(CassetteMode::Record),
            "off" => Ok(CassetteMode::Off),
            other => Err(CassetteModeError {
                given: other.to_string(),
            }),
        }
    }

    /// The mode in force: `env` (`AGENTEST_CASSETTES`, from the settings), else the
    /// config's (`[run] cassettes`), else `auto`.
    pub fn resolve(
        env: Option<CassetteMode>,
        config: Option<&str>,
    ) -> Result<CassetteMode, CassetteModeError> {
        match env {
            Some(mode) => Ok(mode),
            None => config
                .map(CassetteMode::parse)
                .transpose()
                .map(Option::unwrap_or_default),
        }
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            CassetteMode::Auto => "auto",
            CassetteMode::Replay => "replay",
            CassetteMode::Strict => "strict",
            CassetteMode::Record => "record",
            CassetteMode::Off => "off",
        }
    }
}

/// What a golden mismatch may write (`AGENTEST_UPDATE`, read with the other settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum UpdateMode {
    /// Write `<golden>.new` and fail.
    #[default]
    New,
    /// Overwrite the golden file and pass.
    Always,
    /// Never write; fail.
    No,
}
