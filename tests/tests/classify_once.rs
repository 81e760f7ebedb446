//! Each failure is classified once, on every path: the attribute, `Retry`, the stream and the
//! tower layer, on one upstream and across two. A `Classify` that counts its calls fails twice
//! (a rate limit without a hint: no pause, no gate), then the call succeeds: two calls.

use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::{
    Class, Classify, Policy, Retry, Upstream, UpstreamPaused, Upstreams, retry, testing,
};

#[derive(Debug)]
enum Failed {
    Limited(&'static AtomicU32),
    Paused(UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Limited(classified) => {
                classified.fetch_add(1, Ordering::SeqCst);
                Class::RateLimited { retry_after: None }
            }
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

impl From<UpstreamPaused> for Failed {
    fn from(paused: UpstreamPaused) -> Self {
        Failed::Paused(paused)
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("limited")
    }
}

/// Fails the first two times it is called, then answers.
fn third_time(calls: &AtomicU32, classified: &'static AtomicU32) -> Result<u32, Failed> {
    match calls.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => Err(Failed::Limited(classified)),
        n => Ok(n + 1),
    }
}

macro_rules! counted {
    ($name:ident) => {
        static $name: AtomicU32 = AtomicU32::new(0);
    };
}

static ONE: Upstream = Upstream::new("classify-one");
static A: Upstream = Upstream::new("classify-a");
static B: Upstream = Upstream::new("classify-b");
static TWO: Upstreams = Upstreams::new(&[&A, &B]);

counted!(RETRY_ONE);
counted!(RETRY_TWO);
counted!(ATTRIBUTE_ONE);
counted!(ATTRIBUTE_TWO);
counted!(STREAM_ONE);
counted!(STREAM_TWO);
counted!(LAYER_ONE);
counted!(LAYER_TWO);

#[tokio::test]
async fn retry_on_one_upstream() {
    let calls = AtomicU32::new(0);
    let call = Retry::new(&Policy::AVAILABILITY)
        .upstream(&ONE)
        .run(async |_| third_time(&calls, &RETRY_ONE));
    assert_eq!(testing::scope(call).await.0.unwrap(), 3);
    assert_eq!(RETRY_ONE.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn retry_across_two() {
    let calls = AtomicU32::new(0);
    let call = Retry::new(&Policy::AVAILABILITY)
        .across(&TWO)
        .run(async |_| third_time(&calls, &RETRY_TWO));
    assert_eq!(*testing::scope(call).await.0.unwrap().value(), 3);
    assert_eq!(RETRY_TWO.load(Ordering::SeqCst), 2);
}

#[retry(policy = "availability", upstream = ONE)]
async fn annotated_one(calls: &AtomicU32) -> Result<u32, Failed> {
    third_time(calls, &ATTRIBUTE_ONE)
}

#[retry(policy = "availability", across = TWO)]
async fn annotated_two(calls: &AtomicU32) -> Result<u32, Failed> {
    third_time(calls, &ATTRIBUTE_TWO)
}

#[tokio::test]
async fn the_attribute_on_one_upstream() {
    let calls = AtomicU32::new(0);
    assert_eq!(testing::scope(annotated_one(&calls)).await.0.unwrap(), 3);
    assert_eq!(ATTRIBUTE_ONE.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_attribute_across_two() {
    let calls = AtomicU32::new(0);
    assert_eq!(testing::scope(annotated_two(&calls)).await.0.unwrap(), 3);
    assert_eq!(ATTRIBUTE_TWO.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stream_on_one_upstream() {
    let calls = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .upstream(&ONE)
        .stream(|_| {
            let opened = third_time(&calls, &STREAM_ONE);
            async move { opened.map(|n| testing::stream_of(vec![Ok::<_, Failed>(n)])) }
        });
    let (items, _) = testing::scope(testing::collect(stream)).await;
    assert_eq!(items.len(), 1);
    assert!(items[0].is_ok());
    assert_eq!(STREAM_ONE.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stream_across_two() {
    let calls = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY).across(&TWO).stream(|_| {
        let opened = third_time(&calls, &STREAM_TWO);
        async move { opened.map(|n| testing::stream_of(vec![Ok::<_, Failed>(n)])) }
    });
    let (items, _) = testing::scope(testing::collect(stream)).await;
    assert_eq!(items.len(), 1);
    assert!(items[0].is_ok());
    assert_eq!(STREAM_TWO.load(Ordering::SeqCst), 2);
}

mod layer {
    //! The tower layer: the service's own errors, classified by a counting closure.

    use super::*;
    use tower::{Layer, Service, ServiceExt};

    #[derive(Debug)]
    struct Refused;

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("refused")
        }
    }

    impl From<UpstreamPaused> for Refused {
        fn from(_: UpstreamPaused) -> Self {
            Refused
        }
    }

    /// A service that refuses its first two requests, then answers 200.
    fn refusing_twice(
        calls: &'static AtomicU32,
    ) -> impl Service<(), Response = http::Response<String>, Error = Refused, Future: Send> + Clone
    {
        tower::service_fn(move |()| async move {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(Refused),
                _ => Ok(http::Response::new("ok".to_owned())),
            }
        })
    }

    fn counting(classified: &'static AtomicU32) -> impl Fn(&Refused) -> Class + Clone {
        move |_| {
            classified.fetch_add(1, Ordering::SeqCst);
            Class::RateLimited { retry_after: None }
        }
    }

    #[tokio::test]
    async fn the_layer_on_one_upstream() {
        static CALLS: AtomicU32 = AtomicU32::new(0);
        let layer = retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
            .classify_errors(counting(&LAYER_ONE))
            .upstream(&ONE);
        let mut service = layer.layer(refusing_twice(&CALLS));
        let call = service.ready().await.ok().unwrap().call(());
        let (response, _) = testing::scope(call).await;
        assert_eq!(response.ok().unwrap().status(), 200);
        assert_eq!(LAYER_ONE.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_layer_across_two() {
        static CALLS: AtomicU32 = AtomicU32::new(0);
        let layer = retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
            .classify_errors(counting(&LAYER_TWO))
            .across::<(), Refused>(&TWO, |_, _| {});
        let mut service = layer.layer(refusing_twice(&CALLS));
        let call = service.ready().await.ok().unwrap().call(());
        let (response, _) = testing::scope(call).await;
        assert_eq!(response.ok().unwrap().status(), 200);
        assert_eq!(LAYER_TWO.load(Ordering::SeqCst), 2);
    }
}
