//! Issue 35's table, in one process and one run: `cargo bench -p retry-bench --bench stream`.
//!
//! The input is about 50 MB of Anthropic-style events from memory (a message's `message_start`,
//! `content_block_start`, `ping`, 60 `content_block_delta`s of text of 1 to 40 bytes, some
//! with escapes, `content_block_stop`, `message_delta` and `message_stop`, over and over), cut
//! into chunks of 1 to 16 KiB (a fixed seed) that share one buffer, every chunk ready at once
//! and polled with a no-op waker: no runtime, no I/O. Each contender reads it to the end:
//!
//! - **`sse::decode`**, this crate's decoder;
//! - **inside `Retry::stream`**: the same decoder opened by `Retry::stream(..)
//!   .commit_when(sse::is_content)`, every event after the first content passing through;
//! - **eventsource-stream** 0.2.3 (`.eventsource()`), what async-openai uses;
//! - **sse-stream** 0.3.0 (`SseByteStream::new`, its fast path for byte streams, with its
//!   default features `memchr` and `simdutf8`).
//!
//! Three runs, each reading with every contender in turn (three reads each, the fastest
//! kept), so a slow moment of the machine falls on all of them; the table gives the median
//! run's MB/s, its time against this crate's, and the allocations per event of one read
//! (counted with `allocation-counter`, whose counting allocator serves this whole binary, so
//! every contender pays the same per allocation, and the more it allocates the more it pays:
//! `--features uncounted` builds the bench without it, for timings at the system allocator's
//! cost, its allocations column then empty).

use std::convert::Infallible;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_core::Stream;
use retry_runtime::{Class, Classify, EndedEarly, Policy, Retry, sse};

/// About this many bytes of events.
const BODY: usize = 50_000_000;
const RUNS: usize = 3;
const READS_PER_RUN: usize = 3;

/// One message's events, its text deltas of varying length.
fn message(body: &mut String, seed: &mut u64) {
    body.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n");
    body.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    body.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
    for _ in 0..60 {
        let length = 1 + (next(seed) % 40) as usize;
        let text: String = (0..length)
            .map(|i| match (next(seed) % 50, i) {
                (0, _) => "\\n",
                (1, _) => "\\\"",
                (n, _) => ["a", "b", "c", " ", "e", "t"][(n % 6) as usize],
            })
            .collect();
        body.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"");
        body.push_str(&text);
        body.push_str("\"}}\n\n");
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    body.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n");
    body.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

/// A small fixed-seed generator (xorshift), so every run reads the same input.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The body, and its chunks of 1 to 16 KiB sharing one buffer.
fn chunks() -> (usize, Vec<Bytes>) {
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    let mut body = String::with_capacity(BODY + 64 * 1024);
    while body.len() < BODY {
        message(&mut body, &mut seed);
    }
    let length = body.len();
    let body = Bytes::from(body);
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < length {
        let size = 1024 + (next(&mut seed) % (15 * 1024 + 1)) as usize;
        let end = (start + size).min(length);
        chunks.push(body.slice(start..end));
        start = end;
    }
    (length, chunks)
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

fn eventsource_stream(chunks: Vec<Bytes>) -> usize {
    drain(Chunks(chunks.into_iter()).eventsource())
}

fn sse_stream(chunks: Vec<Bytes>) -> usize {
    drain(sse_stream::SseByteStream::new(Chunks(chunks.into_iter())))
}

/// The allocations `read` makes; `None` in a build without the counting allocator
/// (`--features uncounted`), whose every allocation costs the same as the program's.
#[cfg(not(feature = "uncounted"))]
fn count(read: impl FnOnce()) -> Option<u64> {
    Some(allocation_counter::measure(read).count_total)
}

#[cfg(feature = "uncounted")]
fn count(read: impl FnOnce()) -> Option<u64> {
    read();
    None
}

struct Contender {
    name: &'static str,
    read: fn(Vec<Bytes>) -> usize,
    /// The fastest read of each run.
    runs: Vec<Duration>,
    allocations_per_event: f64,
}

impl Contender {
    fn median(&self) -> Duration {
        let mut runs = self.runs.clone();
        runs.sort();
        runs[runs.len() / 2]
    }
}

fn main() {
    let (length, input) = chunks();
    // One read, for an instruction count: `STREAM_BENCH_ONCE=alone valgrind --tool=callgrind ...`.
    if let Ok(which) = std::env::var("STREAM_BENCH_ONCE") {
        let read = match which.as_str() {
            "alone" => decoder_alone,
            "through" => through_retry_stream,
            "eventsource" => eventsource_stream,
            _ => sse_stream,
        };
        println!("{}", read(input));
        return;
    }
    let mut contenders = [
        ("sse::decode", decoder_alone as fn(Vec<Bytes>) -> usize),
        (
            "inside Retry::stream, commit_when(sse::is_content)",
            through_retry_stream,
        ),
        ("eventsource-stream 0.2.3", eventsource_stream),
        ("sse-stream 0.3.0", sse_stream),
    ]
    .map(|(name, read)| Contender {
        name,
        read,
        runs: Vec::new(),
        allocations_per_event: 0.0,
    });
    let events = decoder_alone(input.clone());
    let input_copy = count(|| {
        black_box(input.clone());
    });
    for contender in &mut contenders {
        assert_eq!(
            (contender.read)(input.clone()),
            events,
            "{} reads every event",
            contender.name
        );
        let counted = count(|| {
            black_box((contender.read)(input.clone()));
        });
        contender.allocations_per_event = match (counted, input_copy) {
            (Some(counted), Some(copy)) => (counted - copy) as f64 / events as f64,
            _ => f64::NAN,
        };
    }
    for _ in 0..RUNS {
        for contender in &mut contenders {
            let fastest = (0..READS_PER_RUN)
                .map(|_| {
                    let batch = input.clone();
                    let started = Instant::now();
                    black_box((contender.read)(batch));
                    started.elapsed()
                })
                .min()
                .expect("at least one read");
            contender.runs.push(fastest);
        }
    }
    let ours = contenders[0].median();
    let megabytes = length as f64 / 1e6;
    println!();
    println!(
        "{megabytes:.1} MB, {events} events, {} chunks of 1 to 16 KiB; median of {RUNS} runs (fastest of {READS_PER_RUN} reads each)",
        input.len()
    );
    println!();
    println!(
        "| decoder | MB/s | time, x `sse::decode` | allocations per event | MB/s of each run |"
    );
    println!("|---|---:|---:|---:|---|");
    for contender in &contenders {
        let median = contender.median();
        let each: Vec<String> = contender
            .runs
            .iter()
            .map(|run| format!("{:.0}", megabytes / run.as_secs_f64()))
            .collect();
        let allocations = if contender.allocations_per_event.is_nan() {
            "—".to_owned()
        } else {
            format!("{:.3}", contender.allocations_per_event)
        };
        println!(
            "| {} | {:.0} | {:.2} | {allocations} | {} |",
            contender.name,
            megabytes / median.as_secs_f64(),
            median.as_secs_f64() / ours.as_secs_f64(),
            each.join(", "),
        );
    }
}
