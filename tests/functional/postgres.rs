//! The PostgreSQL store's test bed (issue 28): the throwaway cluster of
//! tests/postgres/cluster.sh (`AGENTEST_TEST_POSTGRES`) and the database of its own that
//! [`fresh_postgres`] gives a test. The store's schema and connections are tested in
//! src/record/store/postgres_schema.rs, on the same server.

use crate::common::{fresh_postgres, Needs};

pub fn tests() -> Vec<libtest_mimic::Trial> {
    crate::trials![a_fresh_database_is_empty_and_dropped_with_its_guard(needs crate::common::postgres)]
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
