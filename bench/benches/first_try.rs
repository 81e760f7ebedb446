//! The cost of a first-try success: the path every call takes when nothing fails.
//!
//! Compares a plain call with the same call through `retry-runtime` (the attribute and the
//! explicit API) and through the peers (backon, tokio-retry, backoff), in one run:
//! `cargo bench -p retry-bench`.

use std::hint::black_box;
use std::io;

use criterion::{Criterion, criterion_group, criterion_main};
use retry_runtime::{Policy, Retry, retry};

async fn plain(x: u64) -> Result<u64, io::Error> {
    Ok(black_box(x) + 1)
}

#[retry(policy = "availability")]
async fn annotated(x: u64) -> Result<u64, io::Error> {
    Ok(black_box(x) + 1)
}

fn first_try(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    let mut group = c.benchmark_group("first_try_success");

    group.bench_function("plain call", |b| {
        b.to_async(&runtime).iter(|| plain(black_box(1)))
    });
    group.bench_function("retry-runtime #[retry]", |b| {
        b.to_async(&runtime).iter(|| annotated(black_box(1)))
    });
    group.bench_function("retry-runtime Retry::run", |b| {
        b.to_async(&runtime)
            .iter(|| Retry::new(&Policy::AVAILABILITY).run(async |_| plain(black_box(1)).await))
    });
    group.bench_function("backon", |b| {
        use backon::{ExponentialBuilder, Retryable};
        b.to_async(&runtime).iter(|| {
            (|| plain(black_box(1))).retry(
                ExponentialBuilder::default()
                    .with_min_delay(std::time::Duration::from_millis(250))
                    .with_max_times(3)
                    .with_jitter(),
            )
        })
    });
    group.bench_function("tokio-retry", |b| {
        use tokio_retry::strategy::{ExponentialBackoff, jitter};
        b.to_async(&runtime).iter(|| {
            tokio_retry::Retry::start(
                ExponentialBackoff::from_millis(2)
                    .factor(125)
                    .map(jitter)
                    .take(3),
                || plain(black_box(1)),
            )
        })
    });
    group.bench_function("backoff", |b| {
        b.to_async(&runtime).iter(|| {
            backoff::future::retry(backoff::ExponentialBackoff::default(), || async {
                plain(black_box(1)).await.map_err(backoff::Error::transient)
            })
        })
    });
    group.finish();
}

criterion_group!(benches, first_try);
criterion_main!(benches);
