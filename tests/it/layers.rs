//! The layers, held: every `crate::` and `super::` path in `src/` and `contract/src/` (outside comments and
//! unit-test modules) goes to the same layer or one below, names the module it means (not a
//! crate-root re-export), and the files import each other without a cycle (two files of one
//! folder naming each other through `super::` are a cycle too). The table below is the one
//! place the layers are written down; `src/lib.rs` declares the modules in the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and its layer; a module may import its own layer's module and those
/// of lower layers only. CONTRIBUTING.md's table says the same (a test compares them).
const LAYERS: &[(&str, u32)] = &[
    ("json", 0),
    ("fsread", 0),
    ("text", 0),
    ("io", 0),
    ("contract", 1),
    ("telemetry", 2),
    ("validate", 2),
    ("builder", 3),
    ("hash", 3),
    ("pg", 3),
    ("exec", 4),
    ("embed", 4),
    ("producer", 4),
    ("grammar", 4),
    ("session", 5),
    ("store", 5),
    ("handlers", 5),
    ("backend", 6),
    ("review", 7),
    ("runtime", 8),
    ("console", 8),
    ("demo", 9),
    ("worker", 9),
];

/// CONTRIBUTING.md's layer table (the one people read) says what [`LAYERS`] says.
#[test]
fn the_layer_table_people_read_is_this_one() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONTRIBUTING.md")).unwrap();
    let mut written: Vec<(String, u32)> = Vec::new();
    for row in doc.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Ok(layer) = cells[1].parse::<u32>() else { continue };
        for module in cells[2].split(", ") {
            written.push((module.trim_matches('`').to_owned(), layer));
        }
    }
    let mut table: Vec<(String, u32)> = LAYERS.iter().map(|(m, l)| ((*m).to_owned(), *l)).collect();
    written.sort();
    table.sort();
    assert_eq!(written, table, "CONTRIBUTING.md's layer table and tests/it/layers.rs's LAYERS differ");
}

/// A module's doc that names its layer (`//! Layer 4, …`) names the one [`LAYERS`] gives it.
#[test]
fn the_layer_a_module_doc_names_is_its_own() {
    let files = source_files();
    let mut checked = 0;
    for file in &files {
        let module = module_of(file);
        let Some(own) = module.first().and_then(|m| layer(m)) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines().take_while(|l| l.starts_with("//!")) {
            let Some(at) = line.find("Layer ") else { continue };
            let digits: String = line[at + 6..].chars().take_while(char::is_ascii_digit).collect();
            if let Ok(named) = digits.parse::<u32>() {
                assert_eq!(
                    named,
                    own,
                    "{}: its doc names layer {named}; CONTRIBUTING.md's table says {own}",
                    file.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "the module docs' layers were not found ({checked})");
}

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source roots: the contract crate's (`planlock-contract`, layers 0 to 4, whose modules the
/// library re-exports under the same names) and the library's.
fn roots() -> [PathBuf; 2] {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    [repo.join("contract/src"), repo.join("src")]
}

/// Every Rust file of both crates.
fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for root in roots() {
        rust_files(&root, &mut files);
    }
    files
}

/// `contract/src/contract/schema.rs` → `["contract", "schema"]`; `src/session/mod.rs` →
/// `["session"]`.
fn module_of(file: &Path) -> Vec<String> {
    let root = roots().into_iter().find(|r| file.starts_with(r)).unwrap();
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The `crate::a::b` paths of a file's code, and its `super::` paths made whole from
/// `module`, the file's own (`super::overview::roots` in `session/inbox.rs` is
/// `session::overview`): comments and the unit-test module left out.
fn paths_of(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut out = crate_paths(text);
    // `super::` drops the module's last segment: in `a/b.rs` (`a::b`) it is `a`, in `a/mod.rs`
    // (`a`) the crate root.
    let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
    for (line, relative) in relative_paths(text, "super::") {
        let mut whole = parent.clone();
        whole.extend(relative);
        whole.truncate(2);
        if !whole.is_empty() {
            out.push((line, whole));
        }
    }
    out.sort();
    out
}

/// The `crate::a::b` paths of a file's code: comments and the unit-test module left out.
fn crate_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    relative_paths(text, "crate::").into_iter().filter(|(_, p)| !p.is_empty()).collect()
}

/// The paths after `prefix` (`crate::`, `super::`) in a file's code, their first two segments:
/// each path of a group (`super::{decide, login}`, over as many lines as it takes) on its own, a
/// group's `self` as the empty path; comments and the unit-test module left out.
fn relative_paths(text: &str, prefix: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for (n, code) in statements(text) {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(prefix) {
            let before = &rest[..at];
            rest = &rest[at + prefix.len()..];
            // `serde_json::...` and the like are not this crate; `super::super::` is read as one.
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for mut path in expand(rest) {
                path.truncate(2);
                out.push((n + 1, path));
            }
        }
    }
    out
}

/// A file's code, a line at a time (with its index), a `use` whose group spans lines joined into
/// one: comments, hidden re-exports and the unit-test module left out.
fn statements(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    let mut hidden = false;
    while let Some((n, line)) = lines.next() {
        let code = line.trim_start();
        // A hidden re-export keeps an item's first path where it moved from (`session::inbox`
        // for `review::inbox`): a name, not a dependency of the module's code.
        let compat = hidden && code.starts_with("pub use ");
        hidden = code == "#[doc(hidden)]";
        if compat {
            continue;
        }
        if code.starts_with("#[cfg(test)]")
            && lines.peek().is_some_and(|(_, l)| l.trim_start().starts_with("mod tests"))
        {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let mut code = code.split(" // ").next().unwrap_or(code).to_owned();
        let open = |c: &str| c.matches('{').count() > c.matches('}').count();
        // `use …`, `pub use …`, `pub(crate) use …`: a group may go on over the next lines.
        if code.split_whitespace().take(2).any(|word| word == "use") {
            while open(&code) {
                let Some((_, more)) = lines.next() else { break };
                code.push(' ');
                code.push_str(more.trim());
            }
        }
        out.push((n, code));
    }
    out
}

/// The paths a use tree names, from the text after its prefix: `a::b` is one, `{a, b::{c, d}}`
/// is `a`, `b::c` and `b::d`, `self` the empty path; what follows the tree is passed over.
fn expand(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut out = Vec::new();
        let (mut depth, mut start) = (0usize, 0);
        for (at, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(expand(&group[start..at]));
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(expand(&group[start..at]));
                    start = at + 1;
                }
                _ => {}
            }
        }
        out.extend(expand(&group[start..]));
        return out;
    }
    let name: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    match name.as_str() {
        "" => vec![],
        "self" => vec![vec![]],
        _ => match text[name.len()..].strip_prefix("::").map(expand) {
            Some(inner) if !inner.is_empty() => inner
                .into_iter()
                .map(|mut path| {
                    path.insert(0, name.clone());
                    path
                })
                .collect(),
            _ => vec![vec![name]],
        },
    }
}

#[test]
fn imports_go_down_the_layers_and_never_in_a_circle() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = source_files();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    // A `#[macro_export]` macro lives at the root by necessity: it is of the module defining it.
    let exported: BTreeMap<String, Vec<String>> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let names: Vec<String> = text
                .split("#[macro_export]")
                .skip(1)
                .filter_map(|after| {
                    let name = after.trim_start().strip_prefix("macro_rules!")?.trim_start();
                    Some(name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
                })
                .collect();
            names.into_iter().map(|n| (n, module_of(f))).collect::<Vec<_>>()
        })
        .collect();
    for file in &files {
        let module = module_of(file);
        // The crate root and the binary sit above every layer.
        let Some(own) = module.first().filter(|m| *m != "lib" && *m != "bin") else { continue };
        let own_layer = layer(own).unwrap_or_else(|| panic!("{}: module `{own}` is in no layer", file.display()));
        let text = std::fs::read_to_string(file).unwrap();
        for (line, path) in paths_of(&text, &module) {
            let path = exported.get(&path[0]).cloned().unwrap_or(path);
            let at = format!("{}:{line}", file.strip_prefix(repo).unwrap().display());
            let Some(their_layer) = layer(&path[0]) else {
                problems.push(format!("{at}: `crate::{}` is a root re-export; name its layer's module", path[0]));
                continue;
            };
            if their_layer > own_layer || (their_layer == own_layer && path[0] != *own) {
                problems.push(format!(
                    "{at}: `{own}` (layer {own_layer}) imports `{}` (layer {their_layer}): imports go down only",
                    path.join("::")
                ));
            }
            // The longest prefix that is a module (a `super::Item` of `session/` is `session`).
            let target = if modules.contains(&path) { path.clone() } else { path[..1].to_vec() };
            if target != module {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    // Kahn's algorithm: what is left after removing every file nothing waits on is a cycle.
    let mut waiting: BTreeMap<&Vec<String>, usize> = modules.iter().map(|m| (m, 0)).collect();
    for targets in edges.values() {
        for t in targets {
            *waiting.entry(t).or_default() += 1;
        }
    }
    let mut ready: Vec<&Vec<String>> = waiting.iter().filter(|(_, n)| **n == 0).map(|(m, _)| *m).collect();
    let mut removed = 0;
    while let Some(m) = ready.pop() {
        removed += 1;
        for t in edges.get(m).into_iter().flatten() {
            let n = waiting.get_mut(t).unwrap();
            *n -= 1;
            if *n == 0 {
                ready.push(t);
            }
        }
    }
    if removed < waiting.len() {
        // What is left holds the circles and what they import; peel off, again and again, what
        // imports nothing left, so that the message names the circles alone.
        let mut left: BTreeSet<&Vec<String>> = waiting.iter().filter(|(_, n)| **n > 0).map(|(m, _)| *m).collect();
        while let Some(end) = left
            .iter()
            .find(|m| edges.get(**m).is_none_or(|targets| targets.iter().all(|t| !left.contains(t))))
            .copied()
        {
            left.remove(end);
        }
        let cyclic: Vec<String> = left.iter().map(|m| m.join("::")).collect();
        problems.push(format!("these modules import each other in a circle: {}", cyclic.join(", ")));
    }
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_reads_super_paths_from_the_file_they_are_in() {
    let module = |m: &str| m.split("::").map(str::to_owned).collect::<Vec<_>>();
    let text = "use super::overview::roots;\nlet e = super::SessionError::Io;\n// super::x in a comment\n";
    let inbox = paths_of(text, &module("session::inbox"));
    assert_eq!(
        inbox.iter().map(|(_, p)| p.join("::")).collect::<Vec<_>>(),
        ["session::overview", "session::SessionError"]
    );
    let root = paths_of("use super::exec::Cycle;", &module("session"));
    assert_eq!(root[0].1.join("::"), "exec::Cycle");
    // A group names each of its modules, over as many lines as it takes (the console's circle of
    // `service` and its handlers hid in one: `use super::{decide, login};`).
    let service = paths_of(
        "use super::{decide, login};\nuse super::{\n    auth::{self, Auth},\n    rules::Rules,\n};\nuse crate::review::{inbox::Inbox, DecideError};",
        &module("console::service"),
    );
    let named: Vec<String> = service.iter().map(|(line, p)| format!("{line}:{}", p.join("::"))).collect();
    assert_eq!(
        named,
        [
            "1:console::decide",
            "1:console::login",
            "2:console::auth",
            "2:console::auth",
            "2:console::rules",
            "6:review::DecideError",
            "6:review::inbox"
        ]
    );
}

#[test]
fn the_checker_sees_an_upward_import_a_root_re_export_and_a_comment() {
    let paths = crate_paths(
        "use crate::runtime::Runtime;\n// crate::demo::Demo in a comment\nlet d = crate::Digest::of(b\"\");\nserde_json::x();\n#[cfg(test)]\nmod tests {\n use crate::demo::X;\n}",
    );
    let firsts: Vec<&str> = paths.iter().map(|(_, p)| p[0].as_str()).collect();
    assert_eq!(firsts, ["runtime", "Digest"]);
    assert!(layer("runtime") > layer("exec"));
    assert_eq!(layer("Digest"), None);
    // A hidden re-export keeps an old path (a name only); a visible one is an import.
    let kept = crate_paths("#[doc(hidden)]\npub use crate::review::inbox;\npub use crate::review::overview;");
    assert_eq!(kept.iter().map(|(_, p)| p.join("::")).collect::<Vec<_>>(), ["review::overview"]);
}

/// Each item has one documented path (issue 21 §4): a root re-export of what lives in a public
/// module only links to the module's page (`#[doc(no_inline)]`); items of private modules have
/// only their root path, documented there.
#[test]
fn a_root_re_export_of_a_public_modules_item_is_not_documented_twice() {
    let mut checked = 0;
    // Both crates' roots: the contract's short paths are the library's too (its glob re-export).
    for root in ["src/lib.rs", "contract/src/lib.rs"] {
        let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(root)).unwrap();
        let lines: Vec<&str> = lib.lines().collect();
        // `pub mod m;`, and `pub use private::{m, n};` (modules made public from a private one).
        let module_list = |l: &str| -> Option<Vec<String>> {
            let names = l.strip_prefix("pub use ")?.split_once("::{")?.1.strip_suffix("};")?;
            let names: Vec<String> = names.split(", ").map(str::to_owned).collect();
            names.iter().all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_')).then_some(names)
        };
        // A hidden module (the contract's building blocks) has no documented page to link to.
        let hidden = |i: usize| i.checked_sub(1).is_some_and(|p| lines[p] == "#[doc(hidden)]");
        let public: Vec<String> = (lines.iter().enumerate())
            .filter(|(i, _)| !hidden(*i))
            .filter_map(|(_, l)| {
                l.strip_prefix("pub mod ").map(|m| vec![m.trim_end_matches(';').to_owned()]).or(module_list(l))
            })
            .flatten()
            .collect();
        for (i, line) in lines.iter().enumerate() {
            let Some((module, _)) = line.strip_prefix("pub use ").and_then(|p| p.split_once("::")) else { continue };
            if public.iter().any(|m| m == module) {
                checked += 1;
                let above = i.checked_sub(1).map(|p| lines[p]);
                assert_eq!(above, Some("#[doc(no_inline)]"), "{root}:{}: `{line}` documents a second path", i + 1);
            }
        }
    }
    assert!(checked >= 10, "the root re-exports were not found ({checked})");
}

/// CONTRACT §23: the root's six are where users were promised they are, and the compile-fail
/// tests are a crate `cargo test` runs at the root (a default member of the workspace).
#[test]
fn the_promised_root_layout_holds() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (path, dir) in [
        ("Cargo.toml", false),
        ("src", true),
        ("tests", true),
        ("ui-tests", true),
        ("examples", true),
        ("README.md", false),
    ] {
        let p = repo.join(path);
        assert!(p.exists() && p.is_dir() == dir, "the root's `{path}` is missing or moved");
    }
    assert!(
        repo.join("ui-tests/Cargo.toml").is_file() && repo.join("ui-tests/cases/fail").is_dir(),
        "ui-tests/ holds the compile-fail tests as a crate of its own"
    );
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    let default_members = manifest
        .lines()
        .find(|l| l.starts_with("default-members"))
        .expect("the root manifest names its default members");
    assert!(default_members.contains("\"ui-tests\""), "`cargo test` at the root runs ui-tests/: {default_members}");
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    assert!(readme.contains("| `ui-tests/` |"), "the README's layout table names ui-tests/");
}
