//! Pacing across the fleet: four real OS processes (this crate's `pace_worker`), each calling
//! one key through `#[retry(upstream = KEY)]` and `check_status`, the upstream shared through
//! a real `redis-server`, against a provider of our own that says its limits in OpenAI's
//! headers and counts on the server what it saw. Each process paces on its slice of what the
//! headers say is left (the fleet counts its members), and Redis hears nothing at rest.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_tests::provider::{HeaderForm, Key, Provider, Seen};
use retry_tests::redis_server::RedisServer;

/// One fleet test at a time: each runs four processes for seconds.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const WORKERS: u32 = 4;

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

/// The key: 10 requests a second, a burst of 10, `Retry-After: 1` on a refusal.
fn key() -> Key {
    Key {
        requests_per_second: 10.0,
        request_burst: 10.0,
        tokens: None,
        form: HeaderForm::OpenAi,
        retry_after: Some(Duration::from_secs(1)),
        latency: Duration::from_millis(5),
    }
}

/// Four workers, `calls` each, one call every `every` across the fleet, the first `lead` from
/// now; `step` runs on a thread `at` from now. What the provider saw, and each worker's report.
async fn paced_fleet(
    redis: &str,
    upstreams: u32,
    calls: u32,
    every: Duration,
    at: Duration,
    step: impl FnOnce() + Send + 'static,
) -> (Seen, Vec<String>) {
    let provider = Provider::start(key()).await;
    let lead = Duration::from_millis(1500);
    let start = unix_now() + lead;
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            Command::new(env!("CARGO_BIN_EXE_pace_worker"))
                .env("PACE_PROVIDER", provider.url())
                .env("PACE_REDIS", redis)
                .env("PACE_UPSTREAMS", upstreams.to_string())
                .env("PACE_START_MS", start.as_millis().to_string())
                .env("PACE_INDEX", index.to_string())
                .env("PACE_WORKERS", WORKERS.to_string())
                .env("PACE_CALLS", calls.to_string())
                .env("PACE_EVERY_MS", every.as_millis().to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a worker starts")
        })
        .collect();
    let chaos = std::thread::spawn(move || {
        std::thread::sleep(lead + at);
        step();
    });
    let reports = collect(workers).await;
    chaos.join().expect("the mid-run step ran");
    (provider.seen(), reports)
}

/// Each worker's report, once it exits.
async fn collect(workers: Vec<std::process::Child>) -> Vec<String> {
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
    reports
}

fn failed(report: &str) -> u32 {
    let mut words = report.split_whitespace();
    let at = words.position(|word| word == "gave_up").expect("a report");
    report
        .split_whitespace()
        .nth(at + 1)
        .unwrap()
        .parse()
        .expect("a count")
}

/// 120 calls at 20 a second across four processes, twice the key's limit, each process
/// sharing 1, 4 or 16 upstreams: at most four refusals (each process, before it has heard the
/// key), the key kept busy, no call failed; and Redis's load while paced, counted with
/// `INFO commandstats`, the same whatever the number of upstreams (the members counted once a
/// second, one script).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_pace_one_key_through_redis() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for upstreams in [1, 4, 16] {
        let redis = Arc::new(RedisServer::start());
        let every = Duration::from_millis(50);
        // Counted from the first call on.
        let counted = Arc::clone(&redis);
        let reset = move || assert_eq!(counted.command(&["CONFIG", "RESETSTAT"]), "+OK");
        let began = std::time::Instant::now();
        let (seen, reports) =
            paced_fleet(&redis.url(), upstreams, 30, every, Duration::ZERO, reset).await;
        let seconds = began.elapsed().as_secs_f64() - 1.5;
        let stats = redis.info_commandstats();
        let commands: u64 = stats
            .iter()
            .filter(|(name, _)| name != "config|resetstat")
            .map(|(_, n)| n)
            .sum();
        let per_process = commands as f64 / seconds / f64::from(WORKERS);
        eprintln!(
            "paced fleet, {upstreams} upstreams: {reports:?} {}; Redis {per_process:.1} commands a second each: {stats:?}",
            summary(&seen)
        );
        assert!(
            reports.iter().all(|report| failed(report) == 0),
            "{reports:?}"
        );
        assert!(seen.refused <= 4, "{}", summary(&seen));
        let throughput = seen.throughput(&key());
        assert!(throughput >= 0.85, "{throughput}: {}", summary(&seen));
        assert!(per_process <= 10.0, "{upstreams} upstreams: {stats:?}");
    }
}

/// Redis paused for 3 s, then killed, mid-run: the processes pace on what they last knew
/// (failing open, as the fleet does), and no call fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_paused_then_killed_mid_run_fails_no_paced_call() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = Arc::new(std::sync::Mutex::new(RedisServer::start()));
    let url = redis.lock().unwrap().url();
    let chaos = Arc::clone(&redis);
    let step = move || {
        let reply = chaos.lock().unwrap().command(&["CLIENT", "PAUSE", "3000"]);
        assert_eq!(reply, "+OK");
        std::thread::sleep(Duration::from_secs(4));
        chaos.lock().unwrap().kill();
    };
    let every = Duration::from_millis(50);
    let (seen, reports) = paced_fleet(&url, 1, 30, every, Duration::from_secs(1), step).await;
    eprintln!(
        "Redis paused and killed mid-run: {reports:?} {}",
        summary(&seen)
    );
    assert!(
        reports.iter().all(|report| failed(report) == 0),
        "{reports:?}"
    );
}

/// Redis's load at rest, counted with `INFO commandstats`: four processes sharing 1, 4 and 16
/// upstreams, nothing failing, nothing paced, send at most one command a second each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_rest_each_process_sends_redis_at_most_one_command_a_second() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for upstreams in [1, 4, 16] {
        let redis = RedisServer::start();
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_pace_worker"))
                    .env("PACE_REDIS", redis.url())
                    .env("PACE_IDLE_MS", "5000")
                    .env("PACE_UPSTREAMS", upstreams.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("a worker starts")
            })
            .collect();
        // Started, subscribed and caught up; then 3 s counted.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(redis.command(&["CONFIG", "RESETSTAT"]), "+OK");
        let counted = std::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let stats = redis.info_commandstats();
        let seconds = counted.elapsed().as_secs_f64();
        collect(workers).await;
        let commands: u64 = stats
            .iter()
            .filter(|(name, _)| name != "config|resetstat")
            .map(|(_, n)| n)
            .sum();
        let per_process = commands as f64 / seconds / f64::from(WORKERS);
        eprintln!("{upstreams} upstreams at rest: {per_process:.2} a second each: {stats:?}");
        assert!(per_process <= 1.0, "{upstreams} upstreams: {stats:?}");
    }
}

fn summary(seen: &Seen) -> String {
    format!(
        "requests {} refused {} served {} throughput {:.2}",
        seen.requests,
        seen.refused,
        seen.served,
        seen.throughput(&key())
    )
}
