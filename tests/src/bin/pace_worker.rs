//! One worker process of a paced fleet, for `tests/pacing_fleet.rs`: `PACE_CALLS` calls on one
//! upstream (`#[retry(upstream = KEY)]`, `check_status`) against the provider the test
//! started, each arriving at its turn in the fleet's schedule, the upstream shared through
//! Redis. Prints what its calls did: `ok N gave_up M`. With `PACE_IDLE_MS`, it makes no call:
//! it shares `PACE_UPSTREAMS` upstreams and stays that long, for a count of Redis's load at
//! rest.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_runtime::fleet::{Fleet, FleetConfig};
use retry_runtime::http::ResponseExt;
use retry_runtime::{Upstream, retry};
use retry_tests::upstream_headline::ModelError;

static KEY: Upstream = Upstream::new("paced-key");

/// Up to 16 more upstreams, shared and idle, for a count of Redis's load at rest.
static IDLE: [Upstream; 16] = [
    Upstream::new("idle-0"),
    Upstream::new("idle-1"),
    Upstream::new("idle-2"),
    Upstream::new("idle-3"),
    Upstream::new("idle-4"),
    Upstream::new("idle-5"),
    Upstream::new("idle-6"),
    Upstream::new("idle-7"),
    Upstream::new("idle-8"),
    Upstream::new("idle-9"),
    Upstream::new("idle-10"),
    Upstream::new("idle-11"),
    Upstream::new("idle-12"),
    Upstream::new("idle-13"),
    Upstream::new("idle-14"),
    Upstream::new("idle-15"),
];

#[retry(policy = "availability", attempts = 12, upstream = KEY)]
async fn complete(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.post(url).body("{\"max_tokens\":1}").send().await?;
    Ok(response.check_status().await?.text().await?)
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("pace_worker needs {name}"))
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

#[tokio::main]
async fn main() {
    let redis = env("PACE_REDIS");
    let fleet = Fleet::connect(&redis, FleetConfig::new("pace-test")).expect("a fleet");
    fleet.share(&KEY);
    let upstreams: usize =
        std::env::var("PACE_UPSTREAMS").map_or(1, |n| n.parse().expect("a count"));
    for upstream in IDLE.iter().take(upstreams.saturating_sub(1)) {
        fleet.share(upstream);
    }
    if let Ok(idle) = std::env::var("PACE_IDLE_MS") {
        tokio::time::sleep(Duration::from_millis(idle.parse().expect("a time"))).await;
        println!("ok 0 gave_up 0");
        return;
    }
    let url = env("PACE_PROVIDER");
    let start = Duration::from_millis(env("PACE_START_MS").parse().expect("a time"));
    let index: u32 = env("PACE_INDEX").parse().expect("an index");
    let workers: u32 = env("PACE_WORKERS").parse().expect("a count");
    let calls: u32 = env("PACE_CALLS").parse().expect("a count");
    let every: u64 = env("PACE_EVERY_MS").parse().expect("a time");
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for n in 0..calls {
        let (client, url) = (client.clone(), url.clone());
        let at = start + Duration::from_millis(every) * (n * workers + index);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(at.saturating_sub(unix_now())).await;
            complete(&client, &url).await.is_ok()
        }));
    }
    let mut ok = 0;
    for task in tasks {
        ok += u32::from(task.await.expect("a call"));
    }
    println!("ok {ok} gave_up {}", calls - ok);
}
