//! A script: the [`Act`]s a provider plays, in order, per path (or per upstream), with a
//! default past their end, and the record of every request it was asked. It must not do
//! I/O: the server and the adapters ask it what to play and play it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::test_scope::ScopeClock;
use crate::testing::act::Act;

/// The status a script answers once a path's acts have run out, unless told otherwise:
/// `410 Gone`, an answer, so a ladder that made more attempts than the test scripted stops.
const UNSCRIPTED: u16 = 410;

/// What a provider does on each request, in order: one list of [`Act`]s for every path, or
/// one per path (or per upstream name, for the closure adapter), and a default for the
/// requests past the end. A clone shares the script and its record.
///
/// ```
/// use retry_runtime::testing::{Act, Script};
/// use std::time::Duration;
///
/// let script = Script::new([Act::rate_limited(Duration::from_secs(30)), Act::ok("reply")])
///     .on("/v1/models", [Act::ok("[]")])
///     .otherwise(Act::unavailable());
/// assert_eq!(script.asked().len(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    shared: Arc<ScriptShared>,
}

#[derive(Debug)]
struct ScriptShared {
    plan: Mutex<Plan>,
    asked: Mutex<Vec<Asked>>,
    /// When the script was made: the origin of [`Asked::at`].
    origin: Instant,
    notify: tokio::sync::Notify,
}

#[derive(Debug)]
struct Plan {
    any: VecDeque<Act>,
    paths: HashMap<String, VecDeque<Act>>,
    /// `None`: the server and `call` answer [`UNSCRIPTED`]; a layer passes the request on.
    otherwise: Option<Act>,
}

/// One request a script was asked, as it arrived: for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Asked {
    /// `GET`, `POST`; empty for the closure adapter.
    pub method: String,
    /// The path and query (`/v1/responses/r1?starting_after=3`), or the upstream's name for
    /// the closure adapter.
    pub path: String,
    /// Its `Last-Event-ID` header, if it had one.
    pub last_event_id: Option<String>,
    /// Its body, as text (lossy).
    pub body: String,
    /// When it arrived, since the script was made, by the test scope's clock: a 30 s
    /// `Retry-After` waited out in a scope puts 30 s between two requests. The in-process
    /// players read the scope of the task that asks; a `FaultServer`
    /// reads the scope it was started in (outside one, tokio's clock).
    pub at: Duration,
}

impl Script {
    /// A script whose `acts` answer every path, in order.
    ///
    /// ```
    /// let _ = retry_runtime::testing::Script::new([retry_runtime::testing::Act::ok("hi")]);
    /// ```
    pub fn new(acts: impl IntoIterator<Item = Act>) -> Script {
        Script {
            shared: Arc::new(ScriptShared {
                plan: Mutex::new(Plan {
                    any: acts.into_iter().collect(),
                    paths: HashMap::new(),
                    otherwise: None,
                }),
                asked: Mutex::new(Vec::new()),
                origin: Instant::now(),
                notify: tokio::sync::Notify::new(),
            }),
        }
    }

    /// This script, with `acts` for requests to `path` (the path without its query; for the
    /// closure adapter, an upstream's name) played before the acts for every path.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, Script};
    /// let _ = Script::new([]).on("/mcp", [Act::ok("{}")]);
    /// ```
    pub fn on(self, path: &str, acts: impl IntoIterator<Item = Act>) -> Script {
        self.plan()
            .paths
            .entry(path.to_owned())
            .or_default()
            .extend(acts);
        self
    }

    /// This script, answering `act` once its acts have run out. By default the server and
    /// [`call`](Script::call) answer `410 Gone`, and the tower layer and the reqwest
    /// middleware pass the request on to the service or client they wrap.
    ///
    /// ```
    /// use retry_runtime::testing::{Act, Script};
    /// let _ = Script::new([]).otherwise(Act::ok("always"));
    /// ```
    pub fn otherwise(self, act: Act) -> Script {
        self.plan().otherwise = Some(act);
        self
    }

    /// Every request asked so far, in order.
    ///
    /// ```
    /// assert!(retry_runtime::testing::Script::new([]).asked().is_empty());
    /// ```
    pub fn asked(&self) -> Vec<Asked> {
        self.shared
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests were asked so far.
    ///
    /// ```
    /// assert_eq!(retry_runtime::testing::Script::new([]).requests(), 0);
    /// ```
    pub fn requests(&self) -> usize {
        self.shared
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Wait (in real time) until `count` requests have been asked.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// retry_runtime::testing::Script::new([]).wait_for_requests(0).await;
    /// # }
    /// ```
    pub async fn wait_for_requests(&self, count: usize) {
        loop {
            let notified = self.shared.notify.notified();
            if self.requests() >= count {
                return;
            }
            notified.await;
        }
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.shared
            .plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Record `asked` (its `at` set by `clock`) and take the act for it: the path's next,
    /// else the next for every path, else the default, else `410 Gone`.
    pub(crate) fn take(&self, asked: Asked, clock: &ScopeClock) -> Act {
        self.next(asked, clock).unwrap_or_else(|| {
            Act::status(UNSCRIPTED).with_body("no act was scripted for this request")
        })
    }

    /// Like [`take`](Script::take), `None` past the script with no default: a layer passes
    /// the request on.
    pub(crate) fn next(&self, mut asked: Asked, clock: &ScopeClock) -> Option<Act> {
        let key = asked.path.split('?').next().unwrap_or_default().to_owned();
        let act = {
            let mut plan = self.plan();
            let scripted = plan.paths.get_mut(&key).and_then(VecDeque::pop_front);
            scripted
                .or_else(|| plan.any.pop_front())
                .or_else(|| plan.otherwise.clone())
        };
        asked.at = clock.now().saturating_duration_since(self.shared.origin);
        self.shared
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(asked);
        self.shared.notify.notify_waiters();
        act
    }
}

/// A request's resume cursor: its `Last-Event-ID`, and the `starting_after` of its query.
#[cfg(any(
    feature = "test-server",
    feature = "tower",
    feature = "reqwest-middleware"
))]
pub(crate) fn cursor(path: &str, last_event_id: Option<&str>) -> (Option<String>, Option<u64>) {
    let starting_after = path.split_once('?').and_then(|(_, query)| {
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == "starting_after")
                .then(|| value.parse().ok())
                .flatten()
        })
    });
    (last_event_id.map(str::to_owned), starting_after)
}
