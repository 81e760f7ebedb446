//! [`UpstreamFor`]: which [`Upstream`] a retry layer's call goes to, and how the service's
//! error holds an attempt the upstream held back.

use std::sync::Arc;

use crate::fallback::Upstreams;
use crate::route::NoUpstream;
use crate::upstream::{Upstream, UpstreamPaused};

/// Which [`Upstream`] a layer's call goes to: none ([`NoUpstream`], the default), one (a
/// `&'static Upstream`), or one chosen from the request (a function
/// `Fn(&Request) -> Option<&'static Upstream>`, such as by host); and how the service's error
/// `E` holds an attempt the upstream held back past the call's end. Set with the layers'
/// `upstream` and `upstream_by`.
///
/// ```
/// use retry_runtime::{Upstream, UpstreamPaused};
/// use retry_runtime::http::UpstreamFor;
///
/// static OPENAI: Upstream = Upstream::new("openai");
/// static ANTHROPIC: Upstream = Upstream::new("anthropic");
///
/// fn by_host(url: &String) -> Option<&'static Upstream> {
///     if url.contains("anthropic.com") { Some(&ANTHROPIC) } else { Some(&OPENAI) }
/// }
/// type Error = Box<dyn std::error::Error + Send + Sync>;
/// let chosen = UpstreamFor::<String, Error>::upstream_for(&by_host, &"https://api.anthropic.com/v1".to_owned());
/// assert_eq!(chosen.map(|(upstream, _)| upstream.name()), Some("anthropic"));
/// ```
pub trait UpstreamFor<Request, E> {
    /// The upstream of `request`'s call, and how `E` holds an [`UpstreamPaused`].
    fn upstream_for(&self, request: &Request) -> Option<UpstreamChoice<E>>;

    /// The ordered set `request`'s call goes across instead, if it does ([`Across`]): the set,
    /// how a request is rewritten for each upstream, and how `E` holds an [`UpstreamPaused`].
    fn across_for(&self, request: &Request) -> Option<AcrossChoice<Request, E>> {
        let _ = request;
        None
    }
}

/// A call's ordered set of upstreams, as an [`UpstreamFor`] chooses it: the set, the function
/// that rewrites the request for an upstream (shared, so that it may hold what it was
/// configured with), and how the error `E` holds an attempt every upstream held back past the
/// call's end.
pub type AcrossChoice<Request, E> = (
    &'static Upstreams,
    Arc<dyn Fn(&mut Request, &'static Upstream) + Send + Sync>,
    fn(UpstreamPaused) -> E,
);

/// A layer's calls go across an ordered set of upstreams ([`Upstreams`]), each attempt's
/// request rewritten for the upstream it goes to (its host, its path, its `model` field) by
/// `rewrite`, and an attempt every upstream held back past the call's end made the service's
/// error `E` by `hold`. The layers' `across` makes one with `E::from`; give one to
/// `upstream_by` for an error type with no `From<UpstreamPaused>` (async-openai's, through its
/// `From<BoxError>`).
///
/// ```
/// use retry_runtime::{Upstream, UpstreamPaused, Upstreams};
/// use retry_runtime::http::{Across, UpstreamFor};
///
/// static PRIMARY: Upstream = Upstream::new("primary");
/// static SECONDARY: Upstream = Upstream::new("secondary");
/// static HOSTS: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);
///
/// fn to_host(url: &mut String, to: &'static Upstream) {
///     *url = format!("https://{}.example/v1/chat", to.name());
/// }
/// type Error = Box<dyn std::error::Error + Send + Sync>;
/// let across = Across::new(&HOSTS, to_host, |paused| Error::from(paused));
/// let (set, rewrite, _) = across.across_for(&String::new()).unwrap();
/// let mut url = String::new();
/// rewrite(&mut url, set.upstreams()[1]);
/// assert_eq!(url, "https://secondary.example/v1/chat");
/// ```
pub struct Across<Request, E> {
    set: &'static Upstreams,
    rewrite: SharedRewrite<Request>,
    hold: fn(UpstreamPaused) -> E,
}

/// How an [`Across`] rewrites a request for an upstream, shared by every call.
pub(crate) type SharedRewrite<Request> = Arc<dyn Fn(&mut Request, &'static Upstream) + Send + Sync>;

impl<Request, E> Across<Request, E> {
    /// Calls across `set`, each attempt's request rewritten by `rewrite` (a function, or a
    /// closure that holds its configuration, such as each upstream's base URL), an attempt
    /// held back made an error by `hold`.
    pub fn new(
        set: &'static Upstreams,
        rewrite: impl Fn(&mut Request, &'static Upstream) + Send + Sync + 'static,
        hold: fn(UpstreamPaused) -> E,
    ) -> Self {
        Across {
            set,
            rewrite: Arc::new(rewrite),
            hold,
        }
    }
}

impl<Request, E> Clone for Across<Request, E> {
    fn clone(&self) -> Self {
        Across {
            set: self.set,
            rewrite: Arc::clone(&self.rewrite),
            hold: self.hold,
        }
    }
}

impl<Request, E> std::fmt::Debug for Across<Request, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Across")
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl<Request, E> UpstreamFor<Request, E> for Across<Request, E> {
    #[inline]
    fn upstream_for(&self, _: &Request) -> Option<UpstreamChoice<E>> {
        None
    }

    #[inline]
    fn across_for(&self, _: &Request) -> Option<AcrossChoice<Request, E>> {
        Some((self.set, Arc::clone(&self.rewrite), self.hold))
    }
}

/// A call's upstream, as an [`UpstreamFor`] chooses it, and how the error `E` holds an
/// attempt the upstream held back past the call's end.
pub type UpstreamChoice<E> = (&'static Upstream, fn(UpstreamPaused) -> E);

/// A layer with no upstream (the placement of a [`Retry`](crate::Retry) with none): each call
/// learns alone.
impl<Request, E> UpstreamFor<Request, E> for NoUpstream {
    #[inline]
    fn upstream_for(&self, _: &Request) -> Option<UpstreamChoice<E>> {
        None
    }
}

impl<Request, E: From<UpstreamPaused>> UpstreamFor<Request, E> for &'static Upstream {
    #[inline]
    fn upstream_for(&self, _: &Request) -> Option<UpstreamChoice<E>> {
        Some((*self, E::from))
    }
}

impl<Request, E, F> UpstreamFor<Request, E> for F
where
    F: Fn(&Request) -> Option<&'static Upstream>,
    E: From<UpstreamPaused>,
{
    fn upstream_for(&self, request: &Request) -> Option<UpstreamChoice<E>> {
        self(request).map(|upstream| (upstream, E::from as fn(UpstreamPaused) -> E))
    }
}
