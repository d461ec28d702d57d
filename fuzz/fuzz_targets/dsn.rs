//! Connection strings: `okfit_store::dsn::parse` over arbitrary text, and its
//! `Display` form parsed again. What parse accepts must hold its promises:
//! tenants the store accepts, and paths without `..` or NUL.
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_store::dsn::{self, Dsn};
use okfit_core::kb::names;
use std::path::{Component, Path};

fn path_ok(p: &Path) {
    assert!(
        !p.components().any(|c| c == Component::ParentDir),
        "parse accepted a path with ..: {p:?}"
    );
    assert!(
        !p.as_os_str().as_encoded_bytes().contains(&0),
        "parse accepted a path with NUL: {p:?}"
    );
}

fn check(d: &Dsn) {
    match d {
        Dsn::Folder { path } => path_ok(path),
        Dsn::Store { root, .. } => path_ok(root),
        Dsn::Unix { socket, .. } => path_ok(socket),
        _ => {}
    }
    // A tenant the parser hands out is one the store accepts.
    match d {
        Dsn::Store { tenant, .. } => assert!(
            names::check_tenant(tenant).is_ok(),
            "parse accepted tenant {tenant:?}"
        ),
        Dsn::Unix {
            tenant: Some(tenant),
            ..
        }
        | Dsn::Http {
            tenant: Some(tenant),
            ..
        } => assert!(
            names::check_tenant(tenant).is_ok(),
            "parse accepted tenant {tenant:?}"
        ),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let text = okfit_fuzz::lossy(data);
    if let Ok(d) = dsn::parse(&text) {
        check(&d);
        let shown = d.to_string();
        if let Ok(again) = dsn::parse(&shown) {
            check(&again);
            let _ = again.to_string();
        }
    }
});
