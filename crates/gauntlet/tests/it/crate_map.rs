//! The crate map in `crates/README.md` is true: each crate's row names exactly its
//! `[dependencies]` among gauntlet's crates, every crate has a row, and the graph has no circle.

use std::collections::{BTreeMap, BTreeSet};

use super::common::repo;

fn section<'a>(toml: &'a str, name: &str) -> &'a str {
    let header = format!("[{name}]\n");
    let Some(start) = toml.find(&header) else {
        return "";
    };
    let rest = &toml[start + header.len()..];
    let end = rest.find("\n[").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

fn gauntlet_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| {
            let name: String = l
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            name.starts_with("gauntlet-").then_some(name)
        })
        .collect()
}

#[test]
fn the_crate_map_names_each_crates_dependencies() {
    let crates = repo().join("crates");
    let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(toml) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let name = section(&toml, "package")
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{} has no package name", manifest.display()))
            .to_owned();
        actual.insert(name, gauntlet_names(section(&toml, "dependencies")));
    }
    let readme = std::fs::read_to_string(crates.join("README.md")).unwrap();
    let table = readme
        .split("| crate | depends on |")
        .nth(1)
        .expect("crates/README.md has a `| crate | depends on |` table");
    let mut written: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_owned();
        let deps = cells[2]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_owned())
            .filter(|d| d.starts_with("gauntlet-"))
            .collect();
        written.insert(name, deps);
    }
    assert_eq!(
        written, actual,
        "crates/README.md's `depends on` table and the crates' Cargo.toml disagree"
    );
    // One way: a depth-first walk finds no crate reachable from itself.
    fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(c) = stack.pop() {
            for d in graph.get(&c).into_iter().flatten() {
                if d == to {
                    return true;
                }
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        false
    }
    for name in actual.keys() {
        assert!(!reaches(&actual, name, name), "{name} depends on itself");
    }
}
