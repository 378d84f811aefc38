//! Opening the SQLite store: WAL mode, a busy timeout for the many processes
//! of a nextest run, the schema migrated or a newer one refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::schema::{self, Found};
use super::store::Sqlite;
use crate::errors::{DbError, StoreError};
use crate::util::StoreAddress;

/// How long a write waits for another process's transaction before it gives up. Every
/// transaction is a few statements, so this is only reached by a stuck process.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens (creating it and its folder when missing) the store at `path`. Processes that
/// open a new store at the same moment (nextest starts several) may find it locked
/// while another switches it to WAL or migrates it: they try again for a while.
pub(crate) fn open(path: &Path) -> Result<Sqlite, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Folder {
            path: path.to_path_buf(),
            source: e,
        })?;
    }
    let until = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match open_once(path) {
            Err(StoreError::Open {
                source: DbError::Sqlite { source, .. },
                ..
            }) if is_busy(&source) && std::time::Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // SQLite says "unable to open database file" or "readonly database" whatever
            // the cause: the OS's own answer, and its fix, are found by asking it.
            Err(e @ StoreError::Open { .. }) => return Err(unwritable_error(path).unwrap_or(e)),
            other => return other.map(|conn| Sqlite::new(conn, path)),
        }
    }
}

/// The store at `path` cannot be written, with the OS's reason and the fix, if so.
fn unwritable_error(path: &Path) -> Option<StoreError> {
    let (what, source) = unwritable(path)?;
    Some(StoreError::Unwritable {
        path: path.to_path_buf(),
        fix: fix(&what, &source),
        what,
        source,
    })
}

/// What of the store at `path` this process may not write, and the OS's reason: the
/// file, the `-wal` and `-shm` files SQLite keeps beside it, or their folder (where
/// SQLite makes those).
fn unwritable(path: &Path) -> Option<(PathBuf, std::io::Error)> {
    use std::fs::OpenOptions;
    let mut files = vec![path.to_path_buf()];
    for tail in ["-wal", "-shm"] {
        let mut f = path.as_os_str().to_owned();
        f.push(tail);
        files.push(PathBuf::from(f));
    }
    for f in files.into_iter().filter(|f| f.exists()) {
        if let Err(e) = OpenOptions::new().read(true).write(true).open(&f) {
            return Some((f, e));
        }
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".agentest-probe-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
        Err(e) => Some((dir.to_path_buf(), e)),
    }
}

/// How to get past `e` on `what`, in the user's terms.
fn fix(what: &Path, e: &std::io::Error) -> String {
    let elsewhere = "set AGENTEST_STORE to a file in a writable folder, or AGENTEST_STORE=off to run without the store";
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "give this user write permission to {} (chmod u+w, or chown), {elsewhere}",
            what.display()
        ),
        Some(libc::EROFS) => format!("it is on a read-only file system; {elsewhere}"),
        _ => elsewhere.to_string(),
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Opens the store at `path` to read only: never created, migrated or written (not
/// even switched to WAL). A store at another schema version is refused with the fix.
pub(crate) fn open_read_only(path: &Path) -> Result<Sqlite, StoreError> {
    let store = StoreAddress::File(path.to_path_buf());
    let fail = |source| StoreError::Open {
        store: store.clone(),
        source: DbError::Sqlite { source, os: None },
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(fail)?;
    let supported = schema::VERSION;
    if found > supported {
        return Err(StoreError::Newer {
            store,
            found,
            supported,
        });
    }
    if found < supported {
        return Err(StoreError::Older {
            store,
            found,
            supported,
        });
    }
    Ok(Sqlite::new(conn, path))
}

fn open_once(path: &Path) -> Result<Connection, StoreError> {
    let fail = |source| StoreError::Open {
        store: StoreAddress::File(path.to_path_buf()),
        source: DbError::Sqlite { source, os: None },
    };
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    // A file this process may not write is opened read-only by SQLite, to fail at the
    // first write with "attempt to write a readonly database": say why now.
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        if let Some(e) = unwritable_error(path) {
            return Err(e);
        }
    }
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    // A newer agentest's store is refused before anything here writes to it (switching
    // to WAL rewrites the header).
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(fail)?;
    if version > schema::VERSION {
        return Err(StoreError::Newer {
            store: StoreAddress::File(path.to_path_buf()),
            found: version,
            supported: schema::VERSION,
        });
    }
    // WAL: readers never wait for the writer, and a commit is an append. NORMAL: a
    // commit survives the process being killed (not a power cut before a checkpoint).
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(fail)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(fail)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(fail)?;
    // No checkpoint when the connection closes: that is a run's last work (an fsync of
    // the database, the WAL file removed and made again by the next run, with an fsync
    // of its folder). SQLite checkpoints as the WAL grows instead, during writes, on the
    // writer thread.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .map_err(fail)?;
    match schema::migrate(&mut conn).map_err(fail)? {
        Found::Current { .. } => Ok(conn),
        Found::Newer(found) => Err(StoreError::Newer {
            store: StoreAddress::File(path.to_path_buf()),
            found,
            supported: schema::VERSION,
        }),
    }
}

/// The schema version of the store at `path`, read without changing it (`agentest
/// store check`).
pub(crate) fn version(path: &Path) -> Result<i64, StoreError> {
    let fail = |source| StoreError::Open {
        store: StoreAddress::File(path.to_path_buf()),
        source: DbError::Sqlite { source, os: None },
    };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(fail)?;
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(fail)
}
