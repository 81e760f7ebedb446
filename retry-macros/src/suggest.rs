//! "Did you mean": the nearest known name to a misspelt one, for error messages.

/// The candidate the user most likely meant by `written`, if one is close enough.
///
/// Close means: the same name up to case and underscores (`invalid_output` for
/// `InvalidOutput`), one name a prefix of the other (`base` for `base_ms`), or a small edit
/// distance (`availabilty` for `availability`). `aliases` maps names from other libraries to
/// ours (`retries` to `attempts`).
pub(crate) fn nearest<'a>(
    written: &str,
    candidates: &[&'a str],
    aliases: &[(&str, &'a str)],
) -> Option<&'a str> {
    let folded = fold(written);
    if let Some(&(_, target)) = aliases.iter().find(|(alias, _)| fold(alias) == folded) {
        return Some(target);
    }
    if let Some(&same) = candidates.iter().find(|c| fold(c) == folded) {
        return Some(same);
    }
    if folded.len() >= 3
        && let Some(&prefixed) = candidates.iter().find(|c| {
            let c = fold(c);
            c.starts_with(&folded) || folded.starts_with(&c)
        })
    {
        return Some(prefixed);
    }
    // A third of the name may be wrong, and always one letter.
    let allowed = (folded.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (distance(&folded, &fold(c)), *c))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// ", did you mean `x`?" or nothing, to append to a message.
pub(crate) fn hint(written: &str, candidates: &[&str], aliases: &[(&str, &str)]) -> String {
    match nearest(written, candidates, aliases) {
        Some(near) => format!("; did you mean `{near}`?"),
        None => String::new(),
    }
}

/// `a`, `b` or `c`, each in backticks, for "expected one of ..." messages.
pub(crate) fn one_of(candidates: &[&str], quote: bool) -> String {
    let quoted = |c: &&str| {
        if quote {
            format!("`\"{c}\"`")
        } else {
            format!("`{c}`")
        }
    };
    candidates.iter().map(quoted).collect::<Vec<_>>().join(", ")
}

/// Lowercase with underscores removed, so `snake_case` and `CamelCase` spellings compare equal.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Edit distance over chars, counting a swap of neighbours as one edit (`trun` is one from
/// `turn`); the names are short, so the quadratic table is fine.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Row 0 and column 0: the distance from the empty string is the length.
    let mut table: Vec<Vec<usize>> = (0..=a.len())
        .map(|i| {
            (0..=b.len())
                .map(|j| if i == 0 { j } else { i * usize::from(j == 0) })
                .collect()
        })
        .collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitute = table[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitute.min(table[i - 1][j] + 1).min(table[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[i - 2][j - 2] + 1);
            }
            table[i][j] = best;
        }
    }
    table[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICIES: &[&str] = &["availability", "outage", "transient"];

    #[test]
    fn a_missing_letter_is_suggested() {
        assert_eq!(nearest("availabilty", POLICIES, &[]), Some("availability"));
        assert_eq!(nearest("transiant", POLICIES, &[]), Some("transient"));
    }

    #[test]
    fn snake_case_finds_camel_case() {
        assert_eq!(
            nearest("invalid_output", &["Timeout", "InvalidOutput"], &[]),
            Some("InvalidOutput")
        );
    }

    #[test]
    fn a_prefix_finds_the_full_name() {
        assert_eq!(
            nearest("base", &["attempts", "base_ms"], &[]),
            Some("base_ms")
        );
    }

    #[test]
    fn an_alias_finds_our_name() {
        assert_eq!(
            nearest("retries", &["attempts"], &[("retries", "attempts")]),
            Some("attempts")
        );
    }

    #[test]
    fn swapped_letters_are_one_edit() {
        assert_eq!(distance("trun", "turn"), 1);
        assert_eq!(
            nearest("jtiter", &["jitter", "budget"], &[]),
            Some("jitter")
        );
    }

    #[test]
    fn a_distant_name_gets_no_suggestion() {
        assert_eq!(nearest("fast", POLICIES, &[]), None);
        assert_eq!(hint("fast", POLICIES, &[]), "");
    }
}
