//! The shared backend conformance suite, run against PostgreSQL + pgvector: every case on
//! a fresh database of its own. Needs `MNEM_PG_URL` (`scripts/pg.sh start` prints it);
//! without it the cases say so and skip, except in CI, where they fail.

use mnem_postgres::testing;

mnem_conformance::conformance_suite!(run_if: testing::url().is_some(), |clock| async move {
    let url = testing::url().expect("checked by run_if");
    testing::fresh_store(&url, clock)
        .await
        .expect("open a fresh PostgreSQL store")
});
