//! A recall's reads after its branches (the support signal, the entity hop, neighbours,
//! discovery) in one read-only transaction: one snapshot for all of them, and one
//! transaction's round trips instead of one transaction per read. Each transaction cost
//! a `START` and the team's `set_config` before its first statement (a loopback round
//! trip is ~0.12 ms, `pgbench` `SELECT 1`), and a recall opened about six: sharing one
//! took 1.2 ms off a 6.7 ms lexical recall at 10k (`bench`, alternating per recall).
//!
//! [`PgStore::reading_together`](crate::PgStore) opens the scope and runs the reads
//! inside it; a read method finds it through a task-local ([`ReadScope::current`]) and
//! otherwise opens a transaction of its own, as before. The branches stay outside: they
//! run side by side on connections of their own, each in a [`ReadScope`] of its own
//! opened the same way (the full-text one with generic plans, [`ReadScope::lookups`],
//! for its transaction only).

use std::sync::Arc;

use deadpool_postgres::{Object, Pool};
use mnem_core::TeamId;
use mnem_store::{Result, StoreError};

use crate::{DbResult, SET_TEAM, SET_TEAM_FOR_LOOKUPS};

tokio::task_local! {
    static SCOPE: Arc<ReadScope>;
}

/// `begin`'s isolation for a read: one snapshot, and never a serialisation failure.
const START_READ: &str = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// One pooled connection inside a read-only transaction of one team.
pub(crate) struct ReadScope {
    team: TeamId,
    /// `None` only once it went back to the pool or was closed.
    connection: Option<Object>,
    /// The transaction ended cleanly: the connection may go back to the pool. Until
    /// then, dropping the scope closes the connection instead (a recall cancelled
    /// mid-read must not hand the next caller an open transaction of another team).
    ended: bool,
}

impl ReadScope {
    /// A read-only transaction of `team` on a connection of its own.
    pub(crate) async fn read(pool: &Pool, team: TeamId) -> Result<Self> {
        Self::open(pool, team, SET_TEAM).await
    }

    /// [`ReadScope::read`] whose prepared statements run on generic plans (see
    /// [`crate::SET_TEAM_FOR_LOOKUPS`]): for the full-text branch.
    pub(crate) async fn lookups(pool: &Pool, team: TeamId) -> Result<Self> {
        Self::open(pool, team, SET_TEAM_FOR_LOOKUPS).await
    }

    /// Checks out a connection and opens the transaction: `START` and `settings` (which
    /// names the team) are sent together, so they cost one round trip.
    async fn open(pool: &Pool, team: TeamId, settings: &str) -> Result<Self> {
        let connection = pool.get().await.map_err(StoreError::backend)?;
        let scope = ReadScope {
            team,
            connection: Some(connection),
            ended: false,
        };
        let client = scope.client()?;
        let set_team = client.prepare_cached(settings).await.db()?;
        let team_text = team.0.to_string();
        let set_params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&team_text];
        // tokio-postgres sends each request when first polled and answers them in
        // order, so joined they share one round trip and `START` still runs first.
        tokio::try_join!(
            client.batch_execute(START_READ),
            client.execute(&set_team, &set_params),
        )
        .db()?;
        Ok(scope)
    }

    /// The connection the scoped reads run on (inside the transaction).
    pub(crate) fn client(&self) -> Result<&Object> {
        self.connection
            .as_ref()
            .ok_or_else(|| StoreError::Backend("postgres read scope used after it ended".into()))
    }

    /// The scope the current task's recall opened for `team`, if any.
    pub(crate) fn current(team: TeamId) -> Option<Arc<ReadScope>> {
        SCOPE
            .try_with(Arc::clone)
            .ok()
            .filter(|scope| scope.team == team)
    }

    /// Ends the transaction without waiting for it: a task sends the rollback (~0.2 ms)
    /// and returns the connection. Should that task never run (the runtime stops), the
    /// scope drops unended and its connection is closed, not pooled.
    pub(crate) fn release(self) {
        tokio::spawn(self.end());
    }

    /// Ends the transaction (a read-only one: rolling back commits nothing it would
    /// have) and returns the connection to the pool; on failure it is closed instead.
    async fn end(mut self) {
        if let Ok(client) = self.client() {
            self.ended = client.batch_execute("ROLLBACK").await.is_ok();
        }
    }
}

impl Drop for ReadScope {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            if !self.ended {
                // Detached from the pool, the client drops and its connection closes;
                // PostgreSQL ends the transaction with it.
                drop(Object::take(connection));
            }
        }
    }
}

/// Runs `reads` inside a read scope of `team`; without one (the pool or the server
/// refused), the reads run as they are and each opens its own transaction.
pub(crate) async fn reading_together<F: std::future::Future>(
    pool: &Pool,
    team: TeamId,
    reads: F,
) -> F::Output {
    let scope = match ReadScope::read(pool, team).await {
        Ok(scope) => Arc::new(scope),
        Err(err) => {
            tracing::debug!(%err, "recall reads without a shared transaction");
            return reads.await;
        }
    };
    let output = SCOPE.scope(Arc::clone(&scope), reads).await;
    // The reads are done and hold no clone (were one kept, its drop would close the
    // connection).
    if let Ok(scope) = Arc::try_unwrap(scope) {
        scope.release();
    }
    output
}
