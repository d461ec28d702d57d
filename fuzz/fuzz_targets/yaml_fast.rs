//! The fast frontmatter reader against the full YAML parser: whenever the
//! fast reader answers, the full parser gives the same value.
//!
//! Input: the YAML text of a frontmatter block (lossy UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_core::yaml;

fuzz_target!(|data: &[u8]| {
    let text = okfit_fuzz::lossy(data);
    if let Some(fast) = yaml::fast(&text) {
        match yaml::full(&text) {
            Ok(full) => assert_eq!(fast, full, "the fast reader differs on {text:?}"),
            Err(e) => panic!("the fast reader accepted {text:?}, the full parser refused it: {e}"),
        }
    }
    // The parse every document goes through agrees with the full parser.
    assert_eq!(yaml::parse(&text).ok(), yaml::full(&text).ok());
});
