//! [`is_content`]: the commit rule for a model's stream, which knows the providers'
//! preambles.

use serde_json::Value;

use super::event::Event;

/// The events that come before any content, by name or by their data's `"type"`: Anthropic's
/// `message_start`, `content_block_start` and `ping`, and OpenAI Responses' `response.created`,
/// `response.in_progress`, `response.output_item.added` and `response.content_part.added`.
const PREAMBLES: [&str; 7] = [
    "message_start",
    "content_block_start",
    "ping",
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
];

/// The fields of an OpenAI chat chunk's `delta` that carry what the model said: text, a
/// refusal, a tool call (and the legacy `function_call`), audio, and reasoning as the
/// OpenAI-compatible servers stream it (`reasoning_content`, `reasoning`): a harness shows
/// reasoning as it comes, so it is output a retry would repeat.
const DELTA_OUTPUT: [&str; 7] = [
    "content",
    "refusal",
    "tool_calls",
    "function_call",
    "audio",
    "reasoning_content",
    "reasoning",
];

/// What [`is_content`] reads: an [`Event`]. The rule is generic over it so that
/// `commit_when(sse::is_content)` on a stream whose items are not events is one error that
/// says so, not a mismatch between two function types.
///
/// It is implemented for an `Event` and the references and pointers to one (`&Event`,
/// `Box`, `Arc`, `Rc`), so `is_content(&event)` reads through them as a plain `&Event`
/// parameter would.
///
/// ```
/// use retry_runtime::sse::{AsEvent, Event, is_content};
/// use std::sync::Arc;
///
/// let event = Event::new("ping", "{}");
/// assert_eq!(event.as_event().event(), "ping");
/// let events = vec![Arc::new(Event::new("content_block_delta", "{}"))];
/// assert!(events.iter().all(|event| is_content(event)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`sse::is_content` reads server-sent events, and `{Self}` is not one",
    label = "a rule for `sse::Event`s, given `{Self}`",
    note = "use `sse::is_content` on a stream of `sse::Event`s (`ResponseExt::events()`, `sse::decode`); on a stream of other items, give `commit_when` a rule of your own: `.commit_when(|item: &{Self}| ...)`"
)]
pub trait AsEvent {
    /// The event to read.
    fn as_event(&self) -> &Event;
}

impl AsEvent for Event {
    fn as_event(&self) -> &Event {
        self
    }
}

impl AsEvent for &Event {
    fn as_event(&self) -> &Event {
        self
    }
}

impl AsEvent for Box<Event> {
    fn as_event(&self) -> &Event {
        self
    }
}

impl AsEvent for std::sync::Arc<Event> {
    fn as_event(&self) -> &Event {
        self
    }
}

impl AsEvent for std::rc::Rc<Event> {
    fn as_event(&self) -> &Event {
        self
    }
}

/// Whether this event carries content, so that a stream that delivered it is committed (a
/// retry would repeat what the caller has seen): the rule for
/// `Retry::stream(...).commit_when(sse::is_content)`.
///
/// It is `false` for the preambles that come before content:
/// - Anthropic's `message_start`, `content_block_start` and `ping`;
/// - OpenAI Responses' `response.created`, `response.in_progress`,
///   `response.output_item.added` and `response.content_part.added`;
/// - an OpenAI chat chunk (data with `"choices"`) in which no choice's `delta` has a
///   non-empty `content`, `refusal`, `tool_calls` (or `function_call`, `audio`, and the
///   reasoning fields of OpenAI-compatible servers) and no choice has a `finish_reason`,
///   such as the first chunk, `{"role":"assistant","content":""}`, and the usage chunk
///   (`"choices": []`);
/// - a nameless event with empty data.
///
/// A chat chunk whose choice has a `finish_reason` is content even with an empty delta: the
/// model has answered (a content filter; a reasoning model that spent its tokens before any
/// text), and sending the request again would bill the same answer again.
///
/// An event it does not know is content (`true`): holding it back would hold the stream. A
/// named event is decided by its name alone, without parsing its data; a nameless event
/// (OpenAI chat, or a proxy that drops the names) by its data's `"type"` or `"choices"`.
/// Comments and keep-alives never reach it: the decoder drops them.
///
/// ```
/// use retry_runtime::sse::{is_content, Event};
///
/// assert!(!is_content(&Event::new("message_start", r#"{"type":"message_start"}"#)));
/// assert!(!is_content(&Event::new("ping", r#"{"type": "ping"}"#)));
/// assert!(is_content(&Event::new(
///     "content_block_delta",
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
/// )));
///
/// let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
/// assert!(!is_content(&Event::new("", role)));
/// let text = r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#;
/// assert!(is_content(&Event::new("", text)));
/// ```
pub fn is_content<T: AsEvent + ?Sized>(event: &T) -> bool {
    let event = event.as_event();
    match event.event() {
        "message" => {}
        name => return !PREAMBLES.contains(&name),
    }
    let data = event.data().trim_start();
    if data.is_empty() {
        return false;
    }
    if !data.starts_with('{') {
        return true;
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(data) else {
        return true;
    };
    if let Some(Value::Array(choices)) = object.get("choices") {
        return choices.iter().any(says_something);
    }
    match object.get("type") {
        Some(Value::String(kind)) => !PREAMBLES.contains(&kind.as_str()),
        _ => true,
    }
}

/// Whether a chat chunk's choice carries output: in its `delta`, or (legacy completions) as
/// `text`; or ends the answer with a `finish_reason`, which is the model's answer too.
fn says_something(choice: &Value) -> bool {
    if choice
        .get("finish_reason")
        .is_some_and(|reason| !reason.is_null())
    {
        return true;
    }
    let delta = match choice.get("delta") {
        Some(Value::Object(delta)) => delta,
        _ => return is_filled(choice.get("text")),
    };
    DELTA_OUTPUT
        .iter()
        .any(|field| is_filled(delta.get(*field)))
}

fn is_filled(value: Option<&Value>) -> bool {
    match value {
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(fields)) => !fields.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(event: &str, data: &str) -> bool {
        is_content(&Event::new(event, data))
    }

    fn nameless(data: &str) -> bool {
        is_content(&Event::new("", data))
    }

    #[test]
    fn anthropics_preambles_are_not_content_by_name_or_by_type() {
        for kind in ["message_start", "content_block_start", "ping"] {
            let data = format!(r#"{{"type":"{kind}"}}"#);
            assert!(!named(kind, &data), "{kind}");
            assert!(!nameless(&data), "{kind}");
        }
    }

    #[test]
    fn anthropics_deltas_are_content() {
        let text = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#;
        assert!(named("content_block_delta", text));
        assert!(nameless(text));
        let tool = r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#;
        assert!(named("content_block_delta", tool));
    }

    #[test]
    fn openai_responses_preambles_are_not_content() {
        for kind in [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
        ] {
            let data = format!(r#"{{"type":"{kind}","sequence_number":0}}"#);
            assert!(!named(kind, &data), "{kind}");
            assert!(!nameless(&data), "{kind}");
        }
    }

    #[test]
    fn openai_responses_text_deltas_are_content() {
        let delta = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#;
        assert!(named("response.output_text.delta", delta));
        assert!(nameless(delta));
    }

    #[test]
    fn openais_first_chat_chunk_is_not_content() {
        let first = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}"#;
        assert!(!nameless(first));
    }

    #[test]
    fn a_chat_chunk_with_text_a_tool_call_or_a_refusal_is_content() {
        let text = r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#;
        let tool = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#;
        let refusal = r#"{"choices":[{"index":0,"delta":{"refusal":"I can't"}}]}"#;
        for chunk in [text, tool, refusal] {
            assert!(nameless(chunk), "{chunk}");
        }
    }

    #[test]
    fn content_in_any_choice_is_content() {
        let second = r#"{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{"content":"B"}}]}"#;
        assert!(nameless(second));
    }

    #[test]
    fn a_chat_chunk_with_only_usage_is_not_content() {
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0}}"#;
        assert!(!nameless(usage));
    }

    #[test]
    fn a_chat_chunk_with_a_finish_reason_and_no_text_is_content_an_answer() {
        // Issue 42 reversed this: an empty answer is an answer, and retrying it bills it again.
        for reason in ["stop", "content_filter", "length"] {
            let finish =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#);
            assert!(nameless(&finish), "{reason}");
        }
        let running = r#"{"choices":[{"index":0,"delta":{},"finish_reason":null}]}"#;
        assert!(!nameless(running));
    }

    #[test]
    fn reasoning_from_an_openai_compatible_server_is_content() {
        let reasoning = r#"{"choices":[{"index":0,"delta":{"reasoning_content":"First,"}}]}"#;
        assert!(nameless(reasoning));
    }

    #[test]
    fn an_event_it_does_not_know_is_content() {
        assert!(named("message_stop", r#"{"type":"message_stop"}"#));
        assert!(named("brand_new", "{}"));
        assert!(nameless(r#"{"type":"brand_new"}"#));
        assert!(nameless("plain text"));
        assert!(nameless("{not json"));
    }

    #[test]
    fn a_named_event_is_decided_by_its_name_not_its_data() {
        // The data is not even read: a preamble's name with anything is a preamble.
        assert!(!named("ping", "{not json"));
        assert!(named("content_block_delta", r#"{"type":"ping"}"#));
    }

    #[test]
    fn a_nameless_event_with_empty_data_is_not_content() {
        assert!(!nameless(""));
        assert!(!nameless("  "));
    }
}
