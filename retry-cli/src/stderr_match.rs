//! `--retry-if-stderr`: pass a command's stderr through untouched, and say whether a line of
//! it matched a pattern.
//!
//! Some programs report *why* they failed only as text: git exits 128 for a network failure and
//! for a failed login alike, and only its message tells them apart. Matching that text is the
//! one place backoff reads a command's output, and only when asked to.

use std::io::Write;

use regex::bytes::Regex;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest line kept for matching; the rest of a longer line still passes through. Error
/// messages are short; a megabyte of progress output without a newline is not one.
const MAX_LINE: usize = 64 * 1024;

/// A pattern for the lines of a command's stderr.
#[derive(Debug, Clone)]
pub(crate) struct StderrPattern(Regex);

impl StderrPattern {
    /// The pattern, or what is wrong with it and what to type instead.
    pub(crate) fn parse(text: &str) -> Result<StderrPattern, String> {
        Regex::new(text).map(StderrPattern).map_err(|error| {
            let first_line = error.to_string();
            let first_line = first_line.lines().last().unwrap_or_default().trim().to_owned();
            format!(
                "`{text}` is not a regular expression ({first_line}); escape special characters with `\\`, like `Could not resolve host|Connection timed out`"
            )
        })
    }

    /// Copy `stderr` to backoff's own stderr as it arrives, and report whether any line of it
    /// (split at `\n` or `\r`, as progress meters write) matched. It reads to the end, so the
    /// command never blocks on a full pipe.
    pub(crate) async fn pass_through(&self, mut stderr: impl AsyncRead + Unpin) -> bool {
        let mut chunk = vec![0u8; 8 * 1024];
        let mut line = Vec::new();
        let mut matched = false;
        loop {
            let read = match stderr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let bytes = &chunk[..read];
            // A closed or full stderr of ours must not stop the command: its failure is
            // dropped, and reading goes on.
            let _ = std::io::stderr().lock().write_all(bytes);
            if matched {
                continue;
            }
            for &byte in bytes {
                if byte == b'\n' || byte == b'\r' {
                    matched |= self.0.is_match(&line);
                    line.clear();
                } else if line.len() < MAX_LINE {
                    line.push(byte);
                }
            }
        }
        matched || (!line.is_empty() && self.0.is_match(&line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, stderr: &[u8]) -> bool {
        let pattern = StderrPattern::parse(pattern).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(pattern.pass_through(stderr))
    }

    #[test]
    fn a_line_matches_wherever_it_is() {
        let stderr =
            b"Pushing...\nfatal: unable to access 'https://x/': Could not resolve host: x\n";
        assert!(matches("Could not resolve host", stderr));
        assert!(matches("^fatal: unable", stderr));
        assert!(!matches("Authentication failed", stderr));
    }

    #[test]
    fn lines_end_at_carriage_returns_and_the_last_needs_no_newline() {
        assert!(matches("^done$", b"50%\rdone"));
        assert!(!matches("^$", b""));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_still_matched() {
        assert!(matches("timed out", b"\xff\xfe connection timed out\n"));
    }

    #[test]
    fn a_bad_pattern_says_how_to_write_one() {
        let message = StderrPattern::parse("(unclosed").unwrap_err();
        assert!(message.contains("not a regular expression"), "{message}");
        assert!(message.contains("like `"), "{message}");
    }
}
