//! Running hook and script commands: JSON on stdin, a deadline, the tail of stderr on failure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// A command ready to run.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
}

/// What a finished command left.
#[derive(Debug)]
pub struct CommandOutput {
    /// Whether it exited with status 0.
    pub success: bool,
    /// The exit status, for messages.
    pub status: String,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// The last lines it printed on stderr.
    pub stderr_tail: String,
}

/// How many bytes of a child's stderr are kept for messages.
pub(crate) const STDERR_TAIL: usize = 2048;

/// Keeps the last `STDERR_TAIL` bytes, cut at a character boundary.
pub(crate) fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    let text = String::from_utf8_lossy(&bytes[start..]);
    text.trim_end().to_string()
}

impl CommandSpec {
    /// Runs the command with `input` on stdin, killing it at `deadline`.
    pub async fn run(
        &self,
        input: &[u8],
        deadline: tokio::time::Instant,
    ) -> Result<CommandOutput, String> {
        let (program, args) = self.argv.split_first().ok_or("the command is empty")?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "failed to start `{}` in {}: {e}",
                    self.argv.join(" "),
                    self.cwd.display()
                )
            })?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let input = input.to_vec();
        let work = async move {
            let write = async {
                // A command that does not read its stdin closes the pipe early; that is fine.
                let _ = stdin.write_all(&input).await;
                drop(stdin);
            };
            let mut out = Vec::new();
            let mut err = Vec::new();
            let (_, o, e) = tokio::join!(
                write,
                stdout.read_to_end(&mut out),
                stderr.read_to_end(&mut err)
            );
            o.and(e)
                .map_err(|e| format!("failed to read the command's output: {e}"))?;
            let status = child
                .wait()
                .await
                .map_err(|e| format!("failed to wait for the command: {e}"))?;
            Ok::<_, String>(CommandOutput {
                success: status.success(),
                status: status.to_string(),
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr_tail: tail(&err),
            })
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "`{}` did not finish before the case's deadline and was killed",
                self.argv.join(" ")
            )),
        }
    }
}
