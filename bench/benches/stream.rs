//! Issue 20's performance row, in one process and one run: `cargo bench -p retry-bench --bench
//! stream`.
//!
//! 100,000 Anthropic-style `content_block_delta` events from memory (16 KiB chunks, every
//! item ready at once, polled with a no-op waker: no runtime, no I/O), read to the end:
//!
//! - **decoder alone**: `sse::decode` over the chunks;
//! - **through `Retry::stream`**: the same decoder opened by `Retry::stream(..)
//!   .commit_when(sse::is_content)`, so every event but the first passes through after the
//!   commit point.
//!
//! The table shows, of criterion's samples, the fastest sample's time per event, their ratio,
//! and the allocations per event of each (counted with `allocation-counter`, whose counting
//! allocator serves this whole binary, so both pay the same per allocation).

use std::convert::Infallible;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use criterion::Criterion;
use futures_core::Stream;
use retry_runtime::{Class, Classify, EndedEarly, Policy, Retry, sse};

const EVENTS: usize = 100_000;
const CHUNK: usize = 16 * 1024;
const SAMPLES: usize = 30;

/// The body: `EVENTS` events, cut into `CHUNK`-byte chunks that share one buffer.
fn chunks() -> Vec<Bytes> {
    let mut body = String::new();
    for i in 0..EVENTS {
        body.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token ");
        body.push_str(&(i % 1000).to_string());
        body.push_str("\"}}\n\n");
    }
    let body = Bytes::from(body);
    (0..body.len())
        .step_by(CHUNK)
        .map(|start| body.slice(start..(start + CHUNK).min(body.len())))
        .collect()
}

/// The chunks as a byte stream, each ready at once.
struct Chunks(std::vec::IntoIter<Bytes>);

impl Stream for Chunks {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

/// Poll `stream` to its end with a no-op waker; the number of items that were `Ok`.
fn drain<S: Stream<Item = Result<T, E>>, T, E>(stream: S) -> usize {
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    let mut count = 0;
    loop {
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(Ok(item))) => {
                black_box(&item);
                count += 1;
            }
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => return count,
            Poll::Pending => unreachable!("every chunk is ready"),
        }
    }
}

fn decoder_alone(chunks: Vec<Bytes>) -> usize {
    drain(sse::decode(Chunks(chunks.into_iter())))
}

/// The bench's error: a decode error, or a stream that ended on its preamble.
#[derive(Debug)]
struct Failed;

impl From<sse::DecodeError<Infallible>> for Failed {
    fn from(_: sse::DecodeError<Infallible>) -> Self {
        Failed
    }
}

impl From<EndedEarly> for Failed {
    fn from(_: EndedEarly) -> Self {
        Failed
    }
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        Class::Definitive
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

fn through_retry_stream(chunks: Vec<Bytes>) -> usize {
    let mut chunks = Some(chunks);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(move |_| {
            let source = Chunks(chunks.take().unwrap_or_default().into_iter());
            std::future::ready(Ok::<_, Failed>(sse::decode(source)))
        })
        .commit_when(sse::is_content);
    drain(stream)
}

struct Row {
    name: &'static str,
    fastest_ns_per_event: f64,
    allocations_per_event: f64,
}

fn measure(
    criterion: &mut Criterion,
    name: &'static str,
    read: fn(Vec<Bytes>) -> usize,
    input: &[Bytes],
) -> Row {
    assert_eq!(read(input.to_vec()), EVENTS, "{name} reads every event");
    let counted = allocation_counter::measure(|| {
        black_box(read(input.to_vec()));
    });
    // The input's own copy (one `Vec` of `Bytes`) is made inside the count: take it off.
    let input_copy = allocation_counter::measure(|| {
        black_box(input.to_vec());
    });
    let mut fastest = f64::MAX;
    let mut group = criterion.benchmark_group("stream");
    group.sample_size(SAMPLES);
    group.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iterations {
                let batch = input.to_vec();
                let started = std::time::Instant::now();
                black_box(read(batch));
                total += started.elapsed();
            }
            let per_event = total.as_nanos() as f64 / (iterations as f64 * EVENTS as f64);
            fastest = fastest.min(per_event);
            total
        });
    });
    group.finish();
    Row {
        name,
        fastest_ns_per_event: fastest,
        allocations_per_event: (counted.count_total - input_copy.count_total) as f64
            / EVENTS as f64,
    }
}

fn main() {
    let input = chunks();
    // One read, for an instruction count: `STREAM_BENCH_ONCE=alone valgrind --tool=callgrind ...`.
    if let Ok(which) = std::env::var("STREAM_BENCH_ONCE") {
        let read = if which == "alone" {
            decoder_alone
        } else {
            through_retry_stream
        };
        println!("{}", read(input));
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    let alone = measure(&mut criterion, "decoder alone", decoder_alone, &input);
    let through = measure(
        &mut criterion,
        "through Retry::stream",
        through_retry_stream,
        &input,
    );
    println!();
    println!(
        "| {EVENTS} events, after commit | ns per event (fastest sample) | ratio | allocations per event |"
    );
    println!("|---|---:|---:|---:|");
    for row in [&alone, &through] {
        println!(
            "| {} | {:.1} | {:.3}x | {:.3} |",
            row.name,
            row.fastest_ns_per_event,
            row.fastest_ns_per_event / alone.fastest_ns_per_event,
            row.allocations_per_event,
        );
    }
}
