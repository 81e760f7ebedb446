//! One worker process of a fleet, for `tests/fleet.rs`: 15 calls on one upstream against the
//! provider the test started, each arriving at its turn in the fleet's schedule, with the
//! upstream's pauses shared through Redis (or not: `FLEET_REDIS=none`). Prints what its calls
//! did: `ok N gave_up M`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_runtime::fleet::{Fleet, FleetConfig};
use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::{Policy, Retry, Upstream, Upstreams};

static KEY: Upstream = Upstream::new("fleet-key");

/// With `FLEET_SECONDARY`, the calls go across two upstreams, `KEY` first.
static SPARE: Upstream = Upstream::new("fleet-spare");
static BOTH: Upstreams = Upstreams::new(&[&KEY, &SPARE]);

/// A ladder generous enough for every call to outlast the provider's limit.
static PATIENT: Policy = Policy::AVAILABILITY
    .with_attempts(12)
    .with_max_total_wait(Duration::from_secs(60));

/// With `FLEET_SHORT`: a ladder that gives up within 2 s, for a worker whose calls cannot
/// succeed.
static SHORT: Policy = Policy::AVAILABILITY.with_max_total_wait(Duration::from_secs(2));

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("fleet_worker needs {name}"))
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

#[tokio::main]
async fn main() {
    let provider = env("FLEET_PROVIDER");
    let redis = env("FLEET_REDIS");
    let start = Duration::from_millis(env("FLEET_START_MS").parse().expect("a time"));
    let index: u32 = env("FLEET_INDEX").parse().expect("an index");
    let workers: u32 = env("FLEET_WORKERS").parse().expect("a count");
    let calls: u32 = env("FLEET_CALLS").parse().expect("a count");
    let secondary = std::env::var("FLEET_SECONDARY").ok();
    let _fleet = (redis != "none").then(|| {
        let fleet = Fleet::connect(&redis, FleetConfig::new("fleet-test")).expect("a fleet");
        fleet.share(&KEY);
        fleet.share(&SPARE);
        fleet
    });
    let client = reqwest::Client::new();
    let url = format!("http://{provider}/v1/chat");
    let spare_url = secondary.map(|addr| format!("http://{addr}/v1/chat"));
    let mut tasks = Vec::new();
    for n in 0..calls {
        let (client, url, spare_url) = (client.clone(), url.clone(), spare_url.clone());
        // Fleet-wide, one call every 50 ms: 20 a second.
        let at = start + Duration::from_millis(50) * (n * workers + index);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(at.saturating_sub(unix_now())).await;
            let began = unix_now();
            let send = move |url: String| {
                let client = client.clone();
                async move {
                    let sent = unix_now().as_micros().to_string();
                    let response = client.post(&url).header("x-sent-us", sent).send().await?;
                    response.check_status().await?;
                    Ok::<_, CallError>(())
                }
            };
            let ok = match spare_url {
                None => {
                    let policy = match std::env::var_os("FLEET_SHORT") {
                        Some(_) => &SHORT,
                        None => &PATIENT,
                    };
                    let call = Retry::new(policy).upstream(&KEY);
                    call.run_fn(|_| send(url.clone())).await.is_ok()
                }
                Some(spare_url) => {
                    let to = move |upstream: &'static Upstream| match upstream.name() {
                        "fleet-key" => url.clone(),
                        _ => spare_url.clone(),
                    };
                    let call = Retry::new(&Policy::AVAILABILITY).across(&BOTH);
                    call.run_fn(|upstream| send(to(upstream))).await.is_ok()
                }
            };
            (ok, unix_now().saturating_sub(began))
        }));
    }
    let (mut ok, mut took) = (0, Duration::ZERO);
    for task in tasks {
        let (done, lasted) = task.await.expect("a call");
        ok += u32::from(done);
        took += lasted;
    }
    let mean = took / calls.max(1);
    println!(
        "ok {ok} gave_up {} mean_us {}",
        calls - ok,
        mean.as_micros()
    );
}
