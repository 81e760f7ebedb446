//! An upstream tells what changed (metrics, tracing, the fleet) only after it releases its
//! lock: a subscriber that reads the same upstream from inside its callback never finds the
//! lock held (and so never deadlocks a call).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{Admission, Class, Policy, Upstream, UpstreamStatus};
use tokio::time::Instant;
use tracing_subscriber::layer::{Context, SubscriberExt};

static WATCHED: Upstream = Upstream::new("watched");

/// On each of the library's events, read `WATCHED` (its lock) from another thread, and count
/// the reads that could not finish while the event was being told.
struct ReadsTheUpstream {
    events: Arc<AtomicU32>,
    found_held: Arc<AtomicU32>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ReadsTheUpstream {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "retry" {
            return;
        }
        self.events.fetch_add(1, Ordering::SeqCst);
        let (read, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = WATCHED.paused_for();
            let _ = read.send(());
        });
        // Only a read blocked behind the lock waits this long.
        if done.recv_timeout(Duration::from_secs(2)).is_err() {
            self.found_held.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn nothing_is_told_while_the_upstreams_lock_is_held() {
    let events = Arc::new(AtomicU32::new(0));
    let found_held = Arc::new(AtomicU32::new(0));
    let subscriber = tracing_subscriber::registry().with(ReadsTheUpstream {
        events: Arc::clone(&events),
        found_held: Arc::clone(&found_held),
    });
    tracing::subscriber::with_default(subscriber, || {
        let send = Admission::Send {
            probe: None,
            seen: UpstreamStatus::NOTHING,
        };
        let policy = &Policy::AVAILABILITY;
        let now = Instant::now();
        // A pause.
        let limited = Class::RateLimited {
            retry_after: Some(Duration::from_millis(1)),
        };
        WATCHED.failed(send, limited, now, policy);
        // The gate opens, its probe goes and fails, the next succeeds and closes it.
        for _ in 0..3 {
            WATCHED.failed(send, Class::Transport, now, policy);
        }
        let later = now + Duration::from_secs(5);
        let probe = WATCHED.admit(later);
        assert!(
            matches!(probe, Admission::Send { probe: Some(_), .. }),
            "{probe:?}"
        );
        WATCHED.failed(probe, Class::Transport, later, policy);
        let probe = WATCHED.admit(later + Duration::from_secs(5));
        WATCHED.succeeded(probe);
    });
    WATCHED.reset();
    // Paused, opened, probed twice, closed.
    assert!(events.load(Ordering::SeqCst) >= 5, "{events:?}");
    assert_eq!(found_held.load(Ordering::SeqCst), 0);
}
