//! Durations as test files write them: `"30s"`, `"2m"`, `"1m30s"`, `"500ms"`, `"1h"`.

use std::time::Duration;

/// A duration (`"30s"`, `"2m"`, `"1m30s"`, `"500ms"`) that cannot be read, or a timeout
/// that could never be met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was written.
    #[error("empty duration; write it like \"30s\", \"2m\" or \"500ms\"")]
    Empty,
    /// A unit with no number before it.
    #[error("invalid duration \"{text}\": expected a number before \"{rest}\"; write it like \"30s\", \"2m\" or \"500ms\"")]
    NoNumber {
        /// The duration as written.
        text: String,
        /// What follows where a number was expected.
        rest: String,
    },
    /// Digits and dots that do not make a number (`1.2.3s`).
    #[error("invalid duration \"{text}\": \"{number}\" is not a number")]
    NotANumber {
        /// The duration as written.
        text: String,
        /// The part that is not a number.
        number: String,
    },
    /// A bare number: seconds or milliseconds would be a guess.
    #[error("invalid duration \"{text}\": a unit is missing; write \"{text}s\" for seconds or \"{text}ms\" for milliseconds")]
    NoUnit {
        /// The duration as written.
        text: String,
    },
    /// A unit other than ms, s, m or h.
    #[error("invalid duration \"{text}\": unknown unit \"{unit}\"; use ms, s, m or h")]
    UnknownUnit {
        /// The duration as written.
        text: String,
        /// The unit, trimmed.
        unit: String,
    },
    /// More than a year, or not finite.
    #[error("invalid duration \"{text}\": too long")]
    TooLong {
        /// The duration as written.
        text: String,
    },
    /// A timeout of zero, which would end before anything can happen.
    #[error("a timeout of \"{text}\" ends before anything can happen; give a positive duration like \"30s\" or \"2m\", or leave the timeout out for the default")]
    ZeroTimeout {
        /// The timeout as written, trimmed.
        text: String,
    },
}

/// Parses a duration such as `"30s"`, `"2m"`, `"1m30s"`, `"250ms"` or `"1.5s"`.
///
/// A bare number is rejected: `"30"` could mean seconds or milliseconds, and a
/// test file that guesses wrong waits a thousand times too long or too short.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(DurationError::NoNumber {
                text: text.to_string(),
                rest: rest.to_string(),
            });
        }
        let number: f64 = rest[..num_len]
            .parse()
            .map_err(|_| DurationError::NotANumber {
                text: text.to_string(),
                number: rest[..num_len].to_string(),
            })?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(DurationError::NoUnit {
                    text: text.to_string(),
                })
            }
            other => {
                return Err(DurationError::UnknownUnit {
                    text: text.to_string(),
                    unit: other.trim().to_string(),
                })
            }
        };
        total += number * scale;
    }
    if !total.is_finite() || total > 365.0 * 24.0 * 3600.0 {
        return Err(DurationError::TooLong {
            text: text.to_string(),
        });
    }
    Ok(Duration::from_secs_f64(total))
}

/// Parses a duration that is a timeout: as [`parse_duration`], but zero is rejected,
/// since a zero deadline would end the case (or the wait) before it starts.
pub(crate) fn parse_timeout(text: &str) -> Result<Duration, DurationError> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(DurationError::ZeroTimeout {
            text: text.trim().to_string(),
        });
    }
    Ok(d)
}

/// Formats a duration the way test files write it (`"5m"`, `"30s"`, `"1.5s"`, `"250ms"`).
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms >= 1000 {
        // Shown to a tenth of a second: round first, so 4.95 s is "5s", not "5.0s".
        ms = (ms + 50) / 100 * 100;
    }
    if ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{}.{}s", ms / 1000, ms % 1000 / 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_test_files_use() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert!(matches!(
            parse_duration("30"),
            Err(DurationError::NoUnit { .. })
        ));
        assert_eq!(
            parse_duration("5 minutes").unwrap_err(),
            DurationError::UnknownUnit {
                text: "5 minutes".into(),
                unit: "minutes".into()
            }
        );
        assert_eq!(parse_duration("").unwrap_err(), DurationError::Empty);
        assert!(matches!(
            parse_duration("s"),
            Err(DurationError::NoNumber { .. })
        ));
        assert_eq!(
            parse_duration("30").unwrap_err().to_string(),
            "invalid duration \"30\": a unit is missing; write \"30s\" for seconds or \"30ms\" for milliseconds"
        );
    }

    #[test]
    fn timeouts_must_be_positive() {
        assert_eq!(parse_timeout("30s").unwrap(), Duration::from_secs(30));
        for zero in ["0s", "0ms", "0m0s", "0.0h"] {
            let e = parse_timeout(zero).unwrap_err();
            assert!(
                matches!(e, DurationError::ZeroTimeout { .. }),
                "{zero}: {e}"
            );
        }
        assert!(matches!(
            parse_timeout("30"),
            Err(DurationError::NoUnit { .. })
        ));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
    }

    #[test]
    fn formats_round_trip() {
        for s in ["5m", "30s", "250ms", "1h", "1.5s"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
