//! Workers on different machines (issue 28): three `agentest worker` processes share
//! 1,000 runs of a PostgreSQL store, each in a network namespace of its own (`ip netns`,
//! a veth pair to this host) and a UTS namespace with a hostname of its own, and one is
//! killed with SIGKILL mid-run. To the store the killed one is a lost machine: its
//! hostname is not this host's, so no process can see that its pid is gone, and its runs
//! come back only when their lease (`[store] lease`) lapses.
//!
//! The namespaces reach this host through their veth pair only. PostgreSQL (the shared
//! test cluster, on 127.0.0.1) is reached through a TCP forwarder on a thread of this
//! process, listening on the pair's host address; the agent listens on those addresses
//! itself. Where namespaces cannot be made (no `ip`, no CAP_SYS_ADMIN) the test runs
//! three plain processes instead and says so on stderr; on CI that is a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::{fresh_postgres, lock, need, on_ci, Needs, BIN};
use crate::store::{agent_log, share_an_execution, slow_project_with, SlowAgent, Workers};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        three_machines_share_a_thousand_runs_and_lose_one(needs crate::common::postgres),
    ]
}

/// The runs of the execution.
const RUNS: usize = 1000;

/// The project's `[store] lease`: the lost machine's runs come back after it. The
/// shortest the config takes is 3 s; one more second keeps a live worker whose
/// heartbeat is late on a busy machine from losing its runs.
const LEASE_SECS: f64 = 4.0;

/// Sets the hostname of a fresh UTS namespace to `$0`, then runs the rest.
const SET_HOSTNAME: &str = r#"printf %s "$0" > /proc/sys/kernel/hostname && exec "$@""#;

/// The variable each agentest expands in `[agent] url`: where the agent is from there.
const AGENT_HOST: &str = "AGENTEST_MACHINE_AGENT";

/// One "machine": a network namespace joined to this host by a veth pair.
struct Machine {
    /// The namespace's name (`ip netns`).
    ns: String,
    /// The pair's address on this host's side.
    host: Ipv4Addr,
    /// The pair's address in the namespace: where the machine's connections come from.
    addr: Ipv4Addr,
    /// The hostname its worker runs with.
    hostname: String,
}

/// The machines, and what was made for them: deleted when dropped, whatever failed.
struct Machines {
    machines: Vec<Machine>,
    namespaces: Vec<String>,
    links: Vec<String>,
}

/// Runs `ip ARGS`; its stderr when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Machines {
    /// `n` machines, named after this process so that test runs at once do not meet:
    /// namespace `agentest-PID-I`, veth `atPIDhI` (here) and `atPIDnI` (there), a /30
    /// of 10.231.0.0/16 chosen by the pid, hostname `agentest-mI-PID`. Why not, when
    /// this host cannot make them.
    fn make(n: usize) -> Result<Machines, String> {
        let pid = std::process::id();
        let mut made = Machines {
            machines: Vec::new(),
            namespaces: Vec::new(),
            links: Vec::new(),
        };
        for i in 0..n {
            let ns = format!("agentest-{pid}-{i}");
            let veth = format!("at{pid}h{i}");
            let peer = format!("at{pid}n{i}");
            // Left by an earlier process with this pid that died before cleaning up.
            let _ = ip(&["link", "del", &veth]);
            let _ = ip(&["netns", "del", &ns]);
            ip(&["netns", "add", &ns])?;
            made.namespaces.push(ns.clone());
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer])?;
            made.links.push(veth.clone());
            ip(&["link", "set", &peer, "netns", &ns])?;
            // 16,383 /30s in 10.231.0.0/16: 5,461 runs' worth of three.
            let k = (pid % 5461) * 3 + i as u32;
            let base = u32::from(Ipv4Addr::new(10, 231, 0, 0)) + 4 * k;
            let (host, addr) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
            ip(&["addr", "add", &format!("{host}/30"), "dev", &veth])?;
            ip(&["link", "set", &veth, "up"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                &peer,
            ])?;
            ip(&["-n", &ns, "link", "set", &peer, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            let hostname = format!("agentest-m{i}-{pid}");
            let probe = Command::new("ip")
                .args(["netns", "exec", &ns, "unshare", "--uts", "sh", "-c"])
                .args([SET_HOSTNAME, &hostname, "cat", "/proc/sys/kernel/hostname"])
                .output()
                .map_err(|e| format!("cannot run `ip netns exec`: {e}"))?;
            let named = String::from_utf8_lossy(&probe.stdout);
            if !probe.status.success() || named.trim() != hostname {
                return Err(format!(
                    "`unshare --uts` in {ns} did not give the hostname {hostname} ({named:?}): {}",
                    String::from_utf8_lossy(&probe.stderr).trim()
                ));
            }
            made.machines.push(Machine {
                ns,
                host,
                addr,
                hostname,
            });
        }
        Ok(made)
    }
}

impl Drop for Machines {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both.
        for link in &self.links {
            if let Err(e) = ip(&["link", "del", link]) {
                eprintln!("machines: {e}");
            }
        }
        for ns in &self.namespaces {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("machines: {e}");
            }
        }
    }
}

/// A TCP forwarder on threads of this process: each connection to `listen` (a port of
/// its own) is piped to `to`, and the address it came from is kept. Stopped on drop.
struct Forwarder {
    listen: Ipv4Addr,
    port: u16,
    from: Arc<Mutex<Vec<IpAddr>>>,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl Forwarder {
    fn start(listen: Ipv4Addr, to: SocketAddr) -> Forwarder {
        let listener = TcpListener::bind((listen, 0))
            .unwrap_or_else(|e| panic!("listen on {listen} for the forwarder: {e}"));
        let port = listener.local_addr().expect("local addr").port();
        let from = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (from, stop, streams) = (from.clone(), stop.clone(), streams.clone());
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(to) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    if let Ok(peer) = client.peer_addr() {
                        lock(&from).push(peer.ip());
                    }
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone())
                    else {
                        continue;
                    };
                    if let (Ok(a), Ok(b)) = (client.try_clone(), server.try_clone()) {
                        lock(&streams).extend([a, b]);
                    }
                    std::thread::spawn(move || pipe(client, server));
                    std::thread::spawn(move || pipe(server2, client2));
                }
            })
        };
        Forwarder {
            listen,
            port,
            from,
            stop,
            streams,
            accept: Some(accept),
        }
    }

    /// Where the connections it piped came from.
    fn came_from(&self) -> Vec<IpAddr> {
        lock(&self.from).clone()
    }
}

/// Copies `from` to `to` until `from` ends, then ends `to`'s writing half.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect((self.listen, self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for s in lock(&self.streams).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// `url` (`postgres://user:pass@host:port/db?options`) split around its `host:port`.
fn around_host(url: &str) -> (&str, &str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[after_scheme..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let start = rest[..authority_end].rfind('@').map_or(0, |i| i + 1);
    (
        &url[..after_scheme + start],
        &rest[start..authority_end],
        &rest[authority_end..],
    )
}

/// Seconds since the epoch.
fn epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// What the lost machine left `running` at the moment it died.
struct Left {
    at: SystemTime,
    trials: Vec<String>,
}

/// Three workers on three "machines" (network and UTS namespaces, see the module's
/// docs) share 1,000 runs against a 50 ms agent; the first is killed with SIGKILL once a
/// third of the runs reached the agent. Besides what [`share_an_execution`] checks
/// (every run completed exactly once in the store, the report whole, no run left
/// running, only the killed worker's runs in flight run twice): every run's owner in the
/// store is one of the three workers under its machine's hostname, each ran some; every
/// request reached the agent and PostgreSQL from a namespace's address, each run's last
/// from its owner's; and what the lost machine left `running` came back only once its
/// lease had lapsed, to the other machines.
fn three_machines_share_a_thousand_runs_and_lose_one() -> Needs {
    let db = fresh_postgres()?;
    let machines = match Machines::make(3) {
        Ok(m) => Some(m),
        Err(why) if on_ci() => {
            return need(
                "network namespaces (`ip netns` from iproute2, `unshare` from util-linux, root)",
                why,
            )
        }
        Err(why) => {
            eprintln!(
                "machines: cannot make network namespaces here ({why}); three plain processes instead"
            );
            None
        }
    };
    // The agent listens on the veth pairs' host addresses, not on 0.0.0.0: each
    // machine reaches it there, and its log names the namespace each request came from.
    let hosts: Vec<String> = match &machines {
        Some(m) => m.machines.iter().map(|m| m.host.to_string()).collect(),
        None => vec!["127.0.0.1".into()],
    };
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let toml = format!("\n[store]\nlease = \"{LEASE_SECS}s\"\n");
    let (s, _agent) = slow_project_with(
        "machines",
        RUNS,
        &SlowAgent {
            delay: 0.05,
            hosts: &hosts,
            url_host: &format!("${{{AGENT_HOST}}}"),
            toml: &toml,
        },
    );
    // PostgreSQL is the shared test cluster, listening on 127.0.0.1 only: a forwarder
    // per machine on its host address carries its connections there.
    let (before, server, after) = around_host(db.url());
    let to = server
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| panic!("the test cluster's address {server}"));
    let forwarders: Vec<Forwarder> = machines
        .iter()
        .flat_map(|m| &m.machines)
        .map(|m| Forwarder::start(m.host, to))
        .collect();
    let urls: Vec<String> = forwarders
        .iter()
        .map(|f| format!("{before}{}:{}{after}", f.listen, f.port))
        .collect();
    let start = |i: usize, args: &[&str]| match &machines {
        Some(m) => {
            let m = &m.machines[i];
            // `ip netns exec` and `unshare` (no --fork) exec what they run, and so does
            // sh: the child's pid is the worker's, which the SIGKILL reaches.
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &m.ns, "unshare", "--uts", "sh", "-c"])
                .args([SET_HOSTNAME, &m.hostname, BIN])
                .args(args)
                .env("AGENTEST_STORE", &urls[i])
                .env(AGENT_HOST, m.host.to_string());
            cmd
        }
        None => {
            let mut cmd = Command::new(BIN);
            cmd.args(args)
                .env("AGENTEST_STORE", db.url())
                .env(AGENT_HOST, "127.0.0.1");
            cmd
        }
    };
    let mut left: Option<Left> = None;
    let mut killed = |pid: u32| {
        let at = SystemTime::now();
        let Some(m) = &machines else { return };
        // What the dead worker's connections still carried reaches the server in a
        // moment: after it, its rows are as it left them, and stay so for the lease.
        std::thread::sleep(Duration::from_millis(300));
        let mut c = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
        let rows = c
            .query(
                "SELECT trial FROM runs WHERE status = 'running' AND owner_pid = $1 AND owner_host = $2",
                &[&i64::from(pid), &m.machines[0].hostname],
            )
            .unwrap();
        let trials = rows.iter().map(|r| r.get(0)).collect();
        left = Some(Left { at, trials });
    };
    let pids = share_an_execution(
        &s,
        RUNS,
        Workers {
            store: db.url(),
            env: &[(AGENT_HOST, "127.0.0.1")],
            start: &start,
            killed: &mut killed,
        },
    );
    let mut c = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let runs: BTreeMap<String, (String, i64, f64)> = c
        .query(
            "SELECT trial, owner_host, owner_pid,
                    EXTRACT(EPOCH FROM completed_at::timestamptz)::float8 FROM runs",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3))))
        .collect();
    assert_eq!(runs.len(), RUNS);
    let mut owners: BTreeMap<(String, i64), usize> = BTreeMap::new();
    for (host, pid, _) in runs.values() {
        *owners.entry((host.clone(), *pid)).or_insert(0) += 1;
    }
    let Some(m) = &machines else {
        // Three processes of this host: every run is one of theirs.
        let ours: BTreeSet<i64> = pids.iter().map(|p| i64::from(*p)).collect();
        assert!(
            owners.keys().all(|(_, pid)| ours.contains(pid)),
            "{owners:?} {pids:?}"
        );
        return Ok(());
    };
    let m = &m.machines;
    // Each worker ran in its UTS namespace: the store names it by its machine's
    // hostname, with the pid that was killed or waited for.
    let expected: BTreeSet<(String, i64)> = m
        .iter()
        .zip(pids)
        .map(|(m, pid)| (m.hostname.clone(), i64::from(pid)))
        .collect();
    assert_eq!(
        owners.keys().cloned().collect::<BTreeSet<_>>(),
        expected,
        "every run is one of the three machines', each ran some: {owners:?}"
    );
    // ... and in its network namespace: the agent and PostgreSQL saw its requests
    // come from its end of its veth pair, and nothing from anywhere else.
    let addr_of: BTreeMap<&str, String> = m
        .iter()
        .map(|m| (m.hostname.as_str(), m.addr.to_string()))
        .collect();
    let log = agent_log(&s);
    let mut last: BTreeMap<&str, &str> = BTreeMap::new();
    let mut first: BTreeMap<&str, &str> = BTreeMap::new();
    let mut per_machine: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, from) in &log {
        last.insert(id, from);
        first.entry(id).or_insert(from);
        *per_machine.entry(from).or_insert(0) += 1;
    }
    let addrs: BTreeSet<&str> = addr_of.values().map(String::as_str).collect();
    assert_eq!(
        per_machine.keys().copied().collect::<BTreeSet<_>>(),
        addrs,
        "requests came from each namespace and nowhere else: {per_machine:?}"
    );
    for (trial, (host, _, _)) in &runs {
        let id = trial.trim_start_matches("s::");
        assert_eq!(
            last.get(id).copied(),
            Some(addr_of[host.as_str()].as_str()),
            "{trial}, run by {host}, last reached the agent from its namespace"
        );
    }
    let counts = crate::store::requests(&s);
    for (id, n) in &counts {
        if *n > 1 {
            assert_eq!(
                first[id.as_str()],
                m[0].addr.to_string(),
                "{id} ran twice: first on the lost machine"
            );
        }
    }
    for (f, m) in forwarders.iter().zip(m) {
        let from = f.came_from();
        assert!(
            !from.is_empty() && from.iter().all(|a| *a == IpAddr::V4(m.addr)),
            "{}'s store connections came through its veth pair: {from:?}",
            m.hostname
        );
    }
    // The lost machine's runs came back by the lease alone: nobody could tell its
    // process was gone. Its last heartbeat was at most a third of the lease before it
    // died, and the store's times are whole seconds.
    let left = left.expect("told of the kill");
    assert!(
        !left.trials.is_empty(),
        "the lost machine had runs in flight when it died"
    );
    let died = epoch(left.at);
    let earliest = died + LEASE_SECS * 2.0 / 3.0 - 1.0;
    let mut back = Vec::new();
    for trial in &left.trials {
        let (host, _, completed) = &runs[trial];
        assert_ne!(host, &m[0].hostname, "{trial} ran again elsewhere");
        assert!(
            *completed > earliest,
            "{trial} came back {:.1} s after the machine died, before its lease of {LEASE_SECS} s lapsed",
            completed - died
        );
        back.push(completed - died);
    }
    let twice = counts.values().filter(|n| **n > 1).count();
    let requests: Vec<String> = m
        .iter()
        .map(|m| {
            format!(
                "{} {}",
                m.hostname,
                per_machine[m.addr.to_string().as_str()]
            )
        })
        .collect();
    eprintln!(
        "machines: agent requests per machine: {}; the lost one left {} runs running ({twice} in flight), back {:.1} to {:.1} s after it died (lease {LEASE_SECS} s; the store's times are whole seconds)",
        requests.join(", "),
        left.trials.len(),
        back.iter().copied().fold(f64::MAX, f64::min),
        back.iter().copied().fold(0.0, f64::max),
    );
    Ok(())
}
