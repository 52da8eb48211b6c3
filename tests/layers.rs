//! The core's import graph, read from its source: no import circles between files, and no
//! folder importing from a stage after it. Each `crate::core::<unit>` path in a file (in `use`
//! lines or inline) is an arrow from the file's unit to `<unit>`; `super::` is only allowed as
//! `use super::*` in test modules, so every other arrow is spelled out and seen here.
//! The collector's library (`collector/src`, its `crate::` paths) is held to the same rule: no
//! import circle between its files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The units of `src/core`, leaves first: each may import only from units listed before it.
const ORDER: [&str; 10] = ["util", "clock", "stalls", "config", "stream", "trace", "paint", "request", "record", "session"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Code without `//` comments (doc comments name paths too).
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// `crate::core::a::b::{c, d}` → the files (`a/b`, `a/b/c`, …) a path can name; resolved below
/// against the files that exist. `prefix`: `crate::core::` (the core) or `crate::` (the collector).
fn targets(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        // `crate::` inside a longer word (`some_crate::`) is not this crate.
        let word_before = rest[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[i + prefix.len()..];
        if word_before {
            continue;
        }
        let mut path = Vec::new();
        for seg in rest.split("::") {
            let id: String = seg.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            // Module names are lower-case; a type, constant or `{…}` list ends the module path.
            if id.is_empty() || !id.starts_with(|c: char| c.is_lowercase()) {
                break;
            }
            let whole = id.len() == seg.len();
            path.push(id);
            if !whole {
                break;
            }
        }
        out.push(path);
    }
    out
}

struct Graph {
    /// file (relative to src/core, without `.rs`, `mod` for folders) → files it imports
    files: BTreeMap<String, BTreeSet<String>>,
}

fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.strip_suffix("/mod").unwrap_or(&s).to_string()
}

fn graph() -> Graph {
    graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core"), "crate::core::")
}

/// The import graph of the files under `root`, whose paths start with `prefix`.
fn graph_of(root: &Path, prefix: &str) -> Graph {
    let root = root.to_path_buf();
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    // The collector's binaries are crates of their own.
    paths.retain(|p| !p.strip_prefix(&root).unwrap().starts_with("bin"));
    let modules: BTreeSet<String> = paths.iter().map(|p| module_of(p.strip_prefix(&root).unwrap())).collect();
    let mut files = BTreeMap::new();
    for p in &paths {
        let from = module_of(p.strip_prefix(&root).unwrap());
        let text = code(&fs::read_to_string(p).unwrap());
        for line in text.lines() {
            let t = line.trim();
            assert!(!t.contains("super::") || t == "use super::*;", "{from}: spell out `{prefix}` paths instead of `{t}`");
        }
        let mut to = BTreeSet::new();
        for path in targets(&text, prefix) {
            if path.is_empty() {
                continue; // an item of the crate root (lib.rs)
            }
            // The longest prefix of the path that is a file (a folder's `mod.rs` included).
            let found = (1..=path.len()).rev().map(|n| path[..n].join("/")).find(|m| modules.contains(m));
            let target = found.unwrap_or_else(|| panic!("{from}: {prefix}{} names no file", path.join("::")));
            if target != from {
                to.insert(target);
            }
        }
        files.insert(from, to);
    }
    Graph { files }
}

fn unit(module: &str) -> &str {
    module.split('/').next().unwrap()
}

/// A cycle through `node`, if the graph has one reachable from it.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>, node: &str, stack: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
    if let Some(i) = stack.iter().position(|n| n == node) {
        let mut c = stack[i..].to_vec();
        c.push(node.to_string());
        return Some(c);
    }
    if done.contains(node) {
        return None;
    }
    stack.push(node.to_string());
    for next in g.get(node).into_iter().flatten() {
        if let Some(c) = cycle(g, next, stack, done) {
            return Some(c);
        }
    }
    stack.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn no_import_circles_between_files() {
    let g = graph();
    assert!(g.files.len() > 30, "found the core's files");
    let mut done = BTreeSet::new();
    for node in g.files.keys() {
        if let Some(c) = cycle(&g.files, node, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", c.join(" → "));
        }
    }
}

#[test]
fn the_collector_has_no_import_circle() {
    let g = graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("collector/src"), "crate::");
    assert!(g.files.contains_key("store") && g.files.contains_key("store/clickhouse/query"), "found the collector's files");
    assert!(g.files["store"].contains("store/clickhouse"), "arrows are seen: {:?}", g.files["store"]);
    let mut done = BTreeSet::new();
    for node in g.files.keys() {
        if let Some(c) = cycle(&g.files, node, &mut Vec::new(), &mut done) {
            panic!("collector import circle: {}", c.join(" → "));
        }
    }
}

#[test]
fn every_arrow_points_to_an_earlier_stage() {
    let g = graph();
    let rank = |m: &str| ORDER.iter().position(|u| *u == unit(m)).unwrap_or_else(|| panic!("{m} is in no stage of ORDER"));
    let mut arrows = BTreeSet::new();
    for (from, tos) in &g.files {
        // The core's own mod.rs only declares the units and re-exports.
        if from == "mod" {
            continue;
        }
        for to in tos {
            if unit(from) != unit(to) {
                assert!(rank(to) < rank(from), "{from} imports {to}: {} comes after {}", unit(to), unit(from));
                arrows.insert((unit(from), unit(to)));
            }
        }
    }
    // The graph printed, for the record (cargo test -- --nocapture).
    for (a, b) in &arrows {
        println!("{a} → {b}");
    }
    assert!(arrows.contains(&("request", "paint")) && arrows.contains(&("record", "request")));
}
