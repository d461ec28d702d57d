//! A map of string keys kept in insertion order, searched by a scan while
//! it is small (nearly every frontmatter mapping, nearly every body's
//! headings) and through an index once it grows, so that thousands of keys
//! cost no more than a few each.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// Maps up to this size are searched by a scan.
const SCAN_MAX: usize = 16;

/// String-keyed entries in the order inserted, each key once.
#[derive(Debug, Clone)]
pub struct ScanMap<K, V> {
    entries: Vec<(K, V)>,
    /// Each key's position, made once the map outgrows a scan. Keyed with
    /// std's randomly seeded hasher: the keys are anyone's input.
    index: Option<HashMap<K, usize>>,
}

impl<K, V> Default for ScanMap<K, V> {
    fn default() -> Self {
        ScanMap {
            entries: Vec::new(),
            index: None,
        }
    }
}

impl<K: Borrow<str> + Hash + Eq + Clone, V> ScanMap<K, V> {
    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(key).copied(),
            None => self.entries.iter().position(|(k, _)| k.borrow() == key),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    /// The value of `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.position(key).map(|i| &mut self.entries[i].1)
    }

    /// Adds `key`, unless the map holds it already (then `false`).
    pub fn insert_new(&mut self, key: K, value: V) -> bool {
        if self.position(key.borrow()).is_some() {
            return false;
        }
        if let Some(ix) = &mut self.index {
            ix.insert(key.clone(), self.entries.len());
        } else if self.entries.len() >= SCAN_MAX {
            let mut ix: HashMap<K, usize> = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect();
            ix.insert(key.clone(), self.entries.len());
            self.index = Some(ix);
        }
        self.entries.push((key, value));
        true
    }

    /// The entries, in the order inserted.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_scan_the_index_finds_every_key_in_order() {
        let mut m: ScanMap<String, usize> = ScanMap::default();
        for i in 0..100 {
            assert!(m.insert_new(format!("k{i}"), i));
            assert!(!m.insert_new(format!("k{}", i / 2), 0));
        }
        assert_eq!(m.len(), 100);
        for i in 0..100 {
            assert_eq!(m.get(&format!("k{i}")), Some(&i));
        }
        *m.get_mut("k7").unwrap() = 700;
        assert_eq!(m.get("k7"), Some(&700));
        assert_eq!(m.get("k100"), None);
        let order: Vec<usize> = m.iter().map(|(_, v)| *v).take(3).collect();
        assert_eq!(order, [0, 1, 2]);
    }
}
