//! `planlock grammar`: the grammar of the plans a model may write (CONTRACT §19), generated from
//! the step registry: GBNF for llama.cpp, Lark for llguidance, or the strict JSON Schema profile.

use std::path::Path;

use planlock::PolicyProfile;
use planlock::grammar::{GrammarFormat, GrammarRequest};
use serde::Serialize;

use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// What to make a grammar for: the profile, and the keys of the free-form objects.
pub struct For<'a> {
    /// The policy root and the profile in it (`profiles/default`), if the plans are a profile's.
    pub profile: Option<(&'a Path, &'a str)>,
    /// `PromptAssemble`'s `vars` keys.
    pub vars: Vec<String>,
    /// `LLMCall`'s `config` keys.
    pub config: Vec<String>,
    /// `PersistSession`'s `meta` keys.
    pub meta: Vec<String>,
}

/// The grammar, and in JSON its syntax.
#[derive(Serialize)]
struct GrammarReport {
    syntax: &'static str,
    grammar: String,
}

impl Report for GrammarReport {
    /// The grammar's own text, as a file of it would hold.
    fn text(&self, out: &mut Text) {
        for l in self.grammar.lines() {
            line!(out, "{l}");
        }
    }
}

/// The request of the free-form objects' keys.
pub fn request(vars: Vec<String>, config: Vec<String>, meta: Vec<String>) -> GrammarRequest {
    GrammarRequest::new().vars(vars).config(config).meta(meta)
}

pub fn grammar(out: &mut Output, syntax: &str, of: For<'_>) -> Result<u8, CliError> {
    let Some(format) = GrammarFormat::from_name(syntax) else {
        let names: Vec<&str> = GrammarFormat::ALL.iter().map(|(n, _)| *n).collect();
        return Err(CliError::usage("usage", format!("--syntax `{syntax}`: one of {}", names.join(", "))));
    };
    let mut request = request(of.vars, of.config, of.meta);
    if let Some((root, name)) = of.profile {
        let profile = PolicyProfile::load(root, name).map_err(|e| CliError::of(&e))?;
        request = request.profile(&profile);
    }
    let grammar =
        planlock::grammar::grammar(&request, format).map_err(|e| CliError::fail_fast("grammar", e.to_string()))?;
    let syntax = GrammarFormat::ALL.iter().find(|(_, f)| *f == format).map_or("gbnf", |(n, _)| n);
    out.report(&GrammarReport { syntax, grammar });
    Ok(EXIT_VALID)
}
