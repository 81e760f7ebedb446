//! The text a model's event adds ([`Event::text`](super::Event::text)), for each provider
//! [`is_content`](super::is_content) knows, read in one pass over the data. A string with no
//! escape is borrowed from the data, so most deltas cost no allocation.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The text `data` adds under the event's `name` (`"message"` for a nameless one), or `None`.
pub(super) fn text<'a>(name: &str, data: &'a str) -> Option<Cow<'a, str>> {
    // A named event is read only if its name can carry text: a ping, a stop or a usage event
    // is not parsed at all.
    let named = match name {
        "message" => None,
        ANTHROPIC_DELTA | RESPONSES_DELTA => Some(name),
        _ => return None,
    };
    let fields: DeltaFields<'a> = serde_json::from_str(data).ok()?;
    let kind = named.or(fields.kind.as_ref().map(|kind| &*kind.0));
    let text = match (kind, fields.delta) {
        (Some(ANTHROPIC_DELTA), Some(Delta::Block { kind, text })) => {
            text.filter(|_| kind.is_some_and(|kind| kind.0 == "text_delta"))
        }
        (Some(RESPONSES_DELTA), Some(Delta::Text(text))) => Some(text),
        (Some(ANTHROPIC_DELTA | RESPONSES_DELTA), _) => None,
        _ => match (fields.choices, fields.candidates) {
            (Some(First(Some(choice))), _) => choice.delta.and_then(|delta| delta.content),
            (_, Some(First(Some(candidate)))) => {
                candidate.content.and_then(|content| content.parts.0)
            }
            _ => None,
        },
    };
    text.map(|text| text.0).filter(|text| !text.is_empty())
}

/// Anthropic's delta of a content block: its `delta.text` when `delta.type` is `text_delta`.
const ANTHROPIC_DELTA: &str = "content_block_delta";
/// The Responses API's delta of an output text: its `delta`, a string.
const RESPONSES_DELTA: &str = "response.output_text.delta";

/// The fields of an event's data that can carry text; the others are skipped unread.
#[derive(Deserialize)]
struct DeltaFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    /// Anthropic's object, the Responses API's string.
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    /// OpenAI chat: choice 0's `delta.content`.
    #[serde(borrow)]
    choices: Option<First<Choice<'a>>>,
    /// Gemini: candidate 0's `content.parts[].text`.
    #[serde(borrow)]
    candidates: Option<First<Candidate<'a>>>,
}

/// An element of `choices` or `candidates`, which says which answer it belongs to: with
/// `n > 1`, each chunk may carry another one's.
trait Indexed {
    fn index(&self) -> Option<u64>;
}

#[derive(Deserialize)]
struct Choice<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<ChatDelta<'a>>,
}

impl Indexed for Choice<'_> {
    fn index(&self) -> Option<u64> {
        self.index
    }
}

#[derive(Deserialize)]
struct ChatDelta<'a> {
    #[serde(borrow)]
    content: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Candidate<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
}

impl Indexed for Candidate<'_> {
    fn index(&self) -> Option<u64> {
        self.index
    }
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Parts<'a>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<Text<'a>>,
    /// Gemini's thought summaries are parts too; they are not the answer's text.
    #[serde(default)]
    thought: bool,
}

/// A string, borrowed from the data unless it holds an escape.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Str;
        impl<'de> Visitor<'de> for Str {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Str)
    }
}

/// An event's `delta`: a string (the Responses API) or an object (Anthropic).
enum Delta<'a> {
    Text(Text<'a>),
    Block {
        kind: Option<Text<'a>>,
        text: Option<Text<'a>>,
    },
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Block<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<Text<'a>>,
            #[serde(borrow)]
            text: Option<Text<'a>>,
        }
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Delta<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an object")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Delta<'de>, E> {
                Ok(Delta::Text(Text(Cow::Borrowed(text))))
            }
            fn visit_str<E>(self, text: &str) -> Result<Delta<'de>, E> {
                Ok(Delta::Text(Text(Cow::Owned(text.to_owned()))))
            }
            fn visit_string<E>(self, text: String) -> Result<Delta<'de>, E> {
                Ok(Delta::Text(Text(Cow::Owned(text))))
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Delta<'de>, M::Error> {
                let block = Block::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Delta::Block {
                    kind: block.kind,
                    text: block.text,
                })
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// The element of an array that belongs to answer 0 (its `index` is 0, or it has none), the
/// rest skipped unread once it is found (no `Vec` is built).
struct First<T>(Option<T>);

impl<'de, T: Deserialize<'de> + Indexed> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstSeq<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Indexed> Visitor<'de> for FirstSeq<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<First<T>, S::Error> {
                let mut first = None;
                while first.is_none() {
                    match seq.next_element::<T>()? {
                        Some(element) if element.index().unwrap_or(0) == 0 => first = Some(element),
                        Some(_) => {}
                        None => return Ok(First(None)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        deserializer.deserialize_seq(FirstSeq(std::marker::PhantomData))
    }
}

/// Gemini's parts, their texts joined: one part's text is borrowed, two or more are one
/// `String`.
#[derive(Default)]
struct Parts<'a>(Option<Text<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartsSeq;
        impl<'de> Visitor<'de> for PartsSeq {
            type Value = Parts<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of parts")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Parts<'de>, S::Error> {
                let mut joined: Option<Cow<'de, str>> = None;
                while let Some(part) = seq.next_element::<Part<'de>>()? {
                    let Some(Text(text)) = part.text.filter(|_| !part.thought) else {
                        continue;
                    };
                    joined = Some(match joined {
                        None => text,
                        Some(before) => Cow::Owned(before.into_owned() + &text),
                    });
                }
                Ok(Parts(joined.map(Text)))
            }
        }
        deserializer.deserialize_seq(PartsSeq)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use crate::sse::Event;

    fn text(event: &str, data: &str) -> Option<String> {
        Event::new(event, data).text().map(Cow::into_owned)
    }

    fn borrowed(event: &str, data: &str) -> bool {
        matches!(Event::new(event, data).text(), Some(Cow::Borrowed(_)))
    }

    // Anthropic's Messages stream, as its docs record one (`event:` names and all).
    const ANTHROPIC: [(&str, &str); 7] = [
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        ("ping", r#"{"type": "ping"}"#),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!\n\u00e9"}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ];

    #[test]
    fn anthropics_text_deltas_are_text_and_its_other_events_are_none() {
        let texts: Vec<_> = ANTHROPIC
            .iter()
            .map(|(name, data)| text(name, data))
            .collect();
        let expected = [None, None, None, Some("Hello"), Some("!\né"), None, None];
        assert_eq!(texts, expected.map(|text| text.map(str::to_owned)));
        // Read by the data's type when a proxy drops the names.
        assert_eq!(text("", ANTHROPIC[3].1).as_deref(), Some("Hello"));
        assert!(borrowed(ANTHROPIC[3].0, ANTHROPIC[3].1));
        assert!(
            !borrowed(ANTHROPIC[4].0, ANTHROPIC[4].1),
            "an escape is unescaped"
        );
    }

    #[test]
    fn anthropics_tool_input_and_thinking_deltas_are_not_text() {
        let tool = r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}"#;
        let thinking = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}"#;
        assert_eq!(text("content_block_delta", tool), None);
        assert_eq!(text("content_block_delta", thinking), None);
    }

    // OpenAI's chat completions stream: nameless chunks, the first with an empty content.
    const OPENAI_CHAT: [&str; 5] = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}"#,
    ];

    #[test]
    fn openai_chats_first_empty_chunk_is_no_text_and_its_deltas_are() {
        let texts: Vec<_> = OPENAI_CHAT.iter().map(|data| text("", data)).collect();
        let expected = [None, Some("Hi"), Some(" there"), None, None];
        assert_eq!(texts, expected.map(|text| text.map(str::to_owned)));
        assert!(borrowed("", OPENAI_CHAT[1]));
    }

    #[test]
    fn with_several_choices_only_choice_zeros_text_is_the_text() {
        let second = r#"{"choices":[{"index":1,"delta":{"content":"B"}}]}"#;
        let both = r#"{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}"#;
        assert_eq!(text("", second), None);
        assert_eq!(text("", both).as_deref(), Some("A"));
    }

    #[test]
    fn an_openai_chat_tool_call_delta_is_not_text() {
        let tool = r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#;
        assert_eq!(text("", tool), None);
    }

    // OpenAI's Responses API stream: named events whose data repeats the name as its type.
    const RESPONSES: [(&str, &str); 5] = [
        (
            "response.created",
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#,
        ),
        (
            "response.output_item.added",
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#,
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}"#,
        ),
        (
            "response.output_text.done",
            r#"{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi","logprobs":[]}"#,
        ),
        (
            "response.completed",
            r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed"}}"#,
        ),
    ];

    #[test]
    fn the_responses_apis_output_text_deltas_are_text_and_its_other_events_are_none() {
        let texts: Vec<_> = RESPONSES
            .iter()
            .map(|(name, data)| text(name, data))
            .collect();
        let expected = [None, None, Some("Hi"), None, None];
        assert_eq!(texts, expected.map(|text| text.map(str::to_owned)));
        assert_eq!(text("", RESPONSES[2].1).as_deref(), Some("Hi"));
        assert!(borrowed(RESPONSES[2].0, RESPONSES[2].1));
        let arguments = r#"{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":0,"delta":"{\"a\""}"#;
        assert_eq!(
            text("response.function_call_arguments.delta", arguments),
            None
        );
        assert_eq!(text("", arguments), None);
    }

    // Gemini's `streamGenerateContent?alt=sse`: nameless chunks of candidates.
    const GEMINI_ONE_PART: &str = r#"{"candidates": [{"content": {"parts": [{"text": "The"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 1,"totalTokenCount": 9},"modelVersion": "gemini-2.5-flash"}"#;
    const GEMINI_TWO_PARTS: &str = r#"{"candidates": [{"content": {"parts": [{"text": " quick brown"},{"text": " fox"}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash"}"#;
    const GEMINI_THOUGHT: &str = r#"{"candidates": [{"content": {"parts": [{"text": "**Weighing it**", "thought": true},{"text": "Yes."}],"role": "model"},"index": 0}]}"#;
    const GEMINI_LAST: &str = r#"{"candidates": [{"content": {"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 4,"totalTokenCount": 12}}"#;

    #[test]
    fn geminis_chunk_with_one_part_is_its_text_borrowed() {
        assert_eq!(text("", GEMINI_ONE_PART).as_deref(), Some("The"));
        assert!(borrowed("", GEMINI_ONE_PART));
    }

    #[test]
    fn geminis_chunk_with_two_parts_is_their_texts_joined() {
        assert_eq!(
            text("", GEMINI_TWO_PARTS).as_deref(),
            Some(" quick brown fox")
        );
    }

    #[test]
    fn geminis_thought_parts_are_left_out_and_a_last_chunk_without_parts_is_none() {
        assert_eq!(text("", GEMINI_THOUGHT).as_deref(), Some("Yes."));
        assert_eq!(text("", GEMINI_LAST), None);
    }

    #[test]
    fn data_that_is_not_json_or_names_no_text_is_none() {
        assert_eq!(text("", "plain text"), None);
        assert_eq!(text("", "{not json"), None);
        assert_eq!(text("", "[DONE]"), None);
        assert_eq!(
            text(
                "",
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#
            ),
            None
        );
        assert_eq!(text("brand_new", r#"{"delta":"x"}"#), None);
    }
}
