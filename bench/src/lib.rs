//! Benchmark support for okfit: a deterministic synthetic OKF bundle
//! generator ([`generator`]) and child-process measurement of wall time and peak
//! RSS ([`measure`]). Used by the `okfit-gen` and `okfit-bench` binaries.

#![warn(missing_docs)]

pub mod committed;
pub mod daemon;
pub mod generator;
pub mod kbdata;
pub mod measure;
pub mod pg;
pub mod prose;
pub mod reference;
pub mod relevance;
pub mod report;
pub mod rng;
pub mod stdio;
