//! The plain body scan against the CommonMark parser: whenever the plain
//! scan answers, the parser's scan is the same.
//!
//! Input: a concept body (lossy UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_core::markdown;

fuzz_target!(|data: &[u8]| {
    let text = okfit_fuzz::lossy(data);
    if let Some(plain) = markdown::scan_plain(&text) {
        assert_eq!(plain, markdown::scan_commonmark(&text), "the plain scan differs on {text:?}");
    }
});
