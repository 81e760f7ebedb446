//! Where backoff's own output goes, and what a failure to write it means.
//!
//! A reader that stops early (`backoff schedule | head -1`) got what it wanted: backoff ends
//! quietly with status 0, so the pipeline passes under `set -o pipefail`. Any other failure to
//! write stdout (a full disk) is one line on stderr and EX_IOERR. `print!` and `eprintln!`
//! panic on both; nothing here does.

use std::fmt;
use std::io::{self, BufWriter, Stdout, Write};
use std::time::Duration;

/// sysexits.h's EX_IOERR: "an error occurred while doing I/O on some file".
pub(crate) const EX_IOERR: u8 = 74;

/// backoff's stdout, buffered: a schedule is written row by row and flushed at the end.
pub(crate) fn stdout() -> BufWriter<Stdout> {
    BufWriter::new(io::stdout())
}

/// One line of backoff's own on stderr, prefixed `backoff: `. When stderr itself cannot be
/// written, there is no one left to tell, so the failure is dropped rather than panicking.
pub(crate) fn say(line: impl fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "backoff: {line}");
}

/// Whether a write failed because the reader went away: the end of a pipeline, not an error.
pub(crate) fn is_closed_reader(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::BrokenPipe
}

/// Seconds with millisecond precision, as `sleep` takes them; or whole milliseconds.
pub(crate) fn format_wait(wait: Duration, ms: bool) -> String {
    if ms {
        wait.as_millis().to_string()
    } else {
        format!("{}.{:03}", wait.as_secs(), wait.subsec_millis())
    }
}

/// A wait as JSON output gives it: whole milliseconds, rounded down. Saturates at `u64::MAX`
/// (585 million years), so every JSON reader gets an integer it can hold.
pub(crate) fn json_ms(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}
