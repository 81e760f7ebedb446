//! The model-stream path: decoded events in which a provider's error event, a malformed
//! frame, a cut body and an oversized event each end the stream with a classified
//! [`StreamError`], and `[DONE]` ends it cleanly. [`ModelEvents`] runs it over a
//! `reqwest::Response`; the path itself is generic over the byte source, so it is tested
//! without a network.

use std::error::Error;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use super::HttpError;
use super::stream_error::StreamError;
use crate::class::Classify;
use crate::sse::{DecodeError, Event, Events, decode};
use crate::stream::Resumable;

/// What one event means on the model path.
#[derive(Debug)]
enum Reading {
    /// An event to hand on.
    Event,
    /// OpenAI's `[DONE]`: the stream is over.
    Done,
    /// The provider's error event.
    ProviderError,
    /// Data that is not JSON.
    Malformed(serde_json::Error),
}

/// An event is a provider's error when it is named `error` or `response.failed` (OpenAI
/// Responses), or its data is a JSON object with a top-level `error` object, or whose
/// `"type"` is `error` or `response.failed`. Raw mode reads JSON only where data looks like an
/// object, and lets text through.
fn read(event: &Event, raw: bool) -> Reading {
    if matches!(event.event(), "error" | "response.failed") {
        return Reading::ProviderError;
    }
    let data = event.data().trim();
    if data.is_empty() {
        // An empty event is a keep-alive, not a malformed frame.
        return Reading::Event;
    }
    if !raw && data == "[DONE]" {
        return Reading::Done;
    }
    if raw && !data.starts_with('{') {
        return Reading::Event;
    }
    match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(top)) if says_error(&top) => Reading::ProviderError,
        Ok(_) => Reading::Event,
        Err(_) if raw => Reading::Event,
        Err(error) => Reading::Malformed(error),
    }
}

/// The provider's error in `event`, if it is one, for a retry layer reading a stream it does
/// not own: read as raw mode reads it, so a stream that carries text is never an error.
pub(crate) fn provider_error(
    status: StatusCode,
    headers: &HeaderMap,
    event: &Event,
) -> Option<HttpError> {
    match read(event, true) {
        Reading::ProviderError => Some(HttpError::in_stream(
            status,
            headers,
            event.data().as_bytes(),
        )),
        _ => None,
    }
}

fn says_error(top: &Map<String, Value>) -> bool {
    matches!(top.get("error"), Some(Value::Object(_)))
        || matches!(top.get("type"), Some(Value::String(kind)) if kind == "error" || kind == "response.failed")
}

/// The response's head: an error inside its stream keeps it to read.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    /// As given: [`HttpError::with_url`] drops its query and userinfo when an error is made.
    pub(crate) url: Option<String>,
}

impl Head {
    fn error_in_stream(&self, event: &Event) -> HttpError {
        let error = HttpError::in_stream(self.status, &self.headers, event.data().as_bytes());
        match &self.url {
            Some(url) => error.with_url(url),
            None => error,
        }
    }

    /// A head that is not a success, when the caller skipped `check_status()`: its body is
    /// no event stream, so it is classified by its status and headers, its body unread.
    fn refusal(&self) -> Option<HttpError> {
        if !self.status.is_client_error() && !self.status.is_server_error() {
            return None;
        }
        let error = HttpError::new(self.status, &self.headers, b"");
        Some(match &self.url {
            Some(url) => error.with_url(url),
            None => error,
        })
    }
}

pin_project_lite::pin_project! {
    /// The model path over any source of byte chunks whose error classifies itself.
    pub(crate) struct ModelStream<S> {
        #[pin]
        events: Events<S>,
        head: Head,
        refused: Option<HttpError>,
        raw: bool,
        done: bool,
    }
}

impl<S> ModelStream<S> {
    pub(crate) fn new<E>(head: Head, source: S) -> ModelStream<S>
    where
        S: Stream<Item = Result<Bytes, E>>,
    {
        ModelStream {
            events: decode(source),
            refused: head.refusal(),
            head,
            raw: false,
            done: false,
        }
    }

    pub(crate) fn max_event_size(mut self, bytes: usize) -> ModelStream<S> {
        self.events = self.events.max_event_size(bytes);
        self
    }

    pub(crate) fn raw(mut self) -> ModelStream<S> {
        self.raw = true;
        self
    }
}

impl<S> Resumable for ModelStream<S> {
    fn last_event_id(&self) -> Option<&str> {
        self.events.last_event_id()
    }

    fn reconnection_time(&self) -> Option<Duration> {
        self.events.reconnection_time()
    }
}

impl<S, E> Stream for ModelStream<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Classify + Error + Send + Sync + 'static,
{
    type Item = Result<Event, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        let ended = if let Some(refused) = this.refused.take() {
            Some(Err(StreamError::provider(refused)))
        } else {
            match ready!(this.events.poll_next(cx)) {
                Some(Ok(event)) => match read(&event, *this.raw) {
                    Reading::Event => return Poll::Ready(Some(Ok(event))),
                    Reading::Done => None,
                    Reading::ProviderError => Some(Err(StreamError::provider(
                        this.head.error_in_stream(&event),
                    ))),
                    Reading::Malformed(error) => Some(Err(StreamError::malformed(&error))),
                },
                Some(Err(DecodeError::Source(error))) => Some(Err(StreamError::cut(error))),
                Some(Err(DecodeError::TooLarge { limit })) => {
                    Some(Err(StreamError::too_large(limit)))
                }
                None => None,
            }
        };
        *this.done = true;
        Poll::Ready(ended)
    }
}

/// A model's event stream, from
/// [`ResponseExt::events`](crate::http::ResponseExt::events): each item an [`Event`], or the
/// [`StreamError`] that ended it.
///
/// - An error event from the provider (`event: error`, data with a top-level `error` object
///   or `"type": "error"`, OpenAI Responses' `response.failed`) is a `StreamError` holding an
///   [`HttpError`] that keeps the response's status, headers and URL, classified by [the
///   table's "inside a stream" part](crate::http#inside-a-stream). A JSON-RPC error response
///   (an MCP server's `{"jsonrpc": "2.0", "id": .., "error": {..}}`) ends the stream the same
///   way, but is an answer: `Definitive`, never sent again.
/// - A body cut off mid-read is classified as its `reqwest::Error` is (`Transport`, or
///   `Timeout` for a read timeout).
/// - Data that is not JSON is a malformed frame, `Definitive`; OpenAI's `[DONE]` ends the
///   stream instead (it is not handed on). [`raw`](ModelEvents::raw) lets text through.
/// - An event larger than [`max_event_size`](ModelEvents::max_event_size) (1 MiB unless set)
///   is `Definitive`.
/// - An event with empty data is handed on, not an error.
///
/// After an error, or `[DONE]`, the stream gives `None`. It is `Send`, `Unpin` and
/// `'static`. It is [`Resumable`]: its last event ID and the server's `retry:` are kept
/// after a cut, for [`RetryStream::resume`](crate::RetryStream::resume). An MCP `tools/call`
/// resumed with a `GET` and `Last-Event-ID`, and the Responses API's background stream
/// resumed with `starting_after`:
///
/// ```no_run
/// use retry_runtime::http::{ModelEvents, ResponseExt, StreamError, is_jsonrpc_response};
/// use retry_runtime::sse::{self, Event};
/// use retry_runtime::{Classify, EndedEarly, Policy, Retry};
///
/// #[derive(Debug, thiserror::Error, Classify)]
/// enum Failed {
///     #[error(transparent)] #[classify(from)] Http(#[from] retry_runtime::http::HttpError),
///     #[error(transparent)] #[classify(from)] Request(#[from] reqwest::Error),
///     #[error(transparent)] #[classify(from)] Stream(#[from] StreamError),
///     #[error(transparent)] #[classify(from)] Ended(#[from] EndedEarly),
/// }
///
/// async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, Failed> {
///     Ok(request.send().await?.check_status().await?.events().raw())
/// }
///
/// fn sequence_number(event: &Event) -> Option<u64> {
///     serde_json::from_str::<serde_json::Value>(event.data()).ok()?["sequence_number"].as_u64()
/// }
///
/// # async fn example(http: reqwest::Client, url: String, call: String, session: String) {
/// // MCP: the POST's stream, resumed from its last event ID.
/// let tool_call = Retry::new(&Policy::AVAILABILITY)
///     .stream(|_| send(http.post(&url).header("mcp-session-id", &session).body(call.clone())))
///     .commit_when(|event: &Event| !event.data().trim().is_empty())
///     .complete_when(is_jsonrpc_response)
///     .resume(|from| {
///         let get = http.get(&url).header("mcp-session-id", &session);
///         send(match from.last_event_id() {
///             Some(id) => get.header("last-event-id", id),
///             None => get,
///         })
///     });
/// # drop(tool_call);
///
/// // The Responses API in background mode: the cursor is in the data.
/// let response = Retry::new(&Policy::AVAILABILITY)
///     .stream(|_| send(http.post("https://api.openai.com/v1/responses").body(call.clone())))
///     .commit_when(sse::is_content)
///     .cursor(sequence_number)
///     .complete_when(|event: &Event| event.event() == "response.completed")
///     .resume(|from| {
///         let after = from.sequence().unwrap_or_default();
///         send(http.get(format!("https://api.openai.com/v1/responses/resp_1?stream=true&starting_after={after}")))
///     });
/// # drop(response);
/// # }
/// ```
///
/// ```
/// use futures_core::Stream;
/// use retry_runtime::http::ResponseExt;
/// use retry_runtime::sse::{self, Event};
/// use std::future::poll_fn;
/// use std::pin::Pin;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n: keep-alive\n\ndata: [DONE]\n\n";
/// let response = reqwest::Response::from(http::Response::new(body));
/// let mut events = response.events();
/// let first = next(&mut events).await.unwrap().unwrap();
/// assert_eq!(first, Event::new("message", r#"{"choices":[{"delta":{"content":"Hi"}}]}"#));
/// assert!(sse::is_content(&first));
/// assert!(next(&mut events).await.is_none());
/// # }
/// # async fn next(events: &mut retry_runtime::http::ModelEvents) -> Option<Result<Event, retry_runtime::http::StreamError>> {
/// #     poll_fn(|cx| Pin::new(&mut *events).poll_next(cx)).await
/// # }
/// ```
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
#[must_use = "streams do nothing unless polled"]
pub struct ModelEvents(ModelStream<BodyChunks>);

#[cfg(feature = "reqwest")]
impl ModelEvents {
    pub(crate) fn new(response: reqwest::Response) -> ModelEvents {
        let url = response.url().as_str().to_owned();
        let (parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
        let head = Head {
            status: parts.status,
            headers: parts.headers,
            url: Some(url),
        };
        ModelEvents(ModelStream::new(head, BodyChunks(body)))
    }

    /// The largest event this stream accepts, in bytes, as
    /// [`Events::max_event_size`](crate::sse::Events::max_event_size) counts it; 1 MiB unless set.
    ///
    /// ```
    /// use retry_runtime::http::ResponseExt;
    /// let response = reqwest::Response::from(http::Response::new("data: {}\n\n"));
    /// let events = response.events().max_event_size(64 * 1024);
    /// # drop(events);
    /// ```
    pub fn max_event_size(self, bytes: usize) -> ModelEvents {
        ModelEvents(self.0.max_event_size(bytes))
    }

    /// Hand on events whose data is not JSON, for streams that carry text; `[DONE]` is then
    /// an event like any other. Error events are still errors.
    ///
    /// ```
    /// use futures_core::Stream;
    /// use retry_runtime::http::ResponseExt;
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let response = reqwest::Response::from(http::Response::new("data: plain text\n\n"));
    /// let mut events = response.events().raw();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let Poll::Ready(Some(Ok(event))) = Pin::new(&mut events).poll_next(&mut cx) else { panic!() };
    /// assert_eq!(event.data(), "plain text");
    /// ```
    pub fn raw(self) -> ModelEvents {
        ModelEvents(self.0.raw())
    }

    /// The stream's last event ID (the last `id:` as of its last blank line, kept after it
    /// ends or is cut): what a resume sends back as `Last-Event-ID`. See
    /// [`Events::last_event_id`](crate::sse::Events::last_event_id).
    ///
    /// ```
    /// use retry_runtime::http::ResponseExt;
    /// let response = reqwest::Response::from(http::Response::new("id: 7\nretry: 500\ndata:\n\n"));
    /// let events = response.events();
    /// assert_eq!(events.last_event_id(), None);
    /// ```
    pub fn last_event_id(&self) -> Option<&str> {
        self.0.last_event_id()
    }

    /// The reconnection time the server last set (a `retry:` line), kept after the stream
    /// ends or is cut: the floor under a resume's wait.
    pub fn reconnection_time(&self) -> Option<Duration> {
        self.0.reconnection_time()
    }
}

/// A model stream resumes from its last event ID, after its reconnection time.
#[cfg(feature = "reqwest")]
impl Resumable for ModelEvents {
    fn last_event_id(&self) -> Option<&str> {
        self.0.last_event_id()
    }

    fn reconnection_time(&self) -> Option<Duration> {
        self.0.reconnection_time()
    }
}

#[cfg(feature = "reqwest")]
impl Stream for ModelEvents {
    type Item = Result<Event, StreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0).poll_next(cx)
    }
}

#[cfg(feature = "reqwest")]
impl std::fmt::Debug for ModelEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEvents")
            .field("status", &self.0.head.status.as_u16())
            .field("raw", &self.0.raw)
            .field("done", &self.0.done)
            .finish_non_exhaustive()
    }
}

/// A `reqwest::Body` as a stream of its data chunks (trailers skipped), without reqwest's
/// `stream` feature. An error drops any URL it names, so nothing prints a query.
#[cfg(feature = "reqwest")]
struct BodyChunks(reqwest::Body);

#[cfg(feature = "reqwest")]
impl Stream for BodyChunks {
    type Item = Result<Bytes, reqwest::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        use http_body::Body as _;
        loop {
            return Poll::Ready(match ready!(Pin::new(&mut self.0).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => Some(Ok(chunk)),
                    Err(_trailers) => continue,
                },
                Some(Err(error)) => Some(Err(error.without_url())),
                None => None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use http::HeaderValue;

    use super::*;
    use crate::class::Class;
    use crate::http::Rule;
    use crate::sse::test_source::{Chunks, drain, next};

    fn head() -> Head {
        let mut headers = HeaderMap::new();
        headers.insert("x-should-retry", HeaderValue::from_static("true"));
        headers.insert("retry-after", HeaderValue::from_static("30"));
        Head {
            status: StatusCode::OK,
            headers,
            url: Some("https://user:pw@api.example.com/v1/messages?key=secret".into()),
        }
    }

    fn model(body: &str) -> ModelStream<Chunks> {
        ModelStream::new(head(), Chunks::new([body]))
    }

    fn items(stream: ModelStream<Chunks>) -> Vec<Result<Event, StreamError>> {
        drain(&mut Box::pin(stream))
    }

    /// The one error that ended the stream, after the events before it.
    fn error(body: &str) -> StreamError {
        let mut items = items(model(body));
        match items.pop() {
            Some(Err(error)) => error,
            other => panic!("an error last, not {other:?}"),
        }
    }

    #[test]
    fn an_error_event_is_a_provider_error_that_keeps_the_head() {
        let body = "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let items = items(model(body));
        assert_eq!(items.len(), 2);
        let Err(error) = &items[1] else {
            panic!("an error")
        };
        let http = error.http_error().unwrap();
        assert!(http.is_in_stream());
        assert_eq!(http.status(), StatusCode::OK);
        assert_eq!(http.headers()["retry-after"], "30");
        assert_eq!(http.url(), Some("https://api.example.com/v1/messages"));
        // Neither the head's x-should-retry nor its Retry-After applies.
        assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
    }

    #[test]
    fn data_with_a_top_level_error_object_is_a_provider_error() {
        let body =
            "data: {\"error\":{\"message\":\"m\",\"type\":\"server_error\",\"code\":null}}\n\n";
        let error = error(body);
        assert_eq!(error.http_error().unwrap().rule(), Rule::StreamServerError);
        assert_eq!(error.classify(), Class::ServerError);
    }

    #[test]
    fn data_of_type_error_is_a_provider_error_without_its_name() {
        let body = "data: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}\n\n";
        assert_eq!(
            error(body).classify(),
            Class::RateLimited { retry_after: None }
        );
    }

    #[test]
    fn a_responses_failed_event_is_a_provider_error_by_name_or_by_type() {
        let data = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"m"}}}"#;
        for body in [
            format!("event: response.failed\ndata: {data}\n\n"),
            format!("data: {data}\n\n"),
        ] {
            let error = error(&body);
            assert_eq!(
                error.http_error().unwrap().error_code(),
                Some("server_error")
            );
            assert_eq!(error.classify(), Class::ServerError);
        }
    }

    #[test]
    fn a_jsonrpc_error_response_ends_the_stream_as_an_answer_raw_or_not() {
        let data =
            r#"{"jsonrpc":"2.0","id":"call-1","error":{"code":-32602,"message":"Unknown tool"}}"#;
        let body = format!("id: prime-1\ndata: \n\nid: 2\ndata: {data}\n\n");
        for stream in [model(&body), model(&body).raw()] {
            let items = items(stream);
            assert_eq!(items.len(), 2, "the priming event, then the answer");
            let Err(error) = &items[1] else {
                panic!("an error")
            };
            assert_eq!(error.classify(), Class::Definitive);
            let http = error.http_error().unwrap();
            assert_eq!(http.rule(), Rule::JsonRpcError);
            assert_eq!(http.body(), data);
            assert_eq!(http.error_code(), Some("-32602"));
            assert_eq!(
                error.to_string(),
                "HTTP 200 OK from https://api.example.com/v1/messages: JSON-RPC error response inside the stream (code -32602)"
            );
        }
    }

    #[test]
    fn a_provider_error_with_an_id_but_no_jsonrpc_version_stays_the_providers() {
        // OpenRouter's mid-stream error carries the generation's id.
        let body = "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"error\":{\"code\":\"server_error\",\"message\":\"Provider disconnected\"}}\n\n";
        let error = error(body);
        assert_eq!(error.http_error().unwrap().rule(), Rule::StreamServerError);
        assert_eq!(error.classify(), Class::ServerError);
        // A JSON-RPC message that is not an error response is no answer of this kind.
        for data in [
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1}}"#,
            r#"{"jsonrpc":"2.0","id":{},"error":{"code":1}}"#,
            r#"{"jsonrpc":"1.0","id":1,"error":{"code":1}}"#,
        ] {
            let error = self::error(&format!("data: {data}\n\n"));
            assert_eq!(error.classify(), Class::ServerError, "{data}");
        }
    }

    #[test]
    fn a_nested_error_field_is_not_a_provider_error() {
        let body = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"error\":null}}\n\n";
        assert!(items(model(body)).iter().all(Result::is_ok));
    }

    #[test]
    fn data_that_is_not_json_is_a_malformed_frame_and_definitive() {
        let items = items(model("data: {\"a\":1}\n\ndata: {\"a\":\n\ndata: {}\n\n"));
        assert_eq!(items.len(), 2, "the stream ends at the error");
        let Err(error) = &items[1] else {
            panic!("an error")
        };
        assert_eq!(error.classify(), Class::Definitive);
        assert!(error.http_error().is_none());
        assert_eq!(
            error.to_string(),
            "a malformed event in the model stream: its data is not JSON (line 1 column 5)"
        );
    }

    #[test]
    fn done_ends_the_stream_and_is_not_handed_on() {
        let source = Chunks::new(["data: {\"n\":1}\n\ndata: [DONE]\n\n"]).then_forever(b"data: x");
        let pulled = source.pulled();
        let mut stream = Box::pin(ModelStream::new(head(), source));
        assert_eq!(next(&mut stream).unwrap().unwrap().data(), "{\"n\":1}");
        assert!(next(&mut stream).is_none());
        assert!(next(&mut stream).is_none());
        // Nothing after `[DONE]` is read.
        assert_eq!(pulled.load(std::sync::atomic::Ordering::Relaxed), 29);
    }

    #[test]
    fn empty_events_are_not_errors() {
        let items = items(model("data:\n\nevent: ping\ndata\n\ndata: {}\n\n"));
        let data: Vec<_> = items
            .iter()
            .map(|item| item.as_ref().unwrap().data())
            .collect();
        assert_eq!(data, ["", "", "{}"]);
    }

    #[test]
    fn comments_never_reach_the_model_path() {
        let items = items(model(": OPENROUTER PROCESSING\n\ndata: {}\n\n"));
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn an_event_over_the_cap_is_definitive() {
        let body = format!("data: \"{}\"\n\n", "x".repeat(100));
        let mut stream = Box::pin(model(&body).max_event_size(64));
        let error = next(&mut stream).unwrap().unwrap_err();
        assert_eq!(error.classify(), Class::Definitive);
        assert_eq!(
            error.to_string(),
            "an event in the model stream is larger than its limit of 64 bytes"
        );
        assert!(next(&mut stream).is_none());
    }

    #[test]
    fn a_body_cut_off_is_classified_as_its_error_is() {
        let source = Chunks::new(["data: {}\n\ndata: {\"par"]).then_cut();
        let mut stream = Box::pin(ModelStream::new(head(), source));
        assert!(next(&mut stream).unwrap().is_ok());
        let cut = next(&mut stream).unwrap().unwrap_err();
        assert_eq!(cut.classify(), Class::Transport);
        assert_eq!(cut.to_string(), "the model stream failed mid-read");
        let source = cut
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(source.kind(), std::io::ErrorKind::ConnectionReset);
        assert!(next(&mut stream).is_none());
    }

    #[test]
    fn in_raw_mode_an_mcp_priming_event_is_a_keep_alive_not_content_and_not_malformed() {
        let body = "id: prime-1\nretry: 500\ndata: \n\n";
        let items = items(model(body).raw());
        assert_eq!(items.len(), 1);
        let event = items[0].as_ref().expect("a keep-alive, not an error");
        assert_eq!((event.data(), event.id()), ("", Some("prime-1")));
        assert!(!crate::sse::is_content(event));
    }

    #[test]
    fn raw_mode_hands_on_text_and_done_but_not_error_events() {
        let body = "data: plain text\n\ndata: [DONE]\n\nevent: error\ndata: overloaded\n\n";
        let items = items(model(body).raw());
        let data: Vec<_> = items[..2]
            .iter()
            .map(|item| item.as_ref().unwrap().data())
            .collect();
        assert_eq!(data, ["plain text", "[DONE]"]);
        let Err(error) = &items[2] else {
            panic!("an error")
        };
        assert_eq!(error.http_error().unwrap().rule(), Rule::StreamUnknown);
    }

    #[test]
    fn raw_mode_still_reads_a_json_error_object() {
        let body = "data: {\"error\":{\"type\":\"overloaded_error\"}}\n\n";
        let mut stream = Box::pin(model(body).raw());
        let error = next(&mut stream).unwrap().unwrap_err();
        assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
    }

    #[test]
    fn a_failed_head_gives_one_error_by_its_status_and_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        let head = Head {
            status: StatusCode::SERVICE_UNAVAILABLE,
            headers,
            url: None,
        };
        let stream = ModelStream::new(head, Chunks::new([r#"{"error":"busy"}"#]));
        let items = items(stream);
        assert_eq!(items.len(), 1);
        let Err(error) = &items[0] else {
            panic!("an error")
        };
        assert!(!error.http_error().unwrap().is_in_stream());
        assert_eq!(
            error.classify(),
            Class::Unavailable {
                retry_after: Some(std::time::Duration::from_secs(7))
            }
        );
    }

    #[test]
    fn a_provider_error_never_prints_its_body_or_the_urls_query() {
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the user's secret prompt\"}}\n\n";
        let error = error(body);
        for printed in [error.to_string(), format!("{error:?}")] {
            assert!(!printed.contains("secret"), "{printed}");
            assert!(!printed.contains("pw"), "{printed}");
        }
        assert_eq!(
            error.to_string(),
            "HTTP 200 OK from https://api.example.com/v1/messages: error event inside the stream (api_error)"
        );
    }

    #[test]
    fn a_stream_error_is_one_word_and_can_cross_threads() {
        fn send_sync_static<T: Send + Sync + 'static>() {}
        send_sync_static::<StreamError>();
        assert_eq!(size_of::<StreamError>(), size_of::<usize>());
    }

    #[test]
    fn model_events_are_send_unpin_and_static() {
        fn send_unpin_static<T: Send + Unpin + 'static>() {}
        send_unpin_static::<ModelEvents>();
    }

    #[test]
    fn events_from_a_reqwest_response_drop_the_urls_secrets() {
        use reqwest::ResponseBuilderExt as _;
        let url = reqwest::Url::parse("https://api.example.com/v1/chat?key=secret").unwrap();
        let response = http::Response::builder()
            .url(url)
            .body("data: {\"error\":{\"code\":\"rate_limit_exceeded\"}}\n\n")
            .unwrap();
        let mut events = ModelEvents::new(reqwest::Response::from(response));
        let error = next(&mut events).unwrap().unwrap_err();
        assert_eq!(error.classify(), Class::RateLimited { retry_after: None });
        assert_eq!(
            error.http_error().unwrap().url(),
            Some("https://api.example.com/v1/chat")
        );
        assert!(next(&mut events).is_none());
    }
}
