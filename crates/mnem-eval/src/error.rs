use thiserror::Error;

#[derive(Debug, Error)]
pub enum EvalError {
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
    /// A field of the benchmark file is not what its format says.
    #[error("{dataset} {item}: field `{field}`: {reason}")]
    Format {
        dataset: &'static str,
        item: String,
        field: &'static str,
        reason: String,
    },
    #[error(transparent)]
    Service(#[from] mnem_service::ServiceError),
    #[error(transparent)]
    Store(#[from] mnem_store::StoreError),
    #[error("fit: {0}")]
    Fit(String),
    #[error("bench: {0}")]
    Bench(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
