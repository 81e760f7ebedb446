//! [`Fleet`]: upstreams' pauses and outage gates shared across the processes of a fleet
//! through Redis.
//!
//! Nothing is on an attempt's path: an attempt reads its process's own [`Upstream`], the
//! mirror, which a subscription keeps fresh (with a read every second as the backstop for
//! missed messages and reconnects). A pause a process learns goes out in the background,
//! through a bounded queue (full: dropped and counted, never blocking a call). Every Redis
//! operation is bounded by a short timeout, and a breaker skips Redis for a while after
//! repeated failures: while Redis is slow, down or unreachable, each process behaves exactly as
//! its in-process upstream does. Times are Redis's own (`TIME`), and travel as remaining
//! durations, so hosts whose clocks differ agree.

mod breaker;
mod budget;
mod memory;
mod scripts;
mod tasks;

pub use budget::FleetBudget;
pub use memory::FleetMemory;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;

use crate::class::Class;
use crate::policy::Policy;
use crate::upstream::{FleetSink, Upstream};
use breaker::Breaker;
use tasks::{backstop, write};

/// How long one Redis operation may take before it counts as failed: 50 ms.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);
/// How often each process reads every shared upstream's pause, the backstop for missed
/// messages and reconnects: 1 s.
pub const DEFAULT_BACKSTOP: Duration = Duration::from_secs(1);

/// How a [`Fleet`] talks to Redis.
///
/// ```
/// use retry_runtime::fleet::FleetConfig;
/// use std::time::Duration;
///
/// let config = FleetConfig::new("agents").timeout(Duration::from_millis(20));
/// assert_eq!(config.namespace(), "agents");
/// ```
#[derive(Debug, Clone)]
pub struct FleetConfig {
    namespace: String,
    timeout: Duration,
    backstop: Duration,
    queue: usize,
    budget: Option<FleetBudget>,
}

impl FleetConfig {
    /// Keys and channels under `namespace`; the defaults for the rest.
    pub fn new(namespace: impl Into<String>) -> FleetConfig {
        FleetConfig {
            namespace: namespace.into(),
            timeout: DEFAULT_TIMEOUT,
            backstop: DEFAULT_BACKSTOP,
            queue: 1024,
            budget: None,
        }
    }

    /// Bound each shared upstream's retries by `budget`, a ratio of the fleet's requests on it
    /// (none by default: the calls' own quotas bound them, as they do without a fleet). A retry
    /// that finds the budget spent waits for a token within its ladder's allowance, its budget
    /// and its turn, then ends as a call whose quota is spent does: [`StopReason::Quota`].
    ///
    /// [`StopReason::Quota`]: crate::StopReason::Quota
    #[must_use]
    pub fn retry_budget(mut self, budget: FleetBudget) -> FleetConfig {
        self.budget = Some(budget);
        self
    }

    /// The retry budget, if one was given.
    pub fn budget(&self) -> Option<FleetBudget> {
        self.budget
    }

    /// Each Redis operation's timeout ([`DEFAULT_TIMEOUT`], 50 ms).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> FleetConfig {
        self.timeout = timeout;
        self
    }

    /// How often every shared upstream's pause is read again ([`DEFAULT_BACKSTOP`], 1 s).
    #[must_use]
    pub fn backstop(mut self, every: Duration) -> FleetConfig {
        self.backstop = every.max(Duration::from_millis(10));
        self
    }

    /// The reports waiting for Redis at most (1024); past it, a report is dropped and counted.
    #[must_use]
    pub fn queue(mut self, reports: usize) -> FleetConfig {
        self.queue = reports.max(1);
        self
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

/// What went wrong making a [`Fleet`]: only its configuration, never Redis being away.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The Redis URL does not parse.
    #[error(
        "the fleet store's Redis URL is not one redis-rs reads ({0}); write it like redis://127.0.0.1:6379"
    )]
    Url(#[from] redis::RedisError),
    /// No tokio runtime to run the fleet store's background tasks in.
    #[error("the fleet store runs its tasks on tokio: make it inside a tokio runtime")]
    NoRuntime,
}

/// The upstreams' pauses and outage gates, shared across the processes of a fleet through
/// Redis. Made once per process with [`Fleet::connect`]; [`share`](Fleet::share) each
/// `static` [`Upstream`] the fleet shares, by its name.
///
/// - **The pause.** A provider's hint any process learns pauses the upstream in every
///   process: one atomic script keeps the latest end (a shorter hint never shortens it),
///   capped, and publishes it.
/// - **The outage gate.** Every outage failure is counted in Redis; the gate opens across the
///   fleet when the upstream's threshold (3 within 10 s, [`Upstream::gate_after`]) is met by
///   failures from two processes or more, or by a provider's own `503` or `529`, which counts
///   alone (a transport error from one process does not: one host's broken network cannot
///   close an upstream to the fleet). The process whose failure opened it probes, on its
///   ladder; the others wait for the gate to close. The prober holds a lease past its next
///   probe: a crashed prober frees it, and the next process to read the gate takes it over.
/// - **The retry budget**, if the configuration gives one ([`FleetConfig::retry_budget`]):
///   each upstream's retries across the fleet at most a ratio of its requests, plus a floor;
///   each process counts its requests and leases a few tokens at a time ([`FleetBudget`]).
///
/// Making one never waits for Redis, and Redis being away never fails a call: the process
/// goes on as an in-process upstream would, and says so in its log (target `retry`).
///
/// ```no_run
/// use retry_runtime::Upstream;
/// use retry_runtime::fleet::{Fleet, FleetConfig};
///
/// static OPENAI: Upstream = Upstream::new("openai");
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), retry_runtime::fleet::FleetError> {
/// let fleet = Fleet::connect("redis://127.0.0.1:6379", FleetConfig::new("agents"))?;
/// fleet.share(&OPENAI);
/// # Ok(())
/// # }
/// ```
///
/// Sharing lasts while a clone of the `Fleet` lives: when the last is dropped, its tasks stop
/// and each upstream it shared is its process's alone again (its retries unbudgeted, a gate
/// that waited for another process's probe probed here), so a later `Fleet` may share it.
#[derive(Debug, Clone)]
pub struct Fleet {
    shared: Arc<FleetShared>,
    /// Dropped with the last clone: stops the sharing.
    _member: Arc<FleetHandle>,
}

/// What a `Fleet`'s last clone takes with it: its background tasks, and its upstreams'
/// sharing.
#[derive(Debug)]
struct FleetHandle {
    shared: Arc<FleetShared>,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Drop for FleetHandle {
    fn drop(&mut self) {
        let subscription = lock(&self.shared.subscription).take();
        for task in self.tasks.iter().chain(&subscription) {
            task.abort();
        }
        for upstream in lock(&self.shared.upstreams).drain(..) {
            upstream.fleet_side().unshare();
        }
    }
}

#[derive(Debug)]
struct FleetShared {
    /// Redis, or (`None`) the in-memory fake in `memory`.
    client: Option<redis::Client>,
    memory: Option<Arc<FleetMemory>>,
    config: FleetConfig,
    /// This process, so that it skips its own messages.
    origin: u64,
    reports: mpsc::Sender<FleetReport>,
    upstreams: Mutex<Vec<&'static Upstream>>,
    dropped: AtomicU64,
    breaker: Breaker,
    /// A subscription was started, and has not ended.
    subscribed: AtomicBool,
    /// The subscription is made: messages arrive.
    listening: AtomicBool,
    /// Every shared upstream was read since the subscription began listening: nothing it
    /// could have missed is left to read.
    caught_up: AtomicBool,
    /// The subscription's task, stopped with the fleet's last handle.
    subscription: Mutex<Option<tokio::task::AbortHandle>>,
}

/// What a process learned, on its way to Redis.
#[derive(Debug)]
pub(super) enum FleetReport {
    /// A pause of `pause_ms` (capped at `cap_ms`) by a hint of `kind`.
    Pause {
        upstream: &'static str,
        pause_ms: u64,
        cap_ms: u64,
        kind: &'static str,
    },
    /// An outage failure, the provider's own (`authored`) or a transport's; the first probe
    /// would go `first_ms` after the gate opened.
    Outage {
        upstream: &'static str,
        authored: bool,
        first_ms: u64,
    },
    /// This process's probe failed; the next goes in `next_ms`.
    ProbeFailed {
        upstream: &'static str,
        next_ms: u64,
    },
    /// A success or an answer closed the gate here.
    Closed { upstream: &'static str },
    /// An upstream's pacer turned on here: the processes sharing it are counted, and each
    /// paces on its slice.
    Paced,
}

/// How long past its next probe a prober holds the fleet's probe: a crashed prober frees it
/// then.
pub(super) const LEASE_SLACK: Duration = Duration::from_secs(1);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Fleet {
    /// A fleet store on the Redis at `url`, its tasks started on the current tokio runtime. It
    /// connects in the background: Redis need not be up.
    pub fn connect(url: &str, config: FleetConfig) -> Result<Fleet, FleetError> {
        let client = redis::Client::open(url)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| FleetError::NoRuntime)?;
        let (shared, queue) = FleetShared::new(Some(client), None, config);
        let backstop = runtime.spawn(backstop(Arc::downgrade(&shared)));
        Ok(Fleet::started(
            &runtime,
            shared,
            queue,
            Some(backstop.abort_handle()),
        ))
    }

    /// A fleet store on `memory`, an in-memory fake of Redis shared by the `Fleet`s made on it,
    /// each standing for one process: for simulations, such as the storm example's fleet table.
    pub fn in_memory(memory: &Arc<FleetMemory>, config: FleetConfig) -> Result<Fleet, FleetError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| FleetError::NoRuntime)?;
        let (shared, queue) = FleetShared::new(None, Some(Arc::clone(memory)), config);
        memory.join(&shared);
        Ok(Fleet::started(&runtime, shared, queue, None))
    }

    /// The fleet store's writer and budget keeper started beside `also` (the backstop, on
    /// Redis), all stopped with the last handle.
    fn started(
        runtime: &tokio::runtime::Handle,
        shared: Arc<FleetShared>,
        queue: mpsc::Receiver<FleetReport>,
        also: Option<tokio::task::AbortHandle>,
    ) -> Fleet {
        let writer = runtime.spawn(write(Arc::clone(&shared), queue));
        let mut tasks = vec![writer.abort_handle()];
        tasks.extend(also);
        if let Some(budget) = shared.config.budget {
            let keeper = runtime.spawn(budget::keep(Arc::downgrade(&shared), budget));
            tasks.push(keeper.abort_handle());
        }
        Fleet::made(shared, tasks)
    }

    fn made(shared: Arc<FleetShared>, tasks: Vec<tokio::task::AbortHandle>) -> Fleet {
        let member = FleetHandle {
            shared: Arc::clone(&shared),
            tasks,
        };
        Fleet {
            shared,
            _member: Arc::new(member),
        }
    }
}

impl FleetShared {
    fn new(
        client: Option<redis::Client>,
        memory: Option<Arc<FleetMemory>>,
        config: FleetConfig,
    ) -> (Arc<FleetShared>, mpsc::Receiver<FleetReport>) {
        let (reports, queue) = mpsc::channel(config.queue);
        let shared = Arc::new(FleetShared {
            client,
            memory,
            config,
            origin: rand::random(),
            reports,
            upstreams: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            breaker: Breaker::new(),
            subscribed: AtomicBool::new(false),
            listening: AtomicBool::new(false),
            caught_up: AtomicBool::new(false),
            subscription: Mutex::new(None),
        });
        (shared, queue)
    }
}

impl Fleet {
    /// Share `upstream`'s pauses and outage gate with the fleet, under its name: what this
    /// process learns goes out, and what the others learn holds here. `false` if it was
    /// already shared.
    pub fn share(&self, upstream: &'static Upstream) -> bool {
        let sink = Arc::new(Sink(Arc::clone(&self.shared)));
        if !upstream.fleet_side().share(sink) {
            return false;
        }
        lock(&self.shared.upstreams).push(upstream);
        true
    }

    /// Reports dropped because the queue was full, or Redis was skipped by the breaker.
    pub fn dropped_reports(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Whether Redis is being skipped after repeated failures: each process goes on alone.
    pub fn is_degraded(&self) -> bool {
        self.shared.breaker.is_open()
    }

    /// Whether this process hears the others now: its subscription is up. For a health check;
    /// a process that does not still shares through the backstop's reads.
    pub fn is_subscribed(&self) -> bool {
        self.shared.listening.load(Ordering::Acquire)
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An upstream's way out to the fleet: a report on the queue, never waited for.
struct Sink(Arc<FleetShared>);

impl Sink {
    fn send(&self, report: FleetReport) {
        if self.0.reports.try_send(report).is_err() {
            self.0.dropped();
        }
    }
}

impl FleetSink for Sink {
    fn paused(&self, upstream: &'static str, pause: Duration, cap: Duration, class: Class) {
        self.send(FleetReport::Pause {
            upstream,
            pause_ms: millis(pause),
            cap_ms: millis(cap),
            kind: kind_of(class),
        });
    }

    fn outage(&self, upstream: &'static str, class: Class, first_probe: Duration) {
        self.send(FleetReport::Outage {
            upstream,
            authored: matches!(class, Class::Unavailable { .. }),
            first_ms: millis(first_probe),
        });
    }

    fn probe_failed(&self, upstream: &'static str, next: Duration) {
        self.send(FleetReport::ProbeFailed {
            upstream,
            next_ms: millis(next),
        });
    }

    fn closed(&self, upstream: &'static str) {
        self.send(FleetReport::Closed { upstream });
    }

    fn paced(&self, _: &'static str) {
        self.send(FleetReport::Paced);
    }
}

/// A pause's class, as the fleet's messages name it.
fn kind_of(class: Class) -> &'static str {
    match class {
        Class::RateLimited { .. } => "rate_limited",
        _ => "unavailable",
    }
}

/// The class a pause of `kind` holds calls back with, for `left`.
fn class_of(kind: &str, left: Duration) -> Class {
    match kind {
        "rate_limited" => Class::RateLimited {
            retry_after: Some(left),
        },
        _ => Class::Unavailable {
            retry_after: Some(left),
        },
    }
}

impl FleetShared {
    /// An operation failed (`why`). If the store is degraded with it, every gate held here for
    /// another process's probe becomes this process's own again: it probes on its own, as an
    /// in-process upstream does, rather than wait for a close it cannot hear.
    fn failed(&self, why: &'static str) {
        if self.breaker.failed(why) {
            for upstream in lock(&self.upstreams).iter() {
                if upstream.fleet_side().waits_for_remote_probe() {
                    upstream.fleet_side().gated(true, Duration::ZERO);
                }
                // The fleet's budget cannot be topped up: the calls' own quotas bound them.
                upstream.fleet_side().budgeted(false);
            }
        }
    }

    /// A report dropped: the queue was full, or the breaker skipped Redis.
    fn dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        crate::meter::fleet("dropped");
    }

    /// The key of `upstream`'s pause: the namespace and the upstream in one hash tag, so an
    /// upstream's keys share one Redis Cluster slot.
    fn key(&self, upstream: &str) -> String {
        format!("{{{}:{upstream}}}:pause", self.config.namespace)
    }

    /// The key of `upstream`'s retry budget, in the upstream's slot.
    fn budget_key(&self, upstream: &str) -> String {
        format!("{{{}:{upstream}}}:budget", self.config.namespace)
    }

    /// The key of the fleet's members (a sorted set by when each was last seen), counted
    /// while any shared upstream is paced.
    fn members_key(&self) -> String {
        format!("{{{}}}:members", self.config.namespace)
    }

    /// `members` processes share the fleet's upstreams: each paced one paces on its slice.
    fn members(&self, members: u32) {
        for upstream in lock(&self.upstreams).iter() {
            upstream.fleet_side().members(members);
        }
    }

    /// Whether any shared upstream is paced.
    fn any_paced(&self) -> bool {
        lock(&self.upstreams)
            .iter()
            .any(|upstream| upstream.fleet_side().is_paced())
    }

    fn channel(&self) -> String {
        format!("{}:pauses", self.config.namespace)
    }

    /// The key of `upstream`'s gate (its prober and the prober's lease), and of its recent
    /// outage failures, in the upstream's slot.
    fn gate_keys(&self, upstream: &str) -> (String, String) {
        let tag = format!("{{{}:{upstream}}}", self.config.namespace);
        (format!("{tag}:outages"), format!("{tag}:gate"))
    }

    /// The task's connection, made now if it has none (bounded by the timeout); `None`, the
    /// failure counted, where Redis cannot be reached.
    async fn reach<'c>(
        &self,
        connection: &'c mut Option<ConnectionManager>,
    ) -> Option<&'c mut ConnectionManager> {
        if connection.is_none() {
            *connection = self.connection().await;
        }
        if connection.is_none() {
            self.failed("cannot connect");
        }
        connection.as_mut()
    }

    /// A connection, bounded by the timeout; `None` where Redis cannot be reached in it.
    async fn connection(&self) -> Option<ConnectionManager> {
        let client = self.client.as_ref()?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.config.timeout))
            .set_response_timeout(Some(self.config.timeout))
            .set_number_of_retries(0);
        let made = ConnectionManager::new_with_config(client.clone(), config);
        match tokio::time::timeout(self.config.timeout, made).await {
            Ok(Ok(connection)) => Some(connection),
            _ => None,
        }
    }

    /// `upstream`, if this process shares it.
    fn upstream(&self, name: &str) -> Option<&'static Upstream> {
        lock(&self.upstreams)
            .iter()
            .copied()
            .find(|upstream| upstream.name() == name)
    }

    /// What another process learned, as its message says it: `pause origin name left_ms
    /// kind`, `open origin name prober first_probe_ms`, or `close origin name`.
    fn told(&self, message: &str) {
        let mut parts = message.split(' ');
        let (Some(what), Some(origin), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        if origin.parse() == Ok(self.origin) {
            return;
        }
        let Some(upstream) = self.upstream(name) else {
            return;
        };
        match (what, parts.next(), parts.next()) {
            ("pause", Some(left), Some(kind)) => {
                if let Ok(left) = left.parse::<u64>() {
                    let left = Duration::from_millis(left);
                    upstream.fleet_side().paused(left, class_of(kind, left));
                }
            }
            ("open", Some(prober), Some(first)) => {
                let probes = prober.parse() == Ok(self.origin);
                let first = Duration::from_millis(first.parse().unwrap_or(0));
                upstream.fleet_side().gated(probes, first);
            }
            ("close", _, _) => upstream.fleet_side().closed(),
            _ => {}
        }
    }
}
