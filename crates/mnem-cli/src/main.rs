//! The `mnem` binary: the command line of [`mnem_cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(mnem_cli::main_with(std::env::args_os()))
}
