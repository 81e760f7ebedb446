//! [`UpstreamFor`]: which [`Upstream`] a retry layer's call goes to, and how the service's
//! error holds an attempt the upstream held back.

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
}

/// A call's upstream, as an [`UpstreamFor`] chooses it, and how the error `E` holds an
/// attempt the upstream held back past the call's end.
pub type UpstreamChoice<E> = (&'static Upstream, fn(UpstreamPaused) -> E);

/// A layer with no upstream: each call learns alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NoUpstream;

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
