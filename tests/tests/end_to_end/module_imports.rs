//! The Architecture Invariant that no module imports a module that imports
//! it back, checked on the sources of `read-model`, `projector` and
//! `query-api`: every `use crate::…`, `use super::…` and `use self::…` of a
//! module (its tests left out) names the module it reaches, and the graph of
//! those edges, between modules neither of which contains the other, must
//! have no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use end_to_end_tests::workspace_root;

/// Every module of a crate's `src` (the binaries under `src/bin` left out),
/// by path (`runner::writing`), with its source.
fn modules(source: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![source.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name != "bin") {
                    pending.push(path);
                }
                continue;
            }
            let Ok(relative) = path.strip_prefix(source) else { continue };
            let Some(relative) = relative.to_str().and_then(|text| text.strip_suffix(".rs")) else { continue };
            let mut parts: Vec<&str> = relative.split('/').collect();
            if matches!(parts.last(), Some(&("mod" | "lib" | "main"))) {
                parts.pop();
            }
            found.insert(parts.join("::"), std::fs::read_to_string(&path).expect("a source file"));
        }
    }
    found
}

/// The paths a module's `use` declarations name, outside its tests.
fn used_paths(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut paths = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        let declaration = match line.split_once("use ") {
            Some((visibility, rest)) if visibility.is_empty() || visibility.starts_with("pub") => rest,
            _ => continue,
        };
        // A declaration may span lines, up to its semicolon.
        let mut tree: String = declaration.split_whitespace().collect();
        while !tree.ends_with(';') {
            let Some(next) = lines.next() else { break };
            tree.extend(next.split_whitespace());
        }
        let tree = tree.trim_end_matches(';');
        match tree.split_once("::{") {
            Some((base, group)) => {
                for item in group.trim_end_matches('}').split(',').filter(|item| !item.is_empty()) {
                    paths.push(format!("{base}::{}", item.split("::{").next().unwrap_or(item)));
                }
            }
            None => paths.push(tree.to_owned()),
        }
    }
    paths
}

/// The imports between modules neither of which contains the other.
fn import_edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let nested = |outer: &str, inner: &str| outer.is_empty() || inner.starts_with(&format!("{outer}::"));
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, source) in modules {
        for path in used_paths(source) {
            let Some(target) = resolve(modules, module, &path) else { continue };
            if target != *module && !nested(module, &target) && !nested(&target, module) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

/// The module of `modules` that `path`, used in `module`, reaches.
fn resolve(modules: &BTreeMap<String, String>, module: &str, path: &str) -> Option<String> {
    let mut segments: Vec<&str> = path.split("::").collect();
    let mut current: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
    match segments.first() {
        Some(&"crate") => {
            current.clear();
            segments.remove(0);
        }
        Some(&"self") => {
            segments.remove(0);
        }
        Some(&"super") => {
            while segments.first() == Some(&"super") {
                current.pop();
                segments.remove(0);
            }
        }
        _ => return None,
    }
    current.extend(segments);
    (1..=current.len()).rev().map(|length| current[..length].join("::")).find(|name| modules.contains_key(name))
}

/// A cycle of the graph, if it has one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(position) = path.iter().position(|visited| visited == node) {
            return Some(path[position..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut done, &mut Vec::new()))
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    for krate in ["read-model", "projector", "query-api"] {
        let modules = modules(&workspace_root().join(krate).join("src"));
        assert!(modules.len() > 10, "{krate}: only {} modules found", modules.len());
        let edges = import_edges(&modules);
        assert!(edges.values().map(BTreeSet::len).sum::<usize>() > 20, "{krate}: too few imports read: {edges:?}");
        assert_eq!(find_cycle(&edges), None, "{krate}: modules import each other");
    }
}

#[test]
fn the_import_check_finds_a_cycle_when_there_is_one() {
    let sources = [
        ("a", "//! We use b.\nuse crate::b::Thing;"),
        ("b", "pub(crate) use super::a::{\n    Other,\n    more::Deep,\n};"),
        ("c", "use crate::a;"),
        ("a::inner", "use super::super::c;"),
    ];
    let modules: BTreeMap<String, String> =
        sources.into_iter().map(|(name, source)| (name.to_owned(), source.to_owned())).collect();
    let edges = import_edges(&modules);
    assert_eq!(edges["a::inner"], BTreeSet::from(["c".to_owned()]));
    assert_eq!(find_cycle(&edges), Some(vec!["a".to_owned(), "b".to_owned()]));
}
