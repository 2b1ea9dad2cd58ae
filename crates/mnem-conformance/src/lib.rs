//! The backend conformance suite. Every case asserts a rule of the recall contract
//! (SPEC §2, seed 003) rather than any backend's numbers, so it holds whether or not a
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
pub mod helpers;
pub mod vector_cases;

pub use helpers::{Backend, Fixture};

/// Expands to one `#[tokio::test]` per conformance case, each opening a fresh store with
/// the given `Fn(Arc<ManualClock>) -> impl Future<Output = impl EvidenceStore>`.
#[macro_export]
macro_rules! conformance_suite {
    ($open:expr) => {
        $crate::conformance_suite!(@cases $open;
            write_then_recall_finds_it,
            listing_returns_everything_newest_first,
            multi_word_query_matches_any_term_ranked_by_bm25,
            query_text_is_never_fts_syntax,
            scope_exact_read_excludes_ancestors_descendants_and_siblings,
            scope_widened_read_adds_ancestors_never_siblings,
            limit_applies_after_scope_resolution,
            kinds_select_a_union,
            window_is_half_open_and_partitions_without_loss_or_double_count,
            limit_alongside_window_never_returns_short,
            scores_are_in_unit_interval_and_non_increasing_under_relevance,
            floor_above_one_empties_and_floor_zero_keeps_all,
            listing_scores_one_because_it_cannot_rank,
            score_is_per_read_and_never_persists,
            recent_order_is_newest_first_regardless_of_score,
            retracted_evidence_is_hidden_from_every_recall_shape,
            second_retract_is_not_found,
            retraction_appends_to_the_log_and_keeps_the_row,
            provenance_round_trips,
            stamps_round_trip_at_microsecond_precision,
            refs_match_any_of_and_need_kind_and_id,
            expired_evidence_is_hidden_from_every_recall_shape_and_still_retractable,
            teams_never_cross,
            invalid_write_stores_nothing,
        );
    };
    (@cases $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::cases::$case($crate::Fixture::open($open).await).await;
            }
        )*
        mod vector_branch {
            use super::*;
            $crate::conformance_suite!(@vector_cases $open;
                paraphrase_without_shared_words_is_found_first,
                writes_are_searchable_before_their_vectors_exist,
                vector_branch_applies_every_eligibility_rule,
                vectors_under_another_contract_are_never_used,
            );
        }
    };
    (@vector_cases $open:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let embedder = Some($crate::vector_cases::builtin());
                $crate::vector_cases::$case($crate::Fixture::open_with($open, embedder).await)
                    .await;
            }
        )*
    };
}
