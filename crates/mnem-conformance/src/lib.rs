//! The backend conformance suite. Every case asserts a rule of the recall contract
//! (CONTRACT §2) or of the semantic layer (CONTRACT §1–§4) rather than any backend's numbers, so it holds whether or not a
//! backend can rank. A backend runs the whole suite with one line:
//!
//! ```ignore
//! mnem_conformance::conformance_suite!(|clock| async move {
//!     MyStore::open(clock).await.unwrap()
//! });
//! ```
//!
//! which expands to one `#[tokio::test]` per case (the calling crate needs `tokio` with
//! the `macros` and `rt` features as a dev-dependency).
//!
//! Architecture invariant: cases talk to a backend only through `mnem_store`'s traits and
//! `mnem_service::Memory`, exactly as transports do.

pub mod cases;
pub mod community_cases;
pub mod dedup_cases;
pub mod dream_cases;
pub mod feedback_cases;
pub mod graph_cases;
pub mod helpers;
pub mod lexical_cases;
pub mod mention_cases;
pub mod pack_cases;
pub mod vector_cases;
pub mod window_cases;

pub use helpers::{Backend, Fixture};

/// Expands to one `#[tokio::test]` per conformance case, each opening a fresh store with
/// the given `Fn(Arc<ManualClock>) -> impl Future<Output = impl EvidenceStore>`.
///
/// `conformance_suite!(run_if: EXPR, OPEN)` evaluates `EXPR` (a `bool`) first in every
/// case and returns early when it is false: for a backend whose server may be absent on a
/// developer's machine (the expression should say so loudly, and refuse to skip in CI).
#[macro_export]
macro_rules! conformance_suite {
    (run_if: $guard:expr, $open:expr) => {
        $crate::conformance_suite!(@all $guard, $open);
    };
    ($open:expr) => {
        $crate::conformance_suite!(@all true, $open);
    };
    (@all $guard:expr, $open:expr) => {
        $crate::conformance_suite!(@cases $guard, $open;
            write_then_recall_finds_it,
            listing_returns_everything_newest_first,
            multi_word_query_matches_any_term_ranked_by_bm25,
            query_text_is_never_fts_syntax,
            scope_exact_read_excludes_ancestors_descendants_and_siblings,
            scope_widened_read_adds_ancestors_never_siblings,
            scope_subtree_read_adds_descendants_never_siblings_or_ancestors,
            scopes_lists_only_what_the_reader_could_recall_in_path_order,
            limit_applies_after_scope_resolution,
            kinds_select_a_union,
            window_is_half_open_and_partitions_without_loss_or_double_count,
            limit_alongside_window_never_returns_short,
            a_match_from_the_hinted_period_is_recalled_past_a_full_pool,
            texts_in_a_period_are_the_teams_current_ones_counted_up_to_a_cap,
            scores_are_in_unit_interval_and_non_increasing_under_relevance,
            floor_above_one_empties_and_floor_zero_keeps_all,
            listing_scores_one_because_it_cannot_rank,
            score_is_per_read_and_never_persists,
            recent_order_is_newest_first_regardless_of_score,
            retracted_evidence_is_hidden_from_every_recall_shape,
            a_second_retract_says_the_item_is_already_retracted,
            retraction_appends_to_the_log_and_keeps_the_row,
            a_newer_revision_written_plainly_supersedes_the_older,
            a_long_result_is_focused_on_the_query_within_its_share,
            the_newest_revision_of_a_source_is_the_readers_own,
            profile_names_come_from_the_callers_team_only,
            provenance_round_trips,
            stamps_round_trip_at_microsecond_precision,
            refs_match_any_of_and_need_kind_and_id,
            expired_evidence_is_hidden_from_every_recall_shape_and_still_retractable,
            teams_never_cross,
            invalid_write_stores_nothing,
            a_batch_is_stored_in_order_and_searchable_at_once,
            an_invalid_batch_item_stores_nothing_and_is_named,
            a_nul_is_refused_by_name_in_every_text,
            team_pending_documents_are_one_teams_newest_first,
        );
    };
    (@cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
        mod evidence_windows {
            use super::*;
            $crate::conformance_suite!(@window_cases $guard, $open;
                evidence_window_brings_neighbours_of_the_same_group_in_order,
                evidence_window_never_shows_what_the_reader_could_not_recall,
                evidence_windows_that_overlap_merge_and_every_id_appears_once,
                evidence_window_bytes_count_against_the_budget_and_neighbours_go_first,
                follow_on_credit_lifts_only_the_next_eligible_item_of_the_group,
                a_turn_by_the_speaker_the_query_names_rises_above_a_closer_match,
                a_turn_that_only_asks_sinks_below_a_turn_that_says_and_its_reply_keeps_credit,
                an_answer_to_a_follow_up_question_is_credited_from_what_it_asks_about,
            );
        }
        mod graph {
            use super::*;
            $crate::conformance_suite!(@graph_cases $guard, $open;
                default_recall_needs_no_active_relationship,
                evidence_cited_by_many_relationships_appears_once,
                public_recall_has_paths_and_no_verifier_history,
                trace_reconstructs_supports_verification_and_lineage,
                trace_quotes_within_its_byte_bound_and_says_when_it_cut,
                tier_and_graph_never_move_evidence,
                tier_lifts_among_equals_and_never_past_relevance,
                graph_context_never_becomes_evidence,
                candidates_never_enter_discovery,
                quarantined_evidence_leaves_recall_and_support,
                retraction_recomputes_support,
                single_valued_disagreement_across_authors_disputes_both,
                newer_claim_by_the_same_author_supersedes,
                an_unverified_challenge_disputes_nothing,
                review_held_relationships_never_enter_discovery,
                entity_resolution_reuses_names_and_aliases_within_the_team,
                same_name_entities_never_cross_teams,
                hub_expansion_is_bounded,
                cycles_terminate_without_revisiting,
                same_team_relationships_are_traceable_by_any_author,
                paths_show_the_owner_when_authors_agree_separately,
                non_current_source_revisions_never_count,
                a_correction_never_mutates_another_authors_record,
                own_correction_supersedes_and_is_version_fenced,
                idempotent_replay_returns_the_same_outcome,
                one_bad_item_rejects_the_whole_request,
                forget_erases_private_evidence_and_what_derives_only_from_it,
                known_at_reads_the_past_from_the_logs,
                valid_at_selects_relationships_by_validity,
                known_ids_are_not_returned_again,
                relationships_from_private_evidence_stay_private,
                screened_evidence_is_held_reported_and_never_recalled,
                template_tokens_are_escaped_for_readers_not_held,
                held_evidence_is_listed_and_a_writer_can_release_it,
                releasing_evidence_restores_the_support_it_gave,
                only_the_author_or_an_admin_retracts_or_quarantines_evidence,
            );
        }
        mod dedup {
            use super::*;
            $crate::conformance_suite!(@dedup_cases $guard, $open;
                a_repeated_text_is_one_item_with_each_write_recorded,
                what_a_recall_can_tell_apart_is_never_merged,
                the_same_words_elsewhere_in_a_sequence_stay_in_place,
                retracting_one_write_keeps_the_others_support,
                corroboration_by_other_groups_lifts_only_among_equals,
            );
        }
        mod feedback {
            use super::*;
            $crate::conformance_suite!(@feedback_cases $guard, $open;
                feedback_is_recorded_and_changes_nothing_it_judges,
                feedback_stays_inside_its_team,
                replayed_feedback_scores_where_useful_items_rank,
            );
        }
        mod dreaming {
            use super::*;
            $crate::conformance_suite!(@dream_cases $guard, $open;
                a_dream_proposes_from_two_claims_and_never_moves_results,
                a_hypothesis_goes_stale_when_a_source_stops_being_active,
                hypotheses_never_cross_teams,
                a_model_reading_is_written_once_beside_the_statement,
                a_claim_only_private_notes_prove_is_never_dreamed_from,
                confirming_takes_a_proof_and_a_resolution_is_final,
                a_write_queues_its_team_for_the_background_pass,
            );
        }
        mod communities {
            use super::*;
            $crate::conformance_suite!(@community_cases $guard, $open;
                summaries_fill_only_slots_the_results_left,
                communities_are_versioned_and_follow_the_graph,
                communities_never_cross_teams,
                a_claim_only_private_notes_prove_is_never_clustered,
                a_write_queues_its_team_for_the_community_pass,
            );
        }
        mod packs {
            use super::*;
            $crate::conformance_suite!(@pack_cases $guard, $open;
                a_pack_replays_into_a_fresh_team_with_the_same_recalls_and_traces,
                importing_a_pack_twice_changes_nothing,
                review_mode_lands_relationships_as_candidates,
                a_failing_import_writes_nothing_and_names_the_line,
                a_pack_holds_only_what_its_exporter_can_see,
                a_slice_keeps_its_evidence_and_only_whole_relationships,
                a_text_the_team_holds_is_merged_not_repeated,
                a_pack_is_screened_and_a_released_item_stays_released,
                a_bounded_export_stops_at_its_bound,
            );
        }
        mod lexical_branch {
            use super::*;
            $crate::conformance_suite!(@lexical_cases $guard, $open;
                lexical_relevance_is_the_cores_bm25_over_the_teams_own_texts,
            );
        }
        mod mentions {
            use super::*;
            $crate::conformance_suite!(@mention_cases $guard, $open;
                an_item_sharing_a_rare_mention_with_a_result_joins_it,
                a_hub_mention_is_never_followed,
                a_mention_never_surfaces_an_item_its_reader_could_not_recall,
                a_forgotten_text_mentions_nothing,
                the_mention_read_counts_lists_and_reads_only_unknown_records,
            );
        }
        mod vector_branch {
            use super::*;
            $crate::conformance_suite!(@vector_cases $guard, $open;
                paraphrase_without_shared_words_is_found_first,
                writes_are_searchable_before_their_vectors_exist,
                vector_branch_applies_every_eligibility_rule,
                vectors_under_another_contract_are_never_used,
                relationship_meaning_seeds_discovery_without_shared_words,
            );
        }
    };
    (@graph_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::graph_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@dedup_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::dedup_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@dream_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::dream_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@community_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::community_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@pack_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::pack_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@feedback_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::feedback_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@mention_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::mention_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@lexical_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::lexical_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@window_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                $crate::window_cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
    };
    (@vector_cases $guard:expr, $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            #[cfg_attr(
                mnem_needs_server,
                ignore = "needs its database server: scripts/test.sh runs it"
            )]
            async fn $case() {
                if !$guard {
                    return;
                }
                let embedder = Some($crate::vector_cases::builtin());
                $crate::vector_cases::$case($crate::Fixture::open_with($open, embedder).await)
                    .await;
            }
        )*
    };
}
