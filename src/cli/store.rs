//! `agentest store migrate|check`: operating the run store, a file or a PostgreSQL
//! database, apart from any run.

use std::process::ExitCode;

use clap::Subcommand;

use crate::record::store;

#[derive(clap::Args)]
pub(super) struct StoreArgs {
    #[command(subcommand)]
    command: StoreCommand,
    /// The store (default: AGENTEST_STORE, `[store]`, else as `agentest test` finds it
    /// from the current folder).
    // Read as text and parsed later: clap's own error would print a URL's password.
    #[arg(long, global = true)]
    store: Option<String>,
}

#[derive(Subcommand)]
enum StoreCommand {
    /// Bring the store's schema to this agentest's version (any run does it too; this
    /// does it ahead, for a role that may not alter tables during runs).
    Migrate,
    /// Whether the store can be reached, its schema version, and what it holds.
    Check,
}

/// Runs `agentest store ...`: exit 0 when the store is reachable and current; 2 when it
/// cannot be reached or was written by a newer agentest; `check` exits 1 for a store
/// that needs `migrate`.
pub(super) fn store(args: StoreArgs) -> Result<ExitCode, String> {
    let given = super::locate::parse_store(args.store.as_deref())?;
    let address = match (&args.command, given) {
        // A database is made by migrating it; a file too.
        (StoreCommand::Migrate, Some(a)) => a,
        (StoreCommand::Migrate, None) => super::locate::default_store()?,
        (StoreCommand::Check, given) => super::locate::existing_store(given)?,
    };
    match args.command {
        StoreCommand::Migrate => {
            let before = match address.file() {
                Some(p) if !p.exists() => 0,
                _ => store::version(&address).map_err(|e| e.to_string())?.0,
            };
            store::open(&address).map_err(|e| e.to_string())?;
            let (now, _) = store::version(&address).map_err(|e| e.to_string())?;
            if before == now {
                eprintln!("the run store {address} is at schema version {now}: nothing to migrate");
            } else {
                eprintln!("migrated the run store {address} from schema version {before} to {now}");
            }
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Check => check(&address),
    }
}

/// `store check`: reachable, its version, and its counts on stdout.
fn check(address: &crate::util::StoreAddress) -> Result<ExitCode, String> {
    let (found, current) = store::version(address).map_err(|e| e.to_string())?;
    let kind = match address.file() {
        Some(_) => "SQLite file",
        None => "PostgreSQL database",
    };
    let mut out = format!("store: {address} ({kind})\nschema: version {found}");
    if found > current {
        return Err(format!(
            "the run store {address} has schema version {found}, newer than this agentest's ({current}): it was written by a newer agentest; use that version"
        ));
    }
    if found < current {
        out.push_str(&format!(
            ", older than this agentest's ({current}): run `agentest store migrate` (any run also migrates it)\n"
        ));
        print!("{out}");
        return Ok(ExitCode::from(1));
    }
    out.push_str(" (current)\n");
    let mut db = store::open(address).map_err(|e| e.to_string())?;
    let (executions, runs) = db
        .counts()
        .map_err(|e| format!("failed to read the run store {address}: {e}"))?;
    out.push_str(&format!("executions: {executions}\n"));
    let total: u64 = runs.iter().map(|(_, n)| n).sum();
    let by: Vec<String> = runs.iter().map(|(s, n)| format!("{s} {n}")).collect();
    out.push_str(&format!("runs: {total}"));
    if !by.is_empty() {
        out.push_str(&format!(" ({})", by.join(", ")));
    }
    out.push('\n');
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
