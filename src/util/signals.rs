//! The signals that stop agentest: SIGINT (Ctrl-C), SIGTERM (`docker stop`, Kubernetes,
//! CI cancellation) and SIGHUP (the terminal closed). All three are handled alike.
//!
//! Two layers, one rule: however agentest is stopped, the children it started die with it
//! (each leads its own process group, so the terminal's Ctrl-C no longer reaches them).
//! - Every process that starts children (the binary, the `cargo test` harness) gets a
//!   low-level handler ([`install`]) that kills every live group ([`register`]) and then
//!   lets the signal end agentest as if there were no handler.
//! - The binary's run listens instead ([`Listener`]): the signal stops the run cleanly
//!   (running cases stopped, their agents killed as the cases are dropped, the summary
//!   written) and agentest exits with 128 + the signal's number. While a listener exists
//!   the low-level handler leaves the signals to it (the signal library the listener
//!   uses calls a handler installed before it); a second signal, or one after the run,
//!   ends agentest at once, the live groups killed.
//!
//! `kill -9` can be handled by no one: there `PR_SET_PDEATHSIG` (see
//! `util::command::own_group`) stops the children.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

/// A signal that stops agentest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: `kill`, `docker stop`, Kubernetes, CI cancellation.
    Terminate,
    /// SIGHUP: the terminal closed.
    Hangup,
}

impl StopSignal {
    const ALL: [StopSignal; 3] = [
        StopSignal::Interrupt,
        StopSignal::Terminate,
        StopSignal::Hangup,
    ];

    fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => libc::SIGINT,
            StopSignal::Terminate => libc::SIGTERM,
            StopSignal::Hangup => libc::SIGHUP,
        }
    }

    /// `SIGINT`, `SIGTERM`, `SIGHUP`: the report's name for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Hangup => "SIGHUP",
        }
    }

    /// How messages name it: `Ctrl-C` for SIGINT, what a user pressed.
    pub(crate) fn shown(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "Ctrl-C",
            other => other.name(),
        }
    }

    /// The shell's convention for a program the signal stopped: 128 + its number (130,
    /// 143, 129).
    pub(crate) fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }
}

/// The binary's run listening for the stop signals (see the module's comment).
pub(crate) struct Listener {
    streams: Vec<(StopSignal, tokio::signal::unix::Signal)>,
}

impl Listener {
    /// Starts listening; from now on the low-level handler leaves the signals to the
    /// listener. Called within the runtime, before any case starts.
    pub(crate) fn new() -> Listener {
        use tokio::signal::unix::{signal, SignalKind};
        let streams: Vec<_> = StopSignal::ALL
            .into_iter()
            .filter_map(|s| Some((s, signal(SignalKind::from_raw(s.number())).ok()?)))
            .collect();
        // Only when every signal has a listener: else one would be swallowed.
        if streams.len() == StopSignal::ALL.len() {
            DEFERRED.store(true, Ordering::SeqCst);
        }
        Listener { streams }
    }

    /// The next stop signal.
    pub(crate) async fn recv(&mut self) -> StopSignal {
        std::future::poll_fn(|cx| {
            for (s, stream) in &mut self.streams {
                if stream.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*s);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }

    /// From now on a stop signal ends agentest at once: the live groups killed, exit
    /// 128 + its number. For the stop after a first signal (which should not hang) and
    /// for whatever follows the run (reports, a reporter agent).
    pub(crate) fn exit_on_next(mut self) {
        tokio::spawn(async move {
            let s = self.recv().await;
            kill_live_groups();
            eprintln!("\nagentest: {}; exiting at once", s.shown());
            std::process::exit(i32::from(s.exit_code()));
        });
    }
}

/// Whether a [`Listener`] has the signals; set for good once one does (the handler of the
/// library it uses cannot be removed, and it calls ours after its own).
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// Live process groups; 0 is a free slot. Plain atomics, so the signal handler may read
/// them. When every slot is taken a group is simply not tracked.
static LIVE: [AtomicI32; 4096] = [const { AtomicI32::new(0) }; 4096];

/// Tracks a live process group, to be killed if a signal stops agentest.
pub(crate) fn register(pgid: i32) {
    for slot in &LIVE {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Stops tracking a group (killed, or left alone on purpose).
pub(crate) fn unregister(pgid: i32) {
    for slot in &LIVE {
        if slot
            .compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Kills every tracked group with SIGKILL. Async-signal-safe.
fn kill_live_groups() {
    for slot in &LIVE {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill is async-signal-safe and has no memory-safety preconditions.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    if DEFERRED.load(Ordering::SeqCst) {
        // The run's listener stops the run (and its agents) itself.
        return;
    }
    kill_live_groups();
    // SA_RESETHAND restored the default action: die of the signal as if no handler had
    // been installed (the signal is delivered when the handler returns).
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::raise(sig);
    }
}

/// Installs the low-level handler for the stop signals, once, and only where the action
/// is still the default: a program that handles or ignores a signal itself (`nohup`, a
/// Ctrl-C handler, the binary's [`Listener`]) keeps its behaviour.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for s in StopSignal::ALL {
            let sig = s.number();
            // SAFETY: sigaction is given valid, zero-initialised structs.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                new.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(StopSignal::Interrupt.exit_code(), 130);
        assert_eq!(StopSignal::Terminate.exit_code(), 143);
        assert_eq!(StopSignal::Hangup.exit_code(), 129);
        assert_eq!(StopSignal::Interrupt.shown(), "Ctrl-C");
    }
}
