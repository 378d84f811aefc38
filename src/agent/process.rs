//! Process agents: one child per conversation, one JSON request per line on stdin,
//! one JSON reply per line on stdout.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{Reply, Request};
use crate::command::{tail, STDERR_TAIL};

#[derive(Debug)]
pub(crate) struct ProcessSpec {
    pub(crate) argv: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    /// How long one reply may take; the case's deadline applies regardless.
    pub(crate) timeout: Option<std::time::Duration>,
}

pub(crate) struct ProcessSession {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    line: String,
    timeout: Option<std::time::Duration>,
}

impl ProcessSpec {
    pub(crate) fn spawn(&self) -> Result<ProcessSession, String> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or("the agent command is empty")?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(&self.cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The conversation ends when the session is dropped, whatever the reason
            // (timeout, panic, cancelled run): the child must not outlive it.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "failed to start agent `{}` in {}: {e}",
                    self.argv.join(" "),
                    self.cwd.display()
                )
            })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut err_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        // Drain stderr continuously so a chatty agent never blocks on a full pipe;
        // keep only the tail for messages.
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.extend_from_slice(&buf[..n]);
                if s.len() > 2 * STDERR_TAIL {
                    let cut = s.len() - STDERR_TAIL;
                    s.drain(..cut);
                }
            }
        });
        Ok(ProcessSession {
            child,
            stdin,
            stdout,
            stderr,
            line: String::new(),
            timeout: self.timeout,
        })
    }
}

impl ProcessSession {
    fn stderr_tail(&self) -> String {
        let s = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let t = tail(&s);
        if t.is_empty() {
            "; the agent wrote nothing on stderr".into()
        } else {
            format!("; agent stderr (last lines):\n{t}")
        }
    }

    async fn exit_note(&mut self) -> String {
        // Give the stderr drain a moment to collect the dying words.
        let status =
            tokio::time::timeout(std::time::Duration::from_millis(500), self.child.wait()).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        match status {
            Ok(Ok(s)) => format!(" ({s})"),
            _ => String::new(),
        }
    }

    pub(crate) async fn send(&mut self, request: &Request) -> Result<Reply, String> {
        let mut line = serde_json::to_string(request)
            .map_err(|e| format!("failed to encode the request: {e}"))?;
        line.push('\n');
        if let Err(e) = self.stdin.write_all(line.as_bytes()).await {
            let note = self.exit_note().await;
            return Err(format!(
                "agent process exited before reading the request{note}: {e}{}",
                self.stderr_tail()
            ));
        }
        let _ = self.stdin.flush().await;
        self.line.clear();
        let read = self.stdout.read_line(&mut self.line);
        let n = match self.timeout {
            Some(t) => tokio::time::timeout(t, read).await.map_err(|_| {
                format!(
                    "agent process did not reply within {}",
                    crate::duration::format_duration(t)
                )
            })?,
            None => read.await,
        }
        .map_err(|e| format!("failed to read the agent's stdout: {e}"))?;
        if n == 0 {
            let note = self.exit_note().await;
            return Err(format!(
                "agent process exited before replying{note}{}",
                self.stderr_tail()
            ));
        }
        let text = self.line.trim();
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "agent process printed a line that is not JSON ({e}): {}{}\nhint: a process agent must print exactly one JSON reply per line on stdout; write logs to stderr",
                crate::assertion::clip(text),
                self.stderr_tail()
            )
        })?;
        Reply::from_json(value).map_err(|e| format!("agent reply broke the protocol: {e}"))
    }

    pub(crate) async fn close(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait()).await;
    }
}
