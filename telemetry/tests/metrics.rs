//! The metrics of the seed scenarios, against a real loopback server and a real client: what a
//! dashboard reads after a first-try success, a 503-503-200, an exhausted outage, an answer, a
//! quota refusal and a call its turn dropped.
//!
//! Each test installs `metrics-util`'s debugging recorder as its thread's local recorder (a
//! global one would mix the counts of tests that run in parallel), and runs on a
//! current-thread runtime, so every metric the call records reaches it.

use std::collections::BTreeMap;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::{Policy, Quota, Retry, Turn, meter, testing};
use retry_tests::{Server, Step};

/// A metric's name and its labels, sorted, as one readable key: `name{label=value,...}`.
type Series = String;

/// What the recorder holds: each counter's value, and each histogram's sample count.
fn read(recorder: &DebuggingRecorder) -> BTreeMap<Series, u64> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|label| format!("{}={}", label.key(), label.value()))
                .collect();
            labels.sort();
            let series = format!("{}{{{}}}", key.name(), labels.join(","));
            let value = match value {
                DebugValue::Counter(count) => count,
                DebugValue::Histogram(samples) => samples.len() as u64,
                DebugValue::Gauge(_) => panic!("a retry records no gauge: {series}"),
            };
            (series, value)
        })
        .collect()
}

fn expect(rows: &[(&str, u64)]) -> BTreeMap<Series, u64> {
    rows.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect()
}

const FETCH: Retry = Retry::new(&Policy::AVAILABILITY).named("fetch");

#[tokio::test(flavor = "current_thread")]
async fn a_first_try_success_counts_one_first_try_call_and_one_ok_attempt() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start([Step::ok("reply")]).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_ok());
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=ok,op=fetch}", 1),
            ("retry_calls_total{op=fetch,outcome=first_try}", 1),
        ])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_503_503_200_counts_two_unavailable_attempts_two_waits_and_a_call_after_retries() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start([Step::status(503), Step::status(503), Step::ok("reply")]).await;
    let client = server.client();

    let (result, recorded) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_ok());
    assert_eq!(server.requests(), 3);
    assert_eq!(recorded.waits().len(), 2);
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=ok,op=fetch}", 1),
            ("retry_attempts_total{class=unavailable,op=fetch}", 2),
            ("retry_calls_total{op=fetch,outcome=after_retries}", 1),
            ("retry_wait_seconds{op=fetch}", 2),
        ])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_exhausted_outage_counts_every_attempt_and_one_undetermined_give_up() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start(Step::status(503).times(4)).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_err());
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=unavailable,op=fetch}", 4),
            (
                "retry_calls_total{op=fetch,outcome=gave_up_undetermined}",
                1
            ),
            ("retry_give_ups_total{op=fetch,reason=exhausted}", 1),
            ("retry_wait_seconds{op=fetch}", 3),
        ])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_counts_one_definitive_attempt_and_an_answer_give_up_with_no_wait() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start([Step::status(404)]).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_err());
    assert_eq!(server.requests(), 1);
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=definitive,op=fetch}", 1),
            ("retry_calls_total{op=fetch,outcome=gave_up_answer}", 1),
            ("retry_give_ups_total{op=fetch,reason=definitive}", 1),
        ])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_quota_refusal_counts_one_refusal_and_a_quota_give_up() {
    static SPENT: Quota = Quota::standard().starting_at(0);
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start([Step::status(503)]).await;
    let client = server.client();

    let (result, recorded) =
        testing::scope(FETCH.with_quota(&SPENT).run(async |_| client.get().await)).await;

    assert!(result.is_err());
    assert!(recorded.waits().is_empty());
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=unavailable,op=fetch}", 1),
            (
                "retry_calls_total{op=fetch,outcome=gave_up_undetermined}",
                1
            ),
            ("retry_give_ups_total{op=fetch,reason=quota}", 1),
            ("retry_quota_refusals_total{op=fetch}", 1),
        ])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_its_turn_dropped_counts_one_dropped_call_and_no_attempt() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    // The server answers after the turn's deadline: the attempt is in flight when the turn
    // drops it. Real time, short: a real socket is waited on.
    let server = Server::start([Step::ok("late").after(Duration::from_secs(5))]).await;
    let client = server.client();

    let (outcome, report) = Turn::new(Duration::from_millis(300))
        .run(FETCH.run(async |_| client.get().await))
        .await;

    assert!(outcome.is_expired());
    assert_eq!(report.in_flight().len(), 1);
    assert_eq!(
        read(&recorder),
        expect(&[("retry_calls_total{op=fetch,outcome=dropped}", 1)])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_dropped_outside_a_turn_in_its_wait_counts_as_dropped() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = Server::start([Step::status(503)]).await;
    let client = server.client();
    // The retry's notice says the wait begins: the caller drops the call then, in its wait,
    // whatever the machine's speed. (The process hook hears every test's calls: this one's
    // has a name of its own.)
    let waiting = std::sync::Arc::new(tokio::sync::Notify::new());
    let heard = std::sync::Arc::clone(&waiting);
    retry_runtime::notice::set_process_hook(move |notice| {
        if notice
            .retry()
            .is_some_and(|event| event.op == "dropped in its wait")
        {
            heard.notify_one();
        }
    });

    let call = Retry::new(&Policy::AVAILABILITY)
        .named("dropped in its wait")
        .run(async |_| client.get().await);
    tokio::select! {
        _ = call => panic!("the call finished; it should have been waiting"),
        () = waiting.notified() => {}
    }
    retry_runtime::notice::clear_process_hook();

    assert_eq!(server.requests(), 1);
    assert_eq!(
        read(&recorder),
        expect(&[
            (
                "retry_attempts_total{class=unavailable,op=dropped in its wait}",
                1
            ),
            (
                "retry_calls_total{op=dropped in its wait,outcome=dropped}",
                1
            ),
            ("retry_wait_seconds{op=dropped in its wait}", 1),
        ])
    );
}

#[test]
fn the_documented_names_are_the_recorded_ones() {
    assert_eq!(
        [
            meter::CALLS,
            meter::ATTEMPTS,
            meter::WAIT_SECONDS,
            meter::GIVE_UPS,
            meter::QUOTA_REFUSALS,
            meter::STREAM_COMMITS,
            meter::STREAM_RESTARTS,
            meter::STREAM_RESUMES,
            meter::UPSTREAM_WAITS,
            meter::UPSTREAM_WAIT_SECONDS,
            meter::UPSTREAM_PAUSES,
            meter::UPSTREAM_GATE,
            meter::UPSTREAM_PROBES,
        ],
        [
            "retry_calls_total",
            "retry_attempts_total",
            "retry_wait_seconds",
            "retry_give_ups_total",
            "retry_quota_refusals_total",
            "retry_stream_commits_total",
            "retry_stream_restarts_total",
            "retry_stream_resumes_total",
            "retry_upstream_waits_total",
            "retry_upstream_wait_seconds",
            "retry_upstream_pauses_total",
            "retry_upstream_gate_total",
            "retry_upstream_probes_total",
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_attempt_that_carried_an_inner_give_up_is_counted_once_at_the_innermost_ladder() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let inner = Retry::new(&Policy::AVAILABILITY).named("inner");
    let outer = Retry::new(&Policy::AVAILABILITY).named("outer");

    let result = outer
        .run(async |_| {
            inner
                .run(async |_| Err::<(), _>(retry_runtime::Class::Transport))
                .await
        })
        .await;

    assert!(result.is_err());
    assert_eq!(
        read(&recorder),
        expect(&[
            ("retry_attempts_total{class=transport,op=inner}", 4),
            (
                "retry_calls_total{op=inner,outcome=gave_up_undetermined}",
                1
            ),
            (
                "retry_calls_total{op=outer,outcome=gave_up_undetermined}",
                1
            ),
            ("retry_give_ups_total{op=inner,reason=exhausted}", 1),
            ("retry_give_ups_total{op=outer,reason=nested}", 1),
            ("retry_wait_seconds{op=inner}", 3),
        ])
    );
}

mod streams {
    use std::fmt;

    use retry_runtime::{Class, Classify, EndedEarly, testing};

    use super::{DebuggingRecorder, FETCH, expect, read};

    #[derive(Debug)]
    struct Cut;

    impl From<EndedEarly> for Cut {
        fn from(_: EndedEarly) -> Self {
            Cut
        }
    }

    impl Classify for Cut {
        fn classify(&self) -> Class {
            Class::Transport
        }
    }

    impl fmt::Display for Cut {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("cut")
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stream_counts_its_commit_and_its_restart_after_it() {
        let recorder = DebuggingRecorder::new();
        let _local = metrics::set_default_local_recorder(&recorder);
        let stream = FETCH
            .stream(|attempt| async move {
                Ok::<_, Cut>(testing::stream_of(match attempt {
                    1 => vec![Ok("a"), Err(Cut)],
                    _ => vec![Ok("a"), Ok("b")],
                }))
            })
            .restart_after_commit(|| {});

        let (items, _) = testing::scope(testing::collect(stream)).await;

        assert_eq!(items.len(), 3);
        assert_eq!(
            read(&recorder),
            expect(&[
                ("retry_attempts_total{class=ok,op=fetch}", 1),
                ("retry_attempts_total{class=transport,op=fetch}", 1),
                ("retry_calls_total{op=fetch,outcome=after_retries}", 1),
                ("retry_stream_commits_total{op=fetch}", 1),
                ("retry_stream_restarts_total{op=fetch}", 1),
                ("retry_wait_seconds{op=fetch}", 1),
            ])
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_resumed_stream_counts_its_resume_apart_from_restarts() {
        let recorder = DebuggingRecorder::new();
        let _local = metrics::set_default_local_recorder(&recorder);
        let stream = FETCH
            .stream(|_| async { Ok::<_, Cut>(testing::stream_of(vec![Ok(1), Err(Cut)])) })
            .cursor(|n: &u64| Some(*n))
            .resume(|_| async { Ok(testing::stream_of(vec![Ok(2)])) });

        let (items, _) = testing::scope(testing::collect(stream)).await;

        assert_eq!(items.len(), 2);
        assert_eq!(
            read(&recorder),
            expect(&[
                ("retry_attempts_total{class=ok,op=fetch}", 1),
                ("retry_attempts_total{class=transport,op=fetch}", 1),
                ("retry_calls_total{op=fetch,outcome=after_retries}", 1),
                ("retry_stream_commits_total{op=fetch}", 1),
                ("retry_stream_resumes_total{op=fetch}", 1),
                ("retry_wait_seconds{op=fetch}", 1),
            ])
        );
    }

    /// Dropped in the wait before its resume, a stream that had delivered output has finished:
    /// its cut attempt counts once, as the cut, not again as an `ok` one.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_stream_dropped_in_its_resume_wait_counts_its_cut_attempt_once() {
        use futures_core::Stream;
        use std::pin::pin;
        use std::task::{Context, Poll, Waker};

        let recorder = DebuggingRecorder::new();
        let _local = metrics::set_default_local_recorder(&recorder);
        let stream = FETCH
            .stream(|_| async { Ok::<_, Cut>(testing::stream_of(vec![Ok(1), Err(Cut)])) })
            .cursor(|n: &u64| Some(*n))
            .resume(|_| async { Ok(testing::stream_of(vec![Ok(2)])) });
        {
            let mut stream = pin!(stream);
            let mut cx = Context::from_waker(Waker::noop());
            assert!(matches!(
                stream.as_mut().poll_next(&mut cx),
                Poll::Ready(Some(Ok(1)))
            ));
            // The cut: the stream is now in its wait before the resume, and is dropped there.
            assert!(stream.as_mut().poll_next(&mut cx).is_pending());
        }
        assert_eq!(
            read(&recorder),
            expect(&[
                ("retry_attempts_total{class=transport,op=fetch}", 1),
                ("retry_calls_total{op=fetch,outcome=first_try}", 1),
                ("retry_stream_commits_total{op=fetch}", 1),
                ("retry_wait_seconds{op=fetch}", 1),
            ])
        );
    }
}

mod labels {
    use proptest::prelude::*;
    use retry_runtime::{Class, Policy, Retry, meter, testing};

    use super::DebuggingRecorder;

    fn class() -> impl Strategy<Value = Class> {
        prop::sample::select(Class::ALL.to_vec())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the failures, every label value is one the crate documents.
        #[test]
        fn every_label_value_is_a_documented_one(
            failures in prop::collection::vec(class(), 0..6),
            policy in prop::sample::select(Policy::BUILT_IN.to_vec()),
        ) {
            let recorder = DebuggingRecorder::new();
            let _local = metrics::set_default_local_recorder(&recorder);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let retry = Retry::new(&policy).named("op");
            let _ = runtime.block_on(testing::scope(retry.run(async |attempt| {
                match failures.get(attempt as usize - 1) {
                    Some(class) => Err(*class),
                    None => Ok(()),
                }
            })));
            for (key, _, _, _) in recorder.snapshotter().snapshot().into_vec() {
                for label in key.key().labels() {
                    let allowed: &[&str] = match label.key() {
                        "op" => &["op"],
                        "outcome" => meter::OUTCOMES,
                        "class" => meter::ATTEMPT_CLASSES,
                        "reason" => meter::REASONS,
                        other => panic!("an undocumented label: {other}"),
                    };
                    prop_assert!(allowed.contains(&label.value()), "{label:?}");
                }
            }
        }
    }
}

mod upstreams {
    use super::*;
    use retry_runtime::{Admission, Class, Classify, Upstream, UpstreamPaused, UpstreamStatus};
    use std::fmt;

    #[derive(Debug)]
    enum Failed {
        Limited,
        Paused(UpstreamPaused),
    }

    impl From<UpstreamPaused> for Failed {
        fn from(paused: UpstreamPaused) -> Self {
            Failed::Paused(paused)
        }
    }

    impl Classify for Failed {
        fn classify(&self) -> Class {
            match self {
                Failed::Limited => Class::RateLimited {
                    retry_after: Some(Duration::from_secs(2)),
                },
                Failed::Paused(paused) => paused.classify(),
            }
        }
    }

    impl fmt::Display for Failed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{self:?}")
        }
    }

    static ONCE: Policy = Policy::AVAILABILITY.with_attempts(1);
    static MODEL: Upstream = Upstream::new("model");

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_upstreams_pause_its_waits_and_its_gate_are_counted_by_its_name() {
        let recorder = DebuggingRecorder::new();
        let _local = metrics::set_default_local_recorder(&recorder);
        let told = Retry::new(&ONCE)
            .upstream(&MODEL)
            .run(async |_| Err::<(), _>(Failed::Limited));
        assert!(told.await.is_err());
        let (waited, _) = testing::scope(
            Retry::new(&Policy::AVAILABILITY)
                .upstream(&MODEL)
                .run(async |_| Ok::<_, Failed>(())),
        )
        .await;
        assert!(waited.is_ok());
        // Three outages open the gate; after the first rung, one call probes and closes it.
        let send = Admission::Send {
            probe: None,
            seen: UpstreamStatus::NOTHING,
        };
        for _ in 0..3 {
            MODEL.failed(send, Class::Transport, tokio::time::Instant::now(), &ONCE);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let probe = Retry::new(&Policy::AVAILABILITY)
            .upstream(&MODEL)
            .run(async |_| Ok::<_, Failed>(()));
        assert!(probe.await.is_ok());
        MODEL.reset();

        let read = read(&recorder);
        let upstream: BTreeMap<_, _> = read
            .into_iter()
            .filter(|(series, _)| series.starts_with("retry_upstream"))
            .collect();
        assert_eq!(
            upstream,
            expect(&[
                ("retry_upstream_gate_total{event=closed,upstream=model}", 1),
                ("retry_upstream_gate_total{event=opened,upstream=model}", 1),
                ("retry_upstream_pauses_total{upstream=model}", 1),
                ("retry_upstream_probes_total{upstream=model}", 1),
                ("retry_upstream_wait_seconds{upstream=model}", 1),
                ("retry_upstream_waits_total{kind=pause,upstream=model}", 1),
            ])
        );
    }
}
