//! The PostgreSQL store through the real binary, on the throwaway cluster of
//! tests/postgres/cluster.sh (`AGENTEST_TEST_POSTGRES`), each test on a database of its
//! own that [`fresh_postgres`] gives it: the same runs and exports as SQLite, the
//! commands, a server that cannot be reached, and never the password. The schema and
//! connections are tested in src/record/store/postgres/schema.rs, on the same server.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{fresh_postgres, need, Missing, Needs, Run};
use crate::store::{agentest, listed, project};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![
        a_fresh_database_is_empty_and_dropped_with_its_guard(needs crate::common::postgres),
        a_run_recorded_in_postgres_exports_as_sqlites_does(needs crate::common::postgres),
        a_wave_of_ends_exports_as_sqlites_does(needs crate::common::postgres),
        the_runs_commands_work_on_postgres(needs crate::common::postgres),
        an_unreachable_or_refused_server_stops_the_run_before_any_case(needs crate::common::postgres),
        a_newer_postgres_store_is_refused_untouched(needs crate::common::postgres),
        the_configs_store_url_takes_its_password_from_the_environment(needs crate::common::postgres),
        three_workers_share_a_thousand_runs_and_survive_a_kill(needs crate::common::postgres),
        store_check_and_migrate_operate_a_database(needs crate::common::postgres),
        a_server_that_goes_away_mid_run_loses_nothing_already_recorded(needs crate::common::postgres),
        a_server_with_a_private_cas_certificate_is_verified_by_sslrootcert(needs crate::common::postgres),
        a_stalled_store_holds_back_new_cases_until_it_catches_up(needs crate::common::postgres),
    ]
}

/// `runs export` of the newest execution, parsed, with what differs between two stores
/// of the same runs (ids, times, durations) taken out.
fn exported(dir: &std::path::Path, store: &str, format: &str) -> Vec<Value> {
    let r = agentest(
        dir,
        &["runs", "export", "--format", format, "--store", store],
        &[],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let values: Vec<Value> = match format {
        "jsonl" => r
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        _ => serde_json::from_str::<Vec<Value>>(&r.stdout).unwrap(),
    };
    values.into_iter().map(normalized).collect()
}

/// 96 cases at 32 in flight against a 100 ms agent end in waves, which the PostgreSQL
/// writer records in one statement each: the exports equal SQLite's, which records
/// each end by itself.
fn a_wave_of_ends_exports_as_sqlites_does() -> Needs {
    let db = fresh_postgres()?;
    let (s, _agent) = crate::store::slow_project("pg-wave", 96);
    let sqlite = s.join("local.db");
    for store in [sqlite.to_str().unwrap(), db.url()] {
        let r = agentest(
            s.path(),
            &["test", "-i", "suites", "--parallel", "32", "--compact"],
            &[("AGENTEST_STORE", store)],
        );
        assert_eq!(r.code, 0, "{r:?}");
    }
    for format in ["jsonl", "evalstudio"] {
        let a = exported(s.path(), sqlite.to_str().unwrap(), format);
        let b = exported(s.path(), db.url(), format);
        assert_eq!(a.len(), 96, "{a:?}");
        assert_eq!(a, b, "{format}");
    }
    Ok(())
}

/// `v` without the keys whose values are ids, times or durations.
fn normalized(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| {
                    !(k == "id"
                        || k.ends_with("_ms")
                        || k.ends_with("At")
                        || k.ends_with("_at")
                        || k.to_lowercase().contains("latency"))
                })
                .map(|(k, v)| (k, normalized(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(normalized).collect()),
        other => other,
    }
}

fn assert_no_password(url: &str, runs: &[&Run]) {
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, p)| p.to_string())
        .expect("the test cluster's URL has a password");
    for r in runs {
        assert!(
            !r.stdout.contains(&password) && !r.stderr.contains(&password),
            "the password leaked: {r:?}"
        );
    }
}

/// The same suite run into SQLite and into PostgreSQL: both exports (agentest's JSONL
/// and EvalStudio's runs) are the same but for ids and times; nothing shown holds the
/// password, and no file is made for the store.
fn a_run_recorded_in_postgres_exports_as_sqlites_does() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-export");
    let sqlite = s.join("local.db");
    let sqlite = sqlite.to_str().unwrap();
    let on_sqlite = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", sqlite)],
    );
    let on_pg = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_STORE", db.url())],
    );
    assert_eq!(on_pg.code, on_sqlite.code, "{on_pg:?}");
    assert!(
        on_pg.stderr.is_empty() && on_sqlite.stderr.is_empty(),
        "{on_pg:?}"
    );
    for format in ["jsonl", "evalstudio"] {
        let a = exported(s.path(), sqlite, format);
        let b = exported(s.path(), db.url(), format);
        assert_eq!(a.len(), 4, "{a:?}");
        assert_eq!(a, b, "{format}");
    }
    assert_no_password(db.url(), &[&on_pg]);
    let files: Vec<String> = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files
            .iter()
            .all(|f| !f.contains("postgres") && !f.contains("127.0.0.1")),
        "{files:?}"
    );
    Ok(())
}

/// `runs list`, `show`, `flaky`, `retry`, `delete` and `report --execution` read and
/// write a PostgreSQL store as they do a file.
fn the_runs_commands_work_on_postgres() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-runs");
    let store = [("AGENTEST_STORE", db.url())];
    agentest(s.path(), &["test", "-i", "suites"], &store);
    let list = agentest(s.path(), &["runs", "list"], &store);
    assert_eq!(list.code, 0, "{list:?}");
    let mut rows = listed(&list);
    rows.sort();
    assert_eq!(
        rows,
        [
            ("completed".into(), "failed".into(), "s::bad".into()),
            ("completed".into(), "passed".into(), "s::ok".into()),
            ("completed".into(), "skipped".into(), "s::later".into()),
            ("error".into(), "error".into(), "s::crash".into()),
        ]
    );
    let id = list
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let show = agentest(s.path(), &["runs", "show", id], &store);
    assert_eq!(show.code, 0, "{show:?}");
    assert!(
        show.stdout.starts_with(&format!("run {id} (execution ")),
        "{show:?}"
    );
    let failed = agentest(s.path(), &["runs", "list", "--status", "error"], &store);
    assert_eq!(listed(&failed).len(), 1, "{failed:?}");
    let retry = agentest(s.path(), &["runs", "retry"], &store);
    assert_eq!(retry.code, 1, "the crash crashes again: {retry:?}");
    assert!(
        retry.stdout.contains("[s::crash]") && !retry.stdout.contains("[s::ok]"),
        "{retry:?}"
    );
    let list = agentest(s.path(), &["runs", "list", "--suite", "s"], &store);
    assert_eq!(
        listed(&list).len(),
        5,
        "the retry is a run of its own: {list:?}"
    );
    let report = s.join("r.md");
    let r = agentest(
        s.path(),
        &["report", "--execution", "1", "-o", report.to_str().unwrap()],
        &store,
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("s::ok"));
    let flaky = agentest(s.path(), &["runs", "flaky"], &store);
    assert_eq!(flaky.code, 0, "{flaky:?}");
    assert_eq!(
        flaky.stdout, "no case changed its verdict on the same inputs in the last 10 executions\n",
        "the retry ran only the crash, which errored again: no verdict changed"
    );
    let gone = agentest(s.path(), &["runs", "delete", "--execution", "1"], &store);
    assert!(gone.stderr.contains("deleted 4 runs"), "{gone:?}");
    let list = agentest(s.path(), &["runs", "list"], &store);
    assert_eq!(listed(&list).len(), 1, "{list:?}");
    assert_no_password(db.url(), &[&list, &show, &retry, &r, &flaky, &gone]);
    Ok(())
}

/// A server that refuses the password, a database that does not exist and a port no
/// server listens on each stop the run before any case starts (exit 2), with the cause
/// and without the password.
fn an_unreachable_or_refused_server_stops_the_run_before_any_case() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-refused");
    let url = db.url().to_string();
    let (user, rest) = url.split_once('@').unwrap();
    let (scheme_user, password) = user.rsplit_once(':').unwrap();
    let wrong = format!("{scheme_user}:not-{password}@{rest}");
    let (host_port, _) = rest.split_once('/').unwrap();
    let missing = format!("{user}@{host_port}/no_such_database_here");
    let closed = format!("{user}@127.0.0.1:1/agentest");
    for (url, cause) in [
        (wrong.as_str(), "password authentication failed"),
        (missing.as_str(), "does not exist"),
        (closed.as_str(), "Connection refused"),
    ] {
        let r = agentest(
            s.path(),
            &["test", "-i", "suites"],
            &[("AGENTEST_STORE", url)],
        );
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr
                .contains("failed to open the run store postgres://***@"),
            "{r:?}"
        );
        assert!(r.stderr.contains(cause), "{cause}: {r:?}");
        assert!(r.stdout.is_empty(), "no case ran: {r:?}");
        assert!(!r.stderr.contains(password), "the password leaked: {r:?}");
    }
    Ok(())
}

/// A PostgreSQL store a newer agentest migrated is refused before anything writes to it.
fn a_newer_postgres_store_is_refused_untouched() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-newer");
    let store = [("AGENTEST_STORE", db.url())];
    agentest(s.path(), &["runs", "list"], &store);
    let mut client = ::postgres::Client::connect(db.url(), ::postgres::NoTls).unwrap();
    client
        .batch_execute("UPDATE agentest_schema SET version = 99")
        .unwrap();
    let r = agentest(s.path(), &["test", "-i", "suites"], &store);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("has schema version 99, newer than this agentest's (10)"),
        "{r:?}"
    );
    let runs: i64 = client
        .query_one("SELECT COUNT(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 0, "nothing was written");
    Ok(())
}

/// Two fresh databases are distinct and empty, reached by their own URLs with the
/// cluster's password login; dropping the guard drops the database even while a
/// connection to it is still open.
fn a_fresh_database_is_empty_and_dropped_with_its_guard() -> Needs {
    let db = fresh_postgres()?;
    let other = fresh_postgres()?;
    assert_ne!(db.name(), other.name());
    assert!(db.name().starts_with("agentest_test_"), "{}", db.name());

    let mut client = ::postgres::Client::connect(db.url(), ::postgres::NoTls)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let row = client
        .query_one(
            "SELECT current_database()::text, current_user::text,
                    (SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public')",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), db.name());
    assert_eq!(row.get::<_, String>(1), "agentest");
    assert_eq!(row.get::<_, i64>(2), 0, "a fresh database has no tables");
    client
        .batch_execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();

    let name = db.name().to_string();
    let admin = std::env::var("AGENTEST_TEST_POSTGRES").unwrap();
    let mut server =
        ::postgres::Client::connect(&admin, ::postgres::NoTls).unwrap_or_else(|e| panic!("{e:?}"));
    let exists = |server: &mut ::postgres::Client, name: &str| -> bool {
        server
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
                &[&name],
            )
            .unwrap()
            .get(0)
    };
    assert!(exists(&mut server, &name));
    drop(db);
    assert!(!exists(&mut server, &name), "{name} was not dropped");
    assert!(
        client.query_one("SELECT 1", &[]).is_err(),
        "the open connection was ended with its database"
    );
    assert!(
        exists(&mut server, other.name()),
        "the other database stays"
    );
    Ok(())
}

/// `[store] url` with `${VAR}` for the password: recorded into the database when the
/// variable is set; unset, the run stops before any case with the variable named, and
/// neither says the password.
fn the_configs_store_url_takes_its_password_from_the_environment() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-config");
    let (user, rest) = db.url().split_once('@').unwrap();
    let (scheme_user, password) = user.rsplit_once(':').unwrap();
    let config = std::fs::read_to_string(s.join("agentest.toml")).unwrap();
    s.write(
        "agentest.toml",
        &format!("{config}\n[store]\nurl = \"{scheme_user}:${{AGENTEST_T_PGPASS}}@{rest}\"\n"),
    );
    let r = agentest(
        s.path(),
        &["test", "-i", "suites"],
        &[("AGENTEST_T_PGPASS", password)],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let mut client = ::postgres::Client::connect(db.url(), ::postgres::NoTls).unwrap();
    let runs: i64 = client
        .query_one("SELECT COUNT(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 4, "recorded into the database");
    let r = agentest(s.path(), &["test", "-i", "suites"], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("AGENTEST_T_PGPASS"), "{r:?}");
    assert!(r.stdout.is_empty(), "no case ran: {r:?}");
    assert_no_password(db.url(), &[&r]);
    Ok(())
}

/// Three workers on one PostgreSQL execution of 1,000 runs, one killed with SIGKILL
/// mid-run: see [`crate::store::workers_share_an_execution`].
fn three_workers_share_a_thousand_runs_and_survive_a_kill() -> Needs {
    let db = fresh_postgres()?;
    let (s, _agent) = crate::store::slow_project("pg-workers", 1000);
    crate::store::workers_share_an_execution(&s, db.url(), 1000);
    Ok(())
}

/// `agentest store check` on a new database says it needs migrating (exit 1) and
/// changes nothing; `store migrate` brings it to the current version, once; after a run
/// `check` counts what it holds; an unreachable server is exit 2, without the password.
fn store_check_and_migrate_operate_a_database() -> Needs {
    let db = fresh_postgres()?;
    let s = project("pg-store-cmd");
    let store = [("AGENTEST_STORE", db.url())];
    let check = agentest(s.path(), &["store", "check"], &store);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check
            .stdout
            .contains("schema: version 0, older than this agentest's (10)"),
        "{check:?}"
    );
    let mut client = ::postgres::Client::connect(db.url(), ::postgres::NoTls).unwrap();
    let tables: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "check changed nothing");
    let migrate = agentest(s.path(), &["store", "migrate"], &store);
    assert_eq!(migrate.code, 0, "{migrate:?}");
    assert!(
        migrate.stderr.contains("from schema version 0 to 10"),
        "{migrate:?}"
    );
    let again = agentest(s.path(), &["store", "migrate"], &store);
    assert!(again.stderr.contains("nothing to migrate"), "{again:?}");
    agentest(s.path(), &["test", "-i", "suites"], &store);
    let check = agentest(s.path(), &["store", "check"], &store);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(check.stdout.contains("(PostgreSQL database)"), "{check:?}");
    assert!(
        check.stdout.contains("schema: version 10 (current)"),
        "{check:?}"
    );
    assert!(
        check
            .stdout
            .contains("executions: 1\nruns: 4 (completed 3, error 1)"),
        "{check:?}"
    );
    let url = db.url().to_string();
    let (user, _) = url.split_once('@').unwrap();
    let closed = format!("{user}@127.0.0.1:1/agentest");
    let r = agentest(s.path(), &["store", "check", "--store", &closed], &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("Connection refused"), "{r:?}");
    assert_no_password(db.url(), &[&check, &migrate, &r]);
    Ok(())
}

/// A cluster of this test's own (tests/postgres/cluster.sh), stopped when dropped.
struct OwnCluster {
    dir: std::path::PathBuf,
}

impl OwnCluster {
    fn start(s: &crate::common::Scratch) -> OwnCluster {
        OwnCluster::start_with(s, &[])
    }

    /// A cluster that speaks TCP over TLS only, with the server certificate `cert` and
    /// its key `key`.
    fn start_tls(s: &crate::common::Scratch, cert: &Path, key: &Path) -> OwnCluster {
        OwnCluster::start_with(s, &[cert, key])
    }

    fn start_with(s: &crate::common::Scratch, tls: &[&Path]) -> OwnCluster {
        let dir = s.join("cluster");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres/cluster.sh");
        let out = std::process::Command::new("bash")
            .args([script, "start"])
            .arg(&dir)
            .args(tls)
            .output()
            .unwrap();
        // Stopped even when the start failed half-way (a postmaster running, no URL).
        let cluster = OwnCluster { dir };
        assert!(out.status.success(), "{out:?}");
        cluster
    }

    fn url(&self) -> String {
        std::fs::read_to_string(self.dir.join("url"))
            .unwrap()
            .trim()
            .to_string()
    }

    fn stop(&self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres/cluster.sh");
        let _ = std::process::Command::new("bash")
            .args([script, "stop"])
            .arg(&self.dir)
            .output();
    }
}

impl Drop for OwnCluster {
    /// `cluster.sh stop` (pg_ctl, else the postmaster by its PID); should that script
    /// not run at all, the postmaster is killed by its PID here.
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.dir.join("pid")).ok();
        self.stop();
        let Some(pid) = pid.and_then(|p| p.trim().parse::<u32>().ok()) else {
            return;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "postgres" {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// The server stops while a run writes to it: the cases go on and the console has every
/// result; the run ends in error (exit 2) naming what the store did not record and the
/// cause; what it recorded before the server went away is still there when it is back.
fn a_server_that_goes_away_mid_run_loses_nothing_already_recorded() -> Needs {
    crate::common::postgres()?;
    let (s, _agent) = crate::store::slow_project("pg-gone", 60);
    let cluster = OwnCluster::start(&s);
    let url = cluster.url();
    let child = std::process::Command::new(crate::common::BIN)
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--parallel", "4", "--compact"])
        .env("AGENTEST_STORE", &url)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the server once a third of the cases reached the agent.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < until
        && std::fs::read_to_string(s.join("agent.log"))
            .unwrap_or_default()
            .lines()
            .count()
            < 20
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The store writes each end within moments of it: give the first ones that time.
    std::thread::sleep(std::time::Duration::from_millis(300));
    cluster.stop();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Total:   60 tests"),
        "every result on the console: {stdout}"
    );
    assert!(
        stderr.contains("did not record") && stderr.contains("postgres://***@"),
        "{stderr}"
    );
    let password = url.split_once("://").unwrap().1.split_once('@').unwrap().0;
    assert!(
        !stderr.contains(password.split_once(':').unwrap().1),
        "{stderr}"
    );
    // Back: what was recorded before is there.
    let cluster = OwnCluster {
        dir: cluster.dir.clone(),
    };
    let restart = std::process::Command::new("bash")
        .args([
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres/cluster.sh"),
            "restart",
        ])
        .arg(&cluster.dir)
        .output()
        .unwrap();
    assert!(restart.status.success(), "{restart:?}");
    let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    let completed: i64 = client
        .query_one("SELECT COUNT(*) FROM runs WHERE status = 'completed'", &[])
        .unwrap()
        .get(0);
    assert!(
        completed >= 1,
        "the runs that ended before the server went away are kept"
    );
    Ok(())
}

/// The `openssl` command, which makes the TLS test's certificates (`.ci/run` installs
/// Debian's `openssl` where it is missing).
fn openssl() -> Result<(), Missing> {
    let runs = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        Ok(())
    } else {
        need(
            "the openssl command",
            "it makes the TLS test's throwaway CA and server certificate; on Debian: apt-get install openssl (.ci/run does)",
        )
    }
}

/// Runs `openssl` with `args` in `dir`, which must succeed.
fn run_openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
}

/// A throwaway CA in `dir` (`NAME.pem`, `NAME.key`): an EC P-256 key, a day's validity.
fn make_ca(dir: &Path, name: &str) {
    run_openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "1",
            "-subj",
            &format!("/CN=agentest {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// `path` percent-encoded for a URL's query: all but letters, digits and `/-_.`.
fn url_encoded(path: &Path) -> String {
    path.to_str()
        .unwrap()
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A server whose certificate a private CA signed, for `localhost` and 127.0.0.1, on a
/// cluster that refuses TCP without TLS: `sslmode=verify-full&sslrootcert=CA.pem`
/// (the path percent-encoded, with a space in it) checks and records a run; without
/// `sslrootcert` the certificate is not trusted, and the message says to name the CA's
/// file; a root file of another CA, a missing one and one without a certificate are
/// named; a host the certificate is not for is refused on its name; no output holds
/// the password.
fn a_server_with_a_private_cas_certificate_is_verified_by_sslrootcert() -> Needs {
    crate::common::postgres()?;
    openssl()?;
    let s = project("pg-tls");
    let pki: PathBuf = s.join("private ca");
    std::fs::create_dir(&pki).unwrap();
    make_ca(&pki, "ca");
    make_ca(&pki, "other-ca");
    run_openssl(
        &pki,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(
        pki.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run_openssl(
        &pki,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "2",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    );
    let cluster = OwnCluster::start_tls(&s, &pki.join("server.crt"), &pki.join("server.key"));
    let url = cluster.url();
    let at_localhost = url.replacen("@127.0.0.1:", "@localhost:", 1);
    assert_ne!(at_localhost, url);
    let root = |file: &str| url_encoded(&pki.join(file));
    let verified = format!(
        "{at_localhost}?sslmode=verify-full&sslrootcert={}",
        root("ca.pem")
    );
    // Every run, whatever it says, says it without the password.
    let on = |store: &str, args: &[&str]| {
        let r = agentest(s.path(), args, &[("AGENTEST_STORE", store)]);
        assert_no_password(&url, &[&r]);
        r
    };

    // Verified end to end: checked, recorded into, counted.
    let check = on(&verified, &["store", "check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.stdout.contains("schema: version 0"), "{check:?}");
    let run = on(&verified, &["test", "-i", "suites"]);
    assert_eq!(run.code, 1, "s::bad fails, the rest is recorded: {run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    let check = on(&verified, &["store", "check"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check.stdout.contains("runs: 4 (completed 3, error 1)"),
        "{check:?}"
    );
    // verify-ca too (as strict here).
    let ca_mode = format!(
        "{at_localhost}?sslmode=verify-ca&sslrootcert={}",
        root("ca.pem")
    );
    assert_eq!(on(&ca_mode, &["store", "check"]).code, 0);
    // The cluster refuses TCP without TLS: the connections above were over TLS.
    let clear = on(&format!("{url}?sslmode=disable"), &["store", "check"]);
    assert_eq!(clear.code, 2, "{clear:?}");
    assert!(clear.stderr.contains("no encryption"), "{clear:?}");

    // Not trusted by the default roots, whatever the mode: the message names the fix.
    for query in [
        "?sslmode=verify-full",
        "",
        "?sslmode=require",
        "?sslrootcert=system",
    ] {
        let r = on(&format!("{at_localhost}{query}"), &["test", "-i", "suites"]);
        assert_eq!(r.code, 2, "{query}: {r:?}");
        assert!(r.stdout.is_empty(), "no case ran: {r:?}");
        assert!(
            r.stderr
                .contains("the PostgreSQL server's TLS certificate is not trusted")
                && r.stderr.contains("UnknownIssuer")
                && r.stderr
                    .contains("add sslrootcert=/path/to/ca.pem to the URL"),
            "{query}: {r:?}"
        );
    }
    let other = pki.join("other-ca.pem");
    let r = on(
        &format!(
            "{at_localhost}?sslmode=verify-full&sslrootcert={}",
            root("other-ca.pem")
        ),
        &["store", "check"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "no certificate in the sslrootcert file {} signed it",
            other.display()
        )),
        "{r:?}"
    );

    // Root files that cannot be used, named.
    let missing = pki.join("missing.pem");
    let r = on(
        &format!(
            "{at_localhost}?sslmode=verify-full&sslrootcert={}",
            root("missing.pem")
        ),
        &["store", "check"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "cannot read the sslrootcert file {}: No such file or directory",
            missing.display()
        )),
        "{r:?}"
    );
    let key = pki.join("server.key");
    let r = on(
        &format!("{at_localhost}?sslrootcert={}", root("server.key")),
        &["store", "check"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(&format!(
            "the sslrootcert file {} holds no certificate",
            key.display()
        )),
        "{r:?}"
    );

    // A name the certificate does not have (connecting to 127.0.0.1 all the same).
    let elsewhere = url.replacen("@127.0.0.1:", "@db.example.com:", 1);
    let r = on(
        &format!(
            "{elsewhere}?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={}",
            root("ca.pem")
        ),
        &["store", "check"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("TLS certificate is not for the host")
            && r.stderr.contains("db.example.com"),
        "{r:?}"
    );
    Ok(())
}

/// The requests the agent of `s` has had so far.
fn seen(s: &crate::common::Scratch) -> usize {
    std::fs::read_to_string(s.join("agent.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// While the store can write nothing (another session holds a lock on its `runs`),
/// a run of 2,500 cases against an agent that answers at once starts cases only until
/// about a thousand ends wait in memory, instead of running them all and holding every
/// record; once the lock goes, the run goes on and records all of them. Queuing them
/// had the `runs` table analyzed.
fn a_stalled_store_holds_back_new_cases_until_it_catches_up() -> Needs {
    use std::time::{Duration, Instant};
    const N: usize = 2500;
    let db = fresh_postgres()?;
    let agent = crate::store::SlowAgent {
        delay: 0.0,
        hosts: &["127.0.0.1"],
        url_host: "127.0.0.1",
        toml: "",
    };
    let (s, _agent) = crate::store::slow_project_with("pg-backlog", N, &agent);
    let child = Command::new(crate::common::BIN)
        .current_dir(s.path())
        .args(["test", "-i", "suites", "--parallel", "64", "--compact"])
        .env_remove("CARGO_TARGET_DIR")
        .env("AGENTEST_STORE", db.url())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start agentest");
    let wait_for = |what: &str, until: &mut dyn FnMut() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !until() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // The first request: the runs are queued, and cases are running.
    wait_for("the first request", &mut || seen(&s) >= 1);
    let mut client = ::postgres::Client::connect(db.url(), ::postgres::NoTls).unwrap();
    let mut lock = client.transaction().unwrap();
    lock.batch_execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let at_lock = seen(&s);
    // Cases go on until the ends waiting for the store fill the backlog, then stop.
    let mut last = (at_lock, Instant::now());
    wait_for("the requests to stop growing", &mut || {
        let now = seen(&s);
        if now != last.0 {
            last = (now, Instant::now());
        }
        now == N || last.1.elapsed() >= Duration::from_millis(1500)
    });
    let stalled = seen(&s);
    lock.commit().unwrap();
    let r = Run::of(child.wait_with_output().unwrap());
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        stalled < N,
        "all {N} cases ran while the store could write none of their ends ({at_lock} before the lock)"
    );
    // At most the backlog (1,024 ends) and the cases in flight (64) after the lock,
    // with those in flight when it was taken.
    assert!(
        stalled - at_lock <= 1024 + 2 * 64,
        "{} cases started while the store could write nothing",
        stalled - at_lock
    );
    assert_eq!(seen(&s), N, "each case ran once");
    let recorded: i64 = client
        .query_one("SELECT COUNT(*) FROM runs WHERE status = 'completed'", &[])
        .unwrap()
        .get(0);
    assert_eq!(recorded, N as i64);
    // Queuing thousands of runs at once has the table analyzed, so that the planner
    // does not scan it whole for each wave's writes (docs/performance.md).
    let analyzed: bool = client
        .query_one(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'runs'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        analyzed,
        "the runs table was not analyzed after {N} runs were queued"
    );
    Ok(())
}
