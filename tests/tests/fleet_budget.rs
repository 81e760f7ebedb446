//! The fleet's retry budget on a real `redis-server`: four real worker processes (the tests
//! crate's `fleet_budget_worker`), each with 120 calls arriving over 2 s on one upstream,
//! through a long outage (every request `503`), counted on the provider: first tries and
//! retries, by each request's `x-attempt`.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use retry_runtime::fleet::FleetBudget;
use retry_tests::redis_server::RedisServer;

const WORKERS: u32 = 4;
/// Calls per worker, arriving evenly over the storm.
const CALLS: u32 = 120;
/// How long the storm lasts.
const STORM: Duration = Duration::from_secs(2);
/// Time for the workers to start, and to lease, before the storm.
const LEAD: Duration = Duration::from_millis(1500);

/// What the provider saw: first tries, and retries.
#[derive(Debug, Default)]
struct Counted {
    first: AtomicU64,
    retries: AtomicU64,
}

async fn down(State(counted): State<Arc<Counted>>, headers: HeaderMap) -> StatusCode {
    let attempt = headers
        .get("x-attempt")
        .and_then(|value| value.to_str().ok()?.parse::<u32>().ok())
        .unwrap_or(1);
    let series = match attempt {
        1 => &counted.first,
        _ => &counted.retries,
    };
    series.fetch_add(1, Ordering::Relaxed);
    StatusCode::SERVICE_UNAVAILABLE
}

/// Four workers through a storm against a provider that is down throughout, with the fleet's
/// budget through `redis` (a URL) or each its own quota alone (`none`): the first tries and
/// retries the provider saw, the seconds from the first worker's start to the last one's end,
/// and the workers' reports.
async fn storm(redis: &str) -> (u64, u64, u64, Vec<String>) {
    let counted = Arc::new(Counted::default());
    let app = Router::new()
        .fallback(down)
        .with_state(Arc::clone(&counted));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let began = Instant::now();
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + LEAD;
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_fleet_budget_worker"))
                .env("FLEET_PROVIDER", addr.to_string())
                .env("FLEET_REDIS", redis)
                .env("FLEET_START_MS", start.as_millis().to_string())
                .env("FLEET_FOR_MS", STORM.as_millis().to_string())
                .env("FLEET_CALLS", CALLS.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a worker starts")
        })
        .collect();
    let mut reports = Vec::new();
    for worker in workers {
        let output = tokio::task::spawn_blocking(move || worker.wait_with_output())
            .await
            .unwrap()
            .expect("a worker ran");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        reports.push(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    let seconds = began.elapsed().as_secs() + 1;
    let first = counted.first.load(Ordering::Relaxed);
    let retries = counted.retries.load(Ordering::Relaxed);
    (first, retries, seconds, reports)
}

/// In a long outage, the fleet's retries are at most a fifth of its requests plus the floor,
/// counted on the provider; four per-process quotas (500 tokens each, 5 a retry) let the same
/// four processes make about four times as many, 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_long_outage_the_fleet_retries_at_most_its_budgets_ratio_of_requests() {
    let redis = RedisServer::start();
    let (first, retries, seconds, reports) = storm(&redis.url()).await;
    let bound = FleetBudget::percent(20).bound(first, seconds);
    let (alone_first, alone_retries, _, alone_reports) = storm("none").await;
    eprintln!(
        "a long outage, four processes: with the fleet's budget {first} first tries, {retries} retries \
         (at most {bound}: 20 % + 1 a second over {seconds} s), {reports:?}; \
         with four per-process quotas {alone_first} first tries, {alone_retries} retries, {alone_reports:?}"
    );
    assert!(retries <= bound, "{retries} retries, at most {bound}");
    // The four quotas allow 4 × 100 retries: the storm asks for far more than that.
    assert!(alone_retries >= 300, "{alone_retries}");
    assert!(
        alone_retries >= 3 * retries,
        "{alone_retries} against {retries}"
    );
    // The budget was spent, and calls ended on it, as a spent quota ends them.
    assert!(
        reports.iter().any(|report| !report.ends_with(" quota 0")),
        "{reports:?}"
    );
}

/// Without Redis (a URL where none answers), the budget never holds a retry: the per-process
/// quotas bound the retries, as with no fleet store, and no call waits on the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_the_per_process_quotas_bound_the_retries() {
    let nobody = retry_tests::refused_url().replace("http://", "redis://");
    let (first, retries, _, reports) = storm(&nobody).await;
    eprintln!("no Redis: {first} first tries, {retries} retries, {reports:?}");
    assert_eq!(first, u64::from(WORKERS * CALLS));
    // Four quotas of 100 retries each, and nothing less.
    assert!((390..=400).contains(&retries), "{retries}");
}

mod attribute {
    //! The attribute's form on a budgeted upstream, on the in-memory store, in virtual time.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use retry_runtime::fleet::{Fleet, FleetBudget, FleetConfig, FleetMemory};
    use retry_runtime::{Class, Upstream, retry};

    static DOWN: Upstream = Upstream::new("attribute-down").gate_after(u32::MAX, Duration::ZERO);
    static SENT: AtomicU32 = AtomicU32::new(0);

    #[retry(policy = "availability", upstream = DOWN)]
    async fn down() -> Result<(), Class> {
        SENT.fetch_add(1, Ordering::Relaxed);
        Err(Class::Unavailable { retry_after: None })
    }

    /// Ten calls in an outage on an upstream whose fleet budget lets a tenth of the requests
    /// be retried, and nothing more (no floor): one retry in all, where the calls' ladders
    /// would make thirty. The attribute's retries take the budget's tokens as `Retry`'s do.
    #[tokio::test(start_paused = true)]
    async fn the_attributes_retries_take_the_fleets_budget() {
        let memory = Arc::new(FleetMemory::default());
        let budget = FleetBudget::percent(10).floor(0).lease(1);
        let config = FleetConfig::new("attribute").retry_budget(budget);
        let fleet = Fleet::in_memory(&memory, config).expect("a runtime");
        fleet.share(&DOWN);
        // The store keeps the budget from its first round on.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for _ in 0..10 {
            assert!(down().await.is_err());
        }
        let sent = SENT.load(Ordering::Relaxed);
        assert!(sent <= 10 + 1, "{sent} requests for 10 calls");
    }
}

mod held {
    //! The budget's holds on the in-memory store: with an outage gate, and after the budget's
    //! runtime is gone.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use retry_runtime::fleet::{Fleet, FleetBudget, FleetConfig, FleetMemory};
    use retry_runtime::{Class, Policy, Retry, Upstream};

    /// A budget that never leases a token: every retry is held.
    const NOTHING: FleetBudget = FleetBudget::percent(0).floor(0).lease(1);

    static GATED: Upstream = Upstream::new("held-gated").gate_after(1, Duration::from_secs(600));

    /// A retry held by the budget on an upstream whose gate is open and due a probe waits for
    /// its token, and ends at its allowance: taking the probe and dropping it for want of a
    /// token woke the wait itself, which spun without end. Run on a thread of its own, so that
    /// a spin fails the test rather than hang it.
    #[test]
    fn a_held_retry_on_a_gated_upstream_ends_at_its_allowance() {
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .expect("a runtime");
            let attempts = runtime.block_on(async {
                let memory = Arc::new(FleetMemory::default());
                let config = FleetConfig::new("held-gated").retry_budget(NOTHING);
                let fleet = Fleet::in_memory(&memory, config).expect("a runtime");
                fleet.share(&GATED);
                tokio::time::sleep(Duration::from_millis(100)).await;
                let sent = AtomicU32::new(0);
                let called = Retry::new(&Policy::AVAILABILITY)
                    .upstream(&GATED)
                    .run(async |_| {
                        sent.fetch_add(1, Ordering::Relaxed);
                        Err::<(), _>(Class::Unavailable { retry_after: None })
                    })
                    .await;
                assert!(called.is_err());
                sent.load(Ordering::Relaxed)
            });
            let _ = done.send(attempts);
        });
        let attempts = ended
            .recv_timeout(Duration::from_secs(20))
            .expect("the call ends: a held retry must not spin");
        assert_eq!(attempts, 1, "the budget held every retry");
    }

    static ORPHAN: Upstream = Upstream::new("held-orphan").gate_after(u32::MAX, Duration::ZERO);

    /// The runtime that kept the budget shut down: nothing tops a lease up any more, so no
    /// budget holds a retry, and a call on another runtime makes its ladder's four attempts.
    #[test]
    fn once_the_budgets_runtime_is_gone_no_retry_is_held() {
        let first = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let store = first.block_on(async {
            let memory = Arc::new(FleetMemory::default());
            let config = FleetConfig::new("held-orphan").retry_budget(NOTHING);
            let fleet = Fleet::in_memory(&memory, config).expect("a runtime");
            fleet.share(&ORPHAN);
            tokio::time::sleep(Duration::from_millis(100)).await;
            fleet
        });
        drop(first);
        let second = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let sent = AtomicU32::new(0);
        second.block_on(async {
            let called = Retry::new(&Policy::AVAILABILITY)
                .upstream(&ORPHAN)
                .run(async |_| {
                    sent.fetch_add(1, Ordering::Relaxed);
                    Err::<(), _>(Class::Unavailable { retry_after: None })
                })
                .await;
            assert!(called.is_err());
        });
        drop(store);
        assert_eq!(sent.load(Ordering::Relaxed), 4);
    }
}
