//! Properties of `RetryStream::resume` over scripted event streams (no network): cut at every
//! index, with and without event IDs, with and without a server that replays the last event.
//! No item is delivered twice, none is lost once the stream is complete, and the requests made
//! equal the attempts the turn's report counts.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;
use retry_runtime::sse::{self, DecodeError, Event};
use retry_runtime::{Classify, EndedEarly, GaveUp, Policy, ResumeFrom, Retry, Turn, testing};

#[derive(Debug, thiserror::Error, Classify)]
enum Failed {
    /// The scripts' only decode error is a cut.
    #[error(transparent)]
    #[classify(transport)]
    Decode(#[from] DecodeError<io::Error>),
    #[error(transparent)]
    #[classify(from)]
    Ended(#[from] EndedEarly),
}

type Body = sse::Events<testing::StreamOf<Result<Bytes, io::Error>>>;

/// A script: `items` events (the last completes the stream), each request cut where `cuts`
/// says (an absolute event index; the n-th request takes the n-th cut, past them it runs to
/// the end), `ids` on the events or not, and a resume that replays the last event or not.
#[derive(Debug, Clone)]
struct Script {
    items: usize,
    cuts: Vec<usize>,
    ids: bool,
    replay: bool,
}

impl Script {
    /// The body of request `request` (from 1), resuming after `from` if given.
    fn body(&self, request: usize, from: Option<&ResumeFrom>) -> Body {
        let after = from
            .and_then(ResumeFrom::last_event_id)
            .and_then(|id| id.parse::<usize>().ok());
        let start = match after {
            Some(after) if self.replay => after,
            Some(after) => after + 1,
            None => 1,
        };
        let cut = self.cuts.get(request - 1).copied();
        let end = cut.map_or(self.items, |cut| cut.min(self.items));
        let mut text = String::new();
        for index in start..=end {
            if self.ids {
                text.push_str(&format!("id: {index}\n"));
            }
            let data = if index == self.items {
                "stop".to_owned()
            } else {
                index.to_string()
            };
            text.push_str(&format!("data: {data}\n\n"));
        }
        let mut chunks = vec![Ok(Bytes::from(text))];
        if cut.is_some() {
            chunks.push(Err(io::Error::new(io::ErrorKind::ConnectionReset, "cut")));
        }
        sse::decode(testing::stream_of(chunks))
    }
}

/// What a run of `script` delivered, how many requests it made, and the report's attempts.
fn run(script: &Script) -> (Vec<Result<String, GaveUp<Failed>>>, u32, u32) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let requests = AtomicU32::new(0);
    let count = || requests.fetch_add(1, Ordering::SeqCst) as usize + 1;
    let stream = Retry::new(&Policy::TRANSIENT)
        .stream(|_| std::future::ready(Ok::<_, Failed>(script.body(count(), None))))
        .complete_when(|event: &Event| event.data() == "stop")
        .resume(|from| std::future::ready(Ok(script.body(count(), Some(&from)))));
    let turn = Turn::new(Duration::from_secs(3600));
    let ((outcome, report), _) =
        runtime.block_on(testing::scope(turn.run(testing::collect(stream))));
    let delivered = outcome
        .unwrap()
        .into_iter()
        .map(|item| item.map(|event| event.data().to_owned()))
        .collect();
    (
        delivered,
        requests.load(Ordering::SeqCst),
        report.attempts(),
    )
}

fn scripts() -> impl Strategy<Value = Script> {
    (2..8usize, any::<bool>(), any::<bool>())
        .prop_flat_map(|(items, ids, replay)| {
            (
                Just(items),
                prop::collection::vec(0..=items, 0..4),
                Just(ids),
                Just(replay),
            )
        })
        .prop_map(|(items, mut cuts, ids, replay)| {
            cuts.sort_unstable();
            Script {
                items,
                cuts,
                ids,
                replay,
            }
        })
}

proptest! {
    #[test]
    fn no_item_is_delivered_twice_and_none_is_lost_once_complete(script in scripts()) {
        let (delivered, requests, attempts) = run(&script);
        let items: Vec<&String> = delivered.iter().filter_map(|item| item.as_ref().ok()).collect();
        let mut unique = items.clone();
        unique.dedup();
        prop_assert_eq!(&unique, &items, "an item was delivered twice");
        // Each item is delivered in order, from the first.
        for (position, item) in items.iter().enumerate() {
            let expected = if position + 1 == script.items { "stop".to_owned() } else { (position + 1).to_string() };
            prop_assert_eq!(*item, &expected);
        }
        let complete = items.last().is_some_and(|item| *item == "stop");
        if complete {
            prop_assert_eq!(items.len(), script.items, "complete, and nothing lost");
        } else {
            prop_assert!(delivered.last().is_some_and(Result::is_err), "{:?}", delivered);
        }
        prop_assert_eq!(requests, attempts, "requests equal the report's attempts");
    }

    #[test]
    fn with_ids_every_cut_after_progress_is_resumed_to_completion(mut script in scripts()) {
        script.ids = true;
        // Each cut comes after the one before, so each request brings something new.
        script.cuts.dedup();
        script.cuts.retain(|&cut| cut >= 1 && cut < script.items);
        let (delivered, requests, _) = run(&script);
        let items: Vec<_> = delivered.iter().map(|item| item.as_ref().ok().cloned()).collect();
        prop_assert_eq!(items.len(), script.items, "{:?}", delivered);
        prop_assert!(items.iter().all(Option::is_some));
        prop_assert_eq!(requests as usize, script.cuts.len() + 1);
    }
}
