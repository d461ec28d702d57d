//! Diagnostics: stable codes, severities, ordering, counting.

use crate::text::Range;
use serde::Serialize;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Changes the exit code.
    Error,
    /// Reported, never changes the exit code.
    Warning,
    /// Reported, never changes the exit code.
    Info,
}

impl Severity {
    /// The word used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// Which tier produced a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Tier {
    /// OKF §11 conformance (always errors).
    #[serde(rename = "core.conformance")]
    Conformance,
    /// Configurable lints.
    #[serde(rename = "core.lint")]
    Lint,
    /// Profile checks (always errors).
    #[serde(rename = "profile")]
    Profile,
}

/// The eight conformance codes.
pub const CONFORMANCE_CODES: [&str; 8] = [
    "frontmatter-missing",
    "frontmatter-unclosed",
    "frontmatter-unparseable",
    "type-missing",
    "index-frontmatter",
    "index-malformed",
    "log-heading-invalid",
    "log-malformed",
];

/// The profile codes of the `software-project` profile.
pub const PROFILE_CODES: [&str; 3] = ["project-missing", "project-multiple", "project-not-at-root"];

/// Every lint code with its default level (`None` = off).
pub const LINT_DEFAULTS: [(&str, Option<Severity>); 24] = [
    ("broken-links", Some(Severity::Warning)),
    ("missing-index", Some(Severity::Warning)),
    ("unknown-type", Some(Severity::Error)),
    ("required-key-missing", Some(Severity::Error)),
    ("field-value-unknown", Some(Severity::Error)),
    ("require-verified-unmet", Some(Severity::Error)),
    ("family-invalid", Some(Severity::Error)),
    ("computation-runtime-missing", Some(Severity::Error)),
    ("footnote-source-unknown", Some(Severity::Warning)),
    ("footnote-undefined", Some(Severity::Warning)),
    ("log-frontmatter", Some(Severity::Warning)),
    ("actor-prefix-unknown", Some(Severity::Info)),
    ("legacy-timestamp", Some(Severity::Info)),
    ("config-unknown-key", Some(Severity::Warning)),
    ("stale", Some(Severity::Info)),
    ("walk-unreadable", Some(Severity::Warning)),
    ("generated-at-drift", Some(Severity::Warning)),
    ("status-missing", None),
    ("source-resource-missing", Some(Severity::Warning)),
    ("surface-unmatched", Some(Severity::Warning)),
    ("publication-drift", Some(Severity::Warning)),
    ("publication-orphan", Some(Severity::Warning)),
    ("timestamp-date-only", Some(Severity::Warning)),
    ("status-unknown", Some(Severity::Warning)),
];

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The tier.
    pub source: Tier,
    /// Bundle-relative posix path; `""` for bundle-level findings.
    pub file: String,
    /// Stable code.
    pub code: &'static str,
    /// Severity after configuration.
    pub severity: Severity,
    /// Human-readable message.
    pub message: String,
    /// Where, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
}

impl Diagnostic {
    /// A conformance error.
    pub fn conformance(
        file: &str,
        code: &'static str,
        message: String,
        range: Option<Range>,
    ) -> Self {
        Diagnostic {
            source: Tier::Conformance,
            file: file.to_string(),
            code,
            severity: Severity::Error,
            message,
            range,
        }
    }
}

/// Sorts as every output does: file, range-less first, offset, code (stable).
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        a.file
            .cmp(&b.file)
            .then_with(|| match (&a.range, &b.range) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => x.offset.cmp(&y.offset),
            })
            .then_with(|| a.code.cmp(b.code))
    });
}

/// Counts per tier and severity, as the JSON envelope reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Conformance errors.
    pub conformance_errors: usize,
    /// Lint errors.
    pub lint_errors: usize,
    /// Lint warnings.
    pub lint_warnings: usize,
    /// Lint info.
    pub lint_info: usize,
    /// Profile errors.
    pub profile_errors: usize,
    /// Decoded concepts.
    pub concepts: usize,
}

impl Summary {
    /// Counts `diags` for a bundle of `concepts` concepts.
    pub fn of(diags: &[Diagnostic], concepts: usize) -> Self {
        let mut s = Summary {
            concepts,
            ..Summary::default()
        };
        for d in diags {
            match (d.source, d.severity) {
                (Tier::Conformance, Severity::Error) => s.conformance_errors += 1,
                (Tier::Conformance, _) => {}
                (Tier::Lint, Severity::Error) => s.lint_errors += 1,
                (Tier::Lint, Severity::Warning) => s.lint_warnings += 1,
                (Tier::Lint, Severity::Info) => s.lint_info += 1,
                (Tier::Profile, Severity::Error) => s.profile_errors += 1,
                (Tier::Profile, _) => {}
            }
        }
        s
    }

    /// 2 for any conformance error, else 1 for any lint or profile error, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.conformance_errors > 0 {
            2
        } else if self.lint_errors > 0 || self.profile_errors > 0 {
            1
        } else {
            0
        }
    }
}
