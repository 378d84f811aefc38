//! A throwaway PostgreSQL cluster for the groups that record into PostgreSQL: the
//! tests' `tests/postgres/cluster.sh` in a folder of its own under the system's temp
//! folder, started on first use and stopped when dropped (the end of the bench, or a
//! panic unwinding out of `main`). A bench stopped by a signal (Ctrl-C) leaves it
//! running: `bash tests/postgres/cluster.sh stop /tmp/agentest-bench-pg-<PID>` stops it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub struct Postgres {
    dir: PathBuf,
    url: String,
    /// The postmaster's PID: its children are the server's processes.
    pid: i32,
}

impl Postgres {
    /// Starts a cluster; `Err` says why not (no PostgreSQL programs, a failed start).
    pub fn start(repo: &Path) -> Result<Postgres, String> {
        let dir = std::env::temp_dir().join(format!("agentest-bench-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let script = repo.join("tests/postgres/cluster.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("failed to run {}: {e}", script.display()))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(if why.contains("no PostgreSQL server programs") {
                "no PostgreSQL".into()
            } else {
                format!("cluster.sh start failed: {}", why.trim())
            });
        }
        let read =
            |name: &str| std::fs::read_to_string(dir.join(name)).map(|s| s.trim().to_string());
        let cluster = Postgres {
            url: read("url").map_err(|e| format!("no url from cluster.sh: {e}"))?,
            pid: read("pid")
                .ok()
                .and_then(|p| p.parse().ok())
                .ok_or("no pid from cluster.sh")?,
            dir,
        };
        Ok(cluster)
    }

    /// A new, empty database `name` (dropped first if there): its URL.
    pub fn database(&self, name: &str) -> Result<String, String> {
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls)
            .map_err(|e| format!("failed to connect to the bench's cluster: {}", said(&e)))?;
        // One statement a call: CREATE DATABASE cannot run in the implicit transaction
        // of a multi-statement query.
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            client
                .batch_execute(&sql)
                .map_err(|e| format!("failed to create the database {name}: {}", said(&e)))?;
        }
        let base = self
            .url
            .rsplit_once('/')
            .map_or(self.url.as_str(), |(base, _)| base);
        Ok(format!("{base}/{name}"))
    }

    /// One number from the database at `url` (`SELECT COUNT(*) ...`).
    pub fn count(url: &str, sql: &str) -> Result<i64, String> {
        let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(|e| said(&e))?;
        client
            .query_one(sql, &[])
            .map(|row| row.get(0))
            .map_err(|e| said(&e))
    }

    /// The CPU time (user and system) the server's processes used so far: the
    /// postmaster's own and its reaped children's (a connection's backend is reaped when
    /// it ends), and the live children's (the checkpointer, the WAL writer, open
    /// connections), from `/proc/<pid>/stat`.
    pub fn server_cpu(&self) -> Duration {
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut ticks = 0u64;
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Duration::ZERO;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // After the command's `)` and the state: ppid (0), ..., utime (10), stime,
            // cutime, cstime.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let fields: Vec<u64> = rest
                .split_whitespace()
                .skip(1)
                .map(|f| f.parse().unwrap_or(0))
                .collect();
            if fields.len() < 14 {
                continue;
            }
            if pid == self.pid {
                ticks += fields[10..14].iter().sum::<u64>();
            } else if fields[0] == self.pid as u64 {
                ticks += fields[10] + fields[11];
            }
        }
        Duration::from_secs_f64(ticks as f64 / tick)
    }
}

/// The server's own words for an error (`db error` alone says nothing).
fn said(e: &postgres::Error) -> String {
    e.as_db_error()
        .map_or_else(|| e.to_string(), |db| db.message().to_string())
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/postgres/cluster.sh");
        let stopped = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status();
        if !matches!(stopped, Ok(s) if s.success()) {
            eprintln!(
                "agentest bench: failed to stop the PostgreSQL cluster in {} (PID {})",
                self.dir.display(),
                self.pid
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
