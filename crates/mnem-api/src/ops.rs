//! The agent-facing operations, once, for every network transport: MCP tools and the
//! HTTP JSON API both parse into these inputs, call these functions and render these
//! results, so the two cannot drift apart.

use std::sync::Arc;

use mnem_core::feedback::{FeedbackInput, RecallFeedback};
use mnem_core::graph::{
    Correction, Hypothesis, HypothesisStatus, RelationshipOutcome, RememberOutcome,
};
use mnem_core::{EvidenceId, HypothesisId, Principal, RelationshipId, ValidationError};
use mnem_service::{
    HeldEvidence, HypothesisDecision, Memory, NamedTrace, Recall, Resolved, ServiceError, Shown,
};
use mnem_store::{GraphStore, GraphView, SearchIndex, StoreError};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::input::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ShowInput,
    StatusInput, TraceInput, DEFAULT_HELD_LISTED, MAX_PACK_BYTES,
};

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
    Internal,
}

impl OpError {
    pub fn class(&self) -> OpErrorClass {
        match self {
            OpError::Invalid(_) => OpErrorClass::BadRequest,
            OpError::ReadOnly => OpErrorClass::Forbidden,
            OpError::Service(ServiceError::Dependency { .. }) => OpErrorClass::Unavailable,
            OpError::Service(ServiceError::Store(err)) => match err {
                StoreError::Invalid(_) | StoreError::Pack(_) | StoreError::TeamNotFound { .. } => {
                    OpErrorClass::BadRequest
                }
                StoreError::NotFound { .. }
                | StoreError::RelationshipNotFound { .. }
                | StoreError::HypothesisNotFound { .. }
                | StoreError::KeyNotFound { .. } => OpErrorClass::NotFound,
                StoreError::Conflict(_) => OpErrorClass::Conflict,
                StoreError::NotPermitted { .. } => OpErrorClass::Forbidden,
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

    // Typed operations: the rules of each operation over core types, for every transport.
    // The CLI calls these with its flags already typed; the JSON methods below parse an
    // input, call one of these and encode its result.

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

    // The JSON operations the MCP tools and the HTTP API call.

    pub async fn recall(&self, caller: &Principal, input: RecallInput) -> Result<Value, OpError> {
        let recall = self.recall_query(caller, input.into_query()?).await?;
        encoded(&recall.public())
    }

    /// A recall with each result's score and its components (the console's operator
    /// view); the same read as `recall`.
    pub async fn explain(&self, caller: &Principal, input: RecallInput) -> Result<Value, OpError> {
        let query = input.into_query()?;
        let recall = self.memory.recall(&caller.actor, query).await?;
        Ok(recall.explained())
    }

    /// One evidence item the caller can see, with its lifecycle history, its writes, how
    /// recalls used it, and the names of the profiles they name.
    pub async fn show(&self, caller: &Principal, input: ShowInput) -> Result<Value, OpError> {
        encoded(&self.show_evidence(caller, input.evidence_id).await?)
    }

    /// The ranking profile, the embedding contract, how many of the caller's team's
    /// documents still wait for vectors, and the last degraded branch and when (not its
    /// reason, which may name endpoints): nothing of another team.
    pub async fn status(&self, caller: &Principal, _input: StatusInput) -> Result<Value, OpError> {
        const COUNTED: usize = 1_000;
        let status = self.memory.status().await?;
        let pending = self
            .memory
            .store()
            .team_pending_documents(caller.actor.team, COUNTED)
            .await
            .map_err(ServiceError::from)?
            .len();
        Ok(json!({
            "ranking_profile_version": status.ranking_profile_version,
            "active_contract": encoded(&status.active_contract)?,
            "recorded_contract": encoded(&status.recorded_contract)?,
            "team_pending_documents": pending,
            "team_pending_at_least": pending == COUNTED,
            "last_degradation": status
                .last_degradation
                .map(|d| json!({"branch": d.branch, "at": d.at.to_rfc3339()})),
        }))
    }

    pub async fn remember(
        &self,
        caller: &Principal,
        request: mnem_core::graph::RememberRequest,
    ) -> Result<Value, OpError> {
        encoded(&self.remember_request(caller, request).await?)
    }

    pub async fn trace(&self, caller: &Principal, input: TraceInput) -> Result<Value, OpError> {
        let (id, view) = input.into_parts()?;
        encoded(&self.trace_relationship(caller, id, view).await?)
    }

    pub async fn retract(&self, caller: &Principal, input: RetractInput) -> Result<Value, OpError> {
        let Retraction { retracted, kept } = self
            .retract_evidence(caller, input.evidence_ids, input.reason)
            .await?;
        let mut answer = json!({ "retracted": retracted });
        if !kept.is_empty() {
            answer["kept_written_by_others"] = json!(kept);
        }
        Ok(answer)
    }

    /// The caller's memory as a memory pack (what it can see; read scope is enough), with
    /// its counts and manifest hash; refused when larger than the caller's byte cap.
    pub async fn export_pack(
        &self,
        caller: &Principal,
        input: ExportInput,
    ) -> Result<Value, OpError> {
        let (selection, max_bytes) = input.into_parts()?;
        let pack = self.memory.export_pack(&caller.actor, selection).await?;
        let text = pack.encode();
        if text.len() > max_bytes {
            return Err(OpError::Invalid(ValidationError::new(
                "max_bytes",
                format!(
                    "the pack is {} bytes, over {max_bytes}: narrow it with scope, since and \
                     until, raise max_bytes (at most {MAX_PACK_BYTES}), or run `mnem export`",
                    text.len()
                ),
            )));
        }
        Ok(json!({
            "counts": pack.counts(),
            "bytes": text.len(),
            "pack": text,
        }))
    }

    /// The team's hypotheses (read scope).
    pub async fn list_hypotheses(
        &self,
        caller: &Principal,
        input: ListHypothesesInput,
    ) -> Result<Value, OpError> {
        let (statuses, limit) = input.into_parts()?;
        let listed = self.hypotheses_listed(caller, statuses, limit).await?;
        Ok(json!({ "hypotheses": encoded(&listed)? }))
    }

    pub async fn get_hypothesis(
        &self,
        caller: &Principal,
        input: GetHypothesisInput,
    ) -> Result<Value, OpError> {
        encoded(&self.hypothesis(caller, input.hypothesis_id).await?)
    }

    /// Confirms (writing the proof) or rejects a hypothesis: a write.
    pub async fn resolve_hypothesis(
        &self,
        caller: &Principal,
        input: ResolveHypothesisInput,
    ) -> Result<Value, OpError> {
        let decision = match (input.decision.trim(), input.proof) {
            ("confirm", Some(proof)) => HypothesisDecision::Confirm {
                reason: input.reason,
                proof,
            },
            ("confirm", None) => {
                return Err(OpError::Invalid(ValidationError::new(
                    "proof",
                    "confirming a hypothesis needs a remember request that proves it",
                )))
            }
            ("reject", _) => HypothesisDecision::Reject {
                reason: input.reason,
            },
            (other, _) => {
                return Err(OpError::Invalid(ValidationError::new(
                    "decision",
                    format!("`{other}` is not confirm or reject"),
                )))
            }
        };
        encoded(
            &self
                .decide_hypothesis(caller, input.hypothesis_id, decision)
                .await?,
        )
    }

    /// Records a client's judgment of one recall's results; changes nothing it judges.
    pub async fn feedback(
        &self,
        caller: &Principal,
        input: FeedbackInput,
    ) -> Result<Value, OpError> {
        let stored = self.submit_feedback(caller, input).await?;
        Ok(json!({
            "feedback_id": stored.id,
            "ranking_profile": stored.ranking_profile,
        }))
    }

    pub async fn release(&self, caller: &Principal, input: ReleaseInput) -> Result<Value, OpError> {
        self.release_evidence(caller, input.evidence_ids.clone(), input.reason)
            .await?;
        Ok(json!({ "released": input.evidence_ids }))
    }

    /// Held evidence with its reasons (see [`Operations::held_evidence`]).
    pub async fn quarantined(
        &self,
        caller: &Principal,
        input: QuarantinedInput,
    ) -> Result<Value, OpError> {
        let limit = input.limit.unwrap_or(DEFAULT_HELD_LISTED);
        let held = self.held_evidence(caller, limit).await?;
        Ok(json!({ "quarantined": encoded(&held)? }))
    }

    pub async fn correct(&self, caller: &Principal, input: CorrectInput) -> Result<Value, OpError> {
        encoded(
            &self
                .correct_relationship(caller, input.relationship_id, input.correction)
                .await?,
        )
    }

    pub async fn forget(&self, caller: &Principal, input: ForgetInput) -> Result<Value, OpError> {
        self.forget_evidence(caller, input.evidence_ids.clone())
            .await?;
        Ok(json!({ "erased": input.evidence_ids }))
    }
}

/// What a retraction did: the items retracted, and those kept because another writer
/// also wrote them (only the caller's write was withdrawn).
#[derive(Debug, Clone, PartialEq)]
pub struct Retraction {
    pub retracted: Vec<EvidenceId>,
    pub kept: Vec<EvidenceId>,
}
