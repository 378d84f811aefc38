//! Interactive input: a person answers when the agent awaits input and no scripted turn
//! or simulator supplies the next message. Prompts go to stderr; answers are read from
//! stdin, a line at a time (a terminal, or piped input with `--interactive`).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::OnceLock;
use std::time::Duration;

use crate::case::Case;
use crate::errors::{PersonError, StepError};
use crate::settings::MissingInput;

/// How long a person has to answer, unless the case's `interactive.timeout` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The run's interactive settings.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct People {
    /// `--interactive` / `AGENTEST_INTERACTIVE=1`: ask whenever input is missing, reading stdin.
    pub(crate) forced: bool,
    /// `--skip-interactive`: never ask.
    pub(crate) skip: bool,
    /// `--on-missing-input`: what a case that needs a person and cannot have one does.
    pub(crate) on_missing_input: MissingInput,
}

impl People {
    /// A person to continue this case's conversation, when one is wanted (the case is
    /// interactive, or `--interactive`) and can answer; `Err` says why none can, when
    /// one is wanted.
    pub(crate) fn for_case(&self, case: &Case) -> Result<Option<Person>, PersonError> {
        let enabled = case.interactive.is_some_and(|i| i.enabled);
        if !enabled && !self.forced {
            return Ok(None);
        }
        availability(self.forced, enabled, self.skip)?;
        Ok(Some(Person {
            test_id: case.id.clone(),
            wait: case
                .interactive
                .and_then(|i| i.timeout)
                .unwrap_or(DEFAULT_TIMEOUT),
        }))
    }
}

/// A person who can answer for the user in one case's conversation.
#[derive(Debug, Clone)]
pub(crate) struct Person {
    test_id: String,
    wait: Duration,
}

impl Person {
    /// Asks for the user's message of turn `turn`, after the agent said `question`.
    /// `Ok(None)`: an empty line or a closed stdin.
    pub(crate) async fn answer(
        &self,
        turn: u32,
        question: &str,
        hint: Option<&str>,
        prompt: &str,
    ) -> Result<Option<String>, StepError> {
        ask(&self.test_id, question, hint, prompt, self.wait)
            .await
            .map_err(|e| StepError::Broken(format!("turn {turn}: interactive input: {e}")))
    }
}

/// Whether `--interactive` (or `AGENTEST_INTERACTIVE`, named by `switch`) takes effect:
/// never on CI, where nobody is there to answer; said once on stderr when it is ignored.
pub(crate) fn interactive_allowed(asked: bool, switch: &str) -> bool {
    if asked && crate::settings::on_ci() {
        eprintln!(
            "agentest: {switch} is ignored on CI (the CI variable is set): no person is asked, and cases that need one are skipped (--on-missing-input=fail fails them)"
        );
        return false;
    }
    asked
}

/// Whether a person can be asked, and if not, why.
fn availability(forced: bool, case_enabled: bool, skip: bool) -> Result<(), PersonError> {
    if skip {
        return Err(PersonError::Off);
    }
    if forced {
        return Ok(());
    }
    if !case_enabled {
        return Err(PersonError::NotInteractive);
    }
    if crate::settings::on_ci() {
        return Err(PersonError::OnCi);
    }
    if !std::io::stdin().is_terminal() {
        return Err(PersonError::NoTerminal);
    }
    Ok(())
}

/// Asks a person. `Ok(None)` when they answer with an empty line or stdin is closed.
async fn ask(
    label: &str,
    question: &str,
    hint: Option<&str>,
    prompt: &str,
    timeout: Duration,
) -> Result<Option<String>, PersonError> {
    // One question at a time, whatever runs in parallel.
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURN.lock().await;
    let mut text = format!("\n[{label}] the agent asks: {question}\n");
    if let Some(h) = hint {
        text.push_str(&format!("  hint: {h}\n"));
    }
    text.push_str(&format!("  {prompt}\n> "));
    {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
    let mut lines = stdin_lines().lock().await;
    match tokio::time::timeout(timeout, lines.recv()).await {
        Ok(Some(Ok(line))) => Ok(Some(line.trim().to_string()).filter(|l| !l.is_empty())),
        Ok(Some(Err(e))) => Err(PersonError::Read(e)),
        // Stdin is closed: nobody will answer any more.
        Ok(None) => Ok(None),
        Err(_) => Err(PersonError::NoAnswer { wait: timeout }),
    }
}

/// The receiving end of stdin's lines.
type Lines = tokio::sync::mpsc::UnboundedReceiver<std::io::Result<String>>;

/// The lines of stdin, read by one thread for the whole process: a question that timed
/// out leaves no read behind that would swallow the answer to the next one.
fn stdin_lines() -> &'static tokio::sync::Mutex<Lines> {
    static LINES: OnceLock<tokio::sync::Mutex<Lines>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("agentest-stdin".into())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let failed = line.is_err();
                    if tx.send(line).is_err() || failed {
                        break;
                    }
                }
                // Dropping the sender tells askers that stdin is closed.
            })
            .expect("failed to start the stdin reader");
        tokio::sync::Mutex::new(rx)
    })
}
