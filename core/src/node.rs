//! A frontmatter value that borrows its strings from the YAML text: what
//! the validator reads a concept's frontmatter from. Building it costs a
//! few vectors per file, where a `serde_json::Value` costs a hashed map and
//! a `String` per key and scalar; the `Value` is made only when a caller
//! keeps the frontmatter ([`Node::to_value`]).

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

/// A mapping's entries in the order written, each key once.
#[derive(Debug, Clone, Default)]
pub struct Mapping<'a>(Vec<(Cow<'a, str>, Node<'a>)>);

impl<'a> Mapping<'a> {
    /// The value of `key`. Frontmatter mappings hold a few dozen keys at
    /// most, so a scan beats hashing.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Adds `key`, unless the mapping holds it already (then `false`).
    pub fn insert_new(&mut self, key: Cow<'a, str>, value: Node<'a>) -> bool {
        if self.0.iter().any(|(k, _)| *k == key) {
            return false;
        }
        self.0.push((key, value));
        true
    }

    /// The entries, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node<'a>)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// The mapping as JSON, keys in the order written.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::with_capacity(self.0.len());
        for (k, v) in &self.0 {
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
            Value::Object(m) => Node::Object(Mapping(
                m.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Node::from_value(v)))
                    .collect(),
            )),
        }
    }
}
