//! The reader connections, and a recall's reads after its branches (the support signal,
//! the entity hop, neighbours, discovery) on one of them, in one read transaction, run
//! where the recall runs.
//!
//! A read on its own goes to tokio's blocking pool ([`SqliteStore::with_reader`]): a
//! thread is woken for it and the recall's task is woken again when it is done. Those
//! handoffs cost more than the reads: in a profile of `mnem serve` answering real
//! questions over 45k turns, futex wake-ups and scheduling were about a quarter of the
//! process's CPU, and the four or so reads after the branches each paid two. Inside
//! [`SqliteStore::reading_together`] a read runs on the scope's connection directly, on
//! the thread polling the recall: they are short indexed reads of a file the process
//! has mapped (the search itself, the long one, stays a branch on the blocking pool), so
//! the thread is held about as long as by the ranking code between them, and the scope
//! yields it after each millisecond of reads ([`ReadScope::read`]). One snapshot for all
//! of them, as on PostgreSQL.
//!
//! [`SqliteStore::with_reader`]: crate::SqliteStore
//! [`SqliteStore::reading_together`]: crate::SqliteStore

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnem_store::{Result, StoreError};
use rusqlite::Connection;
use tokio::sync::{Mutex, MutexGuard, OwnedMutexGuard};

use crate::{in_snapshot, DbResult};

tokio::task_local! {
    static SCOPE: RefCell<ReadScope>;
}

/// The read-only connections a file-backed store opens beside its writer; empty for an
/// in-memory store (another connection would be another database).
#[derive(Clone, Default)]
pub(crate) struct Readers {
    connections: Arc<[Arc<Mutex<Connection>>]>,
    /// Where the next read starts looking for a free connection, so reads spread.
    next: Arc<AtomicUsize>,
}

impl Readers {
    pub(crate) fn new(connections: Vec<Connection>) -> Self {
        Self {
            connections: connections
                .into_iter()
                .map(|conn| Arc::new(Mutex::new(conn)))
                .collect(),
            next: Arc::default(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }

    /// A free connection, else (all busy) the next one's turn: for a blocking thread.
    pub(crate) fn take_blocking(&self) -> MutexGuard<'_, Connection> {
        let start = self.start();
        self.free(start)
            .unwrap_or_else(|| self.connections[start].blocking_lock())
    }

    /// [`Readers::take_blocking`] for a task: waits without holding a thread.
    async fn take(&self) -> OwnedMutexGuard<Connection> {
        let start = self.start();
        let count = self.connections.len();
        let free = (0..count).find_map(|i| {
            Arc::clone(&self.connections[(start + i) % count])
                .try_lock_owned()
                .ok()
        });
        match free {
            Some(free) => free,
            None => Arc::clone(&self.connections[start]).lock_owned().await,
        }
    }

    fn free(&self, start: usize) -> Option<MutexGuard<'_, Connection>> {
        let count = self.connections.len();
        (0..count).find_map(|i| self.connections[(start + i) % count].try_lock().ok())
    }

    fn start(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.connections.len()
    }
}

/// One reader connection inside one read transaction. Dropping it ends the transaction,
/// whether the reads finished, failed, panicked or were cancelled: a connection never
/// goes back to the readers with a snapshot open (it would pin the WAL and show the next
/// caller old data).
pub(crate) struct ReadScope {
    /// The readers it was taken from: another store's reads never use it.
    owner: Arc<[Arc<Mutex<Connection>>]>,
    connection: OwnedMutexGuard<Connection>,
    /// Since when the scope's reads have held their thread without a yield.
    turn_started: Instant,
}

/// How long a scope's reads hold their thread before letting its other tasks run.
const TURN: Duration = Duration::from_millis(1);

impl Drop for ReadScope {
    fn drop(&mut self) {
        // Nothing was written: ending either way only releases the snapshot. A failure
        // here leaves the transaction open, and the connection's next read (`in_snapshot`)
        // would run inside it; SQLite only fails to roll back a read on a closed handle.
        let _ = self
            .connection
            .prepare_cached("ROLLBACK")
            .and_then(|mut statement| statement.execute([]));
    }
}

impl ReadScope {
    async fn open(readers: &Readers) -> Result<Self> {
        let connection = readers.take().await;
        connection.prepare_cached("BEGIN").db()?.execute([]).db()?;
        Ok(Self {
            owner: Arc::clone(&readers.connections),
            connection,
            turn_started: Instant::now(),
        })
    }

    /// Runs `reads` with every read of this store inside one scope, when the store has
    /// reader connections and no scope is open yet; otherwise (or if the transaction
    /// cannot begin, which each read will then report itself) as they are.
    pub(crate) async fn reading_together<F: std::future::Future>(
        readers: &Readers,
        reads: F,
    ) -> F::Output {
        if readers.is_empty() || Self::is_open_for(readers) {
            return reads.await;
        }
        match Self::open(readers).await {
            Ok(scope) => SCOPE.scope(RefCell::new(scope), reads).await,
            Err(_) => reads.await,
        }
    }

    /// Whether the running task is inside a scope taken from `readers` (a process may
    /// open several stores; one's scope is another file).
    pub(crate) fn is_open_for(readers: &Readers) -> bool {
        SCOPE
            .try_with(|scope| Arc::ptr_eq(&scope.borrow().owner, &readers.connections))
            .unwrap_or(false)
    }

    /// Runs `work` on the open scope's connection (see [`ReadScope::is_open_for`]), inside
    /// its transaction. A scoped read never waits, so the reads would hold their thread
    /// from the first to the last (discovery's second hop reads for up to 50 ms): once
    /// they have held it for [`TURN`], the thread's other tasks get a turn, as they did
    /// while each read waited on the pool. Yielding after every read instead cost ~0.1 ms
    /// of a 3.2 ms recall.
    pub(crate) async fn read<T>(work: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let (out, yield_turn) = SCOPE
            .try_with(|scope| {
                let mut scope = scope.borrow_mut();
                let out = in_snapshot(&mut scope.connection, work);
                let yield_turn = scope.turn_started.elapsed() >= TURN;
                if yield_turn {
                    scope.turn_started = Instant::now();
                }
                (out, yield_turn)
            })
            .map_err(|_| StoreError::Backend("no read scope is open".into()))?;
        if yield_turn {
            tokio::task::yield_now().await;
        }
        out
    }
}
