//! The README's command lines work as written. The CLI lines in its `sh` blocks run, in order,
//! in a fresh directory holding a copy of `examples/` (so relative paths mean what they mean in a
//! fresh clone), each with the exit code its comment states (`# exits N`, else 0). The lines
//! that build or test the whole crate are run by `.ci/run`, which must contain them verbatim; the
//! rest name things that must exist (an example, a bench, a feature, a fuzz target).
#![cfg(unix)]

use std::path::Path;
use std::process::Command;

const README: &str = include_str!("../../README.md");
const CI: &str = include_str!("../../.ci/run");
const MANIFEST: &str = include_str!("../../Cargo.toml");
const CLI: &str = "cargo run -p planlock-cli -- ";
const CLI_MANIFEST: &str = include_str!("../../cli/Cargo.toml");

/// The lines of the README's `sh` blocks, without blank lines.
fn sh_lines() -> Vec<&'static str> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    for line in README.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh && !l.is_empty() => lines.push(l),
            _ => {}
        }
    }
    lines
}

/// The command and the exit code its comment promises.
fn split(line: &str) -> (&str, i32) {
    let (command, comment) = line.split_once(" # ").unwrap_or((line, ""));
    let code = comment.trim().strip_prefix("exits ").map_or(0, |rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or_else(|_| panic!("`# exits N` needs a number: {line}"))
    });
    (command.trim(), code)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn has_bench(here: &Path, name: &str) -> bool {
    MANIFEST.contains(&format!("[[bench]]\nname = \"{name}\"")) && here.join(format!("benches/{name}.rs")).exists()
}

#[test]
fn every_readme_command_runs_as_written() {
    let fresh = tempfile::tempdir().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_dir(&here.join("examples"), &fresh.path().join("examples"));
    let mut ran = 0;
    // What the README exports, for the commands after it, as a shell would.
    let mut exported: Vec<(&str, &str)> = Vec::new();
    let telemetry = std::fs::read_to_string(here.join("src/telemetry/export.rs")).unwrap();
    for line in sh_lines() {
        let (command, expected) = split(line);
        if let Some((name, value)) = command.strip_prefix("export ").and_then(|e| e.split_once('=')) {
            // Only the standard variables planlock's telemetry reads.
            assert!(name.starts_with("OTEL_") && telemetry.contains(name), "README exports `{name}`");
            exported.push((name, value));
        } else if let Some(args) = command.strip_prefix(CLI) {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("\"$PLANLOCK\" {args}"))
                .envs(exported.iter().copied())
                .env("PLANLOCK", crate::common::cli::bin())
                .current_dir(fresh.path())
                .output()
                .unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(out.status.code(), Some(expected), "README line `{line}` said:\n{said}");
            assert!(!said.contains("panicked"), "{said}");
            ran += 1;
        } else if command.starts_with("cargo run --example ") || command.starts_with("cargo test") {
            assert!(CI.lines().any(|l| l.trim() == command), "`.ci/run` must run the README line `{command}`");
            if let Some(name) = command.strip_prefix("cargo run --example ") {
                assert!(here.join("examples").join(format!("{name}.rs")).exists(), "no example {name}");
            }
        } else if let Some(npm) = command.strip_prefix("cd examples/typescript && ") {
            // tests/it/typescript.rs runs these steps; here, each npm script named must exist.
            let package = std::fs::read_to_string(here.join("examples/typescript/package.json")).unwrap();
            for step in npm.split(" && ") {
                match step.strip_prefix("npm run ") {
                    Some(script) => assert!(package.contains(&format!("\"{script}\": ")), "no npm script `{script}`"),
                    None => assert_eq!(step, "npm ci", "README line `{line}`"),
                }
            }
        } else if let Some(bench) = command.strip_prefix("cargo bench --bench ") {
            check_bench(here, bench);
        } else if let Some((served, flags)) = ["serve", "worker"]
            .iter()
            .find_map(|name| Some((*name, command.strip_prefix(&format!("planlock {name} "))?)))
        {
            // It runs until stopped (tests/it/console.rs and tests/it/worker.rs run them): here,
            // every flag shown exists.
            let help = crate::common::cli::planlock().args([served, "--help"]).output().unwrap();
            let help = String::from_utf8_lossy(&help.stdout).into_owned();
            for flag in flags.split(|c: char| c.is_whitespace() || c == '[' || c == ']').filter(|f| f.starts_with("--"))
            {
                assert!(help.contains(flag), "`planlock {served}` has no {flag}:\n{help}");
            }
        } else if CI.lines().any(|l| l.trim() == command) {
            // `.ci/run` runs it as written (the bindings' build and install).
        } else {
            panic!("the README has a command this test does not know how to check: `{line}`");
        }
    }
    assert!(ran >= 5, "the README's CLI lines were not found ({ran} ran)");
    // What the CLI lines did, seen from outside: the session they ran is on disk.
    assert!(fresh.path().join("demo-session/ops/runtime/session_state.json").exists());
}

#[test]
fn commands_named_in_the_readmes_prose_exist() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spans: Vec<&str> = README.split('`').skip(1).step_by(2).filter(|s| s.starts_with("cargo ")).collect();
    for span in spans {
        if span == "cargo install --path cli" {
            // The crate in `cli/` makes the binary `planlock`.
            assert!(CLI_MANIFEST.contains("name = \"planlock-cli\"") && CLI_MANIFEST.contains("name = \"planlock\""));
        } else if span == "cargo run -p planlock-cli --" {
            assert!(README.contains(&format!("\n{CLI}")), "the README's CLI lines start `{CLI}`");
        } else if let Some(bench) = span.strip_prefix("cargo bench --bench ") {
            check_bench(here, bench);
        } else if let Some(target) = span.strip_prefix("cargo +nightly fuzz run ") {
            assert!(here.join("fuzz/fuzz_targets").join(format!("{target}.rs")).exists(), "no fuzz target {target}");
        } else {
            panic!("the README names a command this test does not know how to check: `{span}`");
        }
    }
}

/// Every repository path the docs name — in backticks (`src/exec/budget.rs`, `tests/it/`) or as a
/// link target — exists: a file that moves takes its mentions with it. A span is a path when it
/// has no space or placeholder (`*`, `<…>`, `{…}`, `…`, `$`) and starts with one of the
/// repository's top-level entries; a `:line` or `#anchor` after it is left out.
#[test]
fn paths_named_in_the_docs_exist() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tops: Vec<String> = std::fs::read_dir(here)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "target" && name != ".git")
        .collect();
    let docs = [
        ("README.md", README),
        ("docs/CONTRACT.md", include_str!("../../docs/CONTRACT.md")),
        ("CONTRIBUTING.md", include_str!("../../CONTRIBUTING.md")),
    ];
    let (mut checked, mut missing) = (0, Vec::new());
    for (doc, text) in docs {
        // Prose only: fenced blocks are commands and output (their commands are run above).
        let mut fenced = false;
        let prose: String = text
            .lines()
            .filter(|line| {
                fenced ^= line.trim_start().starts_with("```");
                !fenced && !line.trim_start().starts_with("```")
            })
            .collect::<Vec<_>>()
            .join("\n");
        let text = prose.as_str();
        let spans = text.split('`').skip(1).step_by(2);
        let links = text.split("](").skip(1).filter_map(|rest| rest.split_once(')').map(|(target, _)| target));
        for span in spans.chain(links) {
            if span.contains(|c: char| c.is_whitespace() || "*<{…$|".contains(c)) || span.contains("://") {
                continue;
            }
            let path = span.split([':', '#']).next().unwrap_or_default().trim_end_matches(['.', ',', ';']);
            let first = path.split('/').next().unwrap_or_default();
            if !tops.iter().any(|top| top == first) || !(path.contains('/') || path == first && first.contains('.')) {
                continue;
            }
            checked += 1;
            if !here.join(path).exists() {
                missing.push(format!("{doc}: `{path}`"));
            }
        }
    }
    assert!(missing.is_empty(), "paths the docs name that do not exist:\n{}", missing.join("\n"));
    assert!(checked > 150, "only {checked} paths found: is the scan still reading the docs?");
}

/// `NAME` or `NAME --features A,B` after `cargo bench --bench `: the bench exists and the
/// features given are its required ones.
fn check_bench(here: &Path, bench: &str) {
    let (name, features) = bench.split_once(" --features ").unwrap_or((bench, ""));
    assert!(has_bench(here, name), "the README names a bench `{name}` that Cargo.toml does not have");
    let entry = MANIFEST
        .split("\n[[")
        .find(|e| e.starts_with("bench]]") && e.contains(&format!("name = \"{name}\"")))
        .unwrap_or_default();
    for required in entry.lines().filter_map(|l| l.strip_prefix("required-features = ")) {
        for feature in required.trim_matches(|c| c == '[' || c == ']').split(", ").map(|f| f.trim_matches('"')) {
            let given = feature == "sqlite" || features.split(',').any(|f| f == feature);
            assert!(given, "README: `cargo bench --bench {bench}` needs feature `{feature}`");
        }
    }
}

/// The rows of the README's exit-code table: the code and its example command.
fn exit_code_rows() -> Vec<(i32, &'static str)> {
    let table = README.split("### Exit codes and output").nth(1).expect("the README has its exit-code table");
    table
        .lines()
        .skip_while(|l| !l.starts_with("| code"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(|c| c.trim().trim_matches('`')).collect();
            (cells[1].parse().unwrap_or_else(|_| panic!("not a code: {row}")), cells[3])
        })
        .collect()
}

#[test]
fn the_exit_code_table_holds() {
    let rows = exit_code_rows();
    assert_eq!(rows.iter().map(|(code, _)| *code).collect::<Vec<_>>(), [0, 1, 2, 3, 4], "one row per code");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (code, example) in rows {
        let fresh = tempfile::tempdir().unwrap();
        copy_dir(&here.join("examples"), &fresh.path().join("examples"));
        let args = example.strip_prefix("planlock ").unwrap_or_else(|| panic!("not a planlock command: {example}"));
        for format in [&[][..], &["--format", "json"][..]] {
            let out = crate::common::cli::planlock()
                .args(format)
                .args(args.split_whitespace())
                .current_dir(fresh.path())
                .output()
                .unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(out.status.code(), Some(code), "`{example}` {format:?}: {said}");
        }
    }
}

/// Each package carries the licence texts its manifest's `license` names, the same at the root
/// and in the contract's and the CLI's folders (a package ships only what is under its own folder).
#[test]
fn every_package_carries_the_same_licence_texts() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let contract = include_str!("../../contract/Cargo.toml");
    for name in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let root = std::fs::read_to_string(here.join(name)).unwrap();
        for folder in ["contract", "cli"] {
            assert_eq!(std::fs::read_to_string(here.join(folder).join(name)).unwrap(), root, "{folder}/{name}");
        }
        for manifest in [MANIFEST, contract, CLI_MANIFEST] {
            assert!(manifest.contains(&format!("\"/{name}\"")), "a manifest's include names {name}");
        }
    }
    for manifest in [MANIFEST, contract, CLI_MANIFEST] {
        assert!(manifest.contains("license = \"MIT OR Apache-2.0\""));
    }
}
