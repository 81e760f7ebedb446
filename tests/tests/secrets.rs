//! Issue 16: secrets stay out of what the library emits. For calls that fail with a secret in
//! a URL's query, in an `Authorization` header echoed in an error body, and as an `sk-` token
//! in a provider's message, and for every class, on a retry and on a give-up: not one byte of
//! the secret reaches a subscriber, a turn hook, the process hook, the turn report or the
//! `GaveUp` text. The events still name the op, the class, the attempt and the host.
//!
//! The process hook is the process's: this binary's tests each keep only their own op.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::{Class, Classify, GaveUp, Policy, Retry, Turn, notice, testing};
use retry_tests::capture::Capture;
use retry_tests::{CallError, Client, Server, Step, refused_url};

const KEY: &str = "AIzaSyD4SECRET4SECRET4SECRET4abcdefg";
const TOKEN: &str = "sk-proj-SECRET0SECRET0SECRET0xyz";

/// Everything the library showed about one call, as text.
#[derive(Debug, Default)]
struct Shown {
    texts: Vec<String>,
    sentences: Vec<String>,
    errors: Vec<String>,
}

impl Shown {
    fn assert_never_contains(&self, secret: &str) {
        // The distinctive middle of the secret: no fragment of it may survive either.
        let fragment = &secret[8..secret.len() - 4];
        for text in &self.texts {
            assert!(
                !text.contains(secret) && !text.contains(fragment),
                "a secret reached the output: {text}"
            );
        }
    }
}

/// Run `call` named `op` in a turn with a hook, the process hook and a tracing subscriber
/// installed, and collect every text the library showed.
async fn show<T, E>(
    op: &'static str,
    policy: &'static Policy,
    call: impl AsyncFnMut(u32) -> Result<T, E>,
) -> Shown
where
    E: Classify + fmt::Display + fmt::Debug,
{
    let capture = Capture::default();
    let _guard = capture.install();
    let hooked = Arc::new(Mutex::new(Vec::<(String, String, String)>::new()));
    let sink = Arc::clone(&hooked);
    let process = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let process_sink = Arc::clone(&process);
    notice::set_process_hook(move |notice| {
        if let Some(event) = notice.retry().filter(|event| event.op == op) {
            process_sink
                .lock()
                .unwrap()
                .push((event.to_string(), event.error.to_string()));
        }
    });
    let turn = Turn::new(Duration::from_secs(180)).on_notice(move |notice| {
        if let Some(event) = notice.retry() {
            sink.lock().unwrap().push((
                event.to_string(),
                format!("{event:?}"),
                event.error.to_string(),
            ));
        }
    });
    let ((result, report), _) =
        testing::scope(turn.run(Retry::new(policy).named(op).run(call))).await;

    let mut shown = Shown::default();
    for fields in capture.events() {
        shown.texts.extend(fields.values().cloned());
        shown.errors.extend(fields.get("error").cloned());
    }
    for (sentence, debug, error) in hooked.lock().unwrap().drain(..) {
        shown.sentences.push(sentence.clone());
        shown.texts.extend([sentence, debug, error.clone()]);
        shown.errors.push(error);
    }
    for (sentence, error) in process.lock().unwrap().drain(..) {
        shown.texts.extend([sentence, error]);
    }
    shown
        .texts
        .extend([report.to_string(), format!("{report:?}")]);
    if let Some(Err(gave_up)) = result.finished() {
        shown.texts.extend(gave_up_texts(gave_up));
    }
    shown
}

fn gave_up_texts<E: fmt::Display + fmt::Debug>(gave_up: &GaveUp<E>) -> [String; 2] {
    [gave_up.to_string(), format!("{gave_up:?}")]
}

/// The caller's own error, whose text repeats what the server said, secrets and all.
#[derive(Debug)]
struct Echoing {
    error: CallError,
}

impl fmt::Display for Echoing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error.http() {
            Some(http) => write!(f, "{http}: {}", http.body()),
            None => write!(f, "{}", self.error),
        }
    }
}

impl Classify for Echoing {
    fn classify(&self) -> Class {
        self.error.classify()
    }
}

#[tokio::test]
async fn a_key_in_a_urls_query_never_leaves_the_library() {
    let url = format!("{}v1/models?key={KEY}", refused_url());
    let client = Client::new(url);

    let shown = show("secret-query", &Policy::AVAILABILITY, async |_| {
        client.get().await
    })
    .await;

    shown.assert_never_contains(KEY);
    assert_eq!(shown.sentences.len(), 4, "three retries and a give-up");
    assert!(shown.sentences[0].starts_with("secret-query could not be reached: retrying (2 of 4)"));
    // The host and path stay, so the event is still useful.
    assert!(shown.errors[0].contains("127.0.0.1"), "{:?}", shown.errors);
    assert!(
        shown.errors[0].contains("/v1/models?[redacted]"),
        "{:?}",
        shown.errors
    );
}

#[tokio::test]
async fn an_authorization_header_echoed_in_an_error_body_never_leaves_the_library() {
    let body = format!(
        "{{\"error\": \"bad request\", \"echo\": {{\"Authorization\": \"Bearer {TOKEN}\"}}}}"
    );
    let server = Server::start([
        Step::status(503).with_body(&body),
        Step::status(401).with_body(&body),
    ])
    .await;
    let client = server.client();

    let shown = show("secret-header", &Policy::AVAILABILITY, async |_| {
        client.get().await.map_err(|error| Echoing { error })
    })
    .await;

    shown.assert_never_contains(TOKEN);
    assert_eq!(server.requests(), 2);
    assert_eq!(shown.sentences.len(), 2, "a retry and a give-up");
    assert!(shown.errors[0].contains("HTTP 503"), "{:?}", shown.errors);
    assert!(shown.errors[0].contains("127.0.0.1"), "{:?}", shown.errors);
}

#[tokio::test]
async fn an_sk_token_in_a_providers_message_never_leaves_the_library() {
    let body = format!(
        "{{\"error\": {{\"message\": \"Incorrect API key provided: {TOKEN}.\", \"type\": \"invalid_request_error\"}}}}"
    );
    let server = Server::start([
        Step::status(529).with_body(&body),
        Step::status(401).with_body(&body),
    ])
    .await;
    let client = server.client();

    let shown = show("secret-token", &Policy::AVAILABILITY, async |_| {
        client.get().await.map_err(|error| Echoing { error })
    })
    .await;

    shown.assert_never_contains(TOKEN);
    assert_eq!(shown.sentences.len(), 2, "a retry and a give-up");
    assert!(
        shown.errors[1].contains("Incorrect API key provided: [redacted]"),
        "{:?}",
        shown.errors
    );
}

/// A failure of one class whose text carries every kind of secret.
#[derive(Debug)]
struct Leaky(Class);

impl fmt::Display for Leaky {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at https://api.example.com/v1/chat?key={KEY} with authorization: Bearer {TOKEN}",
            self.0.name()
        )
    }
}

impl Classify for Leaky {
    fn classify(&self) -> Class {
        self.0
    }
}

#[tokio::test]
async fn no_class_lets_a_secret_through_on_a_retry_or_a_give_up() {
    // Every class this can retry is retried once, then given up on; the others give up at once.
    let everything = const {
        &Policy::TRANSIENT
            .with_attempts(2)
            .retrying(Class::QuotaExhausted)
            .retrying(Class::InvalidOutput)
    };
    for &class in Class::ALL {
        let shown = show("secret-class", everything, async |_| {
            Err::<(), _>(Leaky(class))
        })
        .await;

        shown.assert_never_contains(KEY);
        shown.assert_never_contains(TOKEN);
        let retried =
            everything.retries(&class) && class.is_transient() && class != Class::Cancelled;
        assert_eq!(
            shown.sentences.len(),
            if retried { 2 } else { 1 },
            "{class}"
        );
        assert!(
            shown
                .sentences
                .iter()
                .all(|s| s.starts_with("secret-class ")),
            "{class}"
        );
        assert!(
            shown.errors.iter().all(|e| e.contains(class.name())),
            "{class}"
        );
        assert!(
            shown
                .errors
                .iter()
                .all(|e| e.contains("https://api.example.com/v1/chat?[redacted]")),
            "{class}"
        );
    }
}

#[tokio::test]
async fn a_give_up_in_anyhow_prints_no_secret_and_its_error_once_in_every_form() {
    let url = format!("{}v1/models?key={KEY}", refused_url());
    let (result, _) =
        testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| reqwest::get(&url).await))
            .await;
    let gave_up = result.unwrap_err();
    let reported = anyhow::Error::new(gave_up);
    let host = url
        .split("/v1")
        .next()
        .unwrap()
        .trim_start_matches("http://");
    for shown in [
        format!("{reported}"),
        format!("{reported:#}"),
        format!("{reported:?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
        assert_eq!(shown.matches("error sending request").count(), 1, "{shown}");
        assert_eq!(shown.matches(host).count(), 1, "{shown}");
    }
    // The error itself is still the caller's, untouched.
    let gave_up = reported.downcast::<GaveUp<reqwest::Error>>().unwrap();
    assert!(gave_up.error().url().unwrap().as_str().contains(KEY));
}

/// The ready-made `http::CallError`, made by `?` from a refused request whose URL carries a
/// password, a key and a fragment, shows none of them: not in its text, its `Debug` or its
/// sources (issue 34).
#[tokio::test]
async fn the_ready_made_call_error_keeps_no_secret_of_a_refused_requests_url() {
    async fn call(url: &str) -> Result<String, retry_runtime::http::CallError> {
        Ok(reqwest::get(url).await?.text().await?)
    }
    let refused = refused_url();
    let address = refused.trim_start_matches("http://").trim_end_matches('/');
    let url = format!("http://user:pw-{TOKEN}@{address}/v1/models?key={KEY}#{TOKEN}");
    let error = call(&url).await.expect_err("nothing listens there");
    assert_eq!(error.classify(), Class::Transport);
    let mut shown = vec![error.to_string(), format!("{error:?}")];
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        shown.extend([cause.to_string(), format!("{cause:?}")]);
        source = cause.source();
    }
    for text in &shown {
        for secret in [KEY, TOKEN, "pw-", "key="] {
            assert!(!text.contains(secret), "`{secret}` in {text}");
        }
    }
    assert!(
        shown[0].contains(&format!("{address}/v1/models")),
        "{}",
        shown[0]
    );
}
