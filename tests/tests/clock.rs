//! The clock is injectable, and the path that never retries does not touch it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::notice::Action;
use retry_runtime::{BoxSleep, Class, Clock, Deadline, Draw, Policy, Retry, StopReason, Turn};
use tokio::time::Instant;

/// A clock that counts every use and never sleeps.
#[derive(Clone, Default)]
struct Counting {
    reads: Arc<AtomicU32>,
    draws: Arc<AtomicU32>,
    sleeps: Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl Clock for Counting {
    type Sleep = BoxSleep;

    fn now(&self) -> Instant {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Instant::now()
    }
    fn sleep(&self, wait: Duration) -> BoxSleep {
        self.sleeps.lock().unwrap().push(wait);
        Box::pin(async {})
    }
    fn draw(&self) -> Draw {
        self.draws.fetch_add(1, Ordering::SeqCst);
        Draw::from_bits(0)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_try_success_reads_neither_the_clock_nor_the_rng() {
    let clock = Counting::default();
    let result = Retry::new(&Policy::AVAILABILITY)
        .with_clock(clock.clone())
        .run(async |_| Ok::<_, Class>(42))
        .await;

    assert_eq!(result.unwrap(), 42);
    assert_eq!(clock.reads.load(Ordering::SeqCst), 0);
    assert_eq!(clock.draws.load(Ordering::SeqCst), 0);
    assert!(clock.sleeps.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_draws_no_jitter_and_waits_nothing() {
    let clock = Counting::default();
    let result = Retry::new(&Policy::AVAILABILITY)
        .with_clock(clock.clone())
        .run(async |_| Err::<(), _>(Class::Definitive))
        .await;

    assert_eq!(result.unwrap_err().attempts(), 1);
    assert_eq!(clock.draws.load(Ordering::SeqCst), 0);
    assert!(clock.sleeps.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn an_injected_clock_chooses_the_draws_and_receives_the_waits() {
    // Draw 0 is the bottom of equal jitter: every wait is half its ideal.
    let clock = Counting::default();
    let result = Retry::new(&Policy::AVAILABILITY)
        .with_clock(clock.clone())
        .run(async |_| Err::<(), _>(Class::Transport))
        .await;

    assert_eq!(result.unwrap_err().attempts(), 4);
    assert_eq!(clock.draws.load(Ordering::SeqCst), 3);
    assert_eq!(
        *clock.sleeps.lock().unwrap(),
        [125, 250, 500].map(Duration::from_millis)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_literal_budget_outside_a_turn_reads_the_clock_once_for_a_success() {
    let clock = Counting::default();
    let _ = Retry::new(&Policy::AVAILABILITY)
        .within(Deadline::Within(Duration::from_secs(2)))
        .with_clock(clock.clone())
        .run(async |_| Ok::<_, Class>(()))
        .await;
    // The start, for the deadline: paid only by those who ask. Outside a turn no report
    // wants the end.
    assert_eq!(clock.reads.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn real_waits_run_on_tokio_time_and_a_turn_counts_each_as_chosen() {
    // No testing scope: the default clock sleeps on tokio's (paused) clock.
    let chosen = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&chosen);
    let started = Instant::now();
    let (result, report) = Turn::new(Duration::from_secs(180))
        .on_notice(move |notice| {
            if let Some(Action::Retry { backoff }) = notice.retry().map(|event| event.action) {
                heard.lock().unwrap().push(backoff);
            }
        })
        .run(Retry::new(&Policy::OUTAGE).run(async |attempt| {
            if attempt < 3 {
                Err(Class::Unavailable { retry_after: None })
            } else {
                Ok(())
            }
        }))
        .await;

    result.unwrap().unwrap();
    // Above jitter draws from [1, 1.2) of 5 s and 15 s.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(20) && waited < Duration::from_secs(24),
        "{waited:?}"
    );
    // The report counts each wait as the one chosen, to the nanosecond; tokio's timer, which
    // ends a sleep on a whole millisecond, may end it up to a millisecond later.
    let chosen: Duration = chosen.lock().unwrap().iter().sum();
    assert_eq!(report.waiting(), chosen);
    assert!(
        chosen <= waited && waited - chosen <= Duration::from_millis(2),
        "{chosen:?} chosen, {waited:?} waited"
    );
}

/// A clock whose every sleep runs 100 ms past the wait asked for, as a late timer would.
#[derive(Clone, Copy)]
struct Late;

impl Clock for Late {
    type Sleep = tokio::time::Sleep;

    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, wait: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(wait + Duration::from_millis(100))
    }
    fn draw(&self) -> Draw {
        Draw::from_bits(0)
    }
}

#[tokio::test(start_paused = true)]
async fn outside_a_turn_the_waits_counted_are_the_waits_chosen_and_the_budget_is_the_clocks() {
    let policy = const {
        &Policy::TRANSIENT
            .with_attempts(10)
            .with_base(Duration::from_secs(1))
            .with_multiplier(1.0)
            .with_jitter(retry_runtime::Jitter::None)
    };
    let started = Instant::now();
    let gave_up = Retry::new(policy)
        .within(Deadline::Within(Duration::from_millis(3_250)))
        .with_clock(Late)
        .run(async |_| Err::<(), _>(Class::Transport))
        .await
        .unwrap_err();

    // By the clock, the third wait of 1 s starts at 2.2 s with 1.05 s of the budget left (a
    // wait must end strictly before the deadline), and the fourth attempt ends at 3.3 s with
    // none: the budget stops the ladder. The waits
    // counted are the three chosen, not the 3.3 s the late timer took.
    assert!(
        matches!(gave_up.reason(), StopReason::Budget { .. }),
        "{:?}",
        gave_up.reason()
    );
    assert_eq!(gave_up.attempts(), 4);
    assert_eq!(gave_up.waited(), Duration::from_secs(3));
    assert_eq!(started.elapsed(), Duration::from_millis(3_300));
}
