//! What the in-process players read of a request and build a response from: the request's
//! method, path, `Last-Event-ID` and body, and a response made of a played act. Only the
//! types a layer sees (`http`, and `reqwest` with its feature); it must not play anything.

use crate::testing::script::Asked;

/// A request a [`FaultLayer`](crate::testing::FaultLayer) can record: `http::Request<B>` (its
/// body is not read: a generic body cannot be read without consuming it) and, with feature
/// `reqwest`, `reqwest::Request` (its body is recorded when it is in memory).
///
/// ```
/// use retry_runtime::testing::ScriptedRequest;
///
/// let request = http::Request::post("/v1/messages").body(()).unwrap();
/// assert_eq!(request.asked().path, "/v1/messages");
/// ```
pub trait ScriptedRequest {
    /// What the script records of this request.
    fn asked(&self) -> Asked;
}

/// A response a [`FaultLayer`](crate::testing::FaultLayer) can make of a played act:
/// `http::Response<B>` for a body made from a `String` and, with feature `reqwest`,
/// `reqwest::Response`.
///
/// ```
/// use retry_runtime::testing::{Act, FaultLayer, Script, ScriptedResponse};
/// # fn is_scripted<R: ScriptedResponse>() {}
/// is_scripted::<http::Response<String>>();
/// ```
pub trait ScriptedResponse: Sized {
    /// The response a client reads: this status, these headers, this body.
    fn scripted(status: http::StatusCode, headers: http::HeaderMap, body: String) -> Self;
}

fn asked_of(
    method: &http::Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Asked {
    Asked {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), ToString::to_string),
        last_event_id: headers
            .get("last-event-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        body: String::from_utf8_lossy(body).into_owned(),
        at: std::time::Duration::ZERO,
    }
}

impl<B> ScriptedRequest for http::Request<B> {
    fn asked(&self) -> Asked {
        asked_of(self.method(), self.uri(), self.headers(), &[])
    }
}

impl<B: From<String>> ScriptedResponse for http::Response<B> {
    fn scripted(status: http::StatusCode, headers: http::HeaderMap, body: String) -> Self {
        let mut response = http::Response::new(B::from(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        response
    }
}

#[cfg(feature = "reqwest")]
impl ScriptedRequest for reqwest::Request {
    fn asked(&self) -> Asked {
        let body = self
            .body()
            .and_then(reqwest::Body::as_bytes)
            .unwrap_or_default();
        let uri = self.url().as_str().parse().unwrap_or_default();
        asked_of(self.method(), &uri, self.headers(), body)
    }
}

#[cfg(feature = "reqwest")]
impl ScriptedResponse for reqwest::Response {
    fn scripted(status: http::StatusCode, headers: http::HeaderMap, body: String) -> Self {
        reqwest::Response::from(<http::Response<String> as ScriptedResponse>::scripted(
            status, headers, body,
        ))
    }
}
