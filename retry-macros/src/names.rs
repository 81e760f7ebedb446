//! The names `#[retry]` and `#[derive(Classify)]` take, once: the built-in policies, the
//! jitters and the classes. The macro cannot depend on the runtime (the runtime depends on
//! it), so it keeps this copy; the tests below pin it to the runtime's own tables, through
//! the runtime as a dev-dependency.

/// A built-in policy: the name `policy = "..."` takes, and the `Policy` constant it means.
pub(crate) const POLICIES: &[(&str, &str)] = &[
    ("availability", "AVAILABILITY"),
    ("outage", "OUTAGE"),
    ("transient", "TRANSIENT"),
];

/// A jitter: the name `jitter = "..."` takes, and the `Jitter` variant it means.
pub(crate) const JITTERS: &[(&str, &str)] = &[
    ("proportional", "Proportional"),
    ("equal", "Equal"),
    ("full", "Full"),
    ("above", "Above"),
    ("none", "None"),
];

/// One `Class` variant, in the order of the runtime's `Class::ALL`.
#[derive(Debug)]
pub(crate) struct ClassName {
    /// How the derive spells it: `rate_limited`, the runtime's `Class::name()`.
    pub(crate) word: &'static str,
    /// The variant, as `also_retry` spells it and the expansion names it: `RateLimited`.
    pub(crate) variant: &'static str,
    /// Whether the variant carries a `retry_after` hint (a struct variant, then).
    pub(crate) takes_hint: bool,
}

const fn class(word: &'static str, variant: &'static str, takes_hint: bool) -> ClassName {
    ClassName {
        word,
        variant,
        takes_hint,
    }
}

pub(crate) const CLASSES: &[ClassName] = &[
    class("transport", "Transport", false),
    class("unavailable", "Unavailable", true),
    class("server_error", "ServerError", false),
    class("timeout", "Timeout", false),
    class("rate_limited", "RateLimited", true),
    class("quota_exhausted", "QuotaExhausted", false),
    class("invalid_output", "InvalidOutput", false),
    class("cancelled", "Cancelled", false),
    class("definitive", "Definitive", false),
];

/// The first column of a table of names: what the user writes.
pub(crate) fn written(table: &[(&'static str, &'static str)]) -> Vec<&'static str> {
    table.iter().map(|(name, _)| *name).collect()
}

/// What `written` means in `table`, if it is one of its names.
pub(crate) fn meaning(table: &[(&str, &'static str)], written: &str) -> Option<&'static str> {
    table
        .iter()
        .find(|(name, _)| *name == written)
        .map(|(_, meant)| *meant)
}

/// Every class's variant: `Transport`, `Unavailable`, ...
pub(crate) fn class_variants() -> Vec<&'static str> {
    CLASSES.iter().map(|class| class.variant).collect()
}

/// Every class's word: `transport`, `unavailable`, ...
pub(crate) fn class_words() -> Vec<&'static str> {
    CLASSES.iter().map(|class| class.word).collect()
}

/// The class whose variant is `variant`.
pub(crate) fn class_by_variant(variant: &str) -> Option<&'static ClassName> {
    CLASSES.iter().find(|class| class.variant == variant)
}

/// The class the derive spells `word`.
pub(crate) fn class_by_word(word: &str) -> Option<&'static ClassName> {
    CLASSES.iter().find(|class| class.word == word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use retry_runtime::{Class, Jitter, Policy};

    #[test]
    fn policy_names_are_the_runtimes_built_ins() {
        let runtime = Policy::BUILT_IN.map(|policy| policy.name());
        assert_eq!(written(POLICIES), runtime);
        // Each name means the runtime's constant of that name: `Policy::OUTAGE` is `"outage"`.
        for (name, konst) in POLICIES {
            assert_eq!(name.to_uppercase(), *konst);
        }
    }

    #[test]
    fn jitter_names_are_the_runtimes_and_mean_its_variants() {
        let runtime = Jitter::ALL.map(|jitter| jitter.name());
        assert_eq!(written(JITTERS), runtime);
        for (jitter, (name, variant)) in Jitter::ALL.iter().zip(JITTERS) {
            assert_eq!(format!("{jitter:?}"), *variant, "`\"{name}\"`");
        }
    }

    /// Word, variant and hint, row by row against `Class::ALL`: the variant and whether it
    /// has a `retry_after` field are read from its `Debug`, the one place the runtime spells
    /// them.
    #[test]
    fn classes_are_the_runtimes_in_its_order() {
        assert_eq!(CLASSES.len(), Class::ALL.len());
        for (class, row) in Class::ALL.iter().zip(CLASSES) {
            let debug = format!("{class:?}");
            let variant = debug.split([' ', '{']).next().unwrap_or_default();
            assert_eq!(row.word, class.name(), "{debug}");
            assert_eq!(row.variant, variant, "{debug}");
            assert_eq!(row.takes_hint, debug.contains("retry_after"), "{debug}");
        }
    }
}
