//! `Classify` for tonic's errors (feature `tonic`): a `Status` by [the table](super), its
//! hint from `grpc-retry-pushback-ms` or the `RetryInfo` in its details, and a per-day quota
//! from a `QuotaFailure` or an `ErrorInfo` there; a transport error is `Transport`.

use std::error::Error;
use std::time::Duration;

use tonic_types::StatusExt;

use super::{PUSHBACK, classify_status, parse_pushback};
use crate::class::{Class, Classify, is_per_day};

/// By the gRPC table: the code, A6's pushback (first) or `RetryInfo` as the hint, and a
/// per-day quota in the details. An `UNKNOWN` status whose source is a transport error (a
/// connection the channel lost) is `Transport`.
///
/// ```
/// use retry_runtime::{Class, Classify};
/// use std::time::Duration;
/// use tonic::{Code, Status};
///
/// assert_eq!(Status::unavailable("down").classify(), Class::Unavailable { retry_after: None });
/// let mut pushed_back = Status::unavailable("busy");
/// pushed_back.metadata_mut().insert("grpc-retry-pushback-ms", "1500".parse().unwrap());
/// assert_eq!(pushed_back.classify(), Class::Unavailable { retry_after: Some(Duration::from_millis(1500)) });
/// assert_eq!(Status::new(Code::Aborted, "conflict").classify(), Class::Definitive);
/// ```
impl Classify for tonic::Status {
    fn classify(&self) -> Class {
        let code = self.code() as i32;
        if code == tonic::Code::Unknown as i32 && from_transport(self) {
            return Class::Transport;
        }
        let pushback = self
            .metadata()
            .get(PUSHBACK)
            .map(|value| parse_pushback(value.as_bytes()));
        // The details are decoded only where no pushback outranks them.
        let retry_info: Option<Duration> = match pushback {
            Some(_) => None,
            None => self
                .get_details_retry_info()
                .and_then(|info| info.retry_delay)
                .filter(|delay| !delay.is_zero()),
        };
        classify_status(code, pushback, retry_info, names_a_daily_quota(self))
    }
}

/// The details name a quota counted per day.
fn names_a_daily_quota(status: &tonic::Status) -> bool {
    if status.details().is_empty() {
        return false;
    }
    let in_failure = status.get_details_quota_failure().is_some_and(|failure| {
        failure.violations.iter().any(|violation| {
            [
                &violation.quota_id,
                &violation.quota_metric,
                &violation.subject,
                &violation.description,
            ]
            .iter()
            .any(|name| is_per_day(name))
        })
    });
    in_failure
        || status.get_details_error_info().is_some_and(|info| {
            ["quota_limit", "quotaLimit"]
                .iter()
                .filter_map(|key| info.metadata.get(*key))
                .any(|name| is_per_day(name))
        })
}

/// Whether a transport error (or an I/O error) is among the status's sources.
fn from_transport(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn Error + 'static)> = status.source();
    while let Some(error) = source {
        if error.is::<tonic::transport::Error>() || error.is::<std::io::Error>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// A channel that could not connect, or lost its connection: no server answered.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use retry_runtime::{Class, Classify};
///
/// let refused = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect().await.unwrap_err();
/// assert_eq!(refused.classify(), Class::Transport);
/// # }
/// ```
impl Classify for tonic::transport::Error {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

/// A tonic client's error can hold an attempt its [`Upstream`](crate::Upstream) held back: a
/// `RESOURCE_EXHAUSTED` (a pause of a rate limit) or `UNAVAILABLE` (any other), with the
/// pause's hint as A6's pushback, so it classifies as the pause it was.
///
/// ```
/// use retry_runtime::{Class, Classify, UpstreamPaused};
/// use std::time::Duration;
///
/// let paused = UpstreamPaused::new("health", Class::RateLimited { retry_after: Some(Duration::from_millis(1500)) }, false);
/// let status = tonic::Status::from(paused);
/// assert_eq!(status.code(), tonic::Code::ResourceExhausted);
/// assert_eq!(status.classify(), Class::RateLimited { retry_after: Some(Duration::from_millis(1500)) });
/// ```
impl From<crate::upstream::UpstreamPaused> for tonic::Status {
    fn from(paused: crate::upstream::UpstreamPaused) -> Self {
        let message = paused.to_string();
        let mut status = match paused.classify() {
            Class::RateLimited { .. } => tonic::Status::resource_exhausted(message),
            _ => tonic::Status::unavailable(message),
        };
        if let Some(hint) = paused.retry_after()
            && let Ok(value) = hint.as_millis().to_string().parse()
        {
            status.metadata_mut().insert(PUSHBACK, value);
        }
        status
    }
}
