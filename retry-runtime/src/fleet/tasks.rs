//! The fleet store's background tasks: the writer (each report a script on Redis), the
//! backstop (a read of every shared upstream each second, for what a subscription missed), and
//! the subscription. Each is bounded by the store's timeout and skips Redis while its breaker
//! is open; none is on a call's path.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::ConnectionManager;
use tokio::sync::mpsc;

use super::*;

/// The writer: each report, run as its script, bounded by the timeout, skipped while the
/// breaker is open.
pub(super) async fn write(shared: Arc<FleetShared>, mut queue: mpsc::Receiver<FleetReport>) {
    let mut connection: Option<ConnectionManager> = None;
    while let Some(report) = queue.recv().await {
        if let Some(memory) = &shared.memory {
            memory.apply(&shared, &report);
            continue;
        }
        if !shared.breaker.allows() {
            shared.dropped();
            continue;
        }
        let Some(redis) = shared.reach(&mut connection).await else {
            continue;
        };
        let ran = tokio::time::timeout(shared.config.timeout, run(&shared, &report, redis)).await;
        match ran {
            Ok(Ok(())) => shared.breaker.succeeded(),
            Ok(Err(_)) => shared.failed("a script failed"),
            Err(_) => shared.failed("a script timed out"),
        }
    }
}

/// Run `report`'s script; an outage that opened the fleet's gate makes this process its first
/// prober.
async fn run(
    shared: &FleetShared,
    report: &FleetReport,
    redis: &mut ConnectionManager,
) -> redis::RedisResult<()> {
    let channel = shared.channel();
    match *report {
        FleetReport::Pause {
            upstream,
            pause_ms,
            cap_ms,
            kind,
        } => {
            let mut invocation = scripts::PAUSE.prepare_invoke();
            invocation
                .key(shared.key(upstream))
                .arg(pause_ms)
                .arg(cap_ms)
                .arg(kind)
                .arg(&channel)
                .arg(format!("{} {upstream}", shared.origin));
            invocation.invoke_async::<i64>(redis).await.map(drop)
        }
        FleetReport::Outage {
            upstream,
            authored,
            first_ms,
        } => {
            let Some(local) = shared.upstream(upstream) else {
                return Ok(());
            };
            let (failures, window) = local.gate_rule();
            let (outages, gate) = shared.gate_keys(upstream);
            let lease = millis(Duration::from_millis(first_ms) + LEASE_SLACK);
            let mut invocation = scripts::OUTAGE.prepare_invoke();
            invocation
                .key(outages)
                .key(gate)
                .arg(shared.origin)
                .arg(rand::random::<u64>())
                .arg(millis(window))
                .arg(failures)
                .arg(u8::from(authored))
                .arg(first_ms)
                .arg(lease)
                .arg(&channel)
                .arg(upstream);
            if invocation.invoke_async::<i64>(redis).await? == 1 {
                local
                    .fleet_side()
                    .gated(true, Duration::from_millis(first_ms));
            }
            Ok(())
        }
        FleetReport::ProbeFailed { upstream, next_ms } => {
            let lease = millis(Duration::from_millis(next_ms) + LEASE_SLACK);
            let mut invocation = scripts::PROBE_FAILED.prepare_invoke();
            invocation
                .key(shared.gate_keys(upstream).1)
                .arg(shared.origin)
                .arg(lease);
            invocation.invoke_async::<i64>(redis).await.map(drop)
        }
        FleetReport::Paced => {
            let members = members(shared, redis).await?;
            shared.members(members);
            Ok(())
        }
        FleetReport::Closed { upstream } => {
            let (outages, gate) = shared.gate_keys(upstream);
            let mut invocation = scripts::CLOSE.prepare_invoke();
            invocation
                .key(outages)
                .key(gate)
                .arg(shared.origin)
                .arg(&channel)
                .arg(upstream);
            invocation.invoke_async::<i64>(redis).await.map(drop)
        }
    }
}

/// The backstop, every second: the subscription started again if it ended, and every shared
/// upstream's pause read. Ends with the fleet store.
/// This process is counted among the fleet's members, and the members counted: how many
/// processes share the key a paced upstream's headers speak for.
async fn members(shared: &FleetShared, redis: &mut ConnectionManager) -> redis::RedisResult<u32> {
    let mut invocation = scripts::MEMBERS.prepare_invoke();
    invocation
        .key(shared.members_key())
        .arg(shared.origin)
        .arg(millis(MEMBER_UNSEEN));
    invocation.invoke_async::<u32>(redis).await
}

/// How long a process that stopped counting still counts as a member: three backstop ticks.
const MEMBER_UNSEEN: Duration = Duration::from_secs(3);

pub(super) async fn backstop(shared: std::sync::Weak<FleetShared>) {
    let every = match shared.upgrade() {
        Some(shared) => shared.config.backstop,
        None => return,
    };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut connection: Option<ConnectionManager> = None;
    // backoff-lint: allow(a fixed read a second is the fleet store's backstop, not a retry's wait)
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if !shared.subscribed.swap(true, Ordering::AcqRel) {
            let task = tokio::spawn(subscribe(Arc::clone(&shared)));
            *lock(&shared.subscription) = Some(task.abort_handle());
        }
        if !shared.breaker.allows() {
            continue;
        }
        // At rest (nothing held, nothing paced, the subscription listening and caught up)
        // Redis hears nothing from this task: its load grows with what changes, not with time
        // or the number of upstreams.
        let listening = shared.listening.load(Ordering::Acquire);
        let caught_up = listening && shared.caught_up.load(Ordering::Acquire);
        let held = lock(&shared.upstreams)
            .iter()
            .any(|upstream| upstream.fleet_side().is_held());
        let paced = shared.any_paced();
        if caught_up && !held && !paced {
            continue;
        }
        let Some(redis) = shared.reach(&mut connection).await else {
            continue;
        };
        if paced {
            let counted =
                tokio::time::timeout(shared.config.timeout, members(&shared, redis)).await;
            match counted {
                Ok(Ok(members)) => shared.members(members),
                Ok(Err(_)) => shared.failed("a count of the members failed"),
                Err(_) => shared.failed("a count of the members timed out"),
            }
        }
        if held {
            read_all(&shared, redis).await;
        } else if !caught_up {
            // Two commands, whatever the number of upstreams: what a joining process, or one
            // whose subscription was down, may have missed.
            let read = catch_up(&shared, redis).await;
            if read && listening {
                shared.caught_up.store(true, Ordering::Release);
            }
        }
    }
}

/// Read every shared upstream's pause, and hold it here.
/// Read every shared upstream's pause and gate at once (one `MGET`, and Redis's `TIME`); an
/// upstream found paused or gated is read again by its own scripts, which take a crashed
/// prober's probe over. `true` if the reads succeeded. On a Redis Cluster, whose `MGET` cannot
/// span slots, each upstream is read by its own scripts.
async fn catch_up(shared: &FleetShared, redis: &mut ConnectionManager) -> bool {
    let upstreams: Vec<&'static Upstream> = lock(&shared.upstreams).clone();
    if upstreams.is_empty() {
        return true;
    }
    let mut keys = Vec::with_capacity(upstreams.len() * 2);
    for upstream in &upstreams {
        keys.push(shared.key(upstream.name()));
        keys.push(shared.gate_keys(upstream.name()).1);
    }
    let read = async {
        let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(redis).await?;
        let (seconds, micros): (u64, u64) = redis::cmd("TIME").query_async(redis).await?;
        Ok::<_, redis::RedisError>((values, seconds * 1_000 + micros / 1_000))
    };
    let (values, now_ms) = match tokio::time::timeout(shared.config.timeout, read).await {
        Ok(Ok(read)) => read,
        Ok(Err(error)) if error.code() == Some("CROSSSLOT") => {
            return read_all(shared, redis).await;
        }
        Ok(Err(_)) => {
            shared.failed("a read failed");
            return false;
        }
        Err(_) => {
            shared.failed("a read timed out");
            return false;
        }
    };
    shared.breaker.succeeded();
    let mut held = false;
    for (upstream, pair) in upstreams.iter().zip(values.chunks(2)) {
        if let Some(pause) = &pair[0] {
            let mut parts = pause.split(' ');
            let ends = parts.next().and_then(|ends| ends.parse::<u64>().ok());
            if let (Some(ends), Some(kind)) = (ends, parts.next())
                && ends > now_ms
            {
                let left = Duration::from_millis(ends - now_ms);
                upstream.fleet_side().paused(left, class_of(kind, left));
            }
        }
        held |= pair[1].is_some();
    }
    // A gate open somewhere: its prober and lease are read, and taken over, by its script.
    !held || read_all(shared, redis).await
}

/// Read every shared upstream's pause and gate; `true` if every read succeeded.
async fn read_all(shared: &FleetShared, redis: &mut ConnectionManager) -> bool {
    let upstreams: Vec<&'static Upstream> = lock(&shared.upstreams).clone();
    for upstream in upstreams {
        let mut invocation = scripts::READ.prepare_invoke();
        invocation.key(shared.key(upstream.name()));
        let read = tokio::time::timeout(
            shared.config.timeout,
            invocation.invoke_async::<Option<(u64, String)>>(redis),
        )
        .await;
        match read {
            Ok(Ok(Some((left, kind)))) => {
                let left = Duration::from_millis(left);
                upstream.fleet_side().paused(left, class_of(&kind, left));
            }
            Ok(Ok(None)) => {}
            Ok(Err(_)) => {
                shared.failed("a read failed");
                return false;
            }
            Err(_) => {
                shared.failed("a read timed out");
                return false;
            }
        }
        if let Err(why) = read_gate(shared, upstream, redis).await {
            shared.failed(why);
            return false;
        }
        shared.breaker.succeeded();
    }
    true
}

/// Read `upstream`'s gate across the fleet, taking its probe over if its prober's lease ran
/// out, and hold it here: a gate closed while this process missed the message closes here.
async fn read_gate(
    shared: &FleetShared,
    upstream: &'static Upstream,
    redis: &mut ConnectionManager,
) -> Result<(), &'static str> {
    let lease = millis(Policy::AVAILABILITY.base() + LEASE_SLACK);
    let mut invocation = scripts::GATE.prepare_invoke();
    invocation
        .key(shared.gate_keys(upstream.name()).1)
        .arg(shared.origin)
        .arg(lease);
    let read = tokio::time::timeout(
        shared.config.timeout,
        invocation.invoke_async::<Option<i64>>(redis),
    )
    .await;
    match read {
        Ok(Ok(Some(probes))) => upstream.fleet_side().gated(probes == 1, Duration::ZERO),
        Ok(Ok(None)) if upstream.fleet_side().waits_for_remote_probe() => {
            upstream.fleet_side().closed()
        }
        Ok(Ok(None)) => {}
        Ok(Err(_)) => return Err("a read failed"),
        Err(_) => return Err("a read timed out"),
    }
    Ok(())
}

/// The subscription: each message applied as it comes, until it ends (the backstop starts it
/// again).
async fn subscribe(shared: Arc<FleetShared>) {
    let subscribed = async {
        let mut pubsub = shared.client.as_ref()?.get_async_pubsub().await.ok()?;
        pubsub.subscribe(shared.channel()).await.ok()?;
        Some(pubsub)
    };
    let pubsub = match tokio::time::timeout(shared.config.timeout, subscribed).await {
        Ok(Some(pubsub)) => pubsub,
        _ => {
            shared.subscribed.store(false, Ordering::Release);
            return;
        }
    };
    // What was missed before now is read by the backstop's next tick.
    shared.caught_up.store(false, Ordering::Release);
    shared.listening.store(true, Ordering::Release);
    let mut messages = pubsub.into_on_message();
    while let Some(message) = messages.next().await {
        if let Ok(text) = message.get_payload::<String>() {
            shared.told(&text);
        }
    }
    shared.listening.store(false, Ordering::Release);
    shared.subscribed.store(false, Ordering::Release);
}
