//! `backoff`: the retry ladder for shell scripts and CI workflows.
//!
//! A loop in a `run:` body cannot import the library, and a shell function copied into four
//! workflows is four implementations. `backoff` computes the same waits from the same code:
//!
//! ```sh
//! backoff delay --policy transient --attempt 3     # prints the wait after attempt 3, in seconds
//! backoff sleep --policy transient --attempt 3     # sleeps it
//! backoff schedule --policy outage --json          # prints the whole ladder
//! backoff explain --status 429 --header 'Retry-After: 30'   # what the library makes of it
//! backoff run --retry-on 128 --retry-if-stderr 'Could not resolve host' -- git push
//! backoff lint .                                   # finds the loops that compute their own wait
//! ```

mod cli;
mod delay;
mod error;
mod explain;
mod flags;
mod lint;
mod output;
mod run;
mod schedule;
mod skipping_clock;
mod stderr_match;

use std::process::ExitCode;

use clap::Parser;

use crate::error::CliError;

/// sysexits.h's EX_SOFTWARE: the runtime could not start.
const EX_SOFTWARE: u8 = 70;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(parse_error) => return print_parse_error(&parse_error),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            output::say(format_args!("cannot start the async runtime: {error}"));
            return ExitCode::from(EX_SOFTWARE);
        }
    };
    runtime.block_on(cli.run())
}

/// clap's message for bad input (exit 2), or the help and version it was asked for (exit 0).
/// clap's own `exit` drops a failure to write them; here `--help > /dev/full` is the same
/// one-line error as any other output, and `--help | head -1` still ends quietly.
fn print_parse_error(parse_error: &clap::Error) -> ExitCode {
    let status = ExitCode::from(u8::try_from(parse_error.exit_code()).unwrap_or(2));
    match parse_error.print() {
        Ok(()) => status,
        // Bad input whose message cannot be written is still bad input.
        Err(_) if parse_error.use_stderr() => status,
        Err(write_error) => CliError::Output(write_error).report(),
    }
}
