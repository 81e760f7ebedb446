//! Testing code that retries (feature `test-util`): a scope where waits are recorded, not
//! slept, and jitter is fixed; and, with feature `http` too, fault scripts: a provider that
//! fails exactly as scripted, in-process or on a real socket ([`FaultServer`], feature
//! `test-server`). With `test-util` off, the default clock never looks for a scope, as
//! tokio's test machinery is kept off the production path.
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
//! Against a real server (the README's "Testing code that retries"):
//!
#![doc = concat!("```\n", include_str!("../../doc/testing_example.rs"), "```")]

#[cfg(feature = "http")]
mod act;
#[cfg(feature = "http")]
mod call;
mod scope;
#[cfg(feature = "http")]
mod script;
#[cfg(feature = "test-server")]
mod server;
#[cfg(feature = "stream")]
mod stream_of;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use act::{Act, ScriptedEvent};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use call::ActError;
pub use scope::{Recorded, scope, scope_with_draw};
pub(crate) use scope::{after_skipped, before_skipped, draw, record};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use script::{Asked, Script};
#[cfg(feature = "test-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-server")))]
pub use server::FaultServer;
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub use stream_of::{StreamOf, collect, stream_of};
