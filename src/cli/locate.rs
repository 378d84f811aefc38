//! Which run store a command uses: `--store FILE|URL` as given, else the one `agentest
//! test` would use from the current folder.

use std::path::Path;

use crate::config::Config;
use crate::record::store;
use crate::util::StoreAddress;

/// `--store FILE|URL`: a file, or a PostgreSQL URL; another scheme is an error that
/// shows the URL without its credentials.
pub(super) fn parse_store(text: Option<&str>) -> Result<Option<StoreAddress>, String> {
    text.map(StoreAddress::parse)
        .transpose()
        .map_err(|e| e.to_string())
}

/// The store `--store` names, else the one `agentest test` would use from the current
/// folder; it must exist.
pub(super) fn existing_store(given: Option<StoreAddress>) -> Result<StoreAddress, String> {
    let address = match given {
        Some(a) => a,
        None => default_store()?,
    };
    // A database server's store is made by migrating it, which any command may do; a
    // file that is not there is a mistyped path more likely than an empty store.
    if let Some(path) = address.file().filter(|p| !p.is_file()) {
        return Err(format!(
            "no run store at {}: it is made by the first `agentest test` or `cargo test` run (AGENTEST_STORE=off turns it off)",
            path.display()
        ));
    }
    Ok(address)
}

/// The store `agentest test` would use from the current folder.
pub(super) fn default_store() -> Result<StoreAddress, String> {
    let here = Path::new(".");
    let loader = crate::run::context::config_loader(crate::settings::get().config.as_ref());
    let config = Config::discover(here, &loader).map_err(|e| e.to_string())?;
    let configured = match crate::settings::get().store {
        crate::settings::StoreChoice::Default => {
            config.store_address().map_err(|e| e.to_string())?
        }
        _ => None,
    };
    store::location(&config.dir, configured, false)
        .ok_or_else(|| "the run store is off (AGENTEST_STORE=off)".to_string())
}
