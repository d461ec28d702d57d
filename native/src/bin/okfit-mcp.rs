//! `okfit-mcp`: the okfit MCP server over stdio.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(okfit_mcp::main_with_args(std::env::args().collect()));
}
