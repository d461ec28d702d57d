//! The `okfit` command.

// Parsing allocates many small strings on two threads at once; mimalloc
// handles that pattern markedly faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(okfit::cli::run(std::env::args_os()));
}
