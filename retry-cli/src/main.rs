//! `backoff`: the retry ladder for shell scripts and CI workflows.
//!
//! A loop in a `run:` body cannot import the library, and a shell function copied into four
//! workflows is four implementations. `backoff` computes the same waits from the same code:
//!
//! ```sh
//! backoff delay --policy transient --attempt 3     # prints the wait after attempt 3, in seconds
//! backoff sleep --policy transient --attempt 3     # sleeps it
//! backoff schedule --policy outage                 # prints the whole ladder
//! backoff run --policy availability -- git push    # runs, retrying on exit 75 (EX_TEMPFAIL)
//! ```

mod cli;
mod command;
mod schedule;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("backoff: cannot start the async runtime: {error}");
            return ExitCode::from(70);
        }
    };
    runtime.block_on(cli.run())
}
