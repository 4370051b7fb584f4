//! `planlock grammar`: the grammar of the plans a model may write (CONTRACT §19), generated from
//! the step registry: GBNF for llama.cpp, Lark for llguidance, or the strict JSON Schema profile;
//! with `--compact`, the grammar of the choices `planlock plan` asks for.

use std::path::Path;

use planlock::PolicyProfile;
use planlock::grammar::{GrammarFormat, GrammarRequest, PlanFrame};
use serde::Serialize;

use crate::args::PlansOf;
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

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

/// The grammar request `of` says: the free-form objects' keys, and the profile's plans when it
/// names one (loaded from its policy root, which is given back).
pub fn request(of: &PlansOf) -> Result<(GrammarRequest, Option<&Path>), CliError> {
    let mut request = GrammarRequest::new().vars(of.vars.clone()).config(of.config.clone()).meta(of.meta.clone());
    let root = of.policy_root.as_deref();
    if let (Some(root), Some(name)) = (root, of.profile.as_deref()) {
        let profile = PolicyProfile::load(root, name).map_err(|e| CliError::of(&e))?;
        request = request.profile(&profile);
    }
    Ok((request, root))
}

pub fn grammar(out: &mut Output, syntax: &str, compact: bool, of: &PlansOf) -> Result<u8, CliError> {
    let Some(format) = GrammarFormat::from_name(syntax) else {
        let names: Vec<&str> = GrammarFormat::ALL.iter().map(|(n, _)| *n).collect();
        return Err(CliError::usage("usage", format!("--syntax `{syntax}`: one of {}", names.join(", "))));
    };
    let (request, _) = request(of)?;
    let made = if compact {
        planlock::grammar::compact_grammar(&PlanFrame::new(request), format)
    } else {
        planlock::grammar::grammar(&request, format)
    };
    let grammar = made.map_err(|e| CliError::fail_fast("grammar", e.to_string()))?;
    let syntax = GrammarFormat::ALL.iter().find(|(_, f)| *f == format).map_or("gbnf", |(n, _)| n);
    out.report(&GrammarReport { syntax, grammar });
    Ok(EXIT_VALID)
}
