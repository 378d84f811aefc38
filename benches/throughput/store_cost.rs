//! The run store's cost on both backends (issue 28): `store_cpu`, `store_pg`,
//! `store_memory` and `workers`. Every PostgreSQL figure records into a new database
//! of the bench's own cluster ([`crate::postgres`]); without PostgreSQL's programs
//! those rows say `skipped: no PostgreSQL`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::postgres::Postgres;
use crate::{agentest, fixtures, median, project, run, spread, Bench, Goal, Row, Unit};

/// Where a figure's runs record.
#[derive(Clone)]
enum Store {
    Off,
    /// The project's `.agentest/runs.db` (removed before each run).
    Sqlite,
    /// A database's URL.
    Postgres(String),
}

impl Store {
    /// Points `cmd` (run in `dir`) at this store; an SQLite store starts empty.
    fn apply(&self, cmd: &mut Command, dir: &Path) {
        match self {
            Store::Off => {
                cmd.env("AGENTEST_STORE", "off");
            }
            Store::Sqlite => {
                // `command` already names the project's own file.
                let _ = std::fs::remove_dir_all(dir.join(".agentest"));
            }
            Store::Postgres(url) => {
                cmd.env("AGENTEST_STORE", url);
            }
        }
    }

    /// How many of the store's runs completed (ended with a result).
    fn completed(&self, dir: &Path) -> Result<i64, String> {
        const SQL: &str = "SELECT COUNT(*) FROM runs WHERE status = 'completed'";
        match self {
            Store::Off => Ok(0),
            Store::Sqlite => rusqlite::Connection::open(dir.join(".agentest/runs.db"))
                .and_then(|c| c.query_row(SQL, [], |r| r.get(0)))
                .map_err(|e| e.to_string()),
            Store::Postgres(url) => Postgres::count(url, SQL),
        }
    }
}

/// The PostgreSQL store for a figure: a new database `name`, or why there is none.
fn pg_store<'b>(b: &'b Bench, name: &str) -> Result<(Store, &'b Postgres), String> {
    let pg = b.postgres()?;
    Ok((Store::Postgres(pg.database(name)?), pg))
}

/// A row that was not measured: `why` (no PostgreSQL, say).
fn skipped(figure: String, unit: Unit, why: &str) -> Row {
    Row {
        figure,
        unit,
        value: f64::NAN,
        goal: Goal::Report,
        detail: String::new(),
        invalid: Some(format!("skipped: {why}")),
    }
}

fn single_turn_project(b: &Bench, name: &str, latency: Duration, n: usize) -> std::path::PathBuf {
    let dir = project(b, name, latency);
    let cases = (0..n).map(|c| fixtures::single(&format!("T{c:06}"), c));
    fixtures::write(&dir, "cases.jsonl", &fixtures::suite(cases));
    dir
}

fn test_args(parallel: &str) -> [&str; 7] {
    [
        "test",
        "-i",
        "cases.jsonl",
        "--parallel",
        parallel,
        "--color",
        "never",
    ]
}

/// One backend's runs of a figure: walls and CPU (agentest's, the PostgreSQL server's)
/// in seconds.
#[derive(Default)]
struct Sample {
    walls: Vec<f64>,
    cpus: Vec<f64>,
    server_cpus: Vec<f64>,
    failure: Option<String>,
}

/// 10,000 single-turn cases, 64 in flight, 20 ms agent: agentest's CPU with the store
/// off, on SQLite and on PostgreSQL (three runs each, alternately), and what recording
/// adds per case.
pub fn store_cpu(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    const N: usize = 10_000;
    let latency = Duration::from_millis(20);
    let dir = single_turn_project(b, "store-cpu", latency, N);
    let parallel = crate::CONCURRENCY.to_string();
    let args = test_args(&parallel);
    let pg = pg_store(b, "bench_store_cpu");
    let mut stores = vec![Store::Off, Store::Sqlite];
    if let Ok((s, _)) = &pg {
        stores.push(s.clone());
    }
    let mut samples: Vec<Sample> = stores.iter().map(|_| Sample::default()).collect();
    for round in 0..3 {
        for (store, sample) in stores.iter().zip(&mut samples) {
            if let (Store::Postgres(_), Ok((_, cluster))) = (store, &pg) {
                // Each round on a new database, as the SQLite store starts empty.
                match cluster.database(&format!("bench_store_cpu_{round}")) {
                    Ok(url) => {
                        let fresh = Store::Postgres(url);
                        measure(b, &dir, &args, &fresh, N, sample);
                    }
                    Err(e) => sample.failure = sample.failure.take().or(Some(e)),
                }
            } else {
                measure(b, &dir, &args, store, N, sample);
            }
        }
    }
    let off_cpu = median(samples[0].cpus.clone());
    let off_wall = median(samples[0].walls.clone());
    let ideal = N.div_ceil(crate::CONCURRENCY) as f64 * latency.as_secs_f64();
    let mut rows = vec![Row {
        figure: "store_cpu: 10,000 single-turn cases, store off: agentest's CPU".into(),
        unit: Unit::Seconds,
        value: off_cpu,
        goal: Goal::Report,
        detail: format!(
            "20 ms agent, --parallel {}; CPU {}; wall {} (ideal {ideal:.3} s)",
            crate::CONCURRENCY,
            spread(&samples[0].cpus, Unit::Seconds),
            spread(&samples[0].walls, Unit::Seconds)
        ),
        invalid: samples[0].failure.clone(),
    }];
    for (i, name) in ["SQLite", "PostgreSQL"].into_iter().enumerate() {
        let figure = format!("store_cpu: {name}: agentest's CPU per case over store off");
        let sample = match (i, &pg) {
            (0, _) => &samples[1],
            (_, Ok(_)) => &samples[2],
            (_, Err(why)) => {
                rows.push(skipped(figure, Unit::Micros, why));
                continue;
            }
        };
        let cpu = median(sample.cpus.clone());
        let wall = median(sample.walls.clone());
        let server = if sample.server_cpus.is_empty() {
            String::new()
        } else {
            let s = median(sample.server_cpus.clone());
            format!(
                "; the PostgreSQL server's processes {s:.3} s more CPU ({:.1} µs a case; {})",
                s / N as f64 * 1e6,
                spread(&sample.server_cpus, Unit::Seconds)
            )
        };
        rows.push(Row {
            figure,
            unit: Unit::Micros,
            value: (cpu - off_cpu) / N as f64 * 1e6,
            goal: Goal::Below { limit: 50.0 },
            detail: format!(
                "CPU {cpu:.3} s against {off_cpu:.3} s off ({}); wall {wall:.3} s against {off_wall:.3} s off ({:.3}×; {}){server}",
                spread(&sample.cpus, Unit::Seconds),
                wall / off_wall,
                spread(&sample.walls, Unit::Seconds)
            ),
            invalid: sample.failure.clone(),
        });
    }
    rows
}

/// One run of `args` in `dir` recording into `store`: its wall and CPU (and the
/// server's CPU), and a failure when it failed or did not record `n` runs.
fn measure(b: &Bench, dir: &Path, args: &[&str], store: &Store, n: usize, sample: &mut Sample) {
    let cluster = match store {
        Store::Postgres(_) => b.postgres().ok(),
        _ => None,
    };
    let mut cmd = agentest(dir, args);
    store.apply(&mut cmd, dir);
    b.server.reset();
    let before = cluster.map(Postgres::server_cpu);
    let r = run(cmd, &dir.join("logs"), false);
    if let (Some(cluster), Some(before)) = (cluster, before) {
        // Let the postmaster reap the run's backend, whose CPU then counts as its own.
        std::thread::sleep(Duration::from_millis(200));
        sample
            .server_cpus
            .push((cluster.server_cpu() - before).as_secs_f64());
    }
    sample.walls.push(r.wall.as_secs_f64());
    sample.cpus.push(r.cpu.as_secs_f64());
    let failure = r.failure().or_else(|| recorded_all(store, dir, n));
    sample.failure = sample.failure.take().or(failure);
}

/// Why the store does not hold `n` completed runs, if it does not.
fn recorded_all(store: &Store, dir: &Path, n: usize) -> Option<String> {
    if matches!(store, Store::Off) {
        return None;
    }
    match store.completed(dir) {
        Ok(got) if got == n as i64 => None,
        Ok(got) => Some(format!("{got} of {n} runs recorded completed")),
        Err(e) => Some(format!("failed to count the recorded runs: {e}")),
    }
}

/// The 1,000 single-turn cases at 64 in flight against a 100 ms agent, recorded to
/// PostgreSQL, against the store off (as `store` does for SQLite).
pub fn store_pg(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    let figure = "store_pg: 1,000 single-turn cases, recorded to PostgreSQL (against off)";
    let dir = single_turn_project(b, "store-pg", crate::LATENCY, 1000);
    let parallel = crate::CONCURRENCY.to_string();
    let args = test_args(&parallel);
    let cluster = match b.postgres() {
        Ok(c) => c,
        Err(why) => return vec![skipped(figure.into(), Unit::Seconds, &why)],
    };
    let mut off = Sample::default();
    let mut on = Sample::default();
    for round in 0..3 {
        measure(b, &dir, &args, &Store::Off, 1000, &mut off);
        match cluster.database(&format!("bench_store_pg_{round}")) {
            Ok(url) => measure(b, &dir, &args, &Store::Postgres(url), 1000, &mut on),
            Err(e) => on.failure = on.failure.take().or(Some(e)),
        }
    }
    vec![Row {
        figure: figure.into(),
        unit: Unit::Seconds,
        value: median(on.walls.clone()),
        goal: Goal::Near {
            reference: median(off.walls.clone()),
            max: 1.05,
            what: "store off",
        },
        detail: format!(
            "100 ms agent, --parallel {}; on: {}; off: {}; agentest's CPU {:.3} s on, {:.3} s off; the server's {:.3} s",
            crate::CONCURRENCY,
            spread(&on.walls, Unit::Seconds),
            spread(&off.walls, Unit::Seconds),
            median(on.cpus.clone()),
            median(off.cpus.clone()),
            median(on.server_cpus.clone()),
        ),
        invalid: off.failure.or(on.failure),
    }]
}

/// Peak memory of a run of single-turn cases at 256 in flight against an agent that
/// answers at once, store off, SQLite and PostgreSQL: 10,000 cases, and 100,000 when
/// `big` (`cargo bench -- store_memory_100k`); the KB per case is the slope between
/// sizes (or over the first 1,000 cases when only 10,000 run).
pub fn store_memory(b: &Bench, notes: &mut Vec<String>, big: bool) -> Vec<Row> {
    let sizes: &[usize] = if big {
        &[10_000, 100_000]
    } else {
        &[1_000, 10_000]
    };
    let (small, large) = (sizes[0], sizes[1]);
    let dirs: Vec<_> = sizes
        .iter()
        .map(|&n| single_turn_project(b, &format!("store-memory-{n}"), Duration::ZERO, n))
        .collect();
    let args = test_args("256");
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    let mut rows = Vec::new();
    // The store-off peaks, which the others are compared with.
    let mut off: Vec<u64> = Vec::new();
    for backend in ["off", "SQLite", "PostgreSQL"] {
        let figure = format!(
            "store_memory: peak RSS per case, {} cases, 256 in flight, store {backend}",
            crate::thousands(large)
        );
        let mut peaks = Vec::new();
        let mut failure = None;
        let mut wall = 0.0;
        let mut server = 0.0;
        for (dir, &n) in dirs.iter().zip(sizes) {
            let (store, cluster) = match backend {
                "off" => (Store::Off, None),
                "SQLite" => (Store::Sqlite, None),
                _ => match pg_store(b, &format!("bench_store_memory_{n}")) {
                    Ok((s, c)) => (s, Some(c)),
                    Err(why) => {
                        failure = Some(format!("skipped: {why}"));
                        break;
                    }
                },
            };
            let mut cmd = agentest(dir, &args);
            store.apply(&mut cmd, dir);
            b.server.reset();
            let before = cluster.map(Postgres::server_cpu);
            let r = run(cmd, &dir.join("logs"), true);
            if let (Some(c), Some(before)) = (cluster, before) {
                std::thread::sleep(Duration::from_millis(200));
                server = (c.server_cpu() - before).as_secs_f64();
            }
            peaks.push(r.peak_kib());
            wall = r.wall.as_secs_f64();
            failure = failure
                .or_else(|| r.failure())
                .or_else(|| recorded_all(&store, dir, n));
        }
        if peaks.len() < 2 {
            rows.push(Row {
                value: f64::NAN,
                goal: Goal::Report,
                detail: String::new(),
                invalid: failure,
                figure,
                unit: Unit::Kilobytes,
            });
            continue;
        }
        let per_case = (mb(peaks[1]) - mb(peaks[0])) * 1000.0 / (large - small) as f64;
        let cpu_note = if backend == "PostgreSQL" {
            format!("; the server's CPU {server:.2} s")
        } else {
            String::new()
        };
        let over_off = if backend == "off" {
            off = peaks.clone();
            String::new()
        } else if off.len() == 2 {
            let extra = mb(peaks[1]) - mb(off[1]);
            format!(
                "; {extra:+.1} MB over the store off at {} cases ({:+.3} KB a case)",
                crate::thousands(large),
                extra * 1000.0 / large as f64
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "store_memory ({backend}): {} cases peak at {:.1} MB, {} at {:.1} MB",
            crate::thousands(small),
            mb(peaks[0]),
            crate::thousands(large),
            mb(peaks[1])
        ));
        rows.push(Row {
            figure,
            unit: Unit::Kilobytes,
            value: per_case,
            // The target is at 100,000 cases; the default sizes only report.
            goal: if big {
                Goal::Below { limit: 2.0 }
            } else {
                Goal::Report
            },
            detail: format!(
                "the slope between {} and {} cases; peak {:.1} MB at {} ({:.2} KB a case over all){over_off}; agent answers at once; the {}-case run took {wall:.2} s{cpu_note}",
                crate::thousands(small),
                crate::thousands(large),
                mb(peaks[1]),
                crate::thousands(large),
                mb(peaks[1]) * 1000.0 / large as f64,
                crate::thousands(large),
            ),
            invalid: failure,
        });
    }
    rows
}

/// Claims per second: 10,000 runs enqueued, then 8 `agentest worker --parallel 8`
/// processes at once against an agent that answers at once, on SQLite and on
/// PostgreSQL; and one `agentest test --parallel 64` of the same cases.
pub fn workers(b: &Bench, _notes: &mut Vec<String>) -> Vec<Row> {
    const N: usize = 10_000;
    const WORKERS: usize = 8;
    let dir = single_turn_project(b, "workers", Duration::ZERO, N);
    let mut rows = Vec::new();
    for backend in ["SQLite", "PostgreSQL"] {
        let figure = format!(
            "workers: {backend}: 10,000 queued runs, {WORKERS} workers × --parallel 8, runs/s"
        );
        let store = match backend {
            "SQLite" => Store::Sqlite,
            _ => match pg_store(b, "bench_workers") {
                Ok((s, _)) => s,
                Err(why) => {
                    rows.push(skipped(figure, Unit::Count, &why));
                    rows.push(skipped(
                        format!("workers: {backend}: one agentest test --parallel 64, runs/s"),
                        Unit::Count,
                        &why,
                    ));
                    continue;
                }
            },
        };
        let cluster = b.postgres().ok().filter(|_| backend == "PostgreSQL");
        let key = format!("bench-workers-{}", backend.to_lowercase());
        let mut enqueue = agentest(
            &dir,
            &["test", "-i", "cases.jsonl", "--enqueue", "--color", "never"],
        );
        store.apply(&mut enqueue, &dir);
        enqueue.env("AGENTEST_EXECUTION", &key);
        let planned = run(enqueue, &dir.join("logs-enqueue"), false);
        let mut failure = planned.failure();

        b.server.reset();
        let server_before = cluster.map(Postgres::server_cpu);
        let started = Instant::now();
        let children: Vec<_> = (0..WORKERS)
            .map(|w| {
                let logs = dir.join(format!("logs-worker-{w}"));
                let mut cmd = agentest(
                    &dir,
                    &[
                        "worker",
                        "--execution",
                        &key,
                        "--parallel",
                        "8",
                        "--poll",
                        "100ms",
                    ],
                );
                if let Store::Postgres(url) = &store {
                    cmd.env("AGENTEST_STORE", url);
                }
                (logs, cmd)
            })
            .map(|(logs, cmd)| std::thread::spawn(move || run(cmd, &logs, false)))
            .collect();
        let mut cpu = 0.0;
        for child in children {
            match child.join() {
                Ok(r) => {
                    cpu += r.cpu.as_secs_f64();
                    failure = failure.or_else(|| r.failure());
                }
                Err(_) => failure = failure.or(Some("a worker's thread panicked".into())),
            }
        }
        let wall = started.elapsed().as_secs_f64();
        let server = match (cluster, server_before) {
            (Some(c), Some(before)) => {
                std::thread::sleep(Duration::from_millis(200));
                format!(
                    "; the PostgreSQL server's CPU {:.2} s",
                    (c.server_cpu() - before).as_secs_f64()
                )
            }
            _ => String::new(),
        };
        let seen = b.server.seen();
        failure = failure.or_else(|| recorded_all(&store, &dir, N));
        rows.push(Row {
            figure,
            unit: Unit::Count,
            value: N as f64 / wall,
            goal: Goal::Report,
            detail: format!(
                "{wall:.2} s from the workers' start to the last one's exit (--poll 100ms); enqueue {:.2} s; the workers' CPU {cpu:.2} s{server}; agent answers at once, saw {} connections, {} requests",
                planned.wall.as_secs_f64(),
                seen.connections,
                seen.requests
            ),
            invalid: failure,
        });

        // The same cases in one process, for comparison.
        let fresh: Result<Store, String> = match backend {
            "SQLite" => Ok(Store::Sqlite),
            _ => pg_store(b, "bench_workers_single").map(|(s, _)| s),
        };
        let figure = format!("workers: {backend}: one agentest test --parallel 64, runs/s");
        let store = match fresh {
            Ok(s) => s,
            Err(why) => {
                rows.push(skipped(figure, Unit::Count, &why));
                continue;
            }
        };
        let mut sample = Sample::default();
        let args = test_args("64");
        measure(b, &dir, &args, &store, N, &mut sample);
        let wall = sample.walls[0];
        rows.push(Row {
            figure,
            unit: Unit::Count,
            value: N as f64 / wall,
            goal: Goal::Report,
            detail: format!(
                "{wall:.2} s; agentest's CPU {:.2} s{}",
                sample.cpus[0],
                sample
                    .server_cpus
                    .first()
                    .map(|s| format!("; the server's {s:.2} s"))
                    .unwrap_or_default()
            ),
            invalid: sample.failure,
        });
    }
    rows
}
