//! The attribute's keys, each named once: its spelling, the kind of value it takes and an
//! example, from which parsing, "did you mean", type errors and validation all read.
//!
//! Adding a key is one row here; every `match` on [`Key`] (its slot in `args::RawArgs`, its
//! check in `args::Config::validate`) then fails to compile until it says what the key does.

/// Declares [`Key`], [`Key::ALL`] (the rows in order) and the facts of each row, so a key
/// cannot exist without a name, a kind and an example, nor be left out of `ALL`.
macro_rules! keys {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, takes $kind:ident, like $example:literal;
    )*) => {
        /// One of `#[retry]`'s keys.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Key {
            $($(#[$doc])* $variant,)*
        }

        impl Key {
            /// Every key, in the order the docs and "expected one of" list them.
            pub(crate) const ALL: &'static [Key] = &[$(Key::$variant),*];

            /// The key as written in the attribute.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Key::$variant => $name,)*
                }
            }

            /// What the value is: how `args::read` reads it, and what "`key` takes ..." says.
            pub(crate) const fn kind(self) -> Kind {
                match self {
                    $(Key::$variant => Kind::$kind,)*
                }
            }

            /// A value as it would be written, for "like `key = ...`" messages.
            pub(crate) const fn example(self) -> &'static str {
                match self {
                    $(Key::$variant => $example,)*
                }
            }
        }
    };
}

keys! {
    /// The policy to start from: a built-in's name or the user's `const`.
    Policy = "policy", takes PolicyOrPath, like "\"availability\"";
    Attempts = "attempts", takes WholeNumber, like "4";
    BaseMs = "base_ms", takes WholeNumber, like "250";
    CapMs = "cap_ms", takes WholeNumber, like "20000";
    Multiplier = "multiplier", takes Number, like "2";
    Jitter = "jitter", takes Word, like "\"equal\"";
    Budget = "budget", takes Duration, like "\"2s\"";
    /// Each attempt's timeout.
    Timeout = "timeout", takes Duration, like "\"30s\"";
    /// The call's name in notices.
    Name = "name", takes Text, like "\"model\"";
    Quota = "quota", takes QuotaPath, like "crate::MODEL_QUOTA";
    /// What the calls share: a provider's pause and the outage gate.
    Upstream = "upstream", takes UpstreamPath, like "crate::MODEL";
    /// An ordered set of upstreams to fall back across.
    Across = "across", takes UpstreamsPath, like "crate::MODELS";
    /// What each attempt costs of the upstream's key in tokens, an expression of the arguments.
    Tokens = "tokens", takes Expression, like "max_tokens + prompt.len() as u32 / 4";
    AlsoRetry = "also_retry", takes ClassList, like "[InvalidOutput]";
    NeverRetry = "never_retry", takes ClassList, like "[RateLimited]";
    /// The runtime's path, for users who rename the dependency.
    Crate = "crate", takes PathInText, like "\"retry_runtime\"";
}

/// The kind of value a key takes: which reading `args::read` gives it before the key's own
/// checks (as tracing-attributes has a typed parser per argument), and what "`key` takes ..."
/// says when the value is of another kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A built-in policy's name in a string, or a path to the user's `const`.
    PolicyOrPath,
    /// An integer literal, its sign kept so that a negative one gets its key's own message.
    WholeNumber,
    /// A float or integer literal.
    Number,
    /// A string naming one of a list, like `"full"`: a bare `full` is answered with the quotes.
    Word,
    /// A duration in a string, like `"2s"`: a bare `2`, `2s` or `turn` is answered with it.
    Duration,
    /// Any string.
    Text,
    /// A path to a `static` `Quota`.
    QuotaPath,
    /// A path to a `static` `Upstream`.
    UpstreamPath,
    /// A path to a `static` `Upstreams`.
    UpstreamsPath,
    /// `[A, B]`, or a single `A`.
    ClassList,
    /// A path in a string.
    PathInText,
    /// Any expression, typed where it is used.
    Expression,
}

impl Kind {
    /// What the value is, for "`key` takes ..., like ..." messages.
    pub(crate) const fn describe(self) -> &'static str {
        match self {
            Kind::PolicyOrPath => "a built-in policy's name or a path to a `const` `Policy`",
            Kind::WholeNumber => "a whole number",
            Kind::Number => "a number",
            Kind::Word | Kind::Duration | Kind::Text => "a string",
            Kind::QuotaPath => "a path to a `static` `Quota`",
            Kind::UpstreamPath => "a path to a `static` `Upstream`",
            Kind::UpstreamsPath => "a path to a `static` `Upstreams`",
            Kind::ClassList => "a list of `Class` variants",
            Kind::PathInText => "a string holding a path",
            Kind::Expression => "an expression",
        }
    }
}

/// Names other retry libraries use, mapped to ours, so "did you mean" can bridge them.
pub(crate) const ALIASES: &[(&str, Key)] = &[
    ("retries", Key::Attempts),
    ("max_retries", Key::Attempts),
    ("max_attempts", Key::Attempts),
    ("tries", Key::Attempts),
    ("delay_ms", Key::BaseMs),
    ("initial_ms", Key::BaseMs),
    ("min_delay_ms", Key::BaseMs),
    ("max_delay_ms", Key::CapMs),
    ("max_ms", Key::CapMs),
    ("factor", Key::Multiplier),
    ("deadline", Key::Budget),
    ("attempt_timeout", Key::Timeout),
    ("request_timeout", Key::Timeout),
    ("op", Key::Name),
    ("retry_also", Key::AlsoRetry),
    ("retrying", Key::AlsoRetry),
    ("retry_never", Key::NeverRetry),
    ("not_retrying", Key::NeverRetry),
];

impl Key {
    /// The key spelt `name`, if there is one.
    pub(crate) fn named(name: &str) -> Option<Key> {
        Key::ALL.iter().copied().find(|key| key.name() == name)
    }

    /// Every key's name, in order.
    pub(crate) fn names() -> Vec<&'static str> {
        Key::ALL.iter().map(|key| key.name()).collect()
    }

    /// [`ALIASES`] with each key by name, as "did you mean" takes them.
    pub(crate) fn aliases() -> Vec<(&'static str, &'static str)> {
        ALIASES
            .iter()
            .map(|(alias, key)| (*alias, key.name()))
            .collect()
    }

    /// Its index in [`Key::ALL`], where `args::RawArgs` keeps its value.
    pub(crate) fn index(self) -> usize {
        // `ALL` lists the variants in declaration order.
        self as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_named_by_its_own_name() {
        for (index, key) in Key::ALL.iter().enumerate() {
            assert_eq!(Key::named(key.name()), Some(*key));
            assert_eq!(key.index(), index, "{key:?}");
        }
        assert_eq!(Key::named("retries"), None);
    }

    #[test]
    fn names_are_distinct_and_no_alias_shadows_one() {
        let names = Key::names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "`{name}` twice");
        }
        for (alias, _) in ALIASES {
            assert_eq!(Key::named(alias), None, "alias `{alias}` is a key");
        }
    }

    /// "`key` takes ..." is pinned by the ui-tests; this is the table they were written from.
    #[test]
    fn each_kind_is_described_as_the_messages_say() {
        let described: Vec<(&str, &str)> = Key::ALL
            .iter()
            .map(|key| (key.name(), key.kind().describe()))
            .collect();
        let string = "a string";
        let whole = "a whole number";
        let classes = "a list of `Class` variants";
        assert_eq!(
            described,
            [
                (
                    "policy",
                    "a built-in policy's name or a path to a `const` `Policy`"
                ),
                ("attempts", whole),
                ("base_ms", whole),
                ("cap_ms", whole),
                ("multiplier", "a number"),
                ("jitter", string),
                ("budget", string),
                ("timeout", string),
                ("name", string),
                ("quota", "a path to a `static` `Quota`"),
                ("upstream", "a path to a `static` `Upstream`"),
                ("across", "a path to a `static` `Upstreams`"),
                ("tokens", "an expression"),
                ("also_retry", classes),
                ("never_retry", classes),
                ("crate", "a string holding a path"),
            ]
        );
    }

    #[test]
    fn the_attributes_docs_have_a_row_for_every_key() {
        let docs = include_str!("../lib.rs");
        for key in Key::ALL {
            let row = format!("/// | `{}` |", key.name());
            assert!(docs.contains(&row), "no row `{row}` in the `#[retry]` docs");
        }
    }
}
