//! Process agents: one child per conversation, one JSON request per line on stdin,
//! one JSON reply per line on stdout.
//!
//! Exactly one line per request: a line more would be taken as the next turn's reply and
//! shift every later one. So a line still unread when the next request is due, or when
//! the conversation ends, is a protocol error ([`AgentError::ExtraLine`]). The second
//! check is what makes it reliable: a line that arrives just after the next request was
//! sent escapes the first, but then the agent has written more lines than requests, and
//! at the end of the conversation its stdin is closed and what it still writes before it
//! exits is read ([`ProcessSession::finish`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::{Duration, Instant};

use crate::agent::Timed;
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

/// How long a reply already under way is still read once the agent has exited: its last
/// line is in the pipe by then, but something it started may hold the pipe open.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// How long the end of a conversation waits for the agent to exit once its stdin is
/// closed (reading what it still writes), before it is killed.
const END_GRACE: Duration = Duration::from_millis(300);

/// How long the rest of a line found waiting in the pipe is read before it is quoted as
/// it is.
const REST_OF_LINE: Duration = Duration::from_millis(100);

/// One conversation's child. However the conversation ends (closed, or dropped by a
/// timeout, a panic or a cancelled run), the child and everything it started die with it.
pub(crate) struct ProcessSession {
    child: Child,
    group: ProcessGroup,
    /// `None` once closed at the end of the conversation.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    trace: Arc<Trace>,
    line: Vec<u8>,
    /// When the first byte of the reply being read came.
    first_byte: Option<std::time::Instant>,
    timeout: Option<std::time::Duration>,
    /// The turn of the last reply read, while the exchange is in step (no error since).
    answered: Option<u32>,
    /// How the child ended, once seen.
    exited: Option<std::process::ExitStatus>,
}

impl ProcessSpec {
    /// Starts the agent, in `workdir` when the case has an environment folder and the
    /// config sets no `cwd`. Arguments that name files beside the config (`../agent.py`)
    /// are made absolute then, so that the move does not lose them.
    pub(crate) fn spawn(
        &self,
        workdir: Option<&std::path::Path>,
        otel_env: &[(String, String)],
    ) -> Result<ProcessSession, AgentError> {
        let moved = workdir.filter(|_| !self.cwd_set);
        let argv: Vec<String> = match moved {
            None => self.argv.clone(),
            Some(_) => self.argv_absolute(),
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
        let own = |key: &str| self.env.iter().any(|(k, _)| k == key);
        let otel = otel_env.iter().filter(|(k, _)| !own(k));
        let env = default
            .into_iter()
            .chain(otel)
            .chain(&self.env)
            .map(|(k, v)| (k, v));
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
        let err_pipe = child.stderr.take().expect("stderr is piped");
        let trace = Arc::new(Trace::default());
        drain_stderr(err_pipe, trace.clone());
        Ok(ProcessSession {
            child,
            group,
            stdin: Some(stdin),
            stdout,
            trace,
            line: Vec::new(),
            first_byte: None,
            timeout: self.timeout,
            answered: None,
            exited: None,
        })
    }

    /// The command, its arguments that name files beside the config made absolute.
    fn argv_absolute(&self) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| {
                let beside = self.cwd.join(a);
                if !a.starts_with('-') && std::path::Path::new(a).is_relative() && beside.exists() {
                    beside.display().to_string()
                } else {
                    a.clone()
                }
            })
            .collect()
    }
}

/// Drains the agent's stderr continuously so a chatty agent never blocks on a full
/// pipe; keeps only the tail, for messages.
fn drain_stderr(mut err_pipe: tokio::process::ChildStderr, sink: Arc<Trace>) {
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
        let status = match self.exited {
            Some(s) => Ok(Ok(s)),
            None => tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await,
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        match status {
            Ok(Ok(s)) => format!(" ({s})"),
            // Still running: it closed its stdout without answering.
            Err(_) => " (it closed its stdout but is still running)".into(),
            Ok(Err(_)) => String::new(),
        }
    }

    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        // Whatever comes of this turn, the exchange is in step again only once it is read.
        if let Some(turn) = self.answered.take() {
            if let Some(line) = self.unread_line(Instant::now() + REST_OF_LINE).await {
                return Err(AgentError::ExtraLine {
                    turn,
                    when: "when the next request was due",
                    line,
                });
            }
        }
        self.write_request(request).await?;
        let reply = self.read_reply().await?;
        self.answered = Some(request.turn);
        Ok(Timed {
            value: reply,
            first_byte: self.first_byte,
        })
    }

    async fn write_request(&mut self, request: &Request) -> Result<(), AgentError> {
        let mut line = serde_json::to_string(request).map_err(AgentError::Encode)?;
        line.push('\n');
        let stdin = self
            .stdin
            .as_mut()
            .expect("stdin is open until the session ends");
        if let Err(source) = stdin.write_all(line.as_bytes()).await {
            let note = self.exit_note().await;
            return Err(AgentError::ExitedBeforeRequest {
                note,
                source,
                stderr: self.stderr_tail(),
            });
        }
        let _ = stdin.flush().await;
        Ok(())
    }

    /// Reads one reply line, within the agent's own timeout, and checks the protocol.
    async fn read_reply(&mut self) -> Result<Reply, AgentError> {
        self.line.clear();
        self.first_byte = None;
        if self.line.capacity() > 1 << 20 {
            // Do not keep a large reply's buffer for the rest of the conversation.
            self.line = Vec::new();
        }
        self.trace.reading.store(0, Ordering::Relaxed);
        let n = match self.timeout {
            Some(timeout) => match tokio::time::timeout(timeout, self.read_or_exit()).await {
                Ok(n) => n,
                Err(_) => {
                    return Err(AgentError::Timeout {
                        timeout,
                        trace: self.trace.describe(),
                    })
                }
            },
            None => self.read_or_exit().await,
        };
        // Whatever came of the read but a timeout, no reply is awaited any more.
        self.trace.reading.store(Trace::IDLE, Ordering::Relaxed);
        let n = match n {
            Read::Line(n) => n.map_err(AgentError::Stdout)?,
            Read::Exited(status) => {
                // Give the stderr drain a moment to collect the dying words.
                tokio::time::sleep(Duration::from_millis(20)).await;
                return Err(AgentError::Exited {
                    note: format!(" ({status})"),
                    stderr: self.stderr_tail(),
                });
            }
        };
        match n {
            Line::TooLong => Err(AgentError::LineTooLong {
                stderr: self.stderr_tail(),
            }),
            Line::Read(0) => {
                let note = self.exit_note().await;
                Err(AgentError::Exited {
                    note,
                    stderr: self.stderr_tail(),
                })
            }
            Line::Read(_) => {
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
        }
    }

    /// Reads the reply line while watching the child: an agent that exits without a
    /// whole reply is said as soon as it exits, even when something it started keeps
    /// its stdout open (which would otherwise hold the read until the deadline). A reply
    /// written just before the exit is still read.
    async fn read_or_exit(&mut self) -> Read {
        let ProcessSession {
            child,
            stdout,
            line,
            trace,
            exited,
            first_byte,
            ..
        } = self;
        let read = read_reply_line(stdout, line, &trace.reading, first_byte);
        tokio::pin!(read);
        if exited.is_none() {
            tokio::select! {
                biased;
                n = &mut read => return Read::Line(n),
                status = child.wait() => match status {
                    Ok(status) => *exited = Some(status),
                    // It cannot be watched: read as if it could not exit.
                    Err(_) => return Read::Line(read.await),
                },
            }
        }
        match tokio::time::timeout(EXIT_GRACE, &mut read).await {
            Ok(n) => Read::Line(n),
            Err(_) => Read::Exited(exited.expect("set above or before")),
        }
    }

    /// A line the agent wrote beyond its replies, if one is there or arrives by `until`
    /// (clipped for messages; a blank line is said as such). Lines wait in the reader's
    /// buffer or in the pipe: both are looked at without waiting; only the rest of a
    /// line already under way is waited for, up to `until`.
    async fn unread_line(&mut self, until: Instant) -> Option<String> {
        if self.stdout.buffer().is_empty() && !readable(self.stdout.get_ref()) {
            return None;
        }
        self.read_extra(until).await
    }

    /// Reads one line (or what there is of it by `until`) beyond the replies.
    async fn read_extra(&mut self, until: Instant) -> Option<String> {
        let mut extra = Vec::new();
        let progress = AtomicUsize::new(0);
        let mut first_byte = None;
        let read = read_reply_line(&mut self.stdout, &mut extra, &progress, &mut first_byte);
        let whole = matches!(
            tokio::time::timeout_at(until, read).await,
            Ok(Ok(Line::Read(n))) if n > 0
        );
        if !whole && extra.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(&extra);
        let text = text.trim();
        Some(if text.is_empty() {
            "(an empty line)".into()
        } else {
            crate::util::clip(text)
        })
    }

    /// Ends a conversation that went to its end: closes the agent's stdin, reads what it
    /// still writes until it exits (up to [`END_GRACE`], never past `deadline`), then
    /// kills it as [`ProcessSession::close`] does. A line it wrote beyond its replies is
    /// an [`AgentError::ExtraLine`]. A conversation cut short by an error is not checked.
    pub(crate) async fn finish(mut self, deadline: Instant) -> Result<(), AgentError> {
        let result = match self.answered {
            Some(turn) => {
                drop(self.stdin.take());
                let until = (Instant::now() + END_GRACE).min(deadline);
                match self.read_extra(until).await {
                    Some(line) => Err(AgentError::ExtraLine {
                        turn,
                        when: "when the conversation ended",
                        line,
                    }),
                    None => Ok(()),
                }
            }
            None => Ok(()),
        };
        self.close().await;
        result
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

/// What [`ProcessSession::read_or_exit`] saw.
enum Read {
    /// The read ended (see [`Line`]).
    Line(std::io::Result<Line>),
    /// The agent exited, and no whole line followed within [`EXIT_GRACE`].
    Exited(std::process::ExitStatus),
}

/// Whether the pipe has something to read (or its end), without waiting. The reactor
/// may not have heard of it yet, so the descriptor is asked directly.
fn readable(stdout: &ChildStdout) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: stdout.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no waiting.
        let n = unsafe { libc::poll(&mut fd, 1, 0) };
        n > 0 && fd.revents & libc::POLLIN != 0
    }
    #[cfg(not(unix))]
    {
        let _ = stdout;
        false
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
/// [`MAX_REPLY_BYTES`]: an agent printing without end must not exhaust memory. Sets
/// `first_byte` when the line's first byte is read.
async fn read_reply_line<R>(
    reader: &mut R,
    line: &mut Vec<u8>,
    progress: &AtomicUsize,
    first_byte: &mut Option<std::time::Instant>,
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
        first_byte.get_or_insert_with(std::time::Instant::now);
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
