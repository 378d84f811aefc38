//! Where a run's store is, and opening it as a [`Backend`], whichever database it is.

use std::path::{Path, PathBuf};

use super::backend::Backend;
use crate::errors::StoreError;
use crate::util::StoreAddress;

/// The schema version the store at `address` is at, and the one this agentest writes,
/// read without changing anything.
pub(crate) fn version(address: &StoreAddress) -> Result<(i64, i64), StoreError> {
    let found = match address {
        StoreAddress::File(path) => super::sqlite::version(path)?,
        StoreAddress::Postgres(url) => super::postgres::version(url)?,
    };
    // Both backends are at the same version: one schema, two dialects.
    Ok((found, super::sqlite::VERSION))
}

/// Opens the store at `address` (an SQLite file is made, with its folder, when
/// missing), its schema migrated, or a newer one refused.
pub(crate) fn open(address: &StoreAddress) -> Result<Box<dyn Backend>, StoreError> {
    match address {
        StoreAddress::File(path) => Ok(Box::new(super::sqlite::open(path)?)),
        StoreAddress::Postgres(url) => Ok(Box::new(super::postgres::open(url)?)),
    }
}

/// Opens the store at `address` to read only (`agentest view`): nothing is created,
/// migrated or written.
pub(crate) fn open_read_only(address: &StoreAddress) -> Result<Box<dyn Backend>, StoreError> {
    match address {
        StoreAddress::File(path) => Ok(Box::new(super::sqlite::open_read_only(path)?)),
        StoreAddress::Postgres(url) => Ok(Box::new(super::postgres::open_read_only(url)?)),
    }
}

/// The store's file name in its folder.
pub(crate) const FILE: &str = "runs.db";

/// Where the store of a run is: `AGENTEST_STORE`, else the config's `[store] path`, else
/// `agentest/runs.db` in the Cargo target directory (`CARGO_TARGET_DIR`; under `cargo
/// test`, the one the test binary was built in; else `target/` of the crate around
/// `from`, the config's folder or the current one), else `.agentest/runs.db` in `from`.
/// `None`: the store is off.
pub(crate) fn location(
    from: &Path,
    configured: Option<StoreAddress>,
    harness: bool,
) -> Option<StoreAddress> {
    use crate::settings::StoreChoice;
    match &crate::settings::get().store {
        StoreChoice::Off => return None,
        StoreChoice::At(a) => return Some(a.clone()),
        StoreChoice::Default => {}
    }
    if configured.is_some() {
        return configured;
    }
    Some(StoreAddress::File(target_dir(from, harness).map_or_else(
        || from.join(".agentest").join(FILE),
        |t| t.join("agentest").join(FILE),
    )))
}

/// The Cargo target directory of the project the run belongs to.
fn target_dir(from: &Path, harness: bool) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if harness {
        // The test binary lives in `<target>/<profile>/deps/`; Cargo marks `<target>`
        // with CACHEDIR.TAG.
        let exe = std::env::current_exe().ok()?;
        if let Some(t) = exe.ancestors().find(|d| d.join("CACHEDIR.TAG").is_file()) {
            return Some(t.to_path_buf());
        }
    }
    let from = std::path::absolute(from).unwrap_or_else(|_| from.to_path_buf());
    let crate_dir = from.ancestors().find(|d| d.join("Cargo.toml").is_file())?;
    Some(crate_dir.join("target"))
}
