//! [`is_jsonrpc_response`]: the end of an MCP request's event stream, for
//! [`RetryStream::complete_when`](crate::RetryStream::complete_when).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::sse::Event;

/// Whether `event`'s data is a JSON-RPC 2.0 response (or a batch of them): the message that
/// completes an MCP request's stream (Streamable HTTP), for
/// [`RetryStream::complete_when`](crate::RetryStream::complete_when).
///
/// A response, as the [JSON-RPC 2.0 specification][spec] defines it, is a JSON object with
///
/// - an `id` that is a string, a number or `null` (`null` answers a request whose ID the
///   server could not read);
/// - exactly one of `result` (any value, `null` too) and `error` (an object);
/// - no `method`: a message with one is a request or a notification.
///
/// Everything else is not: a notification (`notifications/message` at level `"error"`,
/// `notifications/progress`), a request the server sends the client (`sampling/createMessage`,
/// with a `method` and an `id`), an empty priming event, data that is not JSON. `jsonrpc` is
/// not read, so a server that leaves out `"jsonrpc": "2.0"` still completes its stream; other
/// members are allowed. A batch, a JSON array, is a response when it is not empty and every
/// element is one.
///
/// The data is read once, and only the `id` and an `error` are kept while it is: a large
/// `result` or `params` is scanned, not copied. The ID is not compared with the request's: on
/// an MCP POST's stream, the only response is the one to that POST's request.
///
/// Read through [`ModelEvents`](crate::http::ModelEvents), an event whose data has a
/// top-level `error` object ends the stream as a [`StreamError`](crate::http::StreamError)
/// rather than as an item, so a JSON-RPC error response (with `"jsonrpc": "2.0"`) does too:
/// it is the server's answer, classed `Definitive`
/// ([`Rule::JsonRpcError`](crate::http::Rule::JsonRpcError)) and never sent again, its body
/// kept. Over [`sse::Events`](crate::sse::Events), it is an item that completes the stream.
///
/// ```
/// use retry_runtime::http::is_jsonrpc_response;
/// use retry_runtime::sse::Event;
///
/// let event = |data: &str| Event::new("message", data);
/// assert!(is_jsonrpc_response(&event(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#)));
/// assert!(is_jsonrpc_response(&event(
///     r#"{"jsonrpc":"2.0","id":"call-1","error":{"code":-32602,"message":"Unknown tool"}}"#
/// )));
/// // A log message at level "error" is a notification: the response is still to come.
/// assert!(!is_jsonrpc_response(&event(
///     r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"disk full"}}"#
/// )));
/// // A request from the server (it has a `method`, and an `id` for its own answer).
/// assert!(!is_jsonrpc_response(&event(
///     r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}"#
/// )));
/// // A priming event, and data that is not JSON.
/// assert!(!is_jsonrpc_response(&event("")));
/// assert!(!is_jsonrpc_response(&event("error")));
/// ```
///
/// [spec]: https://www.jsonrpc.org/specification#response_object
pub fn is_jsonrpc_response(event: &Event) -> bool {
    serde_json::from_str::<McpMessage>(event.data()).is_ok_and(|message| message.0)
}

/// A JSON value read for whether it is a response, or a batch of responses (the top level).
struct McpMessage(bool);

/// A JSON value read for whether it is one response (an element of a batch).
struct Single(bool);

/// The members of a message this reads.
enum Member {
    Id,
    Result,
    Error,
    Method,
    Other,
}

impl<'de> Deserialize<'de> for McpMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(Shape { batch: true })
            .map(McpMessage)
    }
}

impl<'de> Deserialize<'de> for Single {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(Shape { batch: false })
            .map(Single)
    }
}

/// Reads a value: an object for its members, an array (at the top level) for its elements,
/// anything else as no response.
struct Shape {
    batch: bool,
}

impl<'de> Visitor<'de> for Shape {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut all = self.batch;
        let mut any = false;
        while let Some(Single(response)) = seq.next_element()? {
            all &= response;
            any = true;
        }
        Ok(all && any)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let (mut id, mut result, mut error, mut method) = (None, false, None, false);
        while let Some(member) = map.next_key()? {
            match member {
                // An ID and an error are small, and read as JSON trees, which know a number
                // however serde_json is built (with `arbitrary_precision`, a number is a map).
                Member::Id => {
                    let value = map.next_value::<Value>()?;
                    id = Some(matches!(
                        value,
                        Value::String(_) | Value::Number(_) | Value::Null
                    ));
                }
                Member::Result => result = map.next_value::<IgnoredAny>().map(|_| true)?,
                Member::Error => error = Some(map.next_value::<Value>()?.is_object()),
                Member::Method => method = map.next_value::<IgnoredAny>().map(|_| true)?,
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let outcome = match (result, error) {
            (true, None) => true,
            (false, Some(object)) => object,
            _ => false,
        };
        Ok(id == Some(true) && outcome && !method)
    }
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(MemberName)
    }
}

struct MemberName;

impl Visitor<'_> for MemberName {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Member, E> {
        Ok(match name {
            "id" => Member::Id,
            "result" => Member::Result,
            "error" => Member::Error,
            "method" => Member::Method,
            _ => Member::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn says(data: &str) -> bool {
        is_jsonrpc_response(&Event::new("message", data))
    }

    /// The rule, over a JSON tree: what the visitors must agree with.
    fn oracle(data: &str) -> bool {
        fn one(value: &Value) -> bool {
            let Value::Object(members) = value else {
                return false;
            };
            let id = matches!(
                members.get("id"),
                Some(Value::String(_) | Value::Number(_) | Value::Null)
            );
            let outcome = match (members.get("result"), members.get("error")) {
                (Some(_), None) => true,
                (None, Some(error)) => error.is_object(),
                _ => false,
            };
            id && outcome && !members.contains_key("method")
        }
        match serde_json::from_str::<Value>(data) {
            Ok(Value::Array(batch)) => !batch.is_empty() && batch.iter().all(one),
            Ok(value) => one(&value),
            Err(_) => false,
        }
    }

    #[test]
    fn a_result_and_an_error_with_an_id_are_responses() {
        assert!(says(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(says(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#
        ));
        assert!(says(r#"{"jsonrpc":"2.0","id":"a","result":null}"#));
        assert!(says(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
        ));
        // Member order does not matter, nor does `jsonrpc`.
        assert!(says(r#"{"result":[1,2],"id":2.5}"#));
    }

    #[test]
    fn an_error_notification_is_not_a_response() {
        let log = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {
                "level": "error",
                "logger": "tool",
                "data": {"error": "disk full", "result": 1},
            },
        });
        assert!(!says(&log.to_string()));
    }

    #[test]
    fn a_request_or_a_message_without_an_id_or_outcome_is_not_a_response() {
        assert!(!says(
            r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}"#
        ));
        // A response shape with a `method` besides is not one either.
        assert!(!says(
            r#"{"jsonrpc":"2.0","id":7,"method":"x","result":{}}"#
        ));
        assert!(!says(r#"{"jsonrpc":"2.0","result":{}}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":1}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":true,"result":{}}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":{"n":1},"result":{}}"#));
        assert!(!says(r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#));
    }

    #[test]
    fn data_that_is_not_a_json_object_is_not_a_response() {
        for data in [
            "",
            " ",
            "error",
            r#""result""#,
            "1",
            "null",
            "[DONE]",
            "{",
            r#"{"id":1,"result":{}"#,
        ] {
            assert!(!says(data), "{data:?}");
        }
    }

    #[test]
    fn a_batch_is_a_response_when_every_element_is_one() {
        assert!(says(
            r#"[{"id":1,"result":{}},{"id":2,"error":{"code":1,"message":"m"}}]"#
        ));
        assert!(!says(
            r#"[{"id":1,"result":{}},{"method":"notifications/progress"}]"#
        ));
        assert!(!says("[]"));
        assert!(!says(r#"[[{"id":1,"result":{}}]]"#));
        assert!(!says(r#"[{"id":1,"result":{}}, 1]"#));
    }

    #[test]
    fn the_reading_agrees_with_the_rule_over_a_json_tree() {
        let ids = [
            "",
            r#""id":1,"#,
            r#""id":"x","#,
            r#""id":null,"#,
            r#""id":false,"#,
            r#""id":{},"#,
        ];
        let outcomes = [
            "",
            r#""result":{"error":{}},"#,
            r#""result":null,"#,
            r#""error":{"code":1},"#,
            r#""error":null,"#,
            r#""error":[],"#,
            r#""result":1,"error":{},"#,
        ];
        let methods = ["", r#""method":"m","#, r#""params":{"method":"m"},"#];
        for id in ids {
            for outcome in outcomes {
                for method in methods {
                    let message = format!(r#"{{{id}{outcome}{method}"jsonrpc":"2.0"}}"#);
                    assert_eq!(says(&message), oracle(&message), "{message}");
                    let batch = format!("[{message},{message}]");
                    assert_eq!(says(&batch), oracle(&batch), "{batch}");
                }
            }
        }
    }
}
