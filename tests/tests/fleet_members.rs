//! Two fleet members in one test process, on the in-memory store: a member is a `Fleet` and
//! its own `static` upstream of the key's name, as each process has its own. And a `Fleet`
//! shares only while it lives: dropped, its upstream is its process's alone again.

use std::sync::Arc;
use std::time::Duration;

use retry_runtime::fleet::{Fleet, FleetConfig, FleetMemory};
use retry_runtime::{Admission, Class, Policy, Upstream, UpstreamStatus};
use tokio::time::Instant;

const SEND: Admission = Admission::Send {
    probe: None,
    seen: UpstreamStatus::NOTHING,
};

// One key, as two processes each declare it.
static KEY_IN_ONE: Upstream = Upstream::new("members-key");
static KEY_IN_TWO: Upstream = Upstream::new("members-key");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_one_member_learns_holds_in_the_other() {
    let store = Arc::new(FleetMemory::default());
    let one = Fleet::in_memory(&store, FleetConfig::new("members")).unwrap();
    let two = Fleet::in_memory(&store, FleetConfig::new("members")).unwrap();
    assert!(one.share(&KEY_IN_ONE));
    assert!(two.share(&KEY_IN_TWO));
    let limited = Class::RateLimited {
        retry_after: Some(Duration::from_secs(20)),
    };
    KEY_IN_ONE.failed(SEND, limited, Instant::now(), &Policy::TRANSIENT);
    // The other member hears of it (its write task, then the store's fan-out).
    let mut heard = false;
    // backoff-lint: allow(a test polling, bounded, for what another member's task delivers)
    for _ in 0..100 {
        if KEY_IN_TWO.paused_for().is_some() {
            heard = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(heard, "the second member never heard of the pause");
    KEY_IN_ONE.reset();
    KEY_IN_TWO.reset();
}

static SHARED_ONCE: Upstream = Upstream::new("shared-once");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_fleet_stops_its_sharing() {
    let store = Arc::new(FleetMemory::default());
    let fleet = Fleet::in_memory(&store, FleetConfig::new("dropped")).unwrap();
    assert!(fleet.share(&SHARED_ONCE));
    let clone = fleet.clone();
    assert!(!clone.share(&SHARED_ONCE), "shared already");
    drop(fleet);
    assert!(!clone.share(&SHARED_ONCE), "a clone still shares it");
    drop(clone);
    // The last handle gone, the upstream is this process's alone: a new fleet may share it.
    let again = Fleet::in_memory(&store, FleetConfig::new("dropped")).unwrap();
    assert!(again.share(&SHARED_ONCE));
}
