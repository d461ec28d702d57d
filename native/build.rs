//! Lays out the release binaries' code for a small memory footprint.
//!
//! `okfit.order` lists, hottest first, the functions that `okfit serve`,
//! `okfit-mcp` and `okfit validate` run on a typical load (made by
//! `scripts/symbol-order.sh`). Linked in that order, the code a process
//! runs sits in a few hundred kilobytes instead of being scattered over the
//! whole executable: the kernel maps an executable's pages in 64 KB blocks
//! around each one touched, so scattered code costs a resident block per
//! function.
//!
//! Only where the linker is known to take an ordering file: release builds
//! for `x86_64-unknown-linux-gnu` with Rust 1.90 or later and no linker of
//! the user's own (rustc links with its bundled LLD there). Functions the
//! file names that a build does not have are skipped, so a stale file costs
//! only memory. `OKFIT_SYMBOL_ORDER=0` turns it off.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=okfit.order");
    println!("cargo::rerun-if-env-changed=OKFIT_SYMBOL_ORDER");
    if env::var("OKFIT_SYMBOL_ORDER").is_ok_and(|v| v == "0") || !linker_takes_order() {
        return;
    }
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = Path::new(&dir).join("okfit.order");
    if order.is_file() {
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// True when this build links with rustc's own LLD: a release build for
/// x86_64 Linux (glibc) by rustc 1.90 or later, no linker configured.
fn linker_takes_order() -> bool {
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-arg", "fuse-ld"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    rustc_minor().is_some_and(|m| m >= 90)
}

/// The minor version of the rustc that builds this crate (`1.M.p`).
fn rustc_minor() -> Option<u32> {
    let out = Command::new(env::var_os("RUSTC")?)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
