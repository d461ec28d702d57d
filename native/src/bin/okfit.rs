//! The `okfit` command.

fn main() {
    std::process::exit(okfit::cli::run(std::env::args_os()));
}
