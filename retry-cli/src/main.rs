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
//! ```

mod cli;
mod delay;
mod error;
mod explain;
mod flags;
mod output;
mod run;
mod schedule;
mod stderr_match;

use std::process::ExitCode;

use clap::Parser;

/// sysexits.h's EX_SOFTWARE: the runtime could not start.
const EX_SOFTWARE: u8 = 70;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
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
