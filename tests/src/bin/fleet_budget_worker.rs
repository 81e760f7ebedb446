//! One worker process of a fleet in a long outage, for `tests/fleet_budget.rs`: `FLEET_CALLS`
//! calls on one upstream, arriving evenly over `FLEET_FOR_MS` from the start, every call with a per-process quota (the AWS SDKs' 500 tokens) and, with
//! `FLEET_REDIS` a URL, the fleet's retry budget (20 % of requests, a floor of 1 a second).
//! Each request says which attempt of its call it is (`x-attempt`), so the provider counts
//! first tries and retries. Prints `calls N quota M`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_runtime::fleet::{Fleet, FleetBudget, FleetConfig};
use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::{Policy, Quota, Retry, StopReason, Upstream};

/// The outage gate off (it never counts two failures in its window), so that the budget
/// alone bounds the retries: with it on, the gate holds them first.
static KEY: Upstream = Upstream::new("budget-key").gate_after(u32::MAX, Duration::ZERO);

/// A quick ladder (20, 40, 80 ms), so that a lane makes many calls in the storm.
static QUICK: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_millis(20))
    .with_max_total_wait(Duration::from_millis(400));

/// This process's own quota, as every peer keeps one.
static QUOTA: Quota = Quota::standard();

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("fleet_budget_worker needs {name}"))
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
    let storm = Duration::from_millis(env("FLEET_FOR_MS").parse().expect("a time"));
    let calls: u32 = env("FLEET_CALLS").parse().expect("a count");
    let _fleet = (redis != "none").then(|| {
        let config = FleetConfig::new("budget-test").retry_budget(FleetBudget::percent(20));
        let fleet = Fleet::connect(&redis, config).expect("a fleet");
        fleet.share(&KEY);
        fleet
    });
    let client = reqwest::Client::new();
    let url = format!("http://{provider}/v1/chat");
    let mut tasks = Vec::new();
    for n in 0..calls {
        let (client, url) = (client.clone(), url.clone());
        // Calls arrive on a schedule, whatever became of the earlier ones, as a fleet's work
        // does: `calls` spread evenly over the storm.
        let at = start + storm * n / calls;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(at.saturating_sub(unix_now())).await;
            let call = Retry::new(&QUICK).with_quota(&QUOTA).upstream(&KEY);
            let called = call
                .run_fn(|attempt| {
                    let sent = client
                        .post(&url)
                        .header("x-attempt", attempt.to_string())
                        .send();
                    async move {
                        sent.await?.check_status().await?;
                        Ok::<_, CallError>(())
                    }
                })
                .await;
            called.is_err_and(|gave_up| gave_up.reason() == StopReason::Quota)
        }));
    }
    let mut quota = 0;
    for task in tasks {
        quota += u32::from(task.await.expect("a call"));
    }
    println!("calls {calls} quota {quota}");
}
