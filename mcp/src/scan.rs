//! A streaming look at JSON text that does not parse it: the top-level
//! `"id"` of a JSON-RPC message, and where the first lone surrogate escape
//! sits. It keeps a few hundred bytes whatever the input's size or depth,
//! so a message too large, too deep or not valid Unicode can still be
//! answered with its id.

use memchr::memchr2;
use serde_json::Value;

/// Containers deeper than this are counted, not described.
const PATH_DEPTH: usize = 32;
/// Longest key kept for a path, in bytes.
const KEY_BYTES: usize = 64;
/// Longest raw `id` value kept, in bytes.
const ID_BYTES: usize = 512;

#[derive(Debug)]
enum Frame {
    Object { key: Vec<u8>, expecting_key: bool },
    Array { index: usize },
}

/// The scanner's state between chunks.
#[derive(Debug, Default)]
pub struct Scan {
    stack: Vec<Frame>,
    depth: usize,
    in_string: bool,
    string_is_key: bool,
    escape: bool,
    hex: Option<(u8, u16)>,
    high_pending: bool,
    /// The key just read at depth 1 was `"id"`; its value comes next.
    id_next: bool,
    /// Raw bytes of the top-level id value being read.
    id_raw: Option<Vec<u8>>,
    id: Option<Value>,
    surrogate: Option<String>,
}

impl Scan {
    /// A scanner at the start of a message.
    pub fn new() -> Scan {
        Scan::default()
    }

    /// The top-level `id` seen so far, when it is a string or a number.
    pub fn id(&self) -> Option<Value> {
        if let Some(raw) = &self.id_raw {
            if let Some(v) = parse_id(raw) {
                return Some(v);
            }
        }
        self.id.clone()
    }

    /// Where the first lone surrogate escape was, as `a.b[0].c`.
    pub fn lone_surrogate(&self) -> Option<&str> {
        self.surrogate.as_deref()
    }

    /// Feeds the next bytes of the message.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.in_string && !self.escape && self.hex.is_none() && !self.high_pending {
                // Fast path: skip ordinary string content.
                let skip = memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len());
                if skip > 0 {
                    self.string_bytes(&bytes[..skip]);
                    bytes = &bytes[skip..];
                    continue;
                }
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            if self.in_string {
                self.string_byte(b);
            } else {
                self.structural(b);
            }
        }
    }

    fn capturing_id(&self) -> bool {
        self.id_raw.is_some()
    }

    fn string_bytes(&mut self, s: &[u8]) {
        if self.string_is_key {
            if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                let room = KEY_BYTES.saturating_sub(key.len());
                key.extend_from_slice(&s[..s.len().min(room)]);
            }
        }
        if self.capturing_id() {
            self.capture(s);
        }
    }

    fn capture(&mut self, s: &[u8]) {
        if let Some(raw) = &mut self.id_raw {
            if raw.len() + s.len() > ID_BYTES {
                self.id_raw = None;
            } else {
                raw.extend_from_slice(s);
            }
        }
    }

    fn string_byte(&mut self, b: u8) {
        if self.capturing_id() {
            self.capture(&[b]);
        }
        if let Some((n, v)) = self.hex {
            let d = (b as char).to_digit(16).unwrap_or(0) as u16;
            let v = (v << 4) | d;
            if n == 3 {
                self.hex = None;
                self.code_unit(v);
            } else {
                self.hex = Some((n + 1, v));
            }
            return;
        }
        if self.escape {
            self.escape = false;
            if b == b'u' {
                self.hex = Some((0, 0));
            } else {
                self.lone_if_pending();
                self.key_byte(b);
            }
            return;
        }
        match b {
            b'\\' => self.escape = true,
            b'"' => {
                self.lone_if_pending();
                self.in_string = false;
                self.end_string();
            }
            _ => {
                self.lone_if_pending();
                self.key_byte(b);
            }
        }
    }

    fn key_byte(&mut self, b: u8) {
        if self.string_is_key {
            if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                if key.len() < KEY_BYTES {
                    key.push(b);
                }
            }
        }
    }

    fn code_unit(&mut self, u: u16) {
        let low = (0xDC00..=0xDFFF).contains(&u);
        let high = (0xD800..=0xDBFF).contains(&u);
        if self.high_pending {
            self.high_pending = false;
            if low {
                return;
            }
            self.record_surrogate();
        } else if low {
            self.record_surrogate();
            return;
        }
        if high {
            self.high_pending = true;
        } else if self.string_is_key {
            // An escaped key character: keep it readable.
            if let Some(c) = char::from_u32(u as u32) {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    self.key_byte(b);
                }
            }
        }
    }

    fn lone_if_pending(&mut self) {
        if self.high_pending {
            self.high_pending = false;
            self.record_surrogate();
        }
    }

    fn record_surrogate(&mut self) {
        if self.surrogate.is_none() {
            self.surrogate = Some(self.path());
        }
    }

    /// The path of the value being read.
    fn path(&self) -> String {
        let mut out = String::new();
        for f in &self.stack {
            match f {
                Frame::Object { key, .. } => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&String::from_utf8_lossy(key));
                }
                Frame::Array { index } => out.push_str(&format!("[{index}]")),
            }
        }
        if self.depth > self.stack.len() {
            out.push('…');
        }
        out
    }

    fn end_string(&mut self) {
        if self.string_is_key {
            self.string_is_key = false;
            if self.depth == 1 {
                if let Some(Frame::Object { key, .. }) = self.stack.last() {
                    self.id_next = key.as_slice() == b"id";
                }
            }
        }
    }

    fn structural(&mut self, b: u8) {
        if self.capturing_id() && self.depth >= 1 {
            let ends = self.depth == 1 && matches!(b, b',' | b'}');
            if ends {
                if let Some(raw) = self.id_raw.take() {
                    if let Some(v) = parse_id(&raw) {
                        self.id = Some(v);
                    }
                }
            } else {
                self.capture(&[b]);
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string_is_key = self.depth == self.stack.len()
                    && matches!(
                        self.stack.last(),
                        Some(Frame::Object {
                            expecting_key: true,
                            ..
                        })
                    );
                if self.string_is_key {
                    if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                        key.clear();
                    }
                }
            }
            b'{' | b'[' => {
                if self.depth == self.stack.len() && self.stack.len() < PATH_DEPTH {
                    self.stack.push(if b == b'{' {
                        Frame::Object {
                            key: vec![],
                            expecting_key: true,
                        }
                    } else {
                        Frame::Array { index: 0 }
                    });
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == self.stack.len() {
                    self.stack.pop();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' => {
                if self.depth == self.stack.len() {
                    if let Some(Frame::Object { expecting_key, .. }) = self.stack.last_mut() {
                        *expecting_key = false;
                    }
                }
                if self.depth == 1 && self.id_next {
                    self.id_next = false;
                    self.id_raw = Some(vec![]);
                }
            }
            b',' if self.depth == self.stack.len() => match self.stack.last_mut() {
                Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            _ => {}
        }
    }
}

/// A JSON-RPC id: a string or a number.
fn parse_id(raw: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(raw.trim_ascii()) {
        Ok(v @ (Value::String(_) | Value::Number(_))) => Some(v),
        _ => None,
    }
}

/// Scans a whole message.
pub fn scan(bytes: &[u8]) -> Scan {
    let mut s = Scan::new();
    s.feed(bytes);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        let s = scan(br#"{"jsonrpc":"2.0","params":{"id":7,"x":[{"id":8}]},"id":900001}"#);
        assert_eq!(s.id(), Some(serde_json::json!(900001)));
        let s = scan(br#"{"id" : "abc\"d" , "method":"x"}"#);
        assert_eq!(s.id(), Some(serde_json::json!("abc\"d")));
        let s = scan(br#"{"method":"x","id":null}"#);
        assert_eq!(s.id(), None);
        // Cut off mid-message: the id already read still counts.
        let s = scan(br#"{"id":12,"params":{"content":"aaaa"#);
        assert_eq!(s.id(), Some(serde_json::json!(12)));
    }

    #[test]
    fn finds_lone_surrogates_and_their_path() {
        let s = scan(
            br#"{"id":1,"params":{"name":"write","arguments":{"content":"bad \ud800 surrogate"}}}"#,
        );
        assert_eq!(s.lone_surrogate(), Some("params.arguments.content"));
        let s = scan(br#"{"id":1,"params":{"arguments":{"changes":[{},{"content":"\udc00"}]}}}"#);
        assert_eq!(
            s.lone_surrogate(),
            Some("params.arguments.changes[1].content")
        );
        let s = scan(br#"{"id":1,"params":{"x":"\ud83d\ude00 fine","y":"\ud800"}}"#);
        assert_eq!(s.lone_surrogate(), Some("params.y"));
        let s = scan(br#"{"id":1,"params":{"x":"\ud83d\ude00 \\ud800"}}"#);
        assert_eq!(s.lone_surrogate(), None);
    }

    #[test]
    fn deep_nesting_keeps_little_state() {
        let mut text = String::from(r#"{"id":"deep","params":"#);
        text.push_str(&"[".repeat(100_000));
        text.push_str(&"]".repeat(100_000));
        text.push('}');
        let s = scan(text.as_bytes());
        assert_eq!(s.id(), Some(serde_json::json!("deep")));
        assert!(s.stack.capacity() <= 64);
    }
}
