//! Process agents: one child per conversation, one JSON request per line on stdin,
//! one JSON reply per line on stdout.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::errors::AgentError;
use crate::protocol::MAX_REPLY_BYTES;
use crate::protocol::{Reply, Request};
use crate::util::command::{spawn_piped, tail, ProcessGroup, STDERR_TAIL};

#[derive(Debug)]
pub(crate) struct ProcessSpec {
    pub(crate) argv: Vec<String>,
    /// The command as the config writes it, before `${VAR}` expansion: what messages show.
    pub(crate) shown: String,
    pub(crate) cwd: PathBuf,
    /// Whether the config set `cwd` (else a case's environment folder may take its place).
    pub(crate) cwd_set: bool,
    pub(crate) env: Vec<(String, String)>,
    /// How long one reply may take; the case's deadline applies regardless.
    pub(crate) timeout: Option<std::time::Duration>,
}

/// One conversation's child. However the conversation ends (closed, or dropped by a
/// timeout, a panic or a cancelled run), the child and everything it started die with it.
pub(crate) struct ProcessSession {
    child: Child,
    group: ProcessGroup,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    trace: Arc<Trace>,
    line: Vec<u8>,
    timeout: Option<std::time::Duration>,
}

impl ProcessSpec {
    /// Starts the agent, in `workdir` when the case has an environment folder and the
    /// config sets no `cwd`. Arguments that name files beside the config (`../agent.py`)
    /// are made absolute then, so that the move does not lose them.
    pub(crate) fn spawn(
        &self,
        workdir: Option<&std::path::Path>,
    ) -> Result<ProcessSession, AgentError> {
        let moved = workdir.filter(|_| !self.cwd_set);
        let argv: Vec<String> = match moved {
            None => self.argv.clone(),
            Some(_) => self
                .argv
                .iter()
                .map(|a| {
                    let beside = self.cwd.join(a);
                    if !a.starts_with('-')
                        && std::path::Path::new(a).is_relative()
                        && beside.exists()
                    {
                        beside.display().to_string()
                    } else {
                        a.clone()
                    }
                })
                .collect(),
        };
        let cwd = moved
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| self.cwd.clone());
        let (program, args) = argv.split_first().ok_or(AgentError::EmptyCommand)?;
        // Python block-buffers stdout on a pipe: an agent that prints its reply without
        // flushing would hang until the timeout. Unbuffered unless the config says.
        let unbuffered = ("PYTHONUNBUFFERED".to_string(), "1".to_string());
        let default =
            (!self.env.iter().any(|(k, _)| k == "PYTHONUNBUFFERED")).then_some(&unbuffered);
        let env = default.into_iter().chain(&self.env).map(|(k, v)| (k, v));
        let mut child =
            spawn_piped(program, args, &cwd, env).map_err(|source| AgentError::Spawn {
                shown: self.shown.clone(),
                cwd: cwd.clone(),
                source,
            })?;
        let group = ProcessGroup::of(&child);
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout =
            BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout is piped"));
        let mut err_pipe = child.stderr.take().expect("stderr is piped");
        let trace = Arc::new(Trace::default());
        let sink = trace.clone();
        // Drain stderr continuously so a chatty agent never blocks on a full pipe;
        // keep only the tail for messages.
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut s = sink.stderr.lock().unwrap_or_else(|e| e.into_inner());
                s.extend_from_slice(&buf[..n]);
                if s.len() > 2 * STDERR_TAIL {
                    let cut = s.len() - STDERR_TAIL;
                    s.drain(..cut);
                }
            }
        });
        Ok(ProcessSession {
            child,
            group,
            stdin,
            stdout,
            trace,
            line: Vec::new(),
            timeout: self.timeout,
        })
    }
}

/// What a process agent leaves behind, kept for the whole case (the engine reads it
/// when the case times out, after the session itself is gone): its stderr's tail, and
/// how far it got with the reply it owes.
#[derive(Debug)]
pub(crate) struct Trace {
    stderr: Mutex<Vec<u8>>,
    /// Bytes of the reply read so far, or [`Trace::IDLE`] when no reply is awaited.
    reading: AtomicUsize,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            stderr: Mutex::new(Vec::new()),
            reading: AtomicUsize::new(Trace::IDLE),
        }
    }
}

impl Trace {
    const IDLE: usize = usize::MAX;

    /// `; agent stderr (last lines): ...`, or a note that it wrote nothing.
    pub(crate) fn stderr_tail(&self) -> String {
        let s = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let t = tail(&s);
        if t.is_empty() {
            "; the agent wrote nothing on stderr".into()
        } else {
            format!("; agent stderr (last lines):\n{t}")
        }
    }

    /// What went wrong while a reply was awaited (nothing on stdout, or a line never
    /// ended), then the stderr tail: what a timeout says about the agent.
    pub(crate) fn describe(&self) -> String {
        let stdout = match self.reading.load(Ordering::Relaxed) {
            Trace::IDLE => String::new(),
            0 => "; the agent wrote nothing on stdout after the request: write the reply as one line and flush it (Python: print(json.dumps(reply), flush=True); agentest sets PYTHONUNBUFFERED=1 unless the agent's env sets it)".to_string(),
            n => format!("; the agent wrote {n} bytes on stdout but never ended the line: end each reply with a newline and flush it"),
        };
        format!("{stdout}{}", self.stderr_tail())
    }
}

impl ProcessSession {
    fn stderr_tail(&self) -> String {
        self.trace.stderr_tail()
    }

    /// The agent's trace, kept for the whole case.
    pub(crate) fn trace(&self) -> Arc<Trace> {
        self.trace.clone()
    }

    async fn exit_note(&mut self) -> String {
        // Give the stderr drain a moment to collect the dying words.
        let status =
            tokio::time::timeout(std::time::Duration::from_millis(500), self.child.wait()).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        match status {
            Ok(Ok(s)) => format!(" ({s})"),
            // Still running: it closed its stdout without answering.
            Err(_) => " (it closed its stdout but is still running)".into(),
            Ok(Err(_)) => String::new(),
        }
    }

    pub(crate) async fn send(&mut self, request: &Request) -> Result<Reply, AgentError> {
        let mut line = serde_json::to_string(request).map_err(AgentError::Encode)?;
        line.push('\n');
        if let Err(source) = self.stdin.write_all(line.as_bytes()).await {
            let note = self.exit_note().await;
            return Err(AgentError::ExitedBeforeRequest {
                note,
                source,
                stderr: self.stderr_tail(),
            });
        }
        let _ = self.stdin.flush().await;
        self.line.clear();
        if self.line.capacity() > 1 << 20 {
            // Do not keep a large reply's buffer for the rest of the conversation.
            self.line = Vec::new();
        }
        self.trace.reading.store(0, Ordering::Relaxed);
        let read = read_reply_line(&mut self.stdout, &mut self.line, &self.trace.reading);
        // Whatever comes of the read but a timeout, no reply is awaited any more.
        let idle = |trace: &Trace| trace.reading.store(Trace::IDLE, Ordering::Relaxed);
        let n = match self.timeout {
            Some(timeout) => match tokio::time::timeout(timeout, read).await {
                Ok(n) => n,
                Err(_) => {
                    return Err(AgentError::Timeout {
                        timeout,
                        trace: self.trace.describe(),
                    })
                }
            },
            None => read.await,
        };
        idle(&self.trace);
        let n = n.map_err(AgentError::Stdout)?;
        let n = match n {
            Line::TooLong => {
                return Err(AgentError::LineTooLong {
                    stderr: self.stderr_tail(),
                })
            }
            Line::Read(n) => n,
        };
        if n == 0 {
            let note = self.exit_note().await;
            return Err(AgentError::Exited {
                note,
                stderr: self.stderr_tail(),
            });
        }
        let text = std::str::from_utf8(&self.line)
            .map_err(AgentError::NotUtf8)?
            .trim();
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|source| AgentError::NotJson {
                line: crate::util::clip(text),
                source,
                stderr: self.stderr_tail(),
            })?;
        Reply::from_json(value).map_err(AgentError::Protocol)
    }

    pub(crate) async fn close(mut self) {
        // The group first, while the unreaped child still holds its id.
        self.group.kill();
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait()).await;
    }
}

impl Drop for ProcessSession {
    fn drop(&mut self) {
        // A conversation cut short (timeout, panic, cancelled run) never reaches `close`:
        // kill the whole group here; `kill_on_drop` then kills and reaps the child.
        self.group.kill();
    }
}

/// What [`read_reply_line`] read.
enum Line {
    /// This many bytes, up to and including the newline; 0 at end of file.
    Read(usize),
    /// More than [`MAX_REPLY_BYTES`] without a newline; nothing more was read.
    TooLong,
}

/// Reads one line into `line` like `read_until(b'\n')`, but never holds more than
/// [`MAX_REPLY_BYTES`]: an agent printing without end must not exhaust memory.
async fn read_reply_line<R>(
    reader: &mut R,
    line: &mut Vec<u8>,
    progress: &AtomicUsize,
) -> std::io::Result<Line>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let mut total = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(Line::Read(total));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        // The newline itself does not count against the limit.
        let content = if done { take - 1 } else { take };
        if line.len() + content > MAX_REPLY_BYTES {
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        total += take;
        progress.store(total, Ordering::Relaxed);
        if done {
            return Ok(Line::Read(total));
        }
    }
}
