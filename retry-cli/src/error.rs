//! Why backoff stops without doing what it was asked, and the exit status that says so.

use std::io;
use std::process::ExitCode;

use crate::output::{self, EX_IOERR};

/// Bad input is exit 2, the status clap gives its own parse errors.
const BAD_INPUT: u8 = 2;

/// Why a command did not finish.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Bad input: what is wrong and what to type instead.
    BadInput(String),
    /// Writing stdout failed.
    Output(io::Error),
}

impl From<io::Error> for CliError {
    fn from(error: io::Error) -> Self {
        CliError::Output(error)
    }
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        CliError::BadInput(message)
    }
}

impl CliError {
    /// Tell the person (in one line) and end with the status that says what happened.
    pub(crate) fn report(self) -> ExitCode {
        match self {
            CliError::BadInput(message) => {
                output::say(message);
                ExitCode::from(BAD_INPUT)
            }
            // The reader stopped early: it has what it wanted.
            CliError::Output(error) if output::is_closed_reader(&error) => ExitCode::SUCCESS,
            CliError::Output(error) => {
                output::say(format_args!(
                    "cannot write the output: {error}; free some space or send it elsewhere"
                ));
                ExitCode::from(EX_IOERR)
            }
        }
    }
}
