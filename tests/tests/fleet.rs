//! The fleet store on a real `redis-server`, with four real worker processes (the tests
//! crate's `fleet_worker`), each making 15 calls on one upstream against a provider of our own
//! on loopback: one key limited to 10 requests a second, refused with `429` and
//! `Retry-After: 1`. The provider counts, fleet-wide, the requests sent inside a pause it had
//! announced (more than 20 ms after it announced it: those before were in flight). Each
//! worker stamps its requests with when it sent them.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use retry_tests::redis_server::RedisServer;

thread_local! {
    /// An outage of the provider from the first call, for the scenarios that ask for one (set
    /// on the test's thread before it calls `fleet`).
    static OUTAGE: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
    /// Whether the calls go across the provider and a healthy secondary.
    static SECONDARY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether the first worker's network is broken: its calls go to a port nobody listens
    /// on, so each of its attempts is a transport error.
    static BROKEN_FIRST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The scenarios run one at a time: each is ten processes on a machine of two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const WORKERS: u32 = 4;
const CALLS: u32 = 15;
/// How long after a pause is announced a request sent is still one in flight.
const IN_FLIGHT: Duration = Duration::from_millis(20);

#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    requests: u32,
    refused: u32,
    inside_pause: u32,
    during_outage: u32,
}

struct Provider {
    /// Down (`503`, no hint) until then, since the Unix epoch.
    out_until: Option<Duration>,
    tokens: f64,
    filled: Duration,
    /// The pause it announced last: from when, to when, since the Unix epoch.
    announced: Option<(Duration, Duration)>,
    seen: Seen,
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

async fn answer(State(provider): State<Arc<Mutex<Provider>>>, headers: HeaderMap) -> Response {
    let now = unix_now();
    let sent = headers
        .get("x-sent-us")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(now, Duration::from_micros);
    let mut p = provider.lock().unwrap();
    p.seen.requests += 1;
    if let Some(until) = p.out_until {
        if now < until {
            p.seen.during_outage += 1;
            return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
        }
        return (StatusCode::OK, "answer").into_response();
    }
    if let Some((from, to)) = p.announced
        && sent > from + IN_FLIGHT
        && sent < to
    {
        p.seen.inside_pause += 1;
    }
    let rate = 10.0;
    let elapsed = now.saturating_sub(p.filled).as_secs_f64();
    p.tokens = (p.tokens + elapsed * rate).min(rate);
    p.filled = now;
    if p.tokens >= 1.0 {
        p.tokens -= 1.0;
        return (StatusCode::OK, "answer").into_response();
    }
    p.seen.refused += 1;
    let end = now + Duration::from_secs(1);
    if p.announced.is_none_or(|(_, to)| to < end) {
        p.announced = Some((now, end));
    }
    let mut response = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
    response
        .headers_mut()
        .insert("retry-after", HeaderValue::from_static("1"));
    response
}

async fn serve() -> (SocketAddr, Arc<Mutex<Provider>>) {
    let provider = Arc::new(Mutex::new(Provider {
        out_until: None,
        tokens: 10.0,
        filled: unix_now(),
        announced: None,
        seen: Seen::default(),
    }));
    let app = Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&provider));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, provider)
}

/// Four workers against a fresh provider, their upstream shared through `redis` (a URL) or not
/// (`none`): what the provider saw, and each worker's report.
async fn fleet(redis: &str) -> (Seen, Vec<String>) {
    fleet_then(redis, LEAD, LEAD, |_| {}).await
}

/// Time for the workers to start and to subscribe before the first call.
const LEAD: Duration = Duration::from_millis(1500);

/// Like [`fleet`], the first call `lead` from now, and `step` run on a thread `at` from now.
async fn fleet_then(
    redis: &str,
    lead: Duration,
    at: Duration,
    step: impl FnOnce(Duration) + Send + 'static,
) -> (Seen, Vec<String>) {
    let (addr, provider) = serve().await;
    let begun = unix_now();
    let start = begun + lead;
    if let Some(outage) = OUTAGE.with(|outage| outage.get()) {
        provider.lock().unwrap().out_until = Some(start + outage);
    }
    // A healthy secondary, for the scenarios across two upstreams.
    let secondary = match SECONDARY.with(|secondary| secondary.get()) {
        true => {
            let (addr, healthy) = serve().await;
            healthy.lock().unwrap().out_until = Some(Duration::ZERO);
            Some(addr)
        }
        false => None,
    };
    // All four started at once, each a real process; then each waited for.
    let broken = BROKEN_FIRST
        .with(std::cell::Cell::get)
        .then(retry_tests::refused_url);
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            let provider = match (&broken, index) {
                (Some(refused), 0) => refused
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_owned(),
                _ => addr.to_string(),
            };
            let short = broken.is_some() && index == 0;
            Command::new(env!("CARGO_BIN_EXE_fleet_worker"))
                .env("FLEET_PROVIDER", provider)
                .envs(short.then_some(("FLEET_SHORT", "1")))
                .env("FLEET_REDIS", redis)
                .env("FLEET_START_MS", start.as_millis().to_string())
                .env("FLEET_INDEX", index.to_string())
                .env("FLEET_WORKERS", WORKERS.to_string())
                .env("FLEET_CALLS", CALLS.to_string())
                .envs(secondary.map(|addr| ("FLEET_SECONDARY", addr.to_string())))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a worker starts")
        })
        .collect();
    let chaos = std::thread::spawn(move || {
        std::thread::sleep((begun + at).saturating_sub(unix_now()));
        step(start);
    });
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
    chaos.join().expect("the mid-storm step ran");
    let seen = provider.lock().unwrap().seen;
    (seen, reports)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_four_processes_no_request_is_sent_inside_an_announced_pause() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = RedisServer::start();
    let (shared, reports) = fleet(&redis.url()).await;
    eprintln!("four processes sharing the upstream through Redis: {shared:?}");
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
    assert!(shared.refused > 0, "the limit was met: {shared:?}");
    assert_eq!(shared.inside_pause, 0, "{shared:?}");
    // The same four processes, each learning alone: the figure the fleet store removes.
    let (alone, reports) = fleet("none").await;
    eprintln!("four processes, each alone: {alone:?}");
    for report in &reports {
        assert!(completed(report), "{report}");
    }
    assert!(alone.inside_pause > 0, "{alone:?}");
}

/// Redis killed mid-storm: no call fails because of it; every process goes on as its
/// in-process upstream does (each learns its pauses alone again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_mid_storm_fails_no_call() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = Arc::new(Mutex::new(RedisServer::start()));
    let url = redis.lock().unwrap().url();
    let killed = Arc::clone(&redis);
    let kill = move |_| killed.lock().unwrap().kill();
    let (seen, reports) = fleet_then(&url, LEAD, LEAD + Duration::from_secs(2), kill).await;
    eprintln!("Redis killed mid-storm: {seen:?}");
    assert!(
        !redis.lock().unwrap().answers(),
        "Redis was down for the rest of the storm"
    );
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
    assert!(seen.refused > 0, "the limit was met: {seen:?}");
}

/// Redis paused (`CLIENT PAUSE`) for 3 s mid-storm: no call fails because of it, nor waits on
/// it (an attempt never touches Redis; the reports wait in the queue or are dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_paused_mid_storm_fails_no_call() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = Arc::new(RedisServer::start());
    let paused = Arc::clone(&redis);
    let pause = move |_| assert_eq!(paused.command(&["CLIENT", "PAUSE", "3000"]), "+OK");
    let url = redis.url();
    let (seen, reports) = fleet_then(&url, LEAD, LEAD + Duration::from_secs(1), pause).await;
    eprintln!("Redis paused 3 s mid-storm: {seen:?}");
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
}

/// Redis killed before the storm and restarted on the same port: the workers, not restarted,
/// share again (the breaker closes, the subscription is made again): no request inside an
/// announced pause once the storm comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_restarts_on_its_port_sharing_resumes_without_restarting_the_workers() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = Arc::new(Mutex::new(RedisServer::start()));
    let url = redis.lock().unwrap().url();
    let restarted = Arc::clone(&redis);
    // The workers are up and subscribed 1 s in; Redis dies then, and is back at once, empty;
    // the storm starts 4 s after the restart (the breaker's 2 s skip and the backstop's 1 s).
    let restart = move |_| {
        let mut redis = restarted.lock().unwrap();
        // The four workers are subscribed before Redis dies.
        let subscribers = redis.command(&["PUBSUB", "NUMSUB", "fleet-test:pauses"]);
        assert!(subscribers.ends_with(":4"), "{subscribers:?}");
        redis.restart();
    };
    let (lead, at) = (Duration::from_secs(5), Duration::from_secs(1));
    let (seen, reports) = fleet_then(&url, lead, at, restart).await;
    eprintln!("after Redis restarted: {seen:?}");
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
    assert!(seen.refused > 0, "the limit was met: {seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

static QUIET: retry_runtime::Upstream = retry_runtime::Upstream::new("fleet-quiet");

/// Nothing on the attempt path: first tries on a shared upstream (10,000 at least, for 1.5 s)
/// make no Redis call (counted on the server, `INFO commandstats`). The only calls are the
/// backstop's catch-up once its subscription listens (one `MGET` of every shared upstream's
/// keys and Redis's `TIME`); at rest it sends nothing after, whatever the number of tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_try_on_a_shared_upstream_makes_no_redis_call() {
    use retry_runtime::fleet::{Fleet, FleetConfig};
    use retry_runtime::{Class, Policy, Retry};
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = RedisServer::start();
    let fleet = Fleet::connect(&redis.url(), FleetConfig::new("quiet")).expect("a fleet");
    assert!(fleet.share(&QUIET));
    // Let the subscription and the first read happen, then count from there.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(redis.command(&["CONFIG", "RESETSTAT"]), "+OK");
    // At least 10,000 first tries, and for long enough that the backstop ticks meanwhile.
    let began = std::time::Instant::now();
    let mut tries = 0_u32;
    while tries < 10_000 || began.elapsed() < Duration::from_millis(1500) {
        let call = Retry::new(&Policy::AVAILABILITY).upstream(&QUIET);
        let answered = call.run(async |_| Ok::<_, Class>(tries)).await;
        assert_eq!(answered.unwrap(), tries);
        tries += 1;
        if tries.is_multiple_of(1_000) {
            tokio::task::yield_now().await;
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    let stats = redis.info_commandstats();
    eprintln!("after {tries} first tries in {seconds:.1} s: {stats:?}");
    let count = |name: &str| {
        stats
            .iter()
            .filter(|(each, _)| each == name)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    // The catch-up, at most once: nothing else, whatever the number of tries.
    assert!(count("mget") <= 1 && count("time") <= 1, "{stats:?}");
    let catch_up = |name: &str| name == "mget" || name == "time";
    assert!(
        stats
            .iter()
            .all(|(name, _)| catch_up(name) || name == "config|resetstat"),
        "{stats:?}"
    );
}

/// A 3 s outage (`503`, no hint) across four processes: the gate opens across the fleet on the
/// quorum (three outage failures, from two processes or more, or the provider's own `503`),
/// and one process at a time probes, one probe per rung of the ladder.
#[tokio::test(flavor = "current_thread")]
async fn in_an_outage_the_fleet_sends_the_quorum_and_one_probe_per_rung() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let outage = Duration::from_secs(3);
    OUTAGE.with(|cell| cell.set(Some(outage)));
    let redis = RedisServer::start();
    let (shared, reports) = fleet(&redis.url()).await;
    let (alone, _) = fleet("none").await;
    OUTAGE.with(|cell| cell.set(None));
    // Rungs of `availability`'s ladder from the gate's opening, within the outage: 0.25, 0.75
    // and 1.75 s.
    let (quorum, rungs) = (3, 3);
    eprintln!(
        "a 3 s outage, four processes: sharing the gate {} requests during it (at most {quorum} + {rungs}); each alone {}",
        shared.during_outage, alone.during_outage
    );
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
    assert!(shared.during_outage <= quorum + rungs, "{shared:?}");
    assert!(alone.during_outage > shared.during_outage, "{alone:?}");
}

/// The mean of the workers' mean calls, from their reports.
fn mean_call(reports: &[String]) -> Duration {
    let means: Vec<u64> = reports
        .iter()
        .filter_map(|report| report.rsplit(' ').next()?.parse().ok())
        .collect();
    Duration::from_micros(means.iter().sum::<u64>() / means.len().max(1) as u64)
}

/// Fallback from a primary down 5 s to a healthy secondary, four processes each with 15 calls
/// across the two: requests to the primary fleet-wide no more than one process's own (the
/// threshold and one probe per rung; LiteLLM's router sent 28 with its Redis cooldowns).
#[tokio::test(flavor = "current_thread")]
async fn fallback_across_the_fleet_sends_the_dead_primary_no_more_than_one_process_would() {
    let _alone = ONE_AT_A_TIME.lock().await;
    OUTAGE.with(|cell| cell.set(Some(Duration::from_secs(5))));
    SECONDARY.with(|cell| cell.set(true));
    let redis = RedisServer::start();
    let (shared, reports) = fleet(&redis.url()).await;
    let (alone, alone_reports) = fleet("none").await;
    OUTAGE.with(|cell| cell.set(None));
    SECONDARY.with(|cell| cell.set(false));
    for report in reports.iter().chain(&alone_reports) {
        assert!(completed(report), "{report}");
    }
    // The threshold, 3, and the rungs within 5 s of the gate's opening: 0.25, 0.75, 1.75, 3.75.
    let one_process = 3 + 4;
    eprintln!(
        "fallback, four processes: the dead primary saw {} requests sharing (mean call {:?}), {} alone (mean call {:?})",
        shared.during_outage,
        mean_call(&reports),
        alone.during_outage,
        mean_call(&alone_reports)
    );
    assert!(shared.during_outage <= one_process, "{shared:?}");
    assert!(alone.during_outage > shared.during_outage, "{alone:?}");
}

/// Whether a worker's report says every one of its calls completed.
fn completed(report: &str) -> bool {
    report.starts_with(&format!("ok {CALLS} gave_up 0 "))
}

/// Redis killed while the gate is open across the fleet: the processes that waited for
/// another's probe probe on their own once the store is degraded (three failed reads, about
/// 3 s), as an in-process upstream does; every call completes.
#[tokio::test(flavor = "current_thread")]
async fn redis_killed_while_the_gate_is_open_fails_no_call() {
    let _alone = ONE_AT_A_TIME.lock().await;
    OUTAGE.with(|cell| cell.set(Some(Duration::from_secs(3))));
    let redis = Arc::new(Mutex::new(RedisServer::start()));
    let url = redis.lock().unwrap().url();
    let killed = Arc::clone(&redis);
    let kill = move |_| killed.lock().unwrap().kill();
    let (seen, reports) = fleet_then(&url, LEAD, LEAD + Duration::from_secs(1), kill).await;
    OUTAGE.with(|cell| cell.set(None));
    eprintln!("Redis killed with the gate open: {seen:?}; {reports:?}");
    for report in &reports {
        assert!(completed(report), "every call completes: {report}");
    }
}

/// One process's network broken (each of its attempts a transport error), the provider
/// healthy: one process's transport errors never open the gate across the fleet, so the
/// others' calls all go, at once.
#[tokio::test(flavor = "current_thread")]
async fn one_processs_broken_network_does_not_close_the_upstream_to_the_fleet() {
    let _alone = ONE_AT_A_TIME.lock().await;
    OUTAGE.with(|cell| cell.set(Some(Duration::ZERO)));
    BROKEN_FIRST.with(|cell| cell.set(true));
    let redis = RedisServer::start();
    let (seen, reports) = fleet(&redis.url()).await;
    BROKEN_FIRST.with(|cell| cell.set(false));
    OUTAGE.with(|cell| cell.set(None));
    eprintln!("one process's network broken: {seen:?}; {reports:?}");
    // The broken process's own calls give up on their ladder; the others all complete, the
    // provider answering every request it saw; and Redis published nothing: no gate opened
    // (counted on the server).
    for report in &reports[1..] {
        assert!(completed(report), "{report}");
    }
    assert_eq!(seen.requests, 3 * CALLS, "{seen:?}");
    let stats = redis.info_commandstats();
    let published = stats.iter().find(|(name, _)| name == "publish");
    assert_eq!(published, None, "{stats:?}");
    let outages = stats.iter().find(|(name, _)| name == "zadd");
    assert!(
        outages.is_some(),
        "the broken process reported its failures: {stats:?}"
    );
}
