//! `planlock grammar` (CONTRACT §19): the grammar of the plans a model may write, in each syntax,
//! for a profile, and its failures.

use serde_json::Value;

use crate::common::cli::with_input as planlock;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn the_grammar_comes_in_each_syntax_and_as_a_json_report() {
    let gbnf = planlock(&["grammar", "--vars", "question,context"], None);
    assert_eq!(gbnf.status.code(), Some(0));
    let text = stdout(&gbnf);
    assert!(text.starts_with("# planlock plan grammar") && text.contains("\nroot ::= "), "{text}");
    assert!(text.contains(r#"\"vars\":" "{" "\"question\":" scalar "," "\"context\":" scalar "}""#), "{text}");
    // The same text as the library makes.
    let request = planlock::grammar::GrammarRequest::new().vars(["question", "context"]);
    assert_eq!(text, planlock::grammar::grammar(&request, planlock::grammar::GrammarFormat::Gbnf).unwrap());

    let lark = stdout(&planlock(&["grammar", "--syntax", "lark"], None));
    assert!(lark.contains("\nstart: "), "{lark}");
    let schema: Value =
        serde_json::from_str(&stdout(&planlock(&["grammar", "--syntax", "json-schema"], None))).unwrap();
    assert_eq!(schema["title"], "ExecutionPlan");
    let report = planlock(&["grammar", "--format", "json", "--syntax", "lark"], None);
    let report: Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!((report["syntax"].as_str(), report["grammar"].as_str()), (Some("lark"), Some(lark.as_str())));
}

#[test]
fn a_profiles_grammar_names_its_profile_and_modes() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let out = planlock(&["grammar", "--policy-root", root, "--profile", "profiles/default"], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    // The demo policy's one mode, `chat`, sets topK 5: the only topK its plans carry.
    assert!(text.contains(r#"\"mode\":" "\"chat\"""#) && text.contains(r#""\"topK\":" "5""#), "{text}");
    assert!(!text.contains(r#""\"topK\":" "4""#));
    let missing = planlock(&["grammar", "--policy-root", root, "--profile", "profiles/nope"], None);
    assert_eq!(missing.status.code(), Some(3), "{}", String::from_utf8_lossy(&missing.stderr));
}

#[test]
fn an_unknown_syntax_is_a_usage_error() {
    let out = planlock(&["grammar", "--syntax", "ebnf", "--format", "json"], None);
    assert_eq!(out.status.code(), Some(2));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["errorCode"], "usage");
    assert!(report["error"].as_str().unwrap().contains("gbnf, lark, json-schema"), "{report}");
}

/// llguidance (`.ci/llguidance`), the engine behind llama.cpp's, vLLM's and SGLang's structured
/// outputs, compiles every syntax planlock writes: the Lark and GBNF grammars and the strict JSON
/// Schema profile, of whole plans and of the compact choices, for a request with keys and a
/// profile's.
#[test]
fn llguidance_compiles_every_grammar_planlock_writes() {
    let dir = std::env::var_os("PLANLOCK_LLGUIDANCE")
        .map(std::path::PathBuf::from)
        .or_else(|| Some(std::path::Path::new(&std::env::var_os("HOME")?).join(".cache/planlock/llguidance-v1")));
    let Some(python) = dir.map(|d| d.join("venv/bin/python")).filter(|p| p.exists()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "llguidance is not installed: .ci/run installs it with .ci/llguidance"
        );
        eprintln!("SKIPPED: llguidance is not installed (bash .ci/llguidance, then set PLANLOCK_LLGUIDANCE)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let mut checked = Vec::new();
    for (syntax, engine) in [("lark", "lark"), ("gbnf", "gbnf"), ("json-schema", "json")] {
        for extra in [
            &["--vars", "question,context", "--meta", "channel"][..],
            &["--policy-root", root, "--profile", "profiles/default"],
            &["--compact", "--vars", "question,context,tone"],
            &["--compact", "--policy-root", root, "--profile", "profiles/default"],
        ] {
            let out = planlock(&[&["grammar", "--syntax", syntax][..], extra].concat(), None);
            assert_eq!(out.status.code(), Some(0));
            let file = dir.path().join(format!("{syntax}-{}.txt", checked.len()));
            std::fs::write(&file, &out.stdout).unwrap();
            checked.push((engine, file));
        }
    }
    let script = "import sys, llguidance\n\
                  for engine, path in zip(sys.argv[1::2], sys.argv[2::2]):\n\
                  \x20   error = llguidance.LLMatcher.validate_grammar(llguidance.grammar_from(engine, open(path).read()))\n\
                  \x20   print(path, 'ok' if not error else 'ERROR ' + error)\n";
    let mut command = std::process::Command::new(python);
    command.arg("-c").arg(script);
    for (engine, file) in &checked {
        command.arg(engine).arg(file);
    }
    let out = command.output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(said.lines().filter(|l| l.ends_with(" ok")).count(), 12, "{said}");
}

/// A free-form key with a character a terminal shows escaped is written as a JSON escape in every
/// syntax (CONTRACT §19): the text output is the grammar itself, and the key it describes is the
/// one asked for. On the code before, the text output wrote `\u{202e}` into the grammar.
#[test]
fn a_key_a_terminal_would_escape_is_a_json_escape_in_every_syntax() {
    for (syntax, compact) in ["gbnf", "lark", "json-schema"].into_iter().flat_map(|s| [(s, false), (s, true)]) {
        let mut args = vec!["grammar", "--syntax", syntax, "--vars", "a\u{202e}b"];
        if compact {
            args.push("--compact");
        }
        let out = planlock(&args, None);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let text = stdout(&out);
        assert!(!text.contains("\\u{"), "{syntax}: a terminal escape in the grammar");
        assert!(text.contains("a\\\\u202eb") || text.contains("a\\u202eb"), "{syntax}: {text}");
        if syntax == "json-schema" {
            let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
            assert!(schema.to_string().contains("a\u{202e}b"), "the key is the one asked for");
        }
    }
}
