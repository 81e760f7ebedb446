//! What keeps hostile input from crashing the lint.
//!
//! syn and brush-parser are recursive descent parsers: nesting deep enough overflows the
//! stack, which aborts the process and cannot be caught. So a file is first measured, and one
//! too large or nested too deeply is reported rather than parsed; what is let through is
//! parsed on a thread whose stack holds that depth with room to spare. A parser that panics
//! on some input is caught and reported as a file that could not be checked.

use std::panic::{self, AssertUnwindSafe};
use std::thread;

use super::{FileReport, Language, Skipped};

/// The largest file parsed: 4 MiB is far past any hand-written source file.
pub(crate) const MAX_BYTES: usize = 4 * 1024 * 1024;

/// The deepest nesting of brackets, generics and shell blocks parsed. rustc's own macro recursion limit
/// is 128; real code stays far below 256.
pub(crate) const MAX_NESTING: usize = 256;

/// The longest run of Rust prefixes parsed (`!!!x`, `&&&T`): more than nesting, so a comment
/// ruled with a line of 300 dashes still passes.
pub(crate) const MAX_PREFIXES: usize = 1024;

/// The stack the parsers run on. Measured: syn needs well under 1 MiB per 256 levels of
/// nesting in a debug build; 256 MiB of address space is only touched as it is used.
const STACK_BYTES: usize = 256 * 1024 * 1024;

/// Run `work` on a thread with a stack of [`STACK_BYTES`].
pub(crate) fn on_large_stack<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, &'static str> {
    let worker = thread::Builder::new()
        .name("backoff-lint".to_owned())
        .stack_size(STACK_BYTES)
        .spawn(work)
        .map_err(|_| "cannot start the lint's thread; free some memory and run it again")?;
    worker
        .join()
        .map_err(|_| "the lint stopped on an internal error; please report it with the input")
}

/// The file's text, or why it is not parsed: not UTF-8, too large, or nested too deeply.
pub(crate) fn admit(language: Language, bytes: &[u8]) -> Result<&str, Skipped> {
    let refuse = |reason: String| Skipped {
        line: 0,
        column: 0,
        reason,
    };
    if bytes.len() > MAX_BYTES {
        // Only one byte past the limit is read, so the size is not known: say what the limit is.
        return Err(refuse(format!(
            "too large to check (over {MAX_BYTES} bytes); split it, or list it in \
             .backoff-lint-ignore"
        )));
    }
    let text = std::str::from_utf8(bytes).map_err(|error| {
        refuse(format!(
            "not UTF-8 (at byte {}), so not a {} source; fix its encoding, or list it in \
             .backoff-lint-ignore",
            error.valid_up_to(),
            language.name()
        ))
    })?;
    if let Some((line, depth)) = too_deep(language, text) {
        return Err(Skipped {
            line,
            column: 0,
            reason: format!(
                "nested too deeply to parse safely (a depth of {depth} by this line; the limits \
                 are {MAX_NESTING} brackets or blocks and {MAX_PREFIXES} prefixes in a row); \
                 flatten it, or list it in .backoff-lint-ignore"
            ),
        });
    }
    Ok(text)
}

/// Run one parser on one file; a panic in it becomes a file that could not be checked.
pub(crate) fn catching(language: Language, check: impl FnOnce() -> FileReport) -> FileReport {
    panic::catch_unwind(AssertUnwindSafe(check)).unwrap_or_else(|_| FileReport {
        findings: Vec::new(),
        skipped: vec![Skipped {
            line: 0,
            column: 0,
            reason: format!(
                "the {} parser failed on this file; it was skipped (please report it)",
                language.name()
            ),
        }],
    })
}

/// The first line where nesting passes [`MAX_NESTING`], and the depth it reached there.
///
/// An over-estimate on purpose: every bracket counts, in strings and comments too. In shell,
/// `if`/`case`/`do` open a level that `fi`/`esac`/`done` close. In Rust, `<` opens one too
/// (generics nest), and so does each prefix in a run of them (`!!!x`, `&&&T`, `return return
/// x`, `|| || x`): syn recurses once per prefix. Over-counting can only refuse a file, never let
/// a dangerous one through.
fn too_deep(language: Language, text: &str) -> Option<(usize, usize)> {
    let rust = language == Language::Rust;
    let mut depth = 0usize;
    let mut prefixes = 0usize;
    let mut line = 1;
    let mut previous = ' ';
    for token in text.split_inclusive(|c: char| !c.is_alphanumeric() && c != '_') {
        let word = token.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_');
        match word {
            "if" | "case" | "do" if !rust => depth += 1,
            "fi" | "esac" | "done" if !rust => depth = depth.saturating_sub(1),
            "return" | "break" | "move" | "async" | "box" | "mut" | "dyn" | "impl" | "ref"
                if rust =>
            {
                prefixes += 1;
            }
            "" => {}
            _ => prefixes = 0,
        }
        let last = token.chars().last().unwrap_or(' ');
        match last {
            '(' | '[' | '{' => depth += 1,
            '<' if rust => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '>' if rust && !matches!(previous, '-' | '=') => depth = depth.saturating_sub(1),
            '!' | '-' | '*' | '&' | '|' if rust => prefixes += 1,
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            _ if rust => prefixes = 0,
            _ => {}
        }
        previous = last;
        if depth > MAX_NESTING {
            return Some((line, depth));
        }
        if prefixes > MAX_PREFIXES {
            return Some((line, prefixes));
        }
    }
    None
}
