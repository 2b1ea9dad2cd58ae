//! The JSON face of each operation, for the MCP tools and the HTTP API: parse an input
//! (its JSON Schema refused unknown fields; stamps and vocabularies are parsed here, errors
//! naming the field), call the typed operation, encode its result.

use mnem_core::feedback::FeedbackInput;
use mnem_core::{Principal, Scope, ValidationError};
use mnem_service::{HypothesisDecision, ServiceError};
use mnem_store::{GraphStore, SearchIndex, StoreError};
use serde_json::{json, Value};

use super::{encoded, OpError, Operations, Retraction};
use crate::input::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ScopesInput,
    ShowInput, StatusInput, TraceInput, DEFAULT_HELD_LISTED, DEFAULT_SCOPES_LISTED, MAX_PACK_BYTES,
};
use crate::output::{
    DegradedBranch, ExportOutput, FeedbackOutput, ForgetOutput, HypothesesOutput,
    QuarantinedOutput, ReleaseOutput, RetractOutput, ScopesOutput, StatusOutput,
};

impl<S: GraphStore + SearchIndex + 'static> Operations<S> {
    pub async fn recall(&self, caller: &Principal, input: RecallInput) -> Result<Value, OpError> {
        let recall = self.recall_query(caller, input.into_query()?).await?;
        let mut public = recall.public();
        public.guidance = self.guidance(public.results.len(), public.discovery_paths.len());
        encoded(&public)
    }

    /// A recall with each result's score and its components (the console's operator
    /// view); the same read as `recall`, observed like it.
    pub async fn explain(&self, caller: &Principal, input: RecallInput) -> Result<Value, OpError> {
        let recall = self.recall_query(caller, input.into_query()?).await?;
        let mut explained = recall.explained();
        explained["guidance"] =
            json!(self.guidance(recall.hits.len(), recall.discovery_paths.len()));
        Ok(explained)
    }

    /// A recall's follow-up advice in the names this transport's client calls things by:
    /// the JSON API's paths over HTTP (and in the console), the tools' names otherwise.
    fn guidance(&self, results: usize, paths: usize) -> String {
        let via = if self.transport == "http" {
            mnem_core::recall::FollowUp::Http
        } else {
            mnem_core::recall::FollowUp::Mcp
        };
        mnem_core::recall::guidance_via(via, results, paths)
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
        encoded(&StatusOutput {
            ranking_profile_version: status.ranking_profile_version,
            active_contract: status.active_contract,
            recorded_contract: status.recorded_contract,
            team_pending_documents: pending,
            team_pending_at_least: pending == COUNTED,
            last_degradation: status.last_degradation.map(|d| DegradedBranch {
                branch: d.branch,
                at: d.at,
            }),
        })
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
        encoded(&RetractOutput {
            retracted,
            kept_written_by_others: kept,
        })
    }

    /// The caller's memory as a memory pack (what it can see; read scope is enough), with
    /// its counts and manifest hash; refused when larger than the caller's byte cap.
    pub async fn export_pack(
        &self,
        caller: &Principal,
        input: ExportInput,
    ) -> Result<Value, OpError> {
        let (selection, max_bytes) = input.into_parts()?;
        // The bound goes to the store, which stops reading once it is passed, so an
        // oversize request costs what fits, not the whole team's memory.
        let pack = self
            .memory
            .export_pack(&caller.actor, selection, Some(max_bytes))
            .await
            .map_err(|err| match err {
                ServiceError::Store(StoreError::PackOverBound { reached, .. }) => {
                    over_bound(format!("at least {reached}"), max_bytes)
                }
                err => err.into(),
            })?;
        let text = pack.encode();
        if text.len() > max_bytes {
            return Err(over_bound(text.len().to_string(), max_bytes));
        }
        encoded(&ExportOutput {
            counts: pack.counts(),
            bytes: text.len(),
            pack: text,
        })
    }

    /// The team's hypotheses (read scope).
    pub async fn list_hypotheses(
        &self,
        caller: &Principal,
        input: ListHypothesesInput,
    ) -> Result<Value, OpError> {
        let (statuses, limit) = input.into_parts()?;
        let listed = self.hypotheses_listed(caller, statuses, limit).await?;
        encoded(&HypothesesOutput { hypotheses: listed })
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
        // The words are `HYPOTHESIS_DECISIONS`, which the input schema lists.
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
        encoded(&FeedbackOutput {
            feedback_id: stored.id,
            ranking_profile: stored.ranking_profile,
        })
    }

    pub async fn release(&self, caller: &Principal, input: ReleaseInput) -> Result<Value, OpError> {
        self.release_evidence(caller, input.evidence_ids.clone(), input.reason)
            .await?;
        encoded(&ReleaseOutput {
            released: input.evidence_ids,
        })
    }

    /// Held evidence with its reasons (see [`Operations::held_evidence`]).
    pub async fn quarantined(
        &self,
        caller: &Principal,
        input: QuarantinedInput,
    ) -> Result<Value, OpError> {
        let limit = input.limit.unwrap_or(DEFAULT_HELD_LISTED);
        let held = self.held_evidence(caller, limit).await?;
        encoded(&QuarantinedOutput { quarantined: held })
    }

    /// The scopes of the evidence the caller could recall, as paths.
    pub async fn scopes(&self, caller: &Principal, input: ScopesInput) -> Result<Value, OpError> {
        let under = input.under.map(|path| Scope::parse(&path)).transpose()?;
        let limit = input.limit.unwrap_or(DEFAULT_SCOPES_LISTED);
        let scopes = self.scopes_listed(caller, under, limit).await?;
        encoded(&ScopesOutput {
            scopes: scopes.iter().map(Scope::to_path).collect(),
        })
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
        encoded(&ForgetOutput {
            erased: input.evidence_ids,
        })
    }
}

/// An export refused at the caller's byte cap, with what to do instead.
fn over_bound(size: String, max_bytes: usize) -> OpError {
    OpError::Invalid(ValidationError::new(
        "max_bytes",
        format!(
            "the pack is {size} bytes, over {max_bytes}: narrow it with scope, since and \
             until, raise max_bytes (at most {MAX_PACK_BYTES}), or run `mnem export`"
        ),
    ))
}
