//! Testing code that retries (feature `test-util`; with it off, the default clock never looks
//! for a scope, as tokio keeps its test machinery off the production path).
//!
//! A test of retried code asserts what a user relies on (how many requests the provider saw,
//! which failures were retried, which waits were chosen) and never sleeps. Feature
//! `test-util` gives two pieces, and `test-server` a third:
//!
//! - **The scope.** [`scope(future)`](scope) records and skips every wait the ladder
//!   chooses, fixes jitter (every wait is its ideal; [`scope_with_draw`] fixes another draw),
//!   and counts the skipped waits as elapsed time for every deadline check, a turn's
//!   included. It returns the future's output and the [`Recorded`] waits.
//! - **A fault script** (with feature `http`). `Script::new(acts)` is what the provider does
//!   on each request, in order; `.on(path, acts)` scripts one path (or, in-process, one
//!   upstream's name) apart; `.otherwise(act)` answers past the end (`410 Gone` unless told).
//!   Each `Act` is one line, with the provider's own status, headers and body:
//!   `rate_limited(30 s)` (`Retry-After` in seconds), `rate_limited_until(date)`,
//!   `rate_limited_ms(1500)`, `anthropic_overloaded()` (`529 overloaded_error`),
//!   `openai_rate_limit_exceeded()`, `openai_insufficient_quota()`, `google_retry_info(7 s)`
//!   (`RESOURCE_EXHAUSTED` with `RetryInfo`), `google_daily_quota()` (a per-day
//!   `QuotaFailure`), `context_overflow()`, `unavailable()` (a `503` with no body),
//!   `grpc_status(code, pushback)` (feature `grpc`); below HTTP, `refused()`,
//!   `reset_mid_body()`, `hang()` (no answer until the attempt's timeout); streams,
//!   `events(list)` and its early ends `.cut_after(n)`, `.stall_after(n)`, `.close_after(n)`,
//!   `empty_stream()`, `overloaded_event()` (an error event before content), and resumes,
//!   `resume(list)` (after `Last-Event-ID` or `starting_after`) and
//!   `resume_replaying_last(list)`; and `ok(body)`.
//! - **Where it plays.** `FaultServer::start(script)` (feature `test-server`) serves it on a
//!   free port of 127.0.0.1, HTTP/1.1 and SSE, for a client you cannot wrap (reqwest,
//!   async-openai, an MCP client); it stops when dropped. `FaultLayer` (feature `tower`) and
//!   `FaultMiddleware` (feature `reqwest-middleware`) answer from the same script before the
//!   service or client they wrap, inside the retry layer, and pass the requests past it on.
//!   `script.call(key)` plays it in-process, as the body of a `Retry::run` attempt or a
//!   `#[retry]` function. All record what they were asked (`script.asked()`: method, path,
//!   `Last-Event-ID`, body, and the time by the scope's clock, so a 30 s `Retry-After` shows
//!   as 30 s between two requests).
//!
//! ```
//! use retry_runtime::{testing, Class, Policy, Retry};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (result, waits) = testing::scope(async {
//!     Retry::new(&Policy::AVAILABILITY)
//!         .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
//!         .await
//! })
//! .await;
//! assert_eq!(result.unwrap_err().attempts(), 4);
//! assert_eq!(waits.waits(), [250, 500, 1000].map(Duration::from_millis));
//! # }
//! ```
//!
//! The examples below need, as a dev-dependency, `retry-runtime` with `features =
//! ["test-server", "reqwest"]` (and `"sse"` for the stream), and `tokio` with `"macros"`.
//!
//! The scope over real connections, refused by a port where nothing listens:
//!
#![doc = concat!("```\n", include_str!("../../doc/testing_example.rs"), "```")]
//!
//! A `#[retry]` function meets a `429` with `Retry-After: 30`, then an answer: two requests,
//! one wait of 30 s, in milliseconds:
//!
#![cfg_attr(
    all(feature = "test-server", feature = "reqwest"),
    doc = concat!("```\n", include_str!("../../doc/testing_rate_limit.rs"), "```")
)]
//!
//! A stream cut after three events, and resumed from the third with `Last-Event-ID`: each
//! event reaches the caller once.
//!
#![cfg_attr(
    all(feature = "test-server", feature = "sse", feature = "reqwest"),
    doc = concat!("```\n", include_str!("../../doc/testing_stream_resume.rs"), "```")
)]
//!
//! A fallback from an overloaded upstream (`across`): one request to each, and no wait.
//!
#![cfg_attr(
    all(feature = "test-server", feature = "reqwest"),
    doc = concat!("```\n", include_str!("../../doc/testing_fallback.rs"), "```")
)]
//!
//! **Use the scope for tests against a real server.** `#[tokio::test(start_paused = true)]`
//! and `tokio::time::pause()` do not mix with real I/O: while the runtime waits on a socket,
//! tokio's paused clock jumps to the next pending timer, so a turn expires (or a client
//! timeout fires) after the first request, even one the server answers at once. The scope
//! keeps tokio's clock real and skips only the ladder's waits. `tokio::time::pause` is still
//! the tool where no socket is involved (a scripted operation, a stream from memory) or for a
//! timer of tokio's own (an attempt `timeout`, which the scope does not skip). A test of a
//! turn's deadline or an attempt timeout over real I/O uses short real durations, a few
//! hundred milliseconds.

#[cfg(feature = "http")]
mod act;
#[cfg(feature = "http")]
mod call;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod exchange;
#[cfg(feature = "tower")]
mod fault_layer;
#[cfg(feature = "reqwest-middleware")]
mod fault_middleware;
#[cfg(feature = "http")]
mod limits;
#[cfg(feature = "http")]
mod script;
#[cfg(feature = "test-server")]
mod server;
#[cfg(feature = "stream")]
mod stream_of;

pub use crate::test_scope::{Recorded, scope, scope_with_draw};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use act::{Act, ScriptedEvent};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use call::ActError;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "tower", feature = "reqwest-middleware")))
)]
pub use exchange::{ScriptedRequest, ScriptedResponse};
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use fault_layer::{FaultLayer, FaultService};
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub use fault_middleware::FaultMiddleware;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use script::{Asked, Script};
#[cfg(feature = "test-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-server")))]
pub use server::FaultServer;
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub use stream_of::{StreamOf, collect, stream_of};
