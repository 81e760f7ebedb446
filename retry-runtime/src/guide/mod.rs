//! The guide: one chapter per capability, each a page here, every example compiled by
//! `cargo test --doc` (and run where it needs no network).
//!
//! This module holds no code; it is documentation only, as clap's `_tutorial` is.
#![doc = include_str!("index.md")]

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod attribute {
    #![doc = include_str!("attribute.md")]
}

pub mod policies {
    #![doc = include_str!("policies.md")]
}

pub mod explicit {
    #![doc = include_str!("explicit.md")]
}

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod http {
    #![doc = include_str!("http.md")]
}

#[cfg(any(doc, all(feature = "reqwest", feature = "sse")))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "reqwest", feature = "sse"))))]
pub mod streams {
    #![doc = include_str!("streams.md")]
}

#[cfg(any(doc, all(feature = "reqwest", feature = "sse")))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "reqwest", feature = "sse"))))]
pub mod resume {
    #![doc = include_str!("resume.md")]
}

#[cfg(any(doc, feature = "tonic"))]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub mod google_grpc {
    #![doc = include_str!("google_grpc.md")]
}

#[cfg(any(doc, feature = "reqwest-middleware"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod layers {
    #![doc = include_str!("layers.md")]
}

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod upstreams {
    #![doc = include_str!("upstreams.md")]
}

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod fallback {
    #![doc = include_str!("fallback.md")]
}

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod pacing {
    #![doc = include_str!("pacing.md")]
    // The picture, inline: an SVG the storm example draws (`--pacing-svg`).
    #![doc = include_str!("pacing.svg")]
}

#[cfg(any(doc, feature = "fleet"))]
#[cfg_attr(docsrs, doc(cfg(feature = "fleet")))]
pub mod fleets {
    #![doc = include_str!("fleets.md")]
}

#[cfg(any(doc, feature = "reqwest"))]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod turns {
    #![doc = include_str!("turns.md")]
}

pub mod quota {
    #![doc = include_str!("quota.md")]
}

pub mod telemetry {
    #![doc = include_str!("telemetry.md")]
}

#[cfg(any(
    doc,
    all(feature = "test-server", feature = "reqwest", feature = "sse")
))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "test-server", feature = "reqwest", feature = "sse")))
)]
pub mod testing {
    #![doc = include_str!("testing.md")]
}

pub mod cli {
    #![doc = include_str!("cli.md")]
}

pub mod lint {
    #![doc = include_str!("lint.md")]
}
