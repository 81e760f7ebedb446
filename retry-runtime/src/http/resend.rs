//! OpenTelemetry's one stable retry attribute, `http.request.resend_count`: how many times a
//! request was sent before this one. The HTTP layers put it in each resent request's
//! extensions, for the client's own span (reqwest-tracing's, say), and, with the `spans`
//! feature, on the attempt's span.

/// How many times this request was sent before: 1 on the first resend, never on the first
/// send (OpenTelemetry's `http.request.resend_count`). [`RetryLayer`](crate::tower::RetryLayer)
/// puts it in a resent `http::Request`'s extensions, and
/// [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) in the chain's.
///
/// ```
/// use retry_runtime::http::ResendCount;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(ResendCount(2));
/// assert_eq!(request.extensions().get::<ResendCount>(), Some(&ResendCount(2)));
/// assert_eq!(ResendCount::of_attempt(1), None);
/// assert_eq!(ResendCount::of_attempt(3), Some(ResendCount(2)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResendCount(pub u32);

impl ResendCount {
    /// The resend count of attempt `attempt` (1 for the first): none for the first send.
    pub const fn of_attempt(attempt: u32) -> Option<ResendCount> {
        if attempt > 1 {
            Some(ResendCount(attempt - 1))
        } else {
            None
        }
    }

    /// Record the count on the current span: the attempt's, when an attempt is polled with
    /// the `spans` feature on (elsewhere a span without the field ignores it).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn record(self) {
        tracing::Span::current().record("http.request.resend_count", self.0);
    }
}
