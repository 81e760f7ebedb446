//! The sans-IO parser: chunks of bytes in, [`Event`]s out, by the WHATWG rules for
//! interpreting an event stream, with a cap on the size of the event in progress.
//!
//! It parses lazily, one event at a time, from the one chunk it holds: a caller pulls the
//! next chunk only when [`Decoder::next_event`] has nothing ready, so it never holds more than
//! the event in progress (at most the cap) and one chunk.
//!
//! **What an event costs.** Lines are found with `memchr`, never byte by byte. A value that
//! lies in one chunk is a slice of it (a `Bytes` reference count, no copy), its UTF-8
//! checked once as it becomes a `ByteString`: an event of one `data:` line, with its `event:`
//! and `id:`, allocates nothing. An event of several data lines is joined in a buffer the
//! decoder keeps, then copied out once (one allocation); so is a value with invalid UTF-8,
//! which becomes U+FFFD. A comment or a keep-alive allocates nothing. A line cut across
//! chunks is carried in segments and joined when it ends, a few allocations for that line
//! (and, for a long line, the cap twice over for a moment). A dispatched event keeps the
//! chunk it was sliced from alive, as any `Bytes` slice does; what the decoder itself keeps
//! past its chunk (the event in progress, the last event ID) it copies out when the next
//! chunk comes, so it never holds more than the event in progress and one chunk.

use std::borrow::Cow;
use std::mem;
use std::ops::Range;
use std::time::Duration;

use bytes::Bytes;
use bytestring::ByteString;

use super::event::Event;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The joining buffer is dropped after an event this large, so that one big event does not
/// keep its memory for the rest of the stream.
const KEPT_BUFFER: usize = 64 * 1024;

/// The event in progress outgrew the cap of `limit` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub(crate) limit: usize,
}

/// Push a chunk, take events with [`next_event`](Decoder::next_event) until it gives
/// `Ok(None)`, push the next; at the source's clean end, [`finish`](Decoder::finish).
///
/// The cap bounds two counts of the event in progress, each checked as its bytes arrive:
/// its bytes on the wire (every line since the last blank line, comments, field names and
/// line ends included, both bytes of a CRLF, and the line not yet ended), so that what is
/// read before an error is at most the cap and one chunk; and its size as kept
/// ([`Event::size`]: data, type and ID, which U+FFFD for invalid bytes can make larger than
/// the wire's; a type of `message`, the default, is kept as none). Neither depends on where
/// the chunks split the stream or on what follows, so neither does the error.
#[derive(Debug)]
pub(crate) struct Decoder {
    chunk: Bytes,
    pos: usize,
    /// A line not yet ended, carried over from earlier chunks.
    line: Carried,
    /// The last line ended in CR: an LF first in what follows ends nothing (a split CRLF).
    after_cr: bool,
    /// The wire bytes of the lines taken since the last blank line, with their line ends.
    block: usize,
    /// How much of a BOM the stream's first bytes matched, while it is still undecided.
    bom: Option<u8>,
    fields: EventFields,
}

/// The spec's buffers: data, event type, last event ID, and the reconnection time.
#[derive(Debug)]
struct EventFields {
    data: Data,
    /// Where the lines of an event of several data lines are joined; kept between events.
    joined: String,
    /// Empty for the default type, `message`.
    event: ByteString,
    last_id: Option<ByteString>,
    /// The last event ID as of the last blank line, dispatched or not: the spec's "last
    /// event ID string" of the event source, what a reconnection sends back.
    dispatched_id: Option<ByteString>,
    retry: Option<Duration>,
    limit: usize,
}

/// The data of the event in progress.
#[derive(Debug)]
enum Data {
    /// No `data:` line yet: a blank line dispatches nothing.
    None,
    /// One line: its value as it came.
    One(ByteString),
    /// Several lines, joined with `\n` in `EventFields::joined`.
    Joined,
}

/// A line, and where its bytes lie: in the chunk (so a value is a slice of it), or in the
/// buffer of a line carried across chunks (so a value is a copy).
struct Line<'a> {
    bytes: &'a [u8],
    /// The chunk, and the line's offset in it.
    chunk: Option<(&'a Bytes, usize)>,
}

impl Line<'_> {
    /// The value at `range` of the line, its UTF-8 checked once: a slice of the chunk when it
    /// lies in one and is valid, else a copy (invalid bytes become U+FFFD).
    fn text(&self, range: Range<usize>) -> ByteString {
        if let Some((chunk, start)) = self.chunk {
            let slice = chunk.slice(start + range.start..start + range.end);
            if let Ok(text) = ByteString::try_from(slice) {
                return text;
            }
        }
        match String::from_utf8_lossy(&self.bytes[range]) {
            Cow::Borrowed(text) => ByteString::from(text),
            Cow::Owned(text) => ByteString::from(text),
        }
    }
}

impl Decoder {
    pub(crate) fn new(limit: usize) -> Decoder {
        Decoder {
            chunk: Bytes::new(),
            pos: 0,
            line: Carried::default(),
            after_cr: false,
            block: 0,
            bom: Some(0),
            fields: EventFields {
                data: Data::None,
                joined: String::new(),
                event: ByteString::new(),
                last_id: None,
                dispatched_id: None,
                retry: None,
                limit,
            },
        }
    }

    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.fields.limit = limit;
    }

    /// The stream's last event ID as of its last blank line (an `id:` in a block with no
    /// data counts), and its reconnection time as of its last `retry:` line: what a
    /// reconnection needs, kept after the decoder is done.
    pub(crate) fn resume_point(&self) -> (Option<ByteString>, Option<Duration>) {
        (self.fields.dispatched_id.clone(), self.fields.retry)
    }

    /// The last event ID, as [`resume_point`](Self::resume_point) gives it.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.fields.dispatched_id.as_deref()
    }

    /// The reconnection time, as [`resume_point`](Self::resume_point) gives it.
    pub(crate) fn reconnection_time(&self) -> Option<Duration> {
        self.fields.retry
    }

    /// The next chunk. Push it once `next_event` has given `Ok(None)`: a chunk pushed before
    /// is joined to what is left of the last one, at the cost of a copy.
    pub(crate) fn push(&mut self, chunk: Bytes) {
        // What outlives the chunk it was sliced from (the event in progress, the last event
        // ID, which persists) is copied out of it, so a few bytes never keep a chunk alive.
        self.fields.unpin(&self.chunk);
        if self.pos < self.chunk.len() {
            let mut joined = Vec::with_capacity(self.chunk.len() - self.pos + chunk.len());
            joined.extend_from_slice(&self.chunk[self.pos..]);
            joined.extend_from_slice(&chunk);
            self.chunk = Bytes::from(joined);
        } else {
            self.chunk = chunk;
        }
        self.pos = 0;
    }

    /// The next complete event in what was pushed, or `Ok(None)` once it is all read.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, TooLarge> {
        if self.bom.is_some() && !self.skip_bom() {
            return Ok(None);
        }
        while self.pos < self.chunk.len() {
            if mem::take(&mut self.after_cr) && self.chunk[self.pos] == b'\n' {
                // The CRLF's LF: a byte of the line it ends, unless that was the blank line.
                self.pos += 1;
                if self.block > 0 {
                    self.within(1)?;
                    self.block += 1;
                }
                continue;
            }
            let start = self.pos;
            let Some(end) = memchr::memchr2(b'\n', b'\r', &self.chunk[start..]) else {
                self.within(self.chunk.len() - start)?;
                self.line.push(&self.chunk[start..]);
                self.pos = self.chunk.len();
                break;
            };
            // A blank line's end is not counted: it ends the event, and the count.
            let length = self.line.len() + end;
            self.within(if length == 0 { 0 } else { end + 1 })?;
            self.after_cr = self.chunk[start + end] == b'\r';
            self.pos = start + end + 1;
            self.block = if length == 0 {
                0
            } else {
                self.block + length + 1
            };
            let taken = if self.line.is_empty() {
                let line = Line {
                    bytes: &self.chunk[start..start + end],
                    chunk: Some((&self.chunk, start)),
                };
                self.fields.take(&line)
            } else {
                let joined = self.line.join(&self.chunk[start..start + end]);
                self.fields.take(&Line {
                    bytes: &joined,
                    chunk: None,
                })
            };
            match taken {
                Ok(None) => {}
                Ok(Some(event)) => return Ok(Some(event)),
                Err(too_large) => return Err(self.fail(too_large)),
            }
        }
        Ok(None)
    }

    /// The source ended cleanly: a last line with no line end is taken as a line, and a last
    /// event with data but no blank line after it is dispatched (the spec would drop it; see
    /// the [module docs](crate::sse)).
    pub(crate) fn finish(&mut self) -> Result<Option<Event>, TooLarge> {
        // Bytes that began a BOM and then the stream ended: a line naming an unknown field,
        // counted as one.
        if let Some(matched) = self.bom.take().filter(|&matched| matched > 0) {
            let matched = usize::from(matched);
            self.within(matched)?;
            self.line.push(&BOM[..matched]);
        }
        if !self.line.is_empty() {
            let line = self.line.join(&[]);
            let taken = self.fields.take(&Line {
                bytes: &line,
                chunk: None,
            });
            if let Err(too_large) = taken {
                return Err(self.fail(too_large));
            }
        }
        Ok(self.fields.dispatch())
    }

    /// Whether `more` bytes on the wire may join the event in progress and its line so far.
    fn within(&mut self, more: usize) -> Result<(), TooLarge> {
        let read = self.block.saturating_add(self.line.len());
        if read.saturating_add(more) > self.fields.limit {
            let limit = self.fields.limit;
            return Err(self.fail(TooLarge { limit }));
        }
        Ok(())
    }

    /// Drops what is held: after an error the stream is done, and its buffers are not kept.
    fn fail(&mut self, too_large: TooLarge) -> TooLarge {
        self.chunk = Bytes::new();
        self.pos = 0;
        self.line = Carried::default();
        self.block = 0;
        self.fields.data = Data::None;
        self.fields.joined = String::new();
        self.fields.event = ByteString::new();
        too_large
    }

    /// Strips a UTF-8 BOM at the very start of the stream, matched across chunks; `false`
    /// while the chunks so far are too short to tell.
    fn skip_bom(&mut self) -> bool {
        let Some(matched) = self.bom else {
            return true;
        };
        let mut matched = usize::from(matched);
        while matched < BOM.len() {
            let Some(&byte) = self.chunk.get(self.pos) else {
                self.bom = u8::try_from(matched).ok();
                return false;
            };
            if byte != BOM[matched] {
                // Not a BOM: the bytes that matched so far begin the first line.
                self.line.push(&BOM[..matched]);
                break;
            }
            matched += 1;
            self.pos += 1;
        }
        self.bom = None;
        true
    }
}

/// A line not yet ended, carried across chunks, in segments of at most [`SEGMENT`] bytes:
/// a line that never ends holds what the cap lets in and part of one segment, never a
/// buffer doubled past it.
#[derive(Debug, Default)]
struct Carried {
    segments: Vec<Vec<u8>>,
    len: usize,
}

/// The most a carried line's segment holds.
const SEGMENT: usize = 16 * 1024;

impl Carried {
    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self
                .segments
                .last()
                .is_none_or(|last| last.len() == SEGMENT)
            {
                self.segments.push(Vec::new());
            }
            let first = self.segments.len() == 1;
            let last = self.segments.last_mut().expect("a segment was just made");
            let (now, rest) = bytes.split_at(bytes.len().min(SEGMENT - last.len()));
            if last.capacity() - last.len() < now.len() {
                // The first segment grows as a short line does; the others are made whole.
                let grown = if first {
                    (last.capacity() * 2).clamp(last.len() + now.len(), SEGMENT)
                } else {
                    SEGMENT
                };
                last.reserve_exact(grown - last.len());
            }
            last.extend_from_slice(now);
            self.len += now.len();
            bytes = rest;
        }
    }

    /// The line, with `end` (the rest of it, in the chunk) after it, in one buffer; nothing
    /// is carried after.
    fn join(&mut self, end: &[u8]) -> Vec<u8> {
        let mut segments = mem::take(&mut self.segments).into_iter();
        let mut joined = segments.next().unwrap_or_default();
        joined.reserve_exact(self.len - joined.len() + end.len());
        for segment in segments {
            joined.extend_from_slice(&segment);
        }
        joined.extend_from_slice(end);
        self.len = 0;
        joined
    }
}

/// `text`, copied if it is a slice of `chunk`.
fn unpinned(text: &ByteString, chunk: &Bytes) -> Option<ByteString> {
    let within = chunk.as_ptr_range().contains(&text.as_bytes().as_ptr());
    (within && !text.is_empty()).then(|| ByteString::from(&**text))
}

impl EventFields {
    /// Copies what is kept past `chunk` out of it: the event in progress's type, ID and first
    /// data line, and the last event ID.
    fn unpin(&mut self, chunk: &Bytes) {
        if let Some(copy) = unpinned(&self.event, chunk) {
            self.event = copy;
        }
        if let Data::One(text) = &self.data
            && let Some(copy) = unpinned(text, chunk)
        {
            self.data = Data::One(copy);
        }
        let same = self.dispatched_id == self.last_id;
        if let Some(copy) = self.last_id.as_ref().and_then(|id| unpinned(id, chunk)) {
            self.last_id = Some(copy);
        }
        if same {
            self.dispatched_id.clone_from(&self.last_id);
        } else if let Some(copy) = self
            .dispatched_id
            .as_ref()
            .and_then(|id| unpinned(id, chunk))
        {
            self.dispatched_id = Some(copy);
        }
    }

    /// The size of the event in progress, as [`Event::size`] will count it.
    fn size(&self) -> usize {
        self.data_len() + self.event.len() + self.last_id.as_deref().map_or(0, str::len)
    }

    fn data_len(&self) -> usize {
        match &self.data {
            Data::None => 0,
            Data::One(text) => text.len(),
            Data::Joined => self.joined.len(),
        }
    }

    /// Takes one line (without its line end); an empty line dispatches.
    fn take(&mut self, line: &Line<'_>) -> Result<Option<Event>, TooLarge> {
        let bytes = line.bytes;
        let (field, value) = match memchr::memchr(b':', bytes) {
            _ if bytes.is_empty() => return Ok(self.dispatch()),
            Some(0) => return Ok(None),
            Some(colon) => {
                let skip = usize::from(bytes.get(colon + 1) == Some(&b' '));
                (&bytes[..colon], colon + 1 + skip..bytes.len())
            }
            None => (bytes, bytes.len()..bytes.len()),
        };
        match field {
            b"data" => self.take_data(line, value)?,
            b"event" => {
                let text = line.text(value);
                // `message` is the default type, kept as none, and so counted.
                let text = if &*text == "message" {
                    ByteString::new()
                } else {
                    text
                };
                self.within(self.size() - self.event.len() + text.len())?;
                self.event = text;
            }
            b"id" if !bytes[value.clone()].contains(&0) => {
                let text = line.text(value);
                let id = self.last_id.as_deref().map_or(0, str::len);
                self.within(self.size() - id + text.len())?;
                self.last_id = (!text.is_empty()).then_some(text);
            }
            b"retry" => {
                let value = &bytes[value];
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    // More digits than a u64 holds is a very long time, not an error.
                    let millis = value.iter().fold(0u64, |millis, digit| {
                        millis
                            .saturating_mul(10)
                            .saturating_add(u64::from(digit - b'0'))
                    });
                    self.retry = Some(Duration::from_millis(millis));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// A `data:` line: the first is kept as it came; a second starts the joined buffer.
    fn take_data(&mut self, line: &Line<'_>, value: Range<usize>) -> Result<(), TooLarge> {
        // The size of the event without its data, which is taken out while it grows.
        let data = mem::replace(&mut self.data, Data::None);
        let rest = self.size();
        self.data = match data {
            Data::None => {
                let text = line.text(value);
                self.within(rest + text.len())?;
                Data::One(text)
            }
            Data::One(first) => {
                // Lossy: an invalid byte becomes U+FFFD, three bytes, so the cap is checked
                // on what is kept.
                let text = String::from_utf8_lossy(&line.bytes[value]);
                self.within(rest + first.len() + 1 + text.len())?;
                self.joined.clear();
                self.joined.reserve(first.len() + 1 + text.len());
                self.joined.push_str(&first);
                self.joined.push('\n');
                self.joined.push_str(&text);
                Data::Joined
            }
            Data::Joined => {
                let text = String::from_utf8_lossy(&line.bytes[value]);
                self.within(rest + self.joined.len() + 1 + text.len())?;
                self.joined.push('\n');
                self.joined.push_str(&text);
                Data::Joined
            }
        };
        Ok(())
    }

    fn within(&self, size: usize) -> Result<(), TooLarge> {
        if size > self.limit {
            return Err(TooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// The spec's dispatch: no data, no event (and the type is reset); else the data, of the
    /// type given or `message`.
    fn dispatch(&mut self) -> Option<Event> {
        if self.dispatched_id != self.last_id {
            self.dispatched_id.clone_from(&self.last_id);
        }
        let data = match mem::replace(&mut self.data, Data::None) {
            Data::None => {
                self.event = ByteString::new();
                return None;
            }
            Data::One(text) => text,
            Data::Joined => {
                let text = ByteString::from(self.joined.as_str());
                if self.joined.capacity() > KEPT_BUFFER {
                    self.joined = String::new();
                }
                text
            }
        };
        Some(Event::dispatched(
            mem::take(&mut self.event),
            data,
            self.last_id.clone(),
            self.retry,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event (and an error, which ends it) from these chunks, the source ending cleanly.
    fn decode(chunks: &[&[u8]], limit: usize) -> Vec<Result<Event, TooLarge>> {
        let mut decoder = Decoder::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(Bytes::copy_from_slice(chunk));
            loop {
                match decoder.next_event() {
                    Ok(Some(event)) => out.push(Ok(event)),
                    Ok(None) => break,
                    Err(too_large) => {
                        out.push(Err(too_large));
                        return out;
                    }
                }
            }
        }
        out.extend(decoder.finish().transpose());
        out
    }

    fn events(input: &str) -> Vec<Event> {
        decode(&[input.as_bytes()], 1 << 20)
            .into_iter()
            .map(Result::unwrap)
            .collect()
    }

    fn data(input: &[&[u8]]) -> Vec<String> {
        decode(input, 1 << 20)
            .into_iter()
            .map(|event| event.unwrap().data().to_owned())
            .collect()
    }

    fn with_id(event: &str, data: &str, id: Option<&str>) -> Event {
        let event = if event == "message" { "" } else { event };
        Event::dispatched(event.into(), data.into(), id.map(ByteString::from), None)
    }

    // The spec's own examples (WHATWG HTML, 9.2), reproduced exactly.

    #[test]
    fn spec_example_three_messages_the_second_of_two_lines() {
        let stream = "data: This is the first message.\n\ndata: This is the second message, it\ndata: has two lines.\n\ndata: This is the third message.\n\n";
        assert_eq!(
            events(stream),
            [
                Event::new("", "This is the first message."),
                Event::new("", "This is the second message, it\nhas two lines."),
                Event::new("", "This is the third message."),
            ]
        );
    }

    #[test]
    fn spec_example_typed_events() {
        let stream = "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n";
        assert_eq!(
            events(stream),
            [
                Event::new("add", "73857293"),
                Event::new("remove", "2153"),
                Event::new("add", "113411"),
            ]
        );
    }

    #[test]
    fn spec_example_yhoo_multi_line_data_is_joined_with_lf() {
        assert_eq!(
            events("data: YHOO\ndata: +2\ndata: 10\n\n"),
            [Event::new("message", "YHOO\n+2\n10")]
        );
    }

    #[test]
    fn spec_example_test_stream_sets_then_resets_the_last_event_id() {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
        assert_eq!(
            events(stream),
            [
                with_id("", "first event", Some("1")),
                with_id("", "second event", None),
                with_id("", " third event", None),
            ]
        );
    }

    #[test]
    fn spec_example_empty_data_and_a_lone_newline_then_an_unended_block() {
        // The spec fires two events, "" and "\n", and discards the last block, which no blank
        // line follows. A clean end dispatches it here: a third event, "".
        assert_eq!(data(&[b"data\n\ndata\ndata\n\ndata:"]), ["", "\n", ""]);
    }

    #[test]
    fn spec_example_one_space_after_the_colon_is_dropped() {
        assert_eq!(data(&[b"data:test\n\ndata: test\n\n"]), ["test", "test"]);
    }

    // Line ends.

    #[test]
    fn lf_cr_and_crlf_each_end_a_line() {
        for end in ["\n", "\r", "\r\n"] {
            let stream = format!("event: e{end}data: a{end}data: b{end}{end}");
            assert_eq!(events(&stream), [Event::new("e", "a\nb")], "{end:?}");
        }
    }

    #[test]
    fn mixed_line_ends_in_one_stream() {
        assert_eq!(
            data(&[b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\n\r"]),
            ["a\nb\nc", "d"]
        );
    }

    #[test]
    fn a_crlf_split_between_chunks_is_one_line_end() {
        // Were the LF a line end of its own, it would dispatch "a" alone.
        assert_eq!(
            data(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]),
            ["a\nb"]
        );
    }

    #[test]
    fn a_cr_at_a_chunk_end_followed_by_a_line_is_still_a_line_end() {
        assert_eq!(data(&[b"data: a\r", b"data: b\r\r"]), ["a\nb"]);
    }

    // BOM.

    #[test]
    fn a_leading_bom_is_stripped() {
        assert_eq!(data(&[b"\xEF\xBB\xBFdata: x\n\n"]), ["x"]);
    }

    #[test]
    fn a_bom_split_across_chunks_is_stripped() {
        assert_eq!(data(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]), ["x"]);
        assert_eq!(data(&[b"", b"\xEF\xBB", b"\xBF", b"data: x\n\n"]), ["x"]);
    }

    #[test]
    fn only_the_first_bom_is_stripped() {
        // The second is part of the first line's field name: an unknown field.
        assert_eq!(
            data(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n"]),
            ["y"]
        );
    }

    #[test]
    fn a_bom_after_the_start_is_data() {
        assert_eq!(data(&[b"data: \xEF\xBB\xBFx\n\n"]), ["\u{FEFF}x"]);
    }

    #[test]
    fn the_start_of_a_bom_that_is_not_one_begins_the_first_line() {
        // EF BB then `d`: not a BOM, so the first field is U+FFFD "data", unknown.
        assert_eq!(data(&[b"\xEF\xBB", b"data: x\n\ndata: y\n\n"]), ["y"]);
        assert_eq!(data(&[b"\xEF", b"\ndata: y\n\n"]), ["y"]);
    }

    // Fields.

    #[test]
    fn comments_are_ignored() {
        assert_eq!(data(&[b": hello\n:\ndata: x\n: in the middle\n\n"]), ["x"]);
    }

    #[test]
    fn a_block_of_comments_dispatches_nothing() {
        assert!(events(": keep-alive\n\n:\n\n").is_empty());
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(data(&[b"foo: bar\nDATA: no\ndata: x\n\n"]), ["x"]);
    }

    #[test]
    fn a_field_with_no_colon_has_an_empty_value() {
        assert_eq!(events("data\n\n"), [Event::new("", "")]);
        // `event` with no value is the default type.
        assert_eq!(
            events("event: a\nevent\ndata: x\n\n"),
            [Event::new("", "x")]
        );
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        assert_eq!(data(&[b"data:  two\n\ndata:\tt\n\n"]), [" two", "\tt"]);
    }

    #[test]
    fn a_colon_in_the_value_is_kept() {
        assert_eq!(data(&[b"data: a: b\n\n"]), ["a: b"]);
    }

    #[test]
    fn a_block_with_no_data_is_not_dispatched_and_resets_its_type() {
        assert_eq!(
            events("event: a\n\ndata: x\n\n"),
            [Event::new("message", "x")]
        );
    }

    #[test]
    fn the_event_type_is_named_message_when_not_given() {
        assert_eq!(events("event: message\ndata: x\n\n")[0].event(), "message");
        assert_eq!(events("data: x\n\n")[0].event(), "message");
    }

    #[test]
    fn the_last_event_id_persists_across_events() {
        assert_eq!(
            events("id: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid\ndata: d\n\n"),
            [
                with_id("", "a", Some("1")),
                with_id("", "b", Some("1")),
                with_id("", "c", Some("2")),
                with_id("", "d", None),
            ]
        );
    }

    #[test]
    fn an_id_holding_a_nul_is_ignored() {
        assert_eq!(
            events("id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n"),
            [with_id("", "a", Some("1")), with_id("", "b", Some("1"))]
        );
    }

    #[test]
    fn retry_is_read_only_when_all_ascii_digits() {
        let retry = |stream: &str| events(stream).pop().unwrap().retry();
        assert_eq!(
            retry("retry: 1500\ndata: x\n\n"),
            Some(Duration::from_millis(1500))
        );
        for ignored in ["1.5", "-1", "", " 1", "1 ", "1e3", "٣"] {
            let stream = format!("retry: {ignored}\ndata: x\n\n");
            assert_eq!(retry(&stream), None, "{ignored:?}");
        }
    }

    #[test]
    fn a_huge_retry_saturates_rather_than_failing() {
        let stream = "retry: 99999999999999999999999999\ndata: x\n\n";
        assert_eq!(
            events(stream)[0].retry(),
            Some(Duration::from_millis(u64::MAX))
        );
    }

    #[test]
    fn retry_persists_like_the_reconnection_time_even_from_a_block_without_data() {
        let events = events("retry: 10\n\ndata: a\n\nretry: x\ndata: b\n\n");
        let retries: Vec<_> = events.iter().map(Event::retry).collect();
        assert_eq!(retries, [Some(Duration::from_millis(10)); 2]);
    }

    // UTF-8.

    #[test]
    fn invalid_utf8_is_decoded_with_replacement() {
        assert_eq!(data(&[b"data: a\xFFb\xE2\x82\n\n"]), ["a\u{FFFD}b\u{FFFD}"]);
        assert_eq!(events("event: \u{e9}\ndata: x\n\n")[0].event(), "\u{e9}");
    }

    #[test]
    fn a_character_split_across_chunks_is_kept_whole() {
        assert_eq!(data(&[b"data: \xE2", b"\x82", b"\xAC\n\n"]), ["\u{20AC}"]);
    }

    // End of stream.

    #[test]
    fn a_last_event_without_a_blank_line_is_dispatched_at_a_clean_end() {
        assert_eq!(data(&[b"data: a\n\ndata: b\n"]), ["a", "b"]);
        assert_eq!(data(&[b"data: a\n\ndata: b"]), ["a", "b"]);
    }

    #[test]
    fn a_last_block_without_data_dispatches_nothing_at_the_end() {
        assert_eq!(data(&[b"data: a\n\nevent: x\nid: 3"]), ["a"]);
    }

    // The cap.

    #[test]
    fn an_event_of_exactly_the_cap_is_accepted() {
        // On the wire, `data: 0123456789\n` is 17 bytes (the blank line is not counted);
        // its data, 10.
        let decoded = decode(&[b"data: 0123456789\n\n"], 17);
        assert_eq!(decoded, [Ok(Event::new("", "0123456789"))]);
    }

    #[test]
    fn a_line_over_the_cap_is_too_large_however_it_is_split() {
        let line = b"data: 0123456789A\n\n";
        assert_eq!(decode(&[line], 17), [Err(TooLarge { limit: 17 })]);
        let (head, tail) = line.split_at(9);
        assert_eq!(decode(&[head, tail], 17), [Err(TooLarge { limit: 17 })]);
    }

    #[test]
    fn the_cap_counts_comments_and_field_names_on_the_wire() {
        // Four bytes of data, but 23 bytes read for this event.
        let stream = b": a comment\ndata: abcd\n\n";
        assert_eq!(decode(&[stream], 22), [Err(TooLarge { limit: 22 })]);
        assert_eq!(decode(&[stream], 23), [Ok(Event::new("", "abcd"))]);
    }

    #[test]
    fn a_blank_line_starts_the_count_again() {
        let stream = b": ping\n\n: ping\n\ndata: abcd\n\n";
        assert_eq!(decode(&[stream], 11), [Ok(Event::new("", "abcd"))]);
    }

    #[test]
    fn lines_that_together_outgrow_the_cap_are_too_large() {
        let stream = b"data: 01234\ndata: 56789\ndata: x\n\n";
        assert_eq!(decode(&[stream], 16), [Err(TooLarge { limit: 16 })]);
    }

    #[test]
    fn the_cap_counts_the_data_as_kept_after_replacement() {
        // Four invalid bytes become twelve bytes of U+FFFD.
        assert_eq!(
            decode(&[b"data:\xFF\xFF\xFF\xFF\n\n"], 10),
            [Err(TooLarge { limit: 10 })]
        );
    }

    #[test]
    fn the_cap_applies_to_each_event_not_the_stream() {
        let stream = b"data: 0123\n\ndata: 4567\n\ndata: 89ab\n\n";
        assert_eq!(decode(&[stream], 11).len(), 3);
    }

    #[test]
    fn a_crlf_that_takes_the_block_past_the_cap_by_its_lf_is_refused_whatever_follows() {
        // `data: ` and 13 bytes, then CR: 20 bytes, the cap; its LF is the 21st.
        let line: &[u8] = b"data: xxxxxxxxxxxxx\r\n";
        let refused = [Err(TooLarge { limit: 20 })];
        assert_eq!(decode(&[line], 20), refused, "then the clean end");
        assert_eq!(decode(&[line, b"\r\n"], 20), refused, "then a blank line");
        assert_eq!(decode(&[&line[..20], b"\n"], 20), refused, "the CRLF split");
        // One byte more of cap, and both are the same event.
        let accepted = [Ok(Event::new("", "xxxxxxxxxxxxx"))];
        assert_eq!(decode(&[line], 21), accepted);
        assert_eq!(decode(&[line, b"\r\n"], 21), accepted);
    }

    #[test]
    fn an_explicit_message_type_is_counted_as_the_default_by_both_counts() {
        // 31 bytes on the wire; kept, ten U+FFFD (30 bytes) and no type, as `Event::size` says.
        let stream = b"event: message\ndata:\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\n\n";
        let accepted = decode(&[stream], 36);
        let [Ok(event)] = &accepted[..] else {
            panic!("refused under a cap of 36: {accepted:?}");
        };
        assert_eq!((event.event(), event.size()), ("message", 30));
        assert!(
            decode(&[stream], 31)[0].is_ok(),
            "31 bytes on the wire fit a cap of 31"
        );
        assert_eq!(decode(&[stream], 30), [Err(TooLarge { limit: 30 })]);
    }

    #[test]
    fn the_start_of_a_bom_that_ends_the_stream_is_a_line_and_counts_against_the_cap() {
        assert_eq!(decode(&[b"\xEF\xBB"], 1), [Err(TooLarge { limit: 1 })]);
        assert_eq!(decode(&[b"\xEF", b"\xBB"], 1), [Err(TooLarge { limit: 1 })]);
        assert_eq!(decode(&[b"\xEF\xBB"], 2), []);
    }

    #[test]
    fn after_too_large_nothing_is_held() {
        let mut decoder = Decoder::new(8);
        decoder.push(Bytes::from_static(b"data: 0123456789"));
        assert_eq!(decoder.next_event(), Err(TooLarge { limit: 8 }));
        assert!(decoder.line.segments.capacity() == 0 && decoder.fields.joined.capacity() == 0);
        assert!(matches!(decoder.fields.data, Data::None));
        assert!(decoder.chunk.is_empty());
    }

    #[test]
    fn events_are_taken_one_at_a_time_from_the_chunk_held() {
        let mut decoder = Decoder::new(1 << 20);
        decoder.push(Bytes::from_static(b"data: a\n\ndata: b\n\ndata: c"));
        assert_eq!(decoder.next_event().unwrap().unwrap().data(), "a");
        assert_eq!(decoder.next_event().unwrap().unwrap().data(), "b");
        assert_eq!(decoder.next_event(), Ok(None));
        decoder.push(Bytes::from_static(b"d\n\n"));
        assert_eq!(decoder.next_event().unwrap().unwrap().data(), "cd");
    }

    #[test]
    fn a_chunk_pushed_early_is_read_after_what_is_left() {
        let mut decoder = Decoder::new(1 << 20);
        decoder.push(Bytes::from_static(b"data: a\n\ndata: b"));
        assert_eq!(decoder.next_event().unwrap().unwrap().data(), "a");
        decoder.push(Bytes::from_static(b"c\n\n"));
        assert_eq!(decoder.next_event().unwrap().unwrap().data(), "bc");
    }
}
