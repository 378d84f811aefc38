//! Opening the PostgreSQL store: connected, its schema migrated, or a newer one refused
//! before anything writes to it.

use super::schema::{self, Found};
use super::store::Postgres;
use crate::errors::{DbError, StoreError};
use crate::util::{DatabaseUrl, StoreAddress};

/// Connects to the database at `url` and brings its schema to the current version.
pub(crate) fn open(url: &DatabaseUrl) -> Result<Postgres, StoreError> {
    let address = StoreAddress::Postgres(url.clone());
    let fail = |source| StoreError::Open {
        store: address.clone(),
        source: DbError::Postgres(source),
    };
    let mut client = super::connect::connect(url.expose()).map_err(|source| StoreError::Open {
        store: address.clone(),
        source: DbError::Connect(Box::new(source)),
    })?;
    match schema::migrate(&mut client).map_err(fail)? {
        Found::Current { .. } => Ok(Postgres::new(client, address)),
        Found::Newer(found) => Err(StoreError::Newer {
            store: address,
            found,
            supported: schema::VERSION,
        }),
    }
}

/// Opens the database at `url` to read only: every transaction of the session is read
/// only, and nothing is migrated. A store at another schema version is refused with
/// the fix.
pub(crate) fn open_read_only(url: &DatabaseUrl) -> Result<Postgres, StoreError> {
    let address = StoreAddress::Postgres(url.clone());
    let found = version(url)?;
    let supported = schema::VERSION;
    if found > supported {
        return Err(StoreError::Newer {
            store: address,
            found,
            supported,
        });
    }
    if found < supported {
        return Err(StoreError::Older {
            store: address,
            found,
            supported,
        });
    }
    let mut client = super::connect::connect(url.expose()).map_err(|source| StoreError::Open {
        store: address.clone(),
        source: DbError::Connect(Box::new(source)),
    })?;
    client
        .batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        .map_err(|source| StoreError::Open {
            store: address.clone(),
            source: DbError::Postgres(source),
        })?;
    Ok(Postgres::new(client, address))
}

/// The schema version of the database at `url` (0 before the first migration), read
/// without changing it (`agentest store check`).
pub(crate) fn version(url: &DatabaseUrl) -> Result<i64, StoreError> {
    let fail = |source| StoreError::Open {
        store: StoreAddress::Postgres(url.clone()),
        source: DbError::Postgres(source),
    };
    let mut client = super::connect::connect(url.expose()).map_err(|source| StoreError::Open {
        store: StoreAddress::Postgres(url.clone()),
        source: DbError::Connect(Box::new(source)),
    })?;
    let exists: bool = client
        .query_one("SELECT to_regclass('agentest_schema') IS NOT NULL", &[])
        .map_err(fail)?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_opt("SELECT version FROM agentest_schema", &[])
        .map_err(fail)?;
    Ok(row.map_or(0, |r| i64::from(r.get::<_, i32>(0))))
}
