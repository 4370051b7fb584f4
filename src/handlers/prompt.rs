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
//! template error names its line and column.
//!
//! A template is input from outside (CONTRACT §11), so everything it can make the engine do is
//! bounded, and exceeding a bound is the step's failure with a message naming it:
//!
//! | bound | limit |
//! |---|---|
//! | the template's text: size, tokens per tag, block depth, allowed statements | [`template_check`] |
//! | instructions, and the bytes and list slots the render builds | fuel, [`DEFAULT_FUEL`] ([`TemplatePrompts::fuel`]) |
//! | the rendered prompt | [`MAX_PROMPT_BYTES`] |
//! | one value serialized by `tojson` or `pprint` | [`MAX_SERIALIZED_BYTES`] |
//! | recursion (recursive loops) | [`MAX_RECURSION`] |
//! | wall time | the step's deadline ([`StepContext::deadline`]: by default `DEFAULT_PROMPT_DEADLINE`), checked as the output grows |

use std::fmt::Write as _;
use std::io;
use std::time::Instant;

use minijinja::value::{Kwargs, Serde, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde_json::{Map, json};

use crate::contract::schema::{PromptAssemblePayload, PromptAssembleResult};
use crate::contract::steps::{ContextSelect, RepoScan, RetrieveDecisionContext, RetrieveMemory};
use crate::exec::handler::{Handler, HandlerError, StepContext};
use crate::handlers::template_check;

/// The name under which a template sees the cycle's earlier results.
pub const LEDGER_VAR: &str = "ledger";

/// The instructions a render may take by default (minijinja's fuel): far more than any prompt
/// needs, far less than a runaway loop.
pub const DEFAULT_FUEL: u64 = 1_000_000;

/// The largest prompt a render may produce, in bytes.
pub const MAX_PROMPT_BYTES: usize = 1 << 20;

/// The largest text `tojson` or `pprint` may make of one value, in bytes.
pub const MAX_SERIALIZED_BYTES: usize = 256 * 1024;

/// How deep recursive loops may go (minijinja's recursion limit, lowered).
pub const MAX_RECURSION: usize = 32;

/// `PromptAssemble` rendered with minijinja; see the [module docs](self) for the names a
/// template sees.
///
/// ```
/// # #[cfg(feature = "testing")]
/// # fn main() -> Result<(), planlock::HandlerError> {
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
/// let out = planlock::block_on(TemplatePrompts::new().call(&test.context(), &payload))?;
/// assert_eq!(out.prompt, "Answer how to rotate keys. Recall: use the vault.");
///
/// // An undefined variable is an error that says where.
/// let typo = PromptAssemblePayload { template: "Hi\n  {{ questoin }}".into(), vars: AnyObject::new() };
/// let err = planlock::block_on(TemplatePrompts::new().call(&test.context(), &typo)).unwrap_err();
/// assert!(err.message().starts_with("template error at line 2, column 6: undefined value"), "{err}");
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "testing"))]
/// # fn main() {}
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
        template_check::check(template).map_err(|refusal| HandlerError::new(refusal.to_string()))?;
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(self.fuel));
        env.set_recursion_limit(MAX_RECURSION);
        env.set_debug(true);
        // A prompt is text, not HTML: nothing is escaped.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // What can put a value into a new container (so that loops could nest it deeper and
        // deeper, each level holding the one before twice) is left out: the functions that build
        // maps and objects from names, and the filters that pad with a given value.
        for global in ["dict", "namespace", "debug", "cycler", "joiner"] {
            env.remove_global(global);
        }
        for filter in ["batch", "slice"] {
            env.remove_filter(filter);
        }
        // minijinja's own serialize first and charge after; these stop at the bound instead.
        env.add_filter("tojson", bounded_tojson);
        env.add_filter("pprint", bounded_pprint);

        let mut context = vars.clone();
        context.insert(LEDGER_VAR.to_owned(), earlier_results(cx));
        let compiled = env.template_from_str(template).map_err(|e| template_error(template, &e))?;
        let mut out = BoundedOutput { text: Vec::new(), deadline: cx.deadline(), writes: 0, exceeded: None };
        let rendered = compiled.render_captured_to(Value::from(Serde(&context)), &mut out).map(drop);
        if let Some(bound) = out.exceeded {
            return Err(HandlerError::new(bound.message()));
        }
        rendered.map_err(|e| template_error(template, &e))?;
        // The writer is handed whole `str`s only, so the bytes are UTF-8; a failure here would be
        // minijinja's bug, reported as the step's failure all the same.
        String::from_utf8(out.text).map_err(|_| HandlerError::new("the rendered prompt is not UTF-8"))
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

/// A bound a render ran into while writing its output.
#[derive(Debug, Clone, Copy)]
enum Exceeded {
    Size,
    Deadline,
}

impl Exceeded {
    fn message(self) -> String {
        match self {
            Exceeded::Size => format!(
                "the rendered prompt would be longer than {MAX_PROMPT_BYTES} bytes (MAX_PROMPT_BYTES); \
                 select less in the template"
            ),
            Exceeded::Deadline => "the render was stopped at the step's deadline (the default PromptAssemble \
                 deadline, DEFAULT_PROMPT_DEADLINE, unless the caller set one); make the template do less"
                .to_owned(),
        }
    }
}

/// The render's output: refuses a write past [`MAX_PROMPT_BYTES`] or after the deadline (read
/// every 64 writes), which stops the render at its next write.
struct BoundedOutput {
    text: Vec<u8>,
    deadline: Option<Instant>,
    writes: u32,
    exceeded: Option<Exceeded>,
}

impl io::Write for BoundedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes = self.writes.wrapping_add(1);
        let late = self.writes.is_multiple_of(64) && self.deadline.is_some_and(|d| Instant::now() >= d);
        let exceeded = if late {
            Some(Exceeded::Deadline)
        } else if self.text.len() + buf.len() > MAX_PROMPT_BYTES {
            Some(Exceeded::Size)
        } else {
            None
        };
        if let Some(bound) = exceeded {
            self.exceeded = Some(bound);
            return Err(io::Error::other(bound.message()));
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that refuses to grow past [`MAX_SERIALIZED_BYTES`].
#[derive(Default)]
struct Capped(String);

impl std::fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > MAX_SERIALIZED_BYTES {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let s = std::str::from_utf8(buf).map_err(io::Error::other)?;
        self.write_str(s).map_err(|_| io::Error::other("too long"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn too_long(filter: &str) -> minijinja::Error {
    minijinja::Error::new(
        ErrorKind::InvalidOperation,
        format!("`{filter}` would make more than {MAX_SERIALIZED_BYTES} bytes of one value (MAX_SERIALIZED_BYTES)"),
    )
}

/// `tojson`, as minijinja's (one line, `", "` and `": "` separators; `indent=N` pretty-prints)
/// but without HTML escapes (a prompt is text), stopping at [`MAX_SERIALIZED_BYTES`].
fn bounded_tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, minijinja::Error> {
    let indent = match indent.or(kwargs.get::<Option<Value>>("indent")?) {
        None => None,
        Some(v) => match bool::try_from(v.clone()) {
            Ok(true) => Some(2),
            Ok(false) => None,
            Err(_) => Some(usize::try_from(v)?),
        },
    };
    kwargs.assert_all_used()?;
    let mut out = Capped::default();
    let written = match indent {
        Some(n) => {
            let pad = vec![b' '; n.min(16)];
            let formatter = serde_json::ser::PrettyFormatter::with_indent(&pad);
            serde::Serialize::serialize(value, &mut serde_json::Serializer::with_formatter(&mut out, formatter))
        }
        None => serde::Serialize::serialize(value, &mut serde_json::Serializer::with_formatter(&mut out, Spaced)),
    };
    written.map_err(|_| too_long("tojson"))?;
    Ok(Value::from_safe_string(out.0))
}

/// serde_json's compact layout with a space after `,` and `:`, as minijinja's `tojson` writes.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// `pprint`, as minijinja's, stopping at [`MAX_SERIALIZED_BYTES`].
fn bounded_pprint(value: &Value) -> Result<String, minijinja::Error> {
    let mut out = Capped::default();
    write!(out, "{value:#?}").map_err(|_| too_long("pprint"))?;
    Ok(out.0)
}

/// `template error at line L, column C: <what>`, with the offending source when minijinja
/// knows its span.
fn template_error(template: &str, e: &minijinja::Error) -> HandlerError {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None if e.kind() == ErrorKind::OutOfFuel => format!(
            "{} (the render's fuel budget, DEFAULT_FUEL unless the caller set another, counts \
             instructions and the bytes and list slots built); make the template do less",
            e.kind()
        ),
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
