//! What a grammar is asked for (a format, the modes, the variables), and the one call that
//! writes it.

use super::{plan, strict, write};
use crate::contract::json_schema::plan_json_schema;
use crate::hash::profile::PolicyProfile;

/// The longest string a grammar's plan holds, in characters: bounds the document's size.
pub const MAX_GRAMMAR_STRING_CHARS: u32 = 256;

/// The most items of a list (`sources`, `keywords`) in a grammar's plan.
pub const MAX_GRAMMAR_ITEMS: u32 = 8;

/// The largest `topK` a grammar's plan chooses, where no mode fixes it.
pub const MAX_GRAMMAR_TOP_K: u64 = 10;

/// What a grammar cannot enforce, and how the grammars deal with it.
pub const GRAMMAR_CANNOT_SAY: &[&str] = &[
    "unique keys in a free-form object (vars, config, meta): the grammar writes only the keys the request names, \
     each once, and `{}` where it names none",
    "unique step ids chosen freely: each step's id is its type's (`llmcall`, `retrieve-memory`, …)",
    "free-form values nested in objects: free-form values are scalars (a string, a number, a boolean, null)",
    "a document of any size: strings hold at most 256 characters, lists at most 8 items, integers at most 15 digits",
];

/// A grammar's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrammarFormat {
    /// GBNF, for llama.cpp's server (`grammar` in a completion request).
    Gbnf,
    /// Lark, for llguidance (vLLM, SGLang, llama.cpp built with it).
    Lark,
    /// A JSON Schema profile that strict structured-output engines accept.
    JsonSchema,
}

impl GrammarFormat {
    /// Every format, by its command-line name.
    pub const ALL: [(&'static str, GrammarFormat); 3] =
        [("gbnf", GrammarFormat::Gbnf), ("lark", GrammarFormat::Lark), ("json-schema", GrammarFormat::JsonSchema)];

    /// The format named `name` (`gbnf`, `lark`, `json-schema`).
    pub fn from_name(name: &str) -> Option<GrammarFormat> {
        GrammarFormat::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

/// A mode a plan may name, and the `topK` its profile fixes for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarMode {
    /// `metadata.mode`.
    pub name: String,
    /// `topK` for a plan of this mode (both `metadata.topK` and `RetrieveMemory`'s), if the mode
    /// sets one.
    pub top_k: Option<u64>,
}

/// What a grammar is for: a profile's modes, and the keys of the free-form objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrammarRequest {
    pub(crate) profile: Option<String>,
    pub(crate) modes: Vec<GrammarMode>,
    pub(crate) vars: Vec<String>,
    pub(crate) config: Vec<String>,
    pub(crate) meta: Vec<String>,
}

impl GrammarRequest {
    /// Any profile, any mode, free-form objects empty.
    pub fn new() -> GrammarRequest {
        GrammarRequest::default()
    }

    /// Plans of `profile`: its `policyProfile`, one of its modes, each mode's `topK` where
    /// `modes.yaml` sets a positive integer one.
    pub fn profile(mut self, profile: &PolicyProfile) -> GrammarRequest {
        self.profile = Some(profile.path.clone());
        self.modes = profile
            .modes
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, mode)| GrammarMode {
                name: name.clone(),
                top_k: mode["topK"].as_u64().filter(|k| (1..=crate::json::MAX_SAFE_INTEGER).contains(k)),
            })
            .collect();
        self
    }

    /// `PromptAssemble`'s `vars` hold these keys (the template's variables), in this order.
    pub fn vars<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> GrammarRequest {
        self.vars = unique(keys);
        self
    }

    /// `LLMCall`'s `config` holds these keys.
    pub fn config<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> GrammarRequest {
        self.config = unique(keys);
        self
    }

    /// `PersistSession`'s `meta` holds these keys.
    pub fn meta<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> GrammarRequest {
        self.meta = unique(keys);
        self
    }
}

/// The keys, each once, in the order first given.
fn unique<S: Into<String>>(keys: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for key in keys.into_iter().map(Into::into) {
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// Why a grammar could not be made: the plan schema has something the generator does not know
/// (a new kind of field or pattern added to the contract without teaching the grammar).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    /// The schema's part the generator does not know.
    #[error("the plan schema has what the grammar generator does not know: {0}; teach src/grammar/plan.rs")]
    Schema(String),
}

/// The grammar of the plans `request` describes, in `format`.
pub fn grammar(request: &GrammarRequest, format: GrammarFormat) -> Result<String, GrammarError> {
    let schema = plan_json_schema();
    let syntax = match format {
        GrammarFormat::Gbnf => &write::GBNF,
        GrammarFormat::Lark => &write::LARK,
        GrammarFormat::JsonSchema => {
            return Ok(plan::ascii_pretty(&strict::strict_schema(schema, request)));
        }
    };
    let rules = plan::plan_rules(&schema, request)?;
    let mut header = vec![
        format!("planlock plan grammar, contract version 1: {} rules, generated from the step registry.", rules.len()),
        "Every plan it describes passes planlock's validator; it cannot say:".to_owned(),
    ];
    header.extend(GRAMMAR_CANNOT_SAY.iter().map(|line| format!("- {line}")));
    Ok(syntax.write(&rules, "root", &header))
}

/// The step id a grammar's plans give a step of type `ty` (its type's wire name, lowercase,
/// dashes between words).
///
/// ```
/// use planlock_contract::StepType;
/// assert_eq!(planlock_contract::grammar::step_id(StepType::RetrieveMemory), "retrieve-memory");
/// ```
pub fn step_id(ty: crate::contract::registry::StepType) -> String {
    plan::step_id(ty)
}
