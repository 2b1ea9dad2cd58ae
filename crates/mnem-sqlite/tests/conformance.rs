//! The shared backend conformance suite, run against an in-memory SQLite store.

use mnem_sqlite::SqliteStore;

mnem_conformance::conformance_suite!(|clock| async move {
    SqliteStore::open_in_memory(clock).expect("open in-memory store")
});
