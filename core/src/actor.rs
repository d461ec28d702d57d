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
}
