//! Issue 31: inside a testing scope, the waits a turn's report and a ladder's give-up count
//! are exactly the waits recorded. tokio's clock runs here (it is not paused), so each skipped
//! wait takes a few real microseconds: a count that measured the waits would see them (a
//! 250 + 500 + 1000 ms ladder was reported as 1,753 ms).

use std::time::Duration;

use retry_runtime::{Class, GaveUp, Jitter, Policy, Retry, StopReason, Turn, testing};

const TURN: Duration = Duration::from_secs(180);
const LADDER: [Duration; 3] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_millis(1000),
];

async fn unavailable(_: u32) -> Result<(), Class> {
    Err(Class::Unavailable { retry_after: None })
}

#[tokio::test(flavor = "current_thread")]
async fn a_turns_waiting_is_exactly_the_recorded_waits() {
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(TURN).run(Retry::new(&Policy::AVAILABILITY).run(unavailable)))
            .await;

    assert!(outcome.unwrap().is_err());
    assert_eq!(recorded.waits(), LADDER);
    assert_eq!(report.waiting(), Duration::from_millis(1750));
    assert_eq!(report.waiting(), recorded.total());
}

#[tokio::test(flavor = "current_thread")]
async fn a_give_up_inside_a_turn_waited_exactly_the_recorded_waits() {
    let ((outcome, _), recorded) =
        testing::scope(Turn::new(TURN).run(Retry::new(&Policy::AVAILABILITY).run(unavailable)))
            .await;

    let gave_up = outcome.unwrap().unwrap_err();
    assert!(matches!(gave_up.reason(), StopReason::Exhausted { .. }));
    assert_eq!(recorded.waits(), LADDER);
    assert_eq!(gave_up.waited(), recorded.total());
}

#[tokio::test(flavor = "current_thread")]
async fn a_give_up_outside_a_turn_waited_exactly_the_recorded_waits() {
    let (result, recorded) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(unavailable)).await;

    assert_eq!(recorded.waits(), LADDER);
    assert_eq!(result.unwrap_err().waited(), recorded.total());
}

#[tokio::test(flavor = "current_thread")]
async fn a_success_after_retries_leaves_exactly_the_recorded_waits_in_the_report() {
    let ((outcome, report), recorded) = testing::scope(Turn::new(TURN).run(
        Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
            if attempt < 3 {
                Err(Class::Unavailable { retry_after: None })
            } else {
                Ok(attempt)
            }
        }),
    ))
    .await;

    assert_eq!(outcome.unwrap().unwrap(), 3);
    assert_eq!(recorded.waits(), &LADDER[..2]);
    assert_eq!(report.waiting(), recorded.total());
}

#[tokio::test(flavor = "current_thread")]
async fn the_report_counts_waits_of_a_fraction_of_a_millisecond_to_the_nanosecond() {
    static FINE: Policy = Policy::AVAILABILITY
        .with_base(Duration::from_micros(1_500))
        .with_jitter(Jitter::None);
    let ((_, report), recorded) =
        testing::scope(Turn::new(TURN).run(Retry::new(&FINE).run(unavailable))).await;

    assert_eq!(
        recorded.waits(),
        [1_500, 3_000, 6_000].map(Duration::from_micros)
    );
    assert_eq!(report.waiting(), recorded.total());
}

#[tokio::test(flavor = "current_thread")]
async fn nested_ladders_leave_exactly_their_recorded_waits_in_the_report() {
    let ((outcome, report), recorded) = testing::scope(
        Turn::new(TURN).run(
            Retry::new(&Policy::AVAILABILITY)
                .named("outer")
                .run(async |_| {
                    Retry::new(&Policy::AVAILABILITY)
                        .named("inner")
                        .run(async |attempt| {
                            if attempt < 2 {
                                Err(Class::Unavailable { retry_after: None })
                            } else {
                                Ok(())
                            }
                        })
                        .await
                        .map_err(GaveUp::into_error)
                }),
        ),
    )
    .await;

    outcome.unwrap().unwrap();
    assert_eq!(recorded.waits(), &LADDER[..1]);
    assert_eq!(report.waiting(), recorded.total());
}
