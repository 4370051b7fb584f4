//! `PromptAssemble` with [minijinja](https://docs.rs/minijinja) templates (docs/CONTRACT.md,
//! "Real handlers").
//!
//! The payload's `template` is rendered with:
//!
//! | name | what | without the step |
//! |---|---|---|
//! | each member of `vars` | the payload's variables, by name | — |
//! | `ledger.context` | `ContextSelect`'s `selectedContext` | (always there: the step is mandatory) |
//! | `ledger.memories` | `RetrieveMemory`'s `items` (`id`, `summary`, `timestamp`) | `[]` |
//! | `ledger.decisions` | `RetrieveDecisionContext`'s `decisions` (`text`, `scope`, `strength`, …) | `[]` |
//! | `ledger.anchors` | `RetrieveDecisionContext`'s `anchors` | `[]` |
//! | `ledger.repo` | `RepoScan`'s result (`versionId`, `fileCount`) | `none` |
//!
//! `ledger` is reserved: a variable of that name is an error, not silently hidden. An undefined
//! variable is an error, never an empty string; so is a template that does not parse. Every
//! template error names its line and column. Rendering is bounded by a fuel budget (minijinja
//! counts instructions), so no template can loop for long.

use minijinja::value::{Serde, Value};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Map, json};

use crate::contract::schema::{PromptAssemblePayload, PromptAssembleResult};
use crate::contract::steps::{ContextSelect, RepoScan, RetrieveDecisionContext, RetrieveMemory};
use crate::exec::handler::{Handler, HandlerError, StepContext};

/// The name under which a template sees the cycle's earlier results.
pub const LEDGER_VAR: &str = "ledger";

/// The instructions a render may take by default (minijinja's fuel): far more than any prompt
/// needs, far less than a runaway loop.
pub const DEFAULT_FUEL: u64 = 1_000_000;

/// `PromptAssemble` rendered with minijinja; see the [module docs](self) for the names a
/// template sees.
///
/// ```
/// use planlock::handlers::TemplatePrompts;
/// use planlock::handler::TestContext;
/// use planlock::{AnyObject, Handler, schema::*, steps::*};
///
/// let payload = PromptAssemblePayload {
///     template: "Answer {{ question }}.{% for m in ledger.memories %} Recall: {{ m.summary }}.{% endfor %}".into(),
///     vars: AnyObject::new().with("question", "how to rotate keys"),
/// };
/// let test = TestContext::new("prompt", payload.clone()).with_step::<RetrieveMemory>(
///     "memory",
///     RetrieveMemoryPayload { input: "keys".into(), top_k: planlock::PositiveInt::MIN },
///     RetrieveMemoryResult { items: vec![MemoryItem { id: "m1".into(), summary: "use the vault".into(), timestamp: "t".into() }] },
/// );
/// let out = pollster::block_on(TemplatePrompts::new().call(&test.context(), &payload))?;
/// assert_eq!(out.prompt, "Answer how to rotate keys. Recall: use the vault.");
///
/// // An undefined variable is an error that says where.
/// let typo = PromptAssemblePayload { template: "Hi\n  {{ questoin }}".into(), vars: AnyObject::new() };
/// let err = pollster::block_on(TemplatePrompts::new().call(&test.context(), &typo)).unwrap_err();
/// assert!(err.message().starts_with("template error at line 2, column 6: undefined value"), "{err}");
/// # Ok::<(), planlock::HandlerError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TemplatePrompts {
    fuel: u64,
}

impl Default for TemplatePrompts {
    fn default() -> Self {
        TemplatePrompts { fuel: DEFAULT_FUEL }
    }
}

impl TemplatePrompts {
    /// The handler, with [`DEFAULT_FUEL`].
    pub fn new() -> Self {
        TemplatePrompts::default()
    }

    /// Bounds a render to `fuel` template instructions.
    pub fn fuel(mut self, fuel: u64) -> Self {
        self.fuel = fuel;
        self
    }

    /// Renders `template` with `vars` and the earlier results of `cx`'s cycle.
    pub fn render(
        &self,
        cx: &StepContext<'_>,
        template: &str,
        vars: &Map<String, serde_json::Value>,
    ) -> Result<String, HandlerError> {
        if vars.contains_key(LEDGER_VAR) {
            return Err(HandlerError::new(format!(
                "the variable `{LEDGER_VAR}` is reserved for the cycle's earlier results; rename it in the payload's `vars`"
            )));
        }
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(self.fuel));
        env.set_debug(true);
        // A prompt is text, not HTML: nothing is escaped.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);

        let mut context = vars.clone();
        context.insert(LEDGER_VAR.to_owned(), earlier_results(cx));
        env.render_str(template, Value::from(Serde(&context))).map_err(|e| template_error(template, &e))
    }
}

impl Handler<crate::contract::steps::PromptAssemble> for TemplatePrompts {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &PromptAssemblePayload,
    ) -> Result<PromptAssembleResult, HandlerError> {
        Ok(PromptAssembleResult { prompt: self.render(cx, &p.template, &p.vars)? })
    }
}

/// The `ledger` a template sees; see the module docs.
fn earlier_results(cx: &StepContext<'_>) -> serde_json::Value {
    let ledger = cx.ledger();
    let decisions = ledger.get::<RetrieveDecisionContext>();
    // The contract's types serialize as the plan's JSON; an absent step is `[]` (`null` for repo).
    json!({
        "context": ledger.get::<ContextSelect>().map_or(&[][..], |r| &r.selected_context[..]),
        "memories": ledger.get::<RetrieveMemory>().map_or(&[][..], |r| &r.items[..]),
        "decisions": decisions.map_or(&[][..], |d| &d.decisions[..]),
        "anchors": decisions.map_or(&[][..], |d| &d.anchors[..]),
        "repo": ledger.get::<RepoScan>(),
    })
}

/// `template error at line L, column C: <what>`, with the offending source when minijinja
/// knows its span.
fn template_error(template: &str, e: &minijinja::Error) -> HandlerError {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let place = match (e.line(), e.range()) {
        (Some(line), Some(range)) => {
            let before = template.get(..range.start).unwrap_or(template);
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let column = before.get(line_start..).map_or(1, |s| s.chars().count() + 1);
            format!("line {line}, column {column}")
        }
        (Some(line), None) => format!("line {line}"),
        _ => "an unknown place".to_owned(),
    };
    HandlerError::new(format!("template error at {place}: {what}"))
}
