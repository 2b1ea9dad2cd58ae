//! The JSON API under `/v1/`: one `POST` per operation, bodies as the MCP tools' arguments,
//! results as their results. Errors are `{"error": {"code", "message", "field"?}}`.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use mnem_api::{OpError, OpErrorClass};
use mnem_core::Principal;
use mnem_store::{CredentialStore, GraphStore, SearchIndex};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::App;

/// An error response in the API's one shape.
pub(crate) fn error(
    status: StatusCode,
    code: &str,
    message: &str,
    field: Option<&str>,
) -> Response {
    let mut body = json!({"error": {"code": code, "message": message}});
    if let Some(field) = field {
        body["error"]["field"] = json!(field);
    }
    (status, Json(body)).into_response()
}

/// Seconds a client is asked to wait before retrying a write the store was too busy for.
pub(crate) const BUSY_RETRY_AFTER_SECONDS: u32 = 2;

pub(crate) fn op_error(err: OpError) -> Response {
    let status = match err.class() {
        OpErrorClass::BadRequest => StatusCode::BAD_REQUEST,
        OpErrorClass::Forbidden => StatusCode::FORBIDDEN,
        OpErrorClass::NotFound => StatusCode::NOT_FOUND,
        OpErrorClass::Conflict => StatusCode::CONFLICT,
        OpErrorClass::Unavailable | OpErrorClass::Busy => StatusCode::SERVICE_UNAVAILABLE,
        OpErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let code = err.class().code();
    let mut response = error(status, code, &err.public_message(), err.field());
    if err.class() == OpErrorClass::Busy {
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(BUSY_RETRY_AFTER_SECONDS),
        );
    }
    response
}

/// A JSON body whose rejections (bad JSON, unknown field, too large) use the API's error
/// shape and keep their status (400, 413, 415, 422).
pub(crate) struct Body<T>(T);

impl<T: DeserializeOwned, St: Send + Sync> FromRequest<St> for Body<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &St) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(rejected(rejection)),
        }
    }
}

fn rejected(rejection: JsonRejection) -> Response {
    let status = rejection.status();
    let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "body_too_large"
    } else {
        "invalid_json"
    };
    let text = rejection.body_text();
    error(
        status,
        code,
        &text,
        mnem_api::rejected_field(&text).as_deref(),
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_busy_store_is_a_retryable_503_with_retry_after() {
        let busy = mnem_api::OpError::Service(mnem_service::ServiceError::Store(
            mnem_store::StoreError::Busy,
        ));
        let response = super::op_error(busy);
        assert_eq!(
            response.status(),
            axum::http::StatusCode::SERVICE_UNAVAILABLE
        );
        let retry = response.headers().get(axum::http::header::RETRY_AFTER);
        assert_eq!(retry.and_then(|v| v.to_str().ok()), Some("2"));
    }

    #[test]
    fn every_operation_is_routed_once() {
        let names: Vec<&str> = mnem_api::OPERATIONS.iter().map(|op| op.name).collect();
        assert_eq!(super::ROUTED, names.as_slice());
    }
}

fn answer(result: Result<Value, OpError>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(err) => op_error(err),
    }
}

macro_rules! handlers {
    ($($name:ident: $input:ty => $op:ident;)+) => {
        /// Every API route, `POST /v1/<name>`, on `router`: the JSON ones, and the
        /// streamed import.
        pub(crate) fn routes<S>(router: Router<App<S>>) -> Router<App<S>>
        where
            S: GraphStore + SearchIndex + CredentialStore + Clone + 'static,
        {
            router$(.route(concat!("/v1/", stringify!($name)), post($name::<S>)))+
                .route("/v1/import", post(crate::import::import::<S>))
        }

        /// The routed operation names, for the test against `mnem_api::OPERATIONS`.
        #[cfg(test)]
        pub(crate) const ROUTED: &[&str] = &[$(stringify!($name)),+, "import"];

        $(
            pub(crate) async fn $name<S>(
                State(app): State<App<S>>,
                Extension(caller): Extension<Principal>,
                Body(input): Body<$input>,
            ) -> Response
            where
                S: GraphStore + SearchIndex + CredentialStore + 'static,
            {
                answer(app.ops.$op(&caller, input).await)
            }
        )+
    };
}

handlers! {
    recall: mnem_api::RecallInput => recall;
    remember: mnem_core::graph::RememberRequest => remember;
    trace: mnem_api::TraceInput => trace;
    export: mnem_api::ExportInput => export_pack;
    hypotheses: mnem_api::ListHypothesesInput => list_hypotheses;
    hypothesis: mnem_api::GetHypothesisInput => get_hypothesis;
    resolve_hypothesis: mnem_api::ResolveHypothesisInput => resolve_hypothesis;
    retract: mnem_api::RetractInput => retract;
    release: mnem_api::ReleaseInput => release;
    feedback: mnem_core::feedback::FeedbackInput => feedback;
    quarantined: mnem_api::QuarantinedInput => quarantined;
    correct: mnem_api::CorrectInput => correct;
    forget: mnem_api::ForgetInput => forget;
    explain: mnem_api::RecallInput => explain;
    show: mnem_api::ShowInput => show;
    status: mnem_api::StatusInput => status;
    scopes: mnem_api::ScopesInput => scopes;
}
