//! The semantic-layer operations: structured remember with verification, corrections,
//! evidence lifecycle (retract, quarantine, release, forget), trace, and the discovery frontier
//! of a recall. Orchestration only: verification and path choice are
//! `mnem_core::graph`'s, persistence and standing the store's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use mnem_core::graph::{
    bounded_seeds, char_span, combined_verdict, name_candidates, second_hop_entities, select_paths,
    verify, CitedEvidence, CitedText, Claim, Correction, DiscoveryPath, EntityInput, EntityKind,
    Finding, Frontier, ObjectInput, ObjectSummary, PathRequest, Polarity, Proposal, ProposedObject,
    RelationshipInput, RelationshipOutcome, RememberOutcome, RememberRequest, Seed, Trace, Verdict,
    VerificationEvent, DETERMINISTIC_VERIFIER,
};
use mnem_core::{
    Actor, Evidence, EvidenceId, LifecycleState, RecallHit, RelationshipId, Rights, Timestamp,
    ValidationError,
};
use mnem_store::{
    GraphStore, GraphView, SearchIndex, StoreError, VerifiedCorrection, VerifiedProposal,
    VerifiedRemember,
};

use crate::{Memory, Result};

/// Ids one lifecycle call may name.
pub const MAX_IDS_PER_CALL: usize = 200;
pub const MAX_REASON_CHARS: usize = 1_000;
/// Held items one listing returns.
pub const MAX_HELD_LISTED: usize = 1_000;

/// A quarantined item with why and when it was held.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HeldEvidence {
    pub evidence: Evidence,
    pub held_at: Option<Timestamp>,
    pub reason: Option<String>,
}
/// Discovery stops expanding (keeps what it has) once a recall has spent this long on
/// it: the frontier is a hint and must not slow the answer down.
pub const DISCOVERY_TIME_BUDGET: Duration = Duration::from_millis(50);

fn check_ids(field: &str, ids: &[EvidenceId]) -> Result<(), ValidationError> {
    if ids.is_empty() || ids.len() > MAX_IDS_PER_CALL {
        return Err(ValidationError::new(
            field,
            format!("name 1 to {MAX_IDS_PER_CALL} evidence ids"),
        ));
    }
    Ok(())
}

fn check_reason(reason: &str) -> Result<String, ValidationError> {
    let reason = reason.trim();
    mnem_core::refuse_nul("reason", reason)?;
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(ValidationError::new(
            "reason",
            format!("must be 1 to {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(reason.to_string())
}

/// The claim as one sentence, for a model verifier.
fn claim_sentence(proposal: &Proposal) -> String {
    let object = match &proposal.object {
        ProposedObject::Entity(e) => e.name.clone(),
        ProposedObject::Value { value, surface } => surface.clone().unwrap_or(value.display()),
    };
    let sentence = format!(
        "{} {} {}",
        proposal.subject.name, proposal.predicate_surface, object
    );
    match proposal.polarity {
        Polarity::Positive => sentence,
        Polarity::Negative => format!("It is not the case that {sentence}"),
    }
}

/// At most this many model verifier calls are in flight for one request.
const MODEL_CALLS_IN_FLIGHT: usize = 8;

/// The deterministic verifier's finding for a proposal, given the text at each cited
/// span (in citation order).
fn check_spans(proposal: &Proposal, texts: &[String]) -> Finding {
    let subject: Vec<&str> = std::iter::once(proposal.subject.name.as_str())
        .chain(proposal.subject.aliases.iter().map(|(a, _)| a.as_str()))
        .collect();
    let value_text;
    let object: Vec<&str> = match &proposal.object {
        ProposedObject::Entity(e) => std::iter::once(e.name.as_str())
            .chain(e.aliases.iter().map(|(a, _)| a.as_str()))
            .collect(),
        ProposedObject::Value { value, surface } => {
            value_text = value.display();
            std::iter::once(value_text.as_str())
                .chain(surface.as_deref())
                .collect()
        }
    };
    let spans: Vec<CitedText<'_>> = texts
        .iter()
        .zip(&proposal.supports)
        .map(|(text, citation)| CitedText {
            text_at_span: text,
            claimed_quote: citation.quote.as_deref(),
        })
        .collect();
    let claim = Claim {
        subject,
        predicate_surface: &proposal.predicate_surface,
        object,
    };
    verify(&claim, &spans)
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// `remember` with relationship proposals (CONTRACT §3): validates the whole request,
    /// replays an idempotency key, verifies every proposal against its cited spans, then
    /// commits everything in one transaction.
    pub async fn remember_request(
        &self,
        actor: &Actor,
        request: RememberRequest,
    ) -> Result<RememberOutcome> {
        self.note_graph_change(actor);
        let mut valid = request.validated().map_err(StoreError::from)?;
        if let Some(key) = &valid.idempotency_key {
            if let Some(outcome) = self.store.replayed(actor, key, &valid.request_hash).await? {
                return Ok(outcome);
            }
        }
        for new in valid.evidence.iter_mut() {
            crate::hold_if_flagged(new);
        }
        let mut checks = Vec::with_capacity(valid.relationships.len());
        for (i, proposal) in valid.relationships.iter().enumerate() {
            let at = format!("relationships[{i}]");
            let mut texts = Vec::with_capacity(proposal.supports.len());
            for (j, citation) in proposal.supports.iter().enumerate() {
                let content = match citation.evidence {
                    CitedEvidence::Index(index) => valid.evidence[index].content.clone(),
                    CitedEvidence::Id(id) => self.store.get(actor, id).await?.content,
                };
                let text = char_span(&content, citation.start, citation.end).ok_or_else(|| {
                    StoreError::from(ValidationError::new(
                        format!("{at}.supports[{j}].end"),
                        format!(
                            "is {}, past the end of the evidence text ({} characters)",
                            citation.end,
                            content.chars().count()
                        ),
                    ))
                })?;
                texts.push(text.to_string());
            }
            checks.push((proposal.clone(), texts));
        }
        let relationships = self.verify_proposals(checks).await;
        let outcome = self
            .store
            .commit_remember(
                actor,
                VerifiedRemember {
                    request: valid,
                    relationships,
                },
            )
            .await?;
        for item in &outcome.evidence {
            if let Some(reason) = &item.quarantined_because {
                crate::log_held(item.evidence_id, reason);
            }
        }
        Ok(outcome)
    }

    /// Verifies each proposal against the text at its cited spans: the deterministic
    /// verifier, then (when configured and the spans check out) the model verifier;
    /// every finding becomes an event. Model calls for different proposals run side by
    /// side, at most `MODEL_CALLS_IN_FLIGHT` at a time; results keep the proposals' order.
    async fn verify_proposals(
        &self,
        checks: Vec<(Proposal, Vec<String>)>,
    ) -> Vec<VerifiedProposal> {
        let now = self.store.clock().now();
        let event = |finding: &Finding, verifier: String| VerificationEvent {
            verdict: finding.verdict,
            confidence: finding.confidence,
            verifier,
            rationale: finding.rationale.clone(),
            at: now,
        };
        let in_flight = Arc::new(Semaphore::new(MODEL_CALLS_IN_FLIGHT));
        let mut checked = Vec::with_capacity(checks.len());
        for (proposal, texts) in checks {
            let deterministic = check_spans(&proposal, &texts);
            let judging = match (&self.verifier, deterministic.verdict) {
                (Some(model), Verdict::Entailed) => {
                    // Waits here while the limit is reached; the permit goes with the call.
                    let permit = Arc::clone(&in_flight)
                        .acquire_owned()
                        .await
                        .expect("the semaphore is never closed");
                    let (model, name) = (Arc::clone(model), model.name());
                    let sentence = claim_sentence(&proposal);
                    let call = tokio::task::spawn_blocking(move || {
                        let _permit = permit;
                        model.judge(&sentence, &texts)
                    });
                    Some((name, call))
                }
                _ => None,
            };
            checked.push((proposal, deterministic, judging));
        }
        let mut verified = Vec::with_capacity(checked.len());
        for (proposal, deterministic, judging) in checked {
            let mut events = vec![event(&deterministic, DETERMINISTIC_VERIFIER.into())];
            let mut model_finding = None;
            if let Some((name, call)) = judging {
                let judged = call.await.map_err(|e| e.to_string()).and_then(|r| r);
                // An unavailable verifier leaves the claim unproven, and says so.
                let finding = judged.unwrap_or_else(|reason| Finding {
                    verdict: Verdict::Insufficient,
                    confidence: 0.0,
                    rationale: format!("verifier unavailable: {reason}"),
                });
                events.push(event(&finding, name));
                model_finding = Some(finding);
            }
            let verdict = combined_verdict(
                &deterministic,
                model_finding.as_ref(),
                self.verifier_threshold,
            );
            verified.push(VerifiedProposal {
                proposal,
                events,
                verdict,
            });
        }
        verified
    }

    /// A new version of a relationship, fenced on `expected_version` (CONTRACT §3). Unset
    /// fields keep the old record's; the supports must cite stored evidence by id.
    pub async fn correct_relationship(
        &self,
        actor: &Actor,
        id: RelationshipId,
        correction: Correction,
    ) -> Result<RelationshipOutcome> {
        self.note_graph_change(actor);
        let reason = check_reason(&correction.reason).map_err(StoreError::from)?;
        let old = self.store.relationship(actor, id).await?;
        let kept_object = correction.object.is_none().then(|| old.object.clone());
        let object = correction.object.unwrap_or_else(|| match &old.object {
            ObjectSummary::Entity(e) => ObjectInput::Entity(EntityInput {
                name: e.name.clone(),
                kind: EntityKind::Other,
                aliases: Vec::new(),
            }),
            ObjectSummary::Value { value } => ObjectInput::Value {
                value: value.clone(),
                surface: None,
            },
        });
        let input = RelationshipInput {
            subject: EntityInput {
                name: old.subject.name.clone(),
                kind: EntityKind::Other,
                aliases: Vec::new(),
            },
            predicate: old.predicate.clone(),
            predicate_surface: Some(
                correction
                    .predicate_surface
                    .unwrap_or(old.predicate_surface.clone()),
            ),
            object,
            polarity: Some(
                correction
                    .polarity
                    .unwrap_or_else(|| old.polarity.as_str().to_string()),
            ),
            valid_from: correction
                .valid_from
                .or_else(|| old.valid_from.map(|t| t.to_rfc3339())),
            valid_to: correction
                .valid_to
                .or_else(|| old.valid_to.map(|t| t.to_rfc3339())),
            supports: correction.supports,
        };
        let proposal = input
            .validated("correction", &[])
            .map_err(StoreError::from)?;
        let mut texts = Vec::with_capacity(proposal.supports.len());
        for (j, citation) in proposal.supports.iter().enumerate() {
            let CitedEvidence::Id(evidence_id) = citation.evidence else {
                unreachable!("validated without request evidence: every citation is by id")
            };
            let content = self.store.get(actor, evidence_id).await?.content;
            let text = char_span(&content, citation.start, citation.end).ok_or_else(|| {
                StoreError::from(ValidationError::new(
                    format!("correction.supports[{j}].end"),
                    "is past the end of the evidence text",
                ))
            })?;
            texts.push(text.to_string());
        }
        let verified = self
            .verify_proposals(vec![(proposal, texts)])
            .await
            .pop()
            .expect("one verdict per proposal");
        Ok(self
            .store
            .commit_correction(
                actor,
                VerifiedCorrection {
                    relationship_id: id,
                    expected_version: correction.expected_version,
                    proposal: verified,
                    kept_object,
                    reason,
                },
            )
            .await?)
    }

    /// Retracts the actor's own evidence ([`Self::retract_evidence_as`] with author
    /// rights).
    pub async fn retract_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<Vec<EvidenceId>> {
        self.retract_evidence_as(actor, Rights::Author, ids, reason)
            .await
    }

    /// Retracts evidence (all or nothing). With author rights every id must be one the
    /// actor wrote (the item's author, or the writer of a repeat of its text): another
    /// profile's is `NotPermitted`, naming the rule. Only the actor's writes are
    /// withdrawn: the ids returned stay current because another write of the same text
    /// still stands (`mnem_store::GraphStore::retract_evidence`).
    pub async fn retract_evidence_as(
        &self,
        actor: &Actor,
        rights: Rights,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<Vec<EvidenceId>> {
        self.note_graph_change(actor);
        check_ids("ids", &ids).map_err(StoreError::from)?;
        let reason = reason
            .map(|r| check_reason(&r))
            .transpose()
            .map_err(StoreError::from)?;
        self.check_rights(actor, rights, &ids, "retracted").await?;
        Ok(self.store.retract_evidence(actor, ids, reason).await?)
    }

    /// Holds the actor's own evidence out of recall ([`Self::quarantine_evidence_as`]
    /// with author rights).
    pub async fn quarantine_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> Result<()> {
        self.quarantine_evidence_as(actor, Rights::Author, ids, reason)
            .await
    }

    /// Holds evidence out of recall and support (all or nothing), under the same
    /// author rule as a retraction.
    pub async fn quarantine_evidence_as(
        &self,
        actor: &Actor,
        rights: Rights,
        ids: Vec<EvidenceId>,
        reason: String,
    ) -> Result<()> {
        self.note_graph_change(actor);
        check_ids("ids", &ids).map_err(StoreError::from)?;
        let reason = check_reason(&reason).map_err(StoreError::from)?;
        self.check_rights(actor, rights, &ids, "quarantined")
            .await?;
        Ok(self.store.quarantine_evidence(actor, ids, reason).await?)
    }

    /// CONTRACT §3: one author never deletes or hides another's knowledge. An owner never
    /// changes, so checking before the write cannot race with it.
    async fn check_rights(
        &self,
        actor: &Actor,
        rights: Rights,
        ids: &[EvidenceId],
        action: &'static str,
    ) -> Result<()> {
        if rights == Rights::Admin {
            return Ok(());
        }
        for &id in ids {
            // A writer of a repeat of the text may retract (it withdraws only its own
            // write); quarantine holds the item for everyone, so it stays the author's.
            let wrote =
                self.store.get(actor, id).await?.owner == actor.profile
                    || (action == "retracted"
                        && self.store.writes(actor, id).await?.iter().any(|w| {
                            w.owner == actor.profile && w.state == LifecycleState::Current
                        }));
            if !wrote {
                return Err(StoreError::NotPermitted {
                    id,
                    action,
                    reason: "another profile wrote it; only its author or a profile with the \
                             `admin` scope may"
                        .into(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// Returns held evidence to recall after review; the lifecycle event records who
    /// released it and why.
    pub async fn release_evidence(
        &self,
        actor: &Actor,
        ids: Vec<EvidenceId>,
        reason: Option<String>,
    ) -> Result<()> {
        self.note_graph_change(actor);
        check_ids("ids", &ids).map_err(StoreError::from)?;
        let reason = match reason {
            Some(reason) => format!(
                "released: {}",
                check_reason(&reason).map_err(StoreError::from)?
            ),
            None => "released after review".to_string(),
        };
        Ok(self.store.release_evidence(actor, ids, reason).await?)
    }

    /// What is held out of recall: quarantined evidence the actor can see, most recently
    /// recorded first, each with the reason it was held.
    pub async fn quarantined(&self, actor: &Actor, limit: usize) -> Result<Vec<HeldEvidence>> {
        if limit == 0 || limit > MAX_HELD_LISTED {
            return Err(StoreError::from(ValidationError::new(
                "limit",
                format!("must be 1 to {MAX_HELD_LISTED}"),
            ))
            .into());
        }
        let mut held = Vec::new();
        for id in self.store.quarantined(actor, limit).await? {
            let mut evidence = self.store.get(actor, id).await?;
            // An operator reviewing held text is a reader too.
            crate::shown::neutralised_for_readers(&mut evidence);
            let event = self
                .store
                .history(actor, id)
                .await?
                .into_iter()
                .rev()
                .find(|e| e.state == LifecycleState::Quarantined);
            held.push(HeldEvidence {
                held_at: event.as_ref().map(|e| e.at),
                reason: event.and_then(|e| e.reason),
                evidence,
            });
        }
        Ok(held)
    }

    pub async fn forget(&self, actor: &Actor, ids: Vec<EvidenceId>) -> Result<()> {
        self.note_graph_change(actor);
        check_ids("ids", &ids).map_err(StoreError::from)?;
        Ok(self.store.forget(actor, ids).await?)
    }

    pub async fn trace(&self, actor: &Actor, id: RelationshipId, view: GraphView) -> Result<Trace> {
        Ok(self.store.trace(actor, id, view).await?)
    }

    /// The discovery frontier of a recall (CONTRACT §2 step 8), after its results are fixed:
    /// seeds from entity names in the query, `expand_from_entity_ids` and entity or
    /// relationship documents near the query embedding, one bounded hop
    /// from each, a second from non-hub neighbours while time allows, and relationships
    /// supported by the returned evidence; then the core chooses the paths.
    pub(crate) async fn discover(
        &self,
        actor: &Actor,
        query: &mnem_core::RecallQuery,
        hits: &[RecallHit],
        query_vector: Option<&[f32]>,
    ) -> Result<Vec<DiscoveryPath>> {
        let wants_paths = query.path_limit > 0
            && (!query.query.is_empty() || !query.expand_from_entity_ids.is_empty());
        if !wants_paths {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let limits = self.discovery_limits;
        let view = GraphView {
            valid_at: query.valid_at,
            known_at: query.known_at,
        };
        // Seeds by name, and by meaning from the recall's one query embedding when it
        // has one: independent reads, made together.
        let by_meaning = async {
            match (query_vector, &self.embedder) {
                (Some(vector), Some(embedder)) => {
                    self.store
                        .graph_vector_seeds(
                            actor,
                            vector,
                            embedder.contract(),
                            view,
                            limits.min_seed_similarity,
                            limits.max_seeds,
                        )
                        .await
                }
                _ => Ok(Vec::new()),
            }
        };
        let (named, by_meaning) = tokio::try_join!(
            self.store
                .entities_named(actor, name_candidates(&query.query)),
            by_meaning,
        )?;
        let exact = named
            .into_iter()
            .map(|(entity_id, _)| entity_id)
            .chain(query.expand_from_entity_ids.iter().copied());
        let seeds = bounded_seeds(
            exact
                .map(|entity_id| Seed {
                    entity_id,
                    weight: 1.0,
                })
                .chain(
                    by_meaning
                        .into_iter()
                        .map(|(entity_id, weight)| Seed { entity_id, weight }),
                )
                .collect(),
            &limits,
        );
        let returned: Vec<EvidenceId> = hits.iter().map(|h| h.evidence.id).collect();
        let seeded_at = started.elapsed();
        // Two independent reads: on a server backend each is a round trip of its own.
        let (first_hop, touching_results) = tokio::try_join!(
            self.store.adjacency(
                actor,
                seeds.iter().map(|s| s.entity_id).collect(),
                view,
                limits.fanout,
            ),
            self.store
                .edges_supported_by(actor, returned.clone(), view, limits.fanout),
        )?;
        let mut frontier = Frontier {
            first_hop,
            touching_results,
            seeds,
            second_hop: Vec::new(),
        };
        let first_hop_at = started.elapsed();
        if first_hop_at < DISCOVERY_TIME_BUDGET {
            let next = second_hop_entities(&frontier.seeds, &frontier.first_hop, &limits);
            frontier.second_hop = self
                .store
                .adjacency(actor, next, view, limits.fanout)
                .await?;
        }
        tracing::debug!(
            seeds = frontier.seeds.len(),
            seeded_ms = seeded_at.as_secs_f64() * 1e3,
            first_hop_ms = first_hop_at.as_secs_f64() * 1e3,
            frontier_ms = started.elapsed().as_secs_f64() * 1e3,
            "discovery frontier read"
        );
        let terms = query.terms();
        Ok(select_paths(
            &frontier,
            &PathRequest {
                query_terms: &terms,
                returned_evidence: &returned,
                known_relationships: &query.known_relationship_ids,
                valid_at: query.valid_at,
                path_limit: query.path_limit,
            },
            &limits,
        ))
    }
}
