//! The OKF actor convention: `<producer>/<version>`, `human:<id>`,
//! `process:<id>`, or another `<prefix>:<id>`.

/// What kind of identity an actor string names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActorKind {
    /// `<producer>/<version>`: an agent or tool.
    Producer,
    /// `human:<id>`.
    Human,
    /// `process:<id>`.
    Process,
    /// Any other `<prefix>:<id>` (`team:x`, `agent:x`).
    Other,
}

/// The exact message for a malformed actor.
pub const ACTOR_MESSAGE: &str = "Expected <producer>/<version> or <prefix>:<id> with no whitespace";

/// Classifies `s`, or `None` when it is not an actor string.
pub fn classify(s: &str) -> Option<ActorKind> {
    if s.is_empty() || s.chars().any(char::is_whitespace) {
        return None;
    }
    let slash = s.find('/');
    let colon = s.find(':');
    match (slash, colon) {
        (Some(sl), c) if c.is_none_or(|c| sl < c) => {
            // <producer>/<version>: producer has no ':' and is non-empty; version non-empty.
            if sl == 0 || sl + 1 >= s.len() {
                return None;
            }
            Some(ActorKind::Producer)
        }
        (_, Some(c)) => {
            let prefix = &s[..c];
            let id = &s[c + 1..];
            let mut chars = prefix.chars();
            let first_ok = chars.next().is_some_and(|ch| ch.is_ascii_alphabetic());
            let rest_ok = chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
            if !first_ok || !rest_ok || id.is_empty() {
                return None;
            }
            Some(match prefix {
                "human" => ActorKind::Human,
                "process" => ActorKind::Process,
                _ => ActorKind::Other,
            })
        }
        _ => None,
    }
}

/// The message when git names nobody to attest as.
pub const NO_HUMAN_MESSAGE: &str =
    "git has no user.name or user.email to derive a human actor from; set one or add actors.humans";

/// The `human:<id>` actor for a git identity (reference §8.4): the
/// candidates are the email's local part and the name's slug; a
/// configured `actors.humans` entry matching one (case-insensitively)
/// wins in its configured spelling, else `human:<local>`, else
/// `human:<slug>`. `None` when git names nobody.
pub fn human_from_git(
    name: Option<&str>,
    email: Option<&str>,
    humans: &[String],
) -> Option<String> {
    let local = email
        .and_then(|e| e.split('@').next())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().any(char::is_whitespace));
    let slug = name.map(slug).filter(|s| !s.is_empty());
    let candidates: Vec<&str> = local.into_iter().chain(slug.as_deref()).collect();
    for h in humans {
        if let Some(id) = h.strip_prefix("human:") {
            if candidates.iter().any(|c| c.eq_ignore_ascii_case(id)) {
                return Some(h.clone());
            }
        }
    }
    candidates.first().map(|c| format!("human:{c}"))
}

/// A name as an actor id: lowercase, runs of characters outside
/// `[a-z0-9._-]` folded to `-`, no `-` at either end.
fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(classify("okfit/claude-code"), Some(ActorKind::Producer));
        assert_eq!(
            classify("reference_agent/gemini-2.5-pro"),
            Some(ActorKind::Producer)
        );
        assert_eq!(classify("human:jsmith@acme"), Some(ActorKind::Human));
        assert_eq!(classify("process:ci"), Some(ActorKind::Process));
        assert_eq!(classify("team:ga4-docs"), Some(ActorKind::Other));
        assert_eq!(classify("human: x"), None);
        assert_eq!(classify("nobody"), None);
        assert_eq!(classify("9x:y"), None);
        assert_eq!(classify("http://x"), Some(ActorKind::Other));
    }

    #[test]
    fn derives_human_actors() {
        let humans = vec!["human:Spencer".to_string()];
        assert_eq!(
            human_from_git(Some("Ann Lee"), Some("spencer@x.io"), &humans).as_deref(),
            Some("human:Spencer")
        );
        assert_eq!(
            human_from_git(Some("Ann Lee"), Some("ann.l@x.io"), &[]).as_deref(),
            Some("human:ann.l")
        );
        assert_eq!(
            human_from_git(Some("  Ann  Lée! "), None, &[]).as_deref(),
            Some("human:ann-l-e")
        );
        assert_eq!(human_from_git(None, Some("@x"), &[]), None);
    }
}
