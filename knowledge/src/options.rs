//! Options of the reads a connection answers.

use okfit_core::kb::slice::SliceOptions;

/// Options of [`Knowledge::get`].
#[derive(Clone, Debug, Default)]
pub struct GetOptions {
    /// One named section instead of the whole body.
    pub section: Option<String>,
    /// Slice options (offset, limit, find).
    pub slice: SliceOptions,
}
