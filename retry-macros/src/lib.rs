//! The `#[retry]` attribute and `#[derive(Classify)]` of `retry-runtime`. Depend on `retry-runtime` and use
//! `retry_runtime::retry`; this crate's paths are not public API.
//!
//! | module | what |
//! |---|---|
//! | `retry` | `#[retry]`: its own folder, beside `classify` |
//! | `retry::key` | the attribute's keys: each one's name, kind of value (`Kind`) and example, once |
//! | `retry::args` | the attribute's arguments: read as written, each value read as its key's kind (`args::read`) and checked (`args::value`); other libraries' forms answered (`args::foreign`) |
//! | `retry::duration` | the grammar of `budget` and `timeout`, the runtime's, pinned by its cases |
//! | `retry::function` | the annotated item: an `async fn` with a body and a return type |
//! | `retry::expand` | the expansion onto the runtime's engine |
//! | `retry::fallback`, `retry::span` | the item as written, beside the errors, when something is wrong; where an error points |
//! | `classify` | `#[derive(Classify)]`: its own `attr`, `ast`, `valid` and `expand` |
//! | `names` | the policies, jitters and classes both macros take, pinned to the runtime's |
//! | `errors`, `suggest` | combined errors and "did you mean", for both macros |

mod classify;
mod errors;
mod names;
mod retry;
mod suggest;

use proc_macro::TokenStream;

/// Retries an `async fn` on the runtime's backoff engine.
///
/// Each call runs the body until it succeeds, its failure is an answer, or the ladder or the
/// budget runs out. The signature is kept as written, and the caller gets the body's own
/// `Result`: the value, or the last attempt's error unchanged (a transient failure that
/// persisted still classifies as transient).
///
/// ```
/// use retry_runtime::{retry, testing, Class, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, PartialEq)]
/// struct Status(u16);
///
/// impl std::fmt::Display for Status {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "HTTP {}", self.0)
///     }
/// }
///
/// impl Classify for Status {
///     fn classify(&self) -> Class {
///         match self.0 {
///             502..=504 => Class::Unavailable { retry_after: None },
///             _ => Class::Definitive,
///         }
///     }
/// }
///
/// #[retry(attempts = 3, base_ms = 100, budget = "2s")]
/// async fn fetch(status: u16) -> Result<&'static str, Status> {
///     if status == 200 { Ok("reply") } else { Err(Status(status)) }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // A 503 is retried after 100 and 200 ms; the caller gets the last 503 back.
/// let (result, recorded) = testing::scope(fetch(503)).await;
/// assert_eq!(result, Err(Status(503)));
/// assert_eq!(recorded.waits(), [100, 200].map(Duration::from_millis));
///
/// // A 404 is an answer: one attempt, no wait.
/// let (result, recorded) = testing::scope(fetch(404)).await;
/// assert_eq!(result, Err(Status(404)));
/// assert!(recorded.waits().is_empty());
/// # }
/// ```
///
/// # Keys
///
/// `#[retry]` alone retries under the `availability` policy within the enclosing turn. Each key
/// may be given once.
///
/// | key | value | default | what it sets |
/// |---|---|---|---|
/// | `policy` | `"availability"`, `"outage"`, `"transient"`, or a path to a `const` `Policy` | `"availability"` | which classes are retried, and the ladder the other keys adjust |
/// | `attempts` | integer ≥ 1 | the policy's: 4, 4, 5 | calls in all, the first included |
/// | `base_ms` | integer ≥ 1 | the policy's: 250, 5 000, 1 000 | the ideal wait before the first retry, in ms |
/// | `cap_ms` | integer ≥ `base_ms` | the policy's: 20 000, 45 000, 16 000 | the longest ideal wait, in ms (jitter applies after it, so `proportional` may wait 1.5 × the cap) |
/// | `multiplier` | number ≥ 1 | the policy's: 2, 3, 2 | each ideal wait over the one before |
/// | `jitter` | `"proportional"` [0.5, 1.5), `"equal"` [0.5, 1), `"full"` [0, 1), `"above"` [1, 1.2), `"none"` | the policy's: equal, above, proportional | the random factor on each wait |
/// | `budget` | `"turn"`, or a whole number and a unit: `"500ms"`, `"2s"`, `"3m"`, `"1h"` | `"turn"` | what bounds the ladder's time: the enclosing `Turn`'s deadline, or this call's own limit (and the turn's, if sooner) |
/// | `timeout` | a whole number and a unit, as `budget` takes | none | each attempt's limit: an attempt runs for at most the sooner of it, the rest of the turn and the rest of a literal `budget`, then is dropped and fails with `E::from(retry_runtime::TimedOut)`, so `E` must implement `From<TimedOut>`. It classifies as `Timeout`: `transient` retries it, `availability` and `outage` never do |
/// | `name` | string | the function's path, `module::function` | the `op` of notices and turn reports |
/// | `quota` | path to a `static` `Quota` | none | a retry budget shared across calls |
/// | `upstream` | path to a `static` `Upstream`, or to a `&'static Upstream` constant of the `impl` or a type parameter (`Self::MODEL`, `T::MODEL`) | none | what the calls share: a provider's pause, the outage gate |
/// | `across` | path to a `static` `Upstreams`, or to a `&'static Upstreams` constant, as `upstream` takes | none | an ordered set of upstreams: each attempt goes to the first neither paused nor gated, a failure moves the call to the next at once; the body reads its upstream with `Upstream::current()` |
/// | `tokens` | an expression of the arguments, a `u32` | none | what each attempt costs of the `upstream`'s key in tokens (its prompt and its `max_tokens`, say): where the provider says what the key has left, an attempt waits until the key holds it, and one that costs more than the whole limit fails at once, an answer; needs `upstream` |
/// | `also_retry` | list of `Class` variants, like `[InvalidOutput, Timeout]` | none | classes retried on top of the policy's (`Definitive` and `Cancelled` are refused: they are never retried) |
/// | `never_retry` | list of `Class` variants, like `[RateLimited]` | none | classes the policy retries that this call must not |
/// | `crate` | string holding a path | `"::retry_runtime"` | where the runtime is, if the dependency is renamed |
///
/// ```
/// use retry_runtime::{retry, Class, Policy, Quota};
/// use std::time::Duration;
///
/// // A program's policy, in one place; `#[retry]` names it by path.
/// const MODEL_POLICY: Policy = Policy::AVAILABILITY.with_attempts(3).retrying(Class::InvalidOutput);
/// static MODEL_QUOTA: Quota = Quota::standard();
///
/// #[retry(policy = MODEL_POLICY, quota = MODEL_QUOTA, name = "model")]
/// async fn complete(prompt: &str) -> Result<String, Class> {
///     Ok(prompt.to_uppercase())
/// }
///
/// #[retry(policy = "transient", attempts = 3, base_ms = 500, cap_ms = 2_000, multiplier = 1.5,
///          jitter = "full", budget = "30s", timeout = "10s", also_retry = [InvalidOutput],
///          never_retry = [Timeout])]
/// async fn poll_job(id: u64) -> Result<u64, Class> {
///     Ok(id)
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// # assert_eq!(complete("hi").await.unwrap(), "HI");
/// # assert_eq!(poll_job(7).await.unwrap(), 7);
/// # }
/// ```
///
/// # What it rejects at compile time
///
/// Each mistake is a compile error at the token to change, with a message that says how;
/// several mistakes in one attribute are reported together, and the function is still
/// compiled as written, so the rest of the crate keeps type-checking.
///
/// - a function that is not `async` (on `fn`), a `const fn` (on `const`), one without a body,
///   or an item that is not a function (on its keyword); `unsafe async fn` is left to rustc,
///   which says to write `async unsafe fn`;
/// - `#[retry]` written twice on one function ("merge the keys into one `#[retry(...)]`");
/// - no return type, or one that is visibly not a `Result` (`Option<T>`, `u32`, a tuple: on
///   the return type), or one that uses `impl Trait`; an alias that turns out not to be a
///   `Result` is rustc's "mismatched types" on the alias. An `impl Stream` (or `TryStream`)
///   is told that a stream is retried with `Retry::stream`, not by `#[retry]`;
/// - an error type that does not implement `Classify` or `Display`: one message each, on the
///   `E` of `Result<T, E>` (or on the return type when an alias hides it), naming your type
///   and the trait. An `E` that cannot implement `Classify` outside `retry-runtime`
///   (`String`, `&str`, `Box<dyn Error>`, `anyhow::Error`) is refused by name, with the fix:
///   wrap it in an error type of your own and `#[derive(Classify)]` on it;
/// - an unknown key (listing the keys, with a suggestion for a near miss), a key given twice,
///   a key without a value, a value of the wrong type, and the forms other libraries use:
///   `budget = 2` (write `"2s"`), `#[retry("outage")]` and `#[retry(availability)]` (write
///   `policy = "outage"`), `attempts: 3` (write `=`), `also_retry = ["Timeout"]` (no quotes);
/// - `attempts = 0`; a zero or negative `base_ms` or `cap_ms`; `cap_ms` below `base_ms`; a
///   `multiplier` below 1;
/// - a `timeout` on a function whose error type does not implement
///   `From<retry_runtime::TimedOut>` (on the key, naming the fix);
/// - an unknown policy name (listing the built-ins, with a suggestion), an unknown jitter, a
///   malformed duration, an unknown class, a class in both lists, `Definitive` or
///   `Cancelled` in `also_retry`;
/// - a policy whose numbers do not make sense once built (a user's policy with no attempts, a
///   `cap_ms` below the named policy's own base: "`cap_ms` 1000 is below `outage`'s base,
///   5000 ms"), and a literal `budget` that the ladder's worst case outlives ("the ladder's
///   worst case, 93 s of waits, outlives `budget = "60s"`"): both found by `const`
///   evaluation, on the key, with the figures;
/// - a body that moves an argument, so it could not run twice: rustc's "use of moved value
///   ... in previous iteration of loop", on the argument's use in the body.
///
/// A `quota` or an `upstream` that names a `const` rather than a `static` (a new value at
/// each use, so never shared) is rustc's E0492 on the path, "interior mutable shared borrows
/// of temporaries ...", whose help says to use a `static`: declare it as a `static` (not a
/// `static mut`).
///
/// # Order with other attributes
///
/// Attribute macros run from the top down, each on what the one above produced. Write
/// `#[retry]` first:
///
/// - `#[retry]` above `#[tracing::instrument]`: one span covers the call and its retries.
///   Below it, the body is already inside `instrument`'s `async move` block, which cannot run
///   twice, and `#[retry]` says so.
/// - `#[retry]` above `#[tokio::main]` or `#[tokio::test]`. Below it, the function is already a
///   plain `fn`, and `#[retry]` says which order works.
/// - `#[async_trait]` rewrites a method before `#[retry]` sees it, whatever the order: put
///   `#[retry]` on an inherent `async fn` and call it from the trait method. Native `async fn`
///   in traits (no `#[async_trait]`) takes `#[retry]` directly.
///
/// # How the body runs
///
/// The body runs once per attempt as an `async` block that borrows the arguments: `?` and
/// `return` end the attempt, with the value they give (an early `return Err(e)` is a failure
/// like any other, and may be retried). A change an attempt makes to a `mut` argument is seen
/// by the next attempt. The function's future stays `Send` when the plain function's is, and a
/// first-try success allocates nothing.
///
/// A policy's path may go through `Self` (`policy = Self::POLICY`, in a generic `impl` too),
/// a type parameter of the function (`T::POLICY`) or a qualified path
/// (`<Client as Tuned>::POLICY`). Such a policy cannot be named by a `const` or `static` in the
/// body (E0401), so it is built in an inline `const` block and the call's `Retry` is made per
/// call (a few words; the policy stays a constant). Its checks are then made when the function is compiled into the
/// program, not when it is type-checked: `cargo check` does not report them, `cargo build` does.
/// (A type parameter of the `impl`, `T::POLICY`, is not recognised: write `Self::POLICY`.)
///
/// # Equivalent code without `#[retry]`
///
/// `#[retry(policy = "outage", attempts = 3, budget = "2m")]` on
/// `async fn fetch(&self, id: u64) -> Result<Item, FetchError> { BODY }` expands to, in
/// substance (the helpers live in `retry_runtime::__private`, not public API):
///
/// ```text
/// async fn fetch(&self, id: u64) -> Result<Item, FetchError> {
///     const __RETRY_BASE: Policy = Policy::OUTAGE;
///     const __RETRY_POLICY: Policy = __RETRY_BASE.with_attempts(3);
///     static __RETRY: Retry = Retry::new(&__RETRY_POLICY)
///         .named(concat!(module_path!(), "::", "fetch"))
///         .within(Deadline::Within(Duration::from_millis(120_000)));
///     // Evaluated at compile time: a failed check is a compile error at the key to change.
///     const _: () = {
///         if let Some(problem) = policy_problem(&__RETRY_POLICY) {
///             panic!("{}", problem.as_str());
///         }
///         // "the ladder's worst case, 93 s of waits, outlives `budget = "2m"`: ..."
///         if let Some(problem) = budget_problem(&__RETRY_POLICY, Duration::from_millis(120_000), "2m") {
///             panic!("{}", problem.as_str());
///         }
///     };
///     let mut run = Run::new(&__RETRY);
///     // The loop and the attempt's block carry the body's span: a moved argument is
///     // reported where the body uses it.
///     loop {
///         // The attempt is marked, so a retried call inside BODY knows it is nested.
///         let attempted = run
///             .attempt(async {
///                 // Pins the block's output to the declared return type, so `?` and
///                 // `return` in BODY mean what they meant.
///                 if let Some(pinned) = None::<Result<Item, FetchError>> {
///                     return pinned;
///                 }
///                 BODY
///             })
///             .await;
///         let output: Result<Item, FetchError> = run.attempted(attempted);
///         match output {
///             // The pattern and the two closures are written at `FetchError`: that is where
///             // a return type that is not a `Result`, or a missing `Classify` or `Display`,
///             // is reported, once each.
///             Err(error) => {
///                 let classify = |error| Classify::classify(error);
///                 let display = |error, f| Display::fmt(error, f);
///                 // The wait is boxed: only its pointer lives across the `.await`.
///                 let wait = match failed(&mut run, error, classify, display) {
///                     Ok(wait) => wait,
///                     Err(error) => return Err(error),
///                 };
///                 if let Err(error) = wait.await {
///                     return Err(error);
///                 }
///             }
///             _ => {
///                 run.succeeded();
///                 return output;
///             }
///         }
///     }
/// }
/// ```
///
/// With `timeout`, `__RETRY` is a `TimedRetry` (`Retry::new(..).timeout(d)`), each attempt
/// starts with `run.attempt_timed(..)`, and an attempt whose time ran out becomes
/// `Err(From::from(timed_out))`, a conversion placed on the key.
///
/// The explicit API does the same without the attribute, and returns why the ladder stopped:
/// `Retry::new(&Policy::OUTAGE).run(async |attempt| ...)` gives `Result<T, GaveUp<E>>`.
///
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    retry::attribute(args.into(), item.into()).into()
}

/// Implements `Classify` for an error enum or struct, one visible decision per variant.
///
/// Each variant says what it means for trying again, with one word; a variant without a
/// decision is a compile error that names it, so adding a variant forces the choice instead of
/// falling into a `_ =>` arm that quietly retries it, or not. It composes with
/// `#[derive(thiserror::Error)]`: thiserror's `#[from]` converts an error, `#[classify(from)]`
/// classifies the variant as that error does.
///
/// ```
/// use retry_runtime::{Class, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, thiserror::Error, Classify)]
/// enum ModelError {
///     /// No server reached: classified as the I/O error is (refused is `Transport`).
///     #[error("no answer: {0}")]
///     #[classify(from)]
///     Io(#[from] std::io::Error),
///     /// A 503, with the server's `Retry-After` as a hint for the ladder.
///     #[error("overloaded")]
///     #[classify(unavailable)]
///     Overloaded {
///         #[classify(retry_after)]
///         retry_after: Option<Duration>,
///     },
///     #[error("rate limited")]
///     #[classify(rate_limited)]
///     RateLimited(#[classify(retry_after)] Duration),
///     #[error("the budget for this key is spent")]
///     #[classify(quota_exhausted)]
///     BudgetRefused,
///     #[error("the tool's arguments are not valid JSON")]
///     #[classify(invalid_output)]
///     InvalidToolArguments { detail: String },
///     #[error("bad request: {0}")]
///     #[classify(definitive)]
///     BadRequest(String),
/// }
///
/// let refused = ModelError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
/// assert_eq!(refused.classify(), Class::Transport);
/// let hint = Some(Duration::from_secs(3));
/// assert_eq!(
///     ModelError::Overloaded { retry_after: hint }.classify(),
///     Class::Unavailable { retry_after: hint }
/// );
/// assert_eq!(
///     ModelError::RateLimited(Duration::from_secs(1)).classify().retry_after(),
///     Some(Duration::from_secs(1))
/// );
/// assert_eq!(ModelError::BudgetRefused.classify(), Class::QuotaExhausted);
/// assert_eq!(ModelError::BadRequest("no model".into()).classify(), Class::Definitive);
/// ```
///
/// # Decisions
///
/// Each variant (or the struct) takes exactly one:
///
/// | written | class |
/// |---|---|
/// | `#[classify(transport)]` | `Class::Transport`: no server reached |
/// | `#[classify(unavailable)]` | `Class::Unavailable { retry_after }`: 502, 503, 504, overloaded |
/// | `#[classify(server_error)]` | `Class::ServerError`: 500 |
/// | `#[classify(timeout)]` | `Class::Timeout` |
/// | `#[classify(rate_limited)]` | `Class::RateLimited { retry_after }`: 429 |
/// | `#[classify(quota_exhausted)]` | `Class::QuotaExhausted`: a budget refusal |
/// | `#[classify(invalid_output)]` | `Class::InvalidOutput`: an unusable answer |
/// | `#[classify(cancelled)]` | `Class::Cancelled` |
/// | `#[classify(definitive)]` | `Class::Definitive`: an answer |
/// | `#[classify(from)]`, alias `#[classify(transparent)]` | as its one field classifies; on a variant with several fields, as the field marked `#[classify(from)]` does (marking the field alone is the same decision) |
/// | `#[classify(with = path)]` | as `path(&self)` says: a `fn(&Self) -> Class` |
///
/// On `rate_limited` and `unavailable`, a field marked `#[classify(retry_after)]` is the far
/// side's hint, which the ladder takes as a floor for its next wait. Its type must be
/// `std::time::Duration` or `Option<std::time::Duration>` (under any alias); this is checked
/// by the type, not by its spelling, so a user type named `Duration` is refused. Without the
/// field the hint is `None`.
///
/// On the type:
///
/// | written | what |
/// |---|---|
/// | `#[classify(with = path)]` on an enum | `path(&self)` classifies every variant; variants then carry no decision |
/// | `#[classify(default = word)]` on an enum | the class of every variant without a decision |
/// | `#[classify(crate = "path")]` | where the runtime is, if the dependency is renamed; default `"::retry_runtime"` |
///
/// `default` is the weaker choice: it brings back the silent `_ =>` arm, since a new
/// variant takes the default without anyone deciding. Prefer a word on each variant; keep
/// `default` for large enums where nearly every variant is an answer (`default = definitive`).
///
/// ```
/// use retry_runtime::{Class, Classify};
///
/// fn by_code(error: &ApiError) -> Class {
///     match error.code {
///         502..=504 => Class::Unavailable { retry_after: None },
///         _ => Class::Definitive,
///     }
/// }
///
/// /// A struct takes its decision on the type.
/// #[derive(Debug, Classify)]
/// #[classify(with = by_code)]
/// struct ApiError {
///     code: u16,
/// }
///
/// #[derive(Debug, Classify)]
/// #[classify(default = definitive)]
/// enum StoreError {
///     #[classify(from)]
///     Api(ApiError),
///     #[classify(timeout)]
///     TimedOut,
///     NotFound,
///     Conflict,
/// }
///
/// assert_eq!(StoreError::Api(ApiError { code: 503 }).classify(), Class::Unavailable { retry_after: None });
/// assert_eq!(StoreError::TimedOut.classify(), Class::Timeout);
/// assert_eq!(StoreError::Conflict.classify(), Class::Definitive);
/// ```
///
/// Generic types work: a field classified by `from` whose type names a type parameter gets a
/// `Classify` bound on the impl, as thiserror infers its bounds.
///
/// # What it rejects at compile time
///
/// Each mistake is a compile error on the token to change, with the choices in the message;
/// several are reported together, and the type still implements `Classify` (with a body that
/// is never run), so no second wave of "`Classify` is not implemented" follows.
///
/// - a variant with no decision and no `default` (on the variant's name; it says that
///   thiserror's `#[from]` alone is not a decision);
/// - an unknown word (with the nearest one: `trasport` → `transport`), an entry with a
///   value it does not take or without one it needs;
/// - two decisions on one variant, or a variant's word and a field's `from`;
/// - `from` on a variant with no field, or with several and none marked;
/// - a `retry_after` field that is not a `Duration` or `Option<Duration>` (on its type), or on
///   a variant that is not `rate_limited` or `unavailable`, or two of them;
/// - a delegated field whose type does not implement `Classify` (on its type);
/// - an entry in the wrong place: a class on an enum or on a field, `default` or `crate` on a
///   variant, `default` on a struct, anything below an enum's `with`;
/// - a union.
///
/// # Equivalent code without the derive
///
/// For the first example above, in substance (paths are absolute in the real expansion):
///
/// ```text
/// impl Classify for ModelError {
///     fn classify(&self) -> Class {
///         match self {
///             Self::Io { 0: field, .. } => <std::io::Error as Classify>::classify(field),
///             Self::Overloaded { retry_after: field, .. } => Class::Unavailable {
///                 retry_after: <Option<Duration> as RetryAfter>::retry_after(field),
///             },
///             Self::RateLimited { 0: field, .. } => Class::RateLimited {
///                 retry_after: <Duration as RetryAfter>::retry_after(field),
///             },
///             Self::BudgetRefused { .. } => Class::QuotaExhausted,
///             Self::InvalidToolArguments { .. } => Class::InvalidOutput,
///             Self::BadRequest { .. } => Class::Definitive,
///         }
///     }
/// }
/// ```
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}
