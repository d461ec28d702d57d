//! A frontmatter value that borrows its strings from the YAML text: what
//! the validator reads a concept's frontmatter from. Building it costs a
//! few vectors per file, where a `serde_json::Value` costs a hashed map and
//! a `String` per key and scalar; the `Value` is made only when a caller
//! keeps the frontmatter ([`Node::to_value`]).

use crate::scan_map::ScanMap;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// A YAML value of the JSON data model, strings borrowed where the text
/// holds them verbatim.
#[derive(Debug, Clone)]
pub enum Node<'a> {
    /// `null`, `~` or an empty value.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer or a float.
    Number(Number),
    /// A string.
    String(Cow<'a, str>),
    /// A sequence.
    Array(Vec<Node<'a>>),
    /// A mapping, in the order written.
    Object(Mapping<'a>),
}

/// A mapping's entries in the order written, each key once; a frontmatter
/// of thousands of keys costs no more than a few per key.
#[derive(Debug, Clone, Default)]
pub struct Mapping<'a> {
    entries: ScanMap<Cow<'a, str>, Node<'a>>,
}

impl<'a> Mapping<'a> {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.entries.get(key)
    }

    /// Adds `key`, unless the mapping holds it already (then `false`).
    pub fn insert_new(&mut self, key: Cow<'a, str>, value: Node<'a>) -> bool {
        self.entries.insert_new(key, value)
    }

    /// The entries, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node<'a>)> {
        self.entries.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// The mapping as JSON, keys in the order written.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::with_capacity(self.entries.len());
        for (k, v) in self.entries.iter() {
            m.insert(k.to_string(), v.to_value());
        }
        m
    }
}

impl<'a> Node<'a> {
    /// The value of `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(m) => m.get(key),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    /// Whether this is a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Node::Number(_))
    }

    /// Whether this is a boolean.
    pub fn is_boolean(&self) -> bool {
        matches!(self, Node::Bool(_))
    }

    /// What this is, in the words of a finding ("a string", "a list", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number(_) => "a number",
            Node::String(_) => "a string",
            Node::Array(_) => "a list",
            Node::Object(_) => "a mapping",
        }
    }

    /// The value as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(a) => Value::Array(a.iter().map(Node::to_value).collect()),
            Node::Object(m) => Value::Object(m.to_map()),
        }
    }

    /// A JSON value read as a node, borrowing its strings.
    pub fn from_value(v: &'a Value) -> Node<'a> {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Cow::Borrowed(s)),
            Value::Array(a) => Node::Array(a.iter().map(Node::from_value).collect()),
            Value::Object(m) => {
                let mut out = Mapping::default();
                for (k, v) in m {
                    out.insert_new(Cow::Borrowed(k), Node::from_value(v));
                }
                Node::Object(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_mappings_find_keys_and_refuse_duplicates() {
        let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        let mut m = Mapping::default();
        for (i, k) in names.iter().enumerate() {
            assert!(m.insert_new(Cow::Borrowed(k), Node::Number(i.into())));
        }
        for (i, k) in names.iter().enumerate() {
            assert!(matches!(m.get(k), Some(Node::Number(n)) if n.as_u64() == Some(i as u64)));
            assert!(!m.insert_new(Cow::Borrowed(k), Node::Null), "{k} twice");
        }
        assert!(m.get("k100").is_none());
        let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, names.iter().map(String::as_str).collect::<Vec<_>>());
        let v = Node::Object(m).to_value();
        let back = Node::from_value(&v);
        assert_eq!(back.to_value(), v);
    }
}
