//! The operations, once, for every transport: each typed method here holds its
//! operation's rules (write access, sourcing evidence to the transport, waking the
//! embedding worker, the recall observer) over core types; `json` wraps each for the MCP
//! tools and the HTTP API. The CLI calls the typed methods, so no transport can drift.

use std::sync::Arc;

use mnem_core::feedback::{FeedbackInput, RecallFeedback};
use mnem_core::graph::{
    Correction, Hypothesis, HypothesisStatus, RelationshipOutcome, RememberOutcome,
};
use mnem_core::{EvidenceId, HypothesisId, Principal, RelationshipId, Scope, ValidationError};
use mnem_service::{
    HeldEvidence, HypothesisDecision, Memory, NamedTrace, Recall, Resolved, ServiceError, Shown,
};
use mnem_store::{GraphStore, GraphView, SearchIndex, StoreError};
use serde_json::Value;
use tokio::sync::Notify;

mod call;
mod json;

pub use call::{rejected_field, NOT_CALLABLE};

/// Why an operation failed, in classes a transport maps to its own codes (HTTP status,
/// MCP tool error). `public_message` is safe to show; internals go to the log only.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("this API key is read-only; writing needs a key with scope `write`")]
    ReadOnly,
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// The class of an [`OpError`], for status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpErrorClass {
    BadRequest,
    Forbidden,
    NotFound,
    Conflict,
    Unavailable,
    /// The store is held by another writer: retry the same call shortly.
    Busy,
    Internal,
}

impl OpErrorClass {
    /// The class's name in error bodies (`{"error": {"code": …}}`) and in the Python
    /// bindings' exception classes.
    pub fn code(self) -> &'static str {
        match self {
            OpErrorClass::BadRequest => "invalid_request",
            OpErrorClass::Forbidden => "forbidden",
            OpErrorClass::NotFound => "not_found",
            OpErrorClass::Conflict => "conflict",
            OpErrorClass::Unavailable => "unavailable",
            OpErrorClass::Busy => "busy",
            OpErrorClass::Internal => "internal",
        }
    }
}

impl OpError {
    pub fn class(&self) -> OpErrorClass {
        match self {
            OpError::Invalid(_) => OpErrorClass::BadRequest,
            OpError::ReadOnly => OpErrorClass::Forbidden,
            OpError::Service(ServiceError::Dependency { .. }) => OpErrorClass::Unavailable,
            OpError::Service(ServiceError::Store(err)) => match err {
                StoreError::Invalid(_)
                | StoreError::Pack(_)
                | StoreError::PackOverBound { .. }
                | StoreError::TeamNotFound { .. } => OpErrorClass::BadRequest,
                StoreError::NotFound { .. }
                | StoreError::RelationshipNotFound { .. }
                | StoreError::HypothesisNotFound { .. }
                | StoreError::KeyNotFound { .. } => OpErrorClass::NotFound,
                StoreError::Conflict(_) => OpErrorClass::Conflict,
                StoreError::NotPermitted { .. } => OpErrorClass::Forbidden,
                StoreError::Busy => OpErrorClass::Busy,
                StoreError::SchemaTooNew { .. }
                | StoreError::ContractMismatch { .. }
                | StoreError::Backend(_) => OpErrorClass::Internal,
            },
        }
    }

    /// What the caller may see: the error itself, except internals, which are logged.
    pub fn public_message(&self) -> String {
        if self.class() == OpErrorClass::Internal {
            tracing::error!(error = %self, "operation failed");
            "internal error; the server log has the details".into()
        } else {
            self.to_string()
        }
    }

    /// The field a validation error names, when there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            OpError::Invalid(err)
            | OpError::Service(ServiceError::Store(StoreError::Invalid(err))) => Some(&err.field),
            _ => None,
        }
    }
}

fn encoded<T: serde::Serialize>(value: &T) -> Result<Value, OpError> {
    serde_json::to_value(value)
        .map_err(|e| OpError::Service(ServiceError::Store(StoreError::Backend(Box::new(e)))))
}

/// Sees every completed recall (its stage timings, skipped branches): telemetry only.
pub type RecallObserver = Arc<dyn Fn(&Recall) + Send + Sync>;

/// The memory operations over one store, acting for whichever principal a call names.
pub struct Operations<S> {
    memory: Arc<Memory<S>>,
    /// The transport the calls come through (`mcp`, `http`): the `source` of evidence
    /// written without one.
    transport: &'static str,
    /// Wakes the embedding worker after a write, when the process runs one.
    written: Option<Arc<Notify>>,
    observer: Option<RecallObserver>,
}

impl<S> Clone for Operations<S> {
    fn clone(&self) -> Self {
        Self {
            memory: Arc::clone(&self.memory),
            transport: self.transport,
            written: self.written.clone(),
            observer: self.observer.clone(),
        }
    }
}

impl<S: GraphStore + SearchIndex + 'static> Operations<S> {
    pub fn new(memory: Arc<Memory<S>>) -> Self {
        Self {
            memory,
            transport: "api",
            written: None,
            observer: None,
        }
    }

    /// Names the transport the calls come through: the `source` of evidence written
    /// without one (as the CLI writes `cli`).
    pub fn via(mut self, transport: &'static str) -> Self {
        self.transport = transport;
        self
    }

    /// Calls `observer` after every successful recall.
    pub fn observing(mut self, observer: RecallObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Notifies `wake` after every write, so a background embedding worker picks the new
    /// documents up at once.
    pub fn notifying(mut self, wake: Arc<Notify>) -> Self {
        self.written = Some(wake);
        self
    }

    pub fn memory(&self) -> &Arc<Memory<S>> {
        &self.memory
    }

    fn wrote(&self) {
        if let Some(wake) = &self.written {
            wake.notify_one();
        }
    }

    /// Refuses a read-only caller: for a transport that must check before it reads a
    /// write's input (a streamed import).
    pub fn require_writer(caller: &Principal) -> Result<(), OpError> {
        Self::writer(caller)
    }

    /// The store clock's reading: when a streamed import's untimed sessions begin.
    pub fn now(&self) -> mnem_core::Timestamp {
        self.memory.store().clock().now()
    }

    /// Writes one batch of a streamed import (`/v1/import`), counting into `report`.
    pub async fn import_items(
        &self,
        caller: &Principal,
        items: Vec<mnem_core::import::ImportItem>,
        report: &mut mnem_service::ImportReport,
    ) -> Result<(), OpError> {
        Self::writer(caller)?;
        let batch = mnem_service::IMPORT_BATCH;
        self.memory
            .import_items(&caller.actor, items, batch, report, &|_| {})
            .await?;
        self.wrote();
        Ok(())
    }

    /// Evidence written without a `source` is sourced to the transport it came through.
    fn sourced(&self, request: &mut mnem_core::graph::RememberRequest) {
        for evidence in &mut request.evidence {
            if evidence
                .source
                .as_deref()
                .is_none_or(|s| s.trim().is_empty())
            {
                evidence.source = Some(self.transport.to_string());
            }
        }
    }

    fn writer(caller: &Principal) -> Result<(), OpError> {
        if caller.can_write() {
            Ok(())
        } else {
            Err(OpError::ReadOnly)
        }
    }

    /// Runs a recall (the agents' rule "ask something" is the JSON input's; a person may
    /// list) and reports it to the observer.
    pub async fn recall_query(
        &self,
        caller: &Principal,
        query: mnem_core::RecallQuery,
    ) -> Result<Recall, OpError> {
        let recall = self.memory.recall(&caller.actor, query).await?;
        if let Some(observe) = &self.observer {
            observe(&recall);
        }
        Ok(recall)
    }

    /// A structured remember: evidence without a `source` is sourced to the transport.
    pub async fn remember_request(
        &self,
        caller: &Principal,
        mut request: mnem_core::graph::RememberRequest,
    ) -> Result<RememberOutcome, OpError> {
        Self::writer(caller)?;
        self.sourced(&mut request);
        let outcome = self.memory.remember_request(&caller.actor, request).await?;
        self.wrote();
        Ok(outcome)
    }

    /// One relationship explained, with the names of the profiles it cites.
    pub async fn trace_relationship(
        &self,
        caller: &Principal,
        id: RelationshipId,
        view: GraphView,
    ) -> Result<NamedTrace, OpError> {
        Ok(self.memory.trace_named(&caller.actor, id, view).await?)
    }

    /// One evidence item the caller can see, with its lifecycle history, its writes, how
    /// recalls used it, and the names of the profiles they name.
    pub async fn show_evidence(
        &self,
        caller: &Principal,
        id: EvidenceId,
    ) -> Result<Shown, OpError> {
        Ok(self.memory.show(&caller.actor, id).await?)
    }

    /// Retracts the caller's writes of each item, with the caller's rights (an admin
    /// key may retract others' evidence).
    pub async fn retract_evidence(
        &self,
        caller: &Principal,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<Retraction, OpError> {
        Self::writer(caller)?;
        let kept = self
            .memory
            .retract_evidence_as(&caller.actor, caller.rights(), ids.clone(), reason)
            .await?;
        // An item another writer also wrote stays: only the caller's write was withdrawn.
        let retracted = ids.into_iter().filter(|id| !kept.contains(id)).collect();
        Ok(Retraction { retracted, kept })
    }

    /// Returns held evidence to recall.
    pub async fn release_evidence(
        &self,
        caller: &Principal,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<(), OpError> {
        Self::writer(caller)?;
        self.memory
            .release_evidence(&caller.actor, ids, reason)
            .await?;
        self.wrote();
        Ok(())
    }

    /// Held evidence with its reasons: an operator's review list, so it needs write
    /// access like the release that follows it.
    pub async fn held_evidence(
        &self,
        caller: &Principal,
        limit: usize,
    ) -> Result<Vec<HeldEvidence>, OpError> {
        Self::writer(caller)?;
        Ok(self.memory.quarantined(&caller.actor, limit).await?)
    }

    /// The scopes of the evidence the caller could recall, at and under `under`.
    pub async fn scopes_listed(
        &self,
        caller: &Principal,
        under: Option<Scope>,
        limit: usize,
    ) -> Result<Vec<Scope>, OpError> {
        Ok(self.memory.scopes(&caller.actor, under, limit).await?)
    }

    /// Erases the caller's own private evidence.
    pub async fn forget_evidence(
        &self,
        caller: &Principal,
        ids: Vec<EvidenceId>,
    ) -> Result<(), OpError> {
        Self::writer(caller)?;
        Ok(self.memory.forget(&caller.actor, ids).await?)
    }

    /// A new version of a relationship.
    pub async fn correct_relationship(
        &self,
        caller: &Principal,
        id: RelationshipId,
        correction: Correction,
    ) -> Result<RelationshipOutcome, OpError> {
        Self::writer(caller)?;
        let outcome = self
            .memory
            .correct_relationship(&caller.actor, id, correction)
            .await?;
        self.wrote();
        Ok(outcome)
    }

    /// Records a client's judgment of one recall's results; changes nothing it judges.
    pub async fn submit_feedback(
        &self,
        caller: &Principal,
        input: FeedbackInput,
    ) -> Result<RecallFeedback, OpError> {
        Self::writer(caller)?;
        Ok(self
            .memory
            .submit_recall_feedback(&caller.actor, input)
            .await?)
    }

    /// The team's hypotheses with one of `statuses` (all when empty), newest first.
    pub async fn hypotheses_listed(
        &self,
        caller: &Principal,
        statuses: Vec<HypothesisStatus>,
        limit: usize,
    ) -> Result<Vec<Hypothesis>, OpError> {
        Ok(self
            .memory
            .hypotheses(&caller.actor, statuses, limit)
            .await?)
    }

    /// One of the team's hypotheses.
    pub async fn hypothesis(
        &self,
        caller: &Principal,
        id: HypothesisId,
    ) -> Result<Hypothesis, OpError> {
        Ok(self.memory.hypothesis(&caller.actor, id).await?)
    }

    /// Confirms (writing the proof, sourced like any request) or rejects a hypothesis.
    pub async fn decide_hypothesis(
        &self,
        caller: &Principal,
        id: HypothesisId,
        mut decision: HypothesisDecision,
    ) -> Result<Resolved, OpError> {
        Self::writer(caller)?;
        if let HypothesisDecision::Confirm { proof, .. } = &mut decision {
            self.sourced(proof);
        }
        let resolved = self
            .memory
            .resolve_hypothesis(&caller.actor, id, decision)
            .await?;
        if resolved.proof.is_some() {
            self.wrote();
        }
        Ok(resolved)
    }
}

/// What a retraction did: the items retracted, and those kept because another writer
/// also wrote them (only the caller's write was withdrawn).
#[derive(Debug, Clone, PartialEq)]
pub struct Retraction {
    pub retracted: Vec<EvidenceId>,
    pub kept: Vec<EvidenceId>,
}
