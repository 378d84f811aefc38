//! Running hook and script commands: JSON on stdin, a deadline, the tail of stderr on failure.
//!
//! Every child agentest starts (hook and script commands here, process agents in
//! `agent::process`) leads its own process group, so everything it spawns can be killed
//! with it: [`ProcessGroup`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

#[cfg(unix)]
use crate::util::signals;

/// A hook or script command that did not run to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    /// No program to run.
    #[error("the command is empty")]
    Empty,
    /// The program could not be started.
    #[error("failed to start `{shown}` in {cwd}: {source}")]
    Spawn {
        /// The command as the config writes it.
        shown: String,
        /// Where it was to run.
        cwd: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for it failed.
    #[error("failed to wait for the command: {0}")]
    Wait(#[source] std::io::Error),
    /// It ran past the case's deadline and was killed.
    #[error("`{shown}` did not finish before the case's deadline and was killed")]
    Deadline {
        /// The command as the config writes it.
        shown: String,
    },
}

/// A command ready to run.
#[derive(Debug, Clone)]
pub(crate) struct CommandSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
    /// How messages show the command: the config's text, before `${VAR}` expansion.
    pub shown: String,
}

/// What a finished command left.
#[derive(Debug)]
pub(crate) struct CommandOutput {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// The exit status, for messages.
    pub status: String,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// The last lines it printed on stderr.
    pub stderr_tail: String,
}

/// How many bytes of a child's stderr are kept for messages.
pub(crate) const STDERR_TAIL: usize = 2048;

/// How long the output of a command that has exited is still collected. Whatever it
/// started in the background may hold its pipes open for much longer (a hook that
/// starts a server), and that must not hold the case.
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// Keeps the last `STDERR_TAIL` bytes, cut at a character boundary.
pub(crate) fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    let text = String::from_utf8_lossy(&bytes[start..]);
    text.trim_end().to_string()
}

impl CommandSpec {
    /// How the command appears in messages: the program only. The arguments are the
    /// config's after `${VAR}` expansion and may hold secrets; the hook or script name
    /// every message carries says which command it was.
    pub(crate) fn shown(&self) -> String {
        self.shown.clone()
    }

    /// Runs the command with `input` on stdin, killing it at `deadline`.
    ///
    /// The result is ready as soon as the command exits: its output is collected for a
    /// short grace after that, and whatever it left running in the background is left
    /// alone. At the deadline the command and everything it started (its process group)
    /// are killed.
    pub(crate) async fn run(
        &self,
        input: &[u8],
        deadline: tokio::time::Instant,
    ) -> Result<CommandOutput, CommandError> {
        let (program, args) = self.argv.split_first().ok_or(CommandError::Empty)?;
        let mut child = spawn_piped(program, args, &self.cwd, &self.env).map_err(|source| {
            CommandError::Spawn {
                shown: self.shown(),
                cwd: self.cwd.clone(),
                source,
            }
        })?;
        // Dropped (a cancelled case) or at the deadline, the whole group is killed.
        let mut group = ProcessGroup::of(&child);
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_vec();
        // A command that does not read its stdin closes the pipe early; that is fine.
        let writer = AbortOnDrop(tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        }));
        let (out, mut out_done) = collect(child.stdout.take().expect("stdout is piped"));
        let (err, mut err_done) = collect(child.stderr.take().expect("stderr is piped"));
        let status = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => return Err(CommandError::Wait(e)),
            Err(_) => {
                group.kill();
                let _ = child.start_kill();
                return Err(CommandError::Deadline {
                    shown: self.shown(),
                });
            }
        };
        // It exited by itself: what it started in the background is its business.
        group.release();
        drop(writer);
        let _ = tokio::time::timeout(PIPE_GRACE, async {
            let _ = (&mut out_done.0).await;
            let _ = (&mut err_done.0).await;
        })
        .await;
        drop((out_done, err_done));
        let out = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
        let err = std::mem::take(&mut *err.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(CommandOutput {
            success: status.success(),
            code: status.code(),
            status: status.to_string(),
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr_tail: tail(&err),
        })
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads a pipe to its end in a task, into a buffer that can be taken at any time.
fn collect<R>(mut pipe: R) -> (Arc<Mutex<Vec<u8>>>, AbortOnDrop)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = buf.clone();
    let task = tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&chunk[..n]);
        }
    });
    (buf, AbortOnDrop(task))
}

/// Spawns `program args` in `cwd` with extra `env`, all three standard streams piped,
/// killed when dropped, in its own process group: how agents, hooks and scripts start.
pub(crate) fn spawn_piped<'a>(
    program: &str,
    args: &[String],
    cwd: &std::path::Path,
    env: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> std::io::Result<tokio::process::Child> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Dropped (timeout, panic, cancelled run), the child must not outlive its owner.
        .kill_on_drop(true);
    // Its own process group, so that what it starts dies with it.
    own_group(&mut command);
    spawn(command)
}

/// Makes the command's child the leader of a new process group (unix), so that
/// [`ProcessGroup`] can kill it together with everything it starts.
pub(crate) fn own_group(command: &mut Command) {
    #[cfg(unix)]
    {
        command.process_group(0);
        signals::install();
    }
    #[cfg(not(unix))]
    let _ = command;
}

/// Starts `command`. On Linux the child is also made to die with agentest: see
/// [`die_with_parent`] and [`spawner`].
fn spawn(mut command: Command) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    if let (Some(spawner), Ok(runtime)) = (spawner(), tokio::runtime::Handle::try_current()) {
        die_with_parent(&mut command);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        spawner
            .send((command, runtime, tx))
            .map_err(|_| std::io::Error::other("the thread that starts processes is gone"))?;
        // Forking takes a millisecond or so: as long as it would take on this thread.
        return rx.recv().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the thread that starts processes is gone",
            ))
        });
    }
    command.spawn()
}

/// A command to start on the [`spawner`] thread, in the caller's runtime, and where the
/// child (or why it could not start) goes.
#[cfg(target_os = "linux")]
type SpawnJob = (
    Command,
    tokio::runtime::Handle,
    std::sync::mpsc::SyncSender<std::io::Result<Child>>,
);

/// The thread every child is forked from, which lives as long as agentest.
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the
/// process: a child forked on a tokio blocking-pool thread (ended after 10 s idle), a
/// libtest thread or a short-lived runtime's worker would be killed with that thread
/// while its case still talks to it. So children are never forked where the caller runs.
/// `None` when the thread could not be started (then children start in place, without
/// the setting).
#[cfg(target_os = "linux")]
fn spawner() -> Option<&'static std::sync::mpsc::Sender<SpawnJob>> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> =
        std::sync::OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("agentest-spawn".into())
                .spawn(move || {
                    for (mut command, runtime, back) in rx {
                        // The child's pipes and exit are watched by the caller's runtime.
                        let _entered = runtime.enter();
                        let _ = back.send(command.spawn());
                    }
                })
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// Has the kernel kill the child (SIGKILL) when agentest dies, even by `kill -9`, which
/// leaves no chance to kill it otherwise: an agent that ignores the end of its stdin
/// would live on, reparented to init. Only the direct child: what it starts does not
/// inherit the setting (the group kill covers those while agentest lives). The child
/// must be forked from the [`spawner`] thread.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only prctl
    // and getppid, which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // agentest may have died between the fork and the prctl: then nothing would
            // send the signal, and the child has been reparented already.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The process group a child started with [`own_group`] leads.
///
/// Killed when dropped, unless killed or released before. While it is alive it is also
/// killed when agentest itself is stopped by SIGINT, SIGTERM or SIGHUP: children in
/// their own groups no longer receive the terminal's Ctrl-C.
pub(crate) struct ProcessGroup {
    pgid: Option<i32>,
}

impl ProcessGroup {
    /// The group `child` leads (it must have been started with [`own_group`]).
    pub(crate) fn of(child: &Child) -> ProcessGroup {
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .filter(|&id| id > 0);
        #[cfg(unix)]
        if let Some(p) = pgid {
            signals::register(p);
        }
        ProcessGroup { pgid }
    }

    /// Kills every process of the group with SIGKILL. Idempotent.
    pub(crate) fn kill(&mut self) {
        if let Some(p) = self.pgid.take() {
            #[cfg(unix)]
            {
                // SAFETY: killpg has no memory-safety preconditions.
                unsafe {
                    libc::killpg(p, libc::SIGKILL);
                }
                signals::unregister(p);
            }
            #[cfg(not(unix))]
            let _ = p;
        }
    }

    /// Leaves the group alone from now on (not killed on drop).
    pub(crate) fn release(&mut self) {
        if let Some(p) = self.pgid.take() {
            #[cfg(unix)]
            signals::unregister(p);
            #[cfg(not(unix))]
            let _ = p;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `program` can be started: a path (with a `/`) that exists, relative to `cwd`,
/// or a name found in the `PATH` the child gets (its `env`'s, else ours).
pub(crate) fn findable<'a>(
    program: &str,
    cwd: &std::path::Path,
    env: impl Iterator<Item = &'a (String, String)>,
) -> bool {
    if program.contains('/') {
        return cwd.join(program).exists();
    }
    let path = env
        .filter(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .last()
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(p: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file() || p.with_extension("exe").is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started from a thread that ends right after must not die with that
    /// thread (`PR_SET_PDEATHSIG` follows the forking thread; see [`spawner`]).
    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let mut child = std::thread::spawn(move || {
            let _entered = handle.enter();
            let env: [(&String, &String); 0] = [];
            spawn_piped("sleep", &["30".to_string()], std::path::Path::new("."), env)
                .expect("start sleep")
        })
        .join()
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child died with the thread that asked for it"
        );
        let mut group = ProcessGroup::of(&child);
        group.kill();
    }
}
