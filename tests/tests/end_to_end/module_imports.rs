//! The Architecture Invariant that no module imports a module that imports
//! it back, checked on the sources of `read-model`, `projector` and
//! `query-api`: every path of a module that starts at `crate`, `super` or
//! `self` (in `use` declarations and inline, in the whole file, its
//! test-only items left out) names the module it reaches, and the graph of
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

/// The paths a module names that start at `crate`, `super` or `self`, in
/// `use` declarations and inline alike, outside comments, string literals
/// and its test-only items (`#[cfg(test)]`), wherever in the file they are.
fn used_paths(source: &str) -> Vec<String> {
    let code = without_test_items(&without_comments_and_strings(source));
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        for (start, _) in code.match_indices(root) {
            let preceded_by_path = start > 0 && {
                let before = bytes[start - 1];
                before.is_ascii_alphanumeric() || before == b'_' || before == b':'
            };
            if !preceded_by_path {
                paths.extend(path_tree(&code, start).0);
            }
        }
    }
    paths
}

/// The source with comments removed and every string and character literal
/// emptied, so neither is read as code.
fn without_comments_and_strings(source: &str) -> String {
    let characters: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut index = 0;
    let at = |index: usize, text: &str| {
        text.chars().enumerate().all(|(offset, c)| characters.get(index + offset) == Some(&c))
    };
    while index < characters.len() {
        let character = characters[index];
        let after_identifier = index > 0 && (characters[index - 1].is_alphanumeric() || characters[index - 1] == '_');
        if at(index, "//") {
            while index < characters.len() && characters[index] != '\n' {
                index += 1;
            }
        } else if at(index, "/*") {
            index += 2;
            while index < characters.len() && !at(index, "*/") {
                index += 1;
            }
            index += 2;
            code.push(' ');
        } else if character == 'r' && !after_identifier && (at(index + 1, "\"") || at(index + 1, "#")) {
            let hashes = characters[index + 1..].iter().take_while(|c| **c == '#').count();
            let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            index += 2 + hashes;
            while index < characters.len() && !at(index, &closing) {
                index += 1;
            }
            index += closing.chars().count();
            code.push_str("\"\"");
        } else if character == '"' {
            index += 1;
            while index < characters.len() && characters[index] != '"' {
                index += if characters[index] == '\\' { 2 } else { 1 };
            }
            index += 1;
            code.push_str("\"\"");
        } else if character == '\'' && at(index + 1, "\\") {
            index += 2;
            while index < characters.len() && characters[index] != '\'' {
                index += 1;
            }
            index += 1;
            code.push_str("' '");
        } else if character == '\'' && characters.get(index + 2) == Some(&'\'') {
            index += 3;
            code.push_str("' '");
        } else {
            code.push(character);
            index += 1;
        }
    }
    code
}

/// The code without the items marked `#[cfg(test)]`: each such attribute
/// and the item after it, up to its `;` or the end of its braces.
fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let bytes = code.as_bytes();
    let mut kept = String::with_capacity(code.len());
    let mut rest = 0;
    while let Some(found) = code[rest..].find(MARK) {
        let start = rest + found;
        kept.push_str(&code[rest..start]);
        let mut index = start + MARK.len();
        let mut depth = 0_i32;
        while index < bytes.len() {
            match bytes[index] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b';' if depth == 0 => {
                    index += 1;
                    break;
                }
                b'{' if depth == 0 => {
                    index = end_of_braces(bytes, index);
                    break;
                }
                _ => {}
            }
            index += 1;
        }
        rest = index.min(code.len());
    }
    kept.push_str(&code[rest..]);
    kept
}

/// The index just past the brace that closes the one at `open`.
fn end_of_braces(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (index, byte) in bytes.iter().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return index + 1;
                }
            }
            _ => {}
        }
    }
    bytes.len()
}

/// The paths of the path or `use` tree that starts at `start`
/// (`a::b::{c, d::{e, f}}` gives `a::b::c`, `a::b::d::e`, `a::b::d::f`),
/// and the index after it.
fn path_tree(code: &str, mut index: usize) -> (Vec<String>, usize) {
    let bytes = code.as_bytes();
    let skip_space = |index: &mut usize| {
        while *index < bytes.len() && bytes[*index].is_ascii_whitespace() {
            *index += 1;
        }
    };
    let mut segments: Vec<&str> = Vec::new();
    loop {
        skip_space(&mut index);
        match bytes.get(index) {
            Some(b'{') => {
                index += 1;
                let mut paths = Vec::new();
                loop {
                    while index < bytes.len() && (bytes[index].is_ascii_whitespace() || bytes[index] == b',') {
                        index += 1;
                    }
                    if index >= bytes.len() || bytes[index] == b'}' {
                        return (paths, index + 1);
                    }
                    let (inner, next) = path_tree(code, index);
                    paths.extend(inner.into_iter().map(|path| format!("{}::{path}", segments.join("::"))));
                    index = next;
                    // Skip an `as` rename up to the next item.
                    while index < bytes.len() && bytes[index] != b',' && bytes[index] != b'}' {
                        index += 1;
                    }
                }
            }
            Some(b'*') => return (vec![segments.join("::")], index + 1),
            _ => {}
        }
        let length = code[index..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(code.len() - index);
        if length == 0 {
            break;
        }
        segments.push(&code[index..index + length]);
        index += length;
        skip_space(&mut index);
        if code[index..].starts_with("::") {
            index += 2;
        } else {
            break;
        }
    }
    (vec![segments.join("::")], index)
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

/// The circle query-api had: names in a field, a call and an argument, each
/// written inline, one of them after a test-only item.
#[test]
fn the_import_check_finds_a_cycle_made_only_of_inline_paths() {
    let sources = [
        ("app", "pub struct App {\n    pub connections: crate::server::Settings,\n}"),
        (
            "server",
            "#[cfg(test)]\nmod tests {\n    use crate::elsewhere;\n}\n\npub fn run() {\n    let router = crate::routes::router();\n}",
        ),
        ("routes", "pub fn router(app: std::sync::Arc<crate::app::App>) {}"),
        ("elsewhere", "// crate::app is named in a comment\nconst TEXT: &str = \"crate::app\";"),
    ];
    let modules: BTreeMap<String, String> =
        sources.into_iter().map(|(name, source)| (name.to_owned(), source.to_owned())).collect();
    let edges = import_edges(&modules);
    assert!(!edges.contains_key("elsewhere"), "comments and strings are not code: {edges:?}");
    assert_eq!(edges["server"], BTreeSet::from(["routes".to_owned()]), "the test-only item is left out");
    assert_eq!(find_cycle(&edges), Some(vec!["app".to_owned(), "server".to_owned(), "routes".to_owned()]));
}

#[test]
fn use_trees_expand_to_every_path_they_name() {
    let code = "use crate::a::{self, b::{C, D as E}, f::*};";
    let start = code.find("crate").expect("a path");
    let (paths, _) = path_tree(code, start);
    assert_eq!(paths, ["crate::a::self", "crate::a::b::C", "crate::a::b::D", "crate::a::f"]);
}

/// The Architecture Invariants that the query API never decodes Avro and
/// never writes documents: neither it nor the read model depends on
/// `apache-avro`, and no source of the query API names the projector's
/// write port or its batch write.
#[test]
fn the_query_api_neither_decodes_avro_nor_writes_documents() {
    for krate in ["query-api", "read-model"] {
        let manifest = std::fs::read_to_string(workspace_root().join(krate).join("Cargo.toml")).expect("a manifest");
        assert!(!manifest.contains("apache-avro"), "{krate} depends on apache-avro");
    }
    let mut pending = vec![workspace_root().join("query-api").join("src")];
    let mut files = 0;
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).expect("a source directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            files += 1;
            let code = without_comments_and_strings(&std::fs::read_to_string(&path).expect("a source file"));
            for name in ["ProjectionWrites", "apply_batch", "apache_avro"] {
                assert!(!code.contains(name), "{} names {name}", path.display());
            }
        }
    }
    assert!(files > 40, "only {files} files read");
}
