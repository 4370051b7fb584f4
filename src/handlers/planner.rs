//! [`ModelPlanner`]: a [`PolicyInterpreter`] that asks a model on an OpenAI-compatible server to
//! plan for a goal (CONTRACT §19), at temperature 0 with a seed, then validates what comes back:
//! the validator stays the gate.
//!
//! By default the model writes the compact form (`planlock::grammar::Choices`): which optional
//! steps the plan has and the free texts, constrained by the compact grammar; planlock writes
//! the plan of those choices with the typestate builder (ids, keys, the profile's mode and
//! `topK`, the references between steps) through a [`PlanFrame`]. [`ModelPlanner::whole_plan`]
//! asks for the whole plan document instead, with the grammar of valid plans. Either way a
//! server that ignores the grammar (llama.cpp's server carries on unconstrained when a grammar
//! fails to parse) is caught when the answer is read ([`PlanError::Rejected`]), and nothing it
//! wrote runs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{Client, ModelError};
use super::openai::chat;
use crate::contract::problem::Rejection;
use crate::contract::registry::{Failure, FailureKind, REGISTRY};
use crate::grammar::{
    Choices, GrammarFormat, GrammarRequest, PlanFrame, compact_grammar, compact_instructions, grammar,
    remove_optional_nulls,
};
use crate::validate::{PolicyInterpreter, ValidPlan};

/// How the request constrains what the model writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraint {
    /// The GBNF grammar in the request's `grammar` field (llama.cpp's server and
    /// llama-cpp-python's): every text it allows is a valid plan (or, compact, choices whose
    /// plan is valid).
    Grammar,
    /// The strict JSON Schema profile as `response_format` (OpenAI strict mode, vLLM, SGLang):
    /// the shape only; the order of the steps is the validator's to check.
    JsonSchema,
    /// Nothing: the model writes what it likes (to measure what the grammar buys).
    Unconstrained,
}

impl Constraint {
    /// Every constraint, by its command-line name.
    pub const ALL: [(&'static str, Constraint); 3] = [
        ("grammar", Constraint::Grammar),
        ("json-schema", Constraint::JsonSchema),
        ("none", Constraint::Unconstrained),
    ];
}

/// Why no plan came back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The model server failed (its code and class are the model call's).
    #[error("asking the model for a plan failed: {0}")]
    Model(#[from] ModelError),
    /// The answer is not one JSON object.
    #[error("the model's answer is not a JSON plan ({reason}); it began: {start}")]
    NotJson {
        /// Why it does not read.
        reason: String,
        /// Its first characters, escaped.
        start: String,
    },
    /// The validator refused the plan: nothing of it runs.
    #[error("the validator refused the model's plan: {0}")]
    Rejected(Rejection),
    /// No grammar could be made for the request (the plan schema has what the generator does
    /// not know).
    #[error("{0}")]
    Grammar(#[from] crate::grammar::GrammarError),
}

impl Failure for PlanError {
    /// `plan-not-json`, `plan-rejected`, `grammar`, or the model call's code.
    fn code(&self) -> &'static str {
        match self {
            PlanError::Model(e) => e.code(),
            PlanError::NotJson { .. } => "plan-not-json",
            PlanError::Rejected(_) => "plan-rejected",
            PlanError::Grammar(_) => "grammar",
        }
    }

    /// The model call's class; CycleFail for a plan that does not read or is refused (asking
    /// again may do better).
    fn kind(&self) -> FailureKind {
        match self {
            PlanError::Model(e) => e.kind(),
            PlanError::NotJson { .. } | PlanError::Rejected(_) => FailureKind::CycleFail,
            // A build of planlock that cannot describe its own plans: nothing to retry.
            PlanError::Grammar(_) => FailureKind::FailFast,
        }
    }
}

/// What a model wrote when asked, unchecked.
#[derive(Debug, Clone)]
pub struct Asked {
    /// What it wrote, as it wrote it: the compact choices, or with
    /// [`whole_plan`](ModelPlanner::whole_plan) the plan document.
    pub written: String,
    /// The model that answered, as the server named it.
    pub model: Option<String>,
    /// The tokens the server reported: the prompt's and the answer's.
    pub tokens: (Option<u64>, Option<u64>),
    /// How long the request took.
    pub elapsed: Duration,
}

/// A plan the model wrote, validated.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The plan.
    pub plan: ValidPlan,
    /// How it was asked for and what came back.
    pub asked: Asked,
}

/// Asks a model for a plan; see the [module docs](self).
///
/// ```no_run
/// use planlock::grammar::GrammarRequest;
/// use planlock::handlers::ModelPlanner;
/// let planner = ModelPlanner::new("http://127.0.0.1:8080/v1", "smollm2")
///     .request(GrammarRequest::new().vars(["question", "context"]));
/// let planned = planner.plan_blocking("answer how to rotate the API key, and remember it")?;
/// println!("{}", planned.plan.to_json());
/// # Ok::<(), planlock::handlers::PlanError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ModelPlanner {
    client: Client,
    base_url: String,
    model: String,
    frame: PlanFrame,
    whole_plan: bool,
    constraint: Constraint,
    seed: u32,
    max_tokens: u32,
    timeout: Duration,
}

impl ModelPlanner {
    /// A planner asking `model` at `base_url` (`…/v1`) for the compact choices, with their
    /// grammar and the default [`PlanFrame`], sending the API key in `OPENAI_API_KEY` if it is set
    /// (as `OpenAiModel` does).
    pub fn new(base_url: &str, model: impl Into<String>) -> ModelPlanner {
        let key = std::env::var(super::openai::DEFAULT_API_KEY_ENV).ok().filter(|k| !k.is_empty());
        ModelPlanner {
            client: client(base_url, key),
            base_url: base_url.to_owned(),
            model: model.into(),
            frame: PlanFrame::default(),
            whole_plan: false,
            constraint: Constraint::Grammar,
            seed: 0,
            max_tokens: 1536,
            timeout: Duration::from_secs(300),
        }
    }

    /// Sends `key` as the bearer token (never shown: the server's answers are scrubbed of it).
    pub fn api_key(mut self, key: impl Into<String>) -> ModelPlanner {
        self.client = client(&self.base_url, Some(key.into()));
        self
    }

    /// Plans for `request` (a profile, the template's variables), in a frame of its defaults:
    /// the grammar says them.
    pub fn request(mut self, request: GrammarRequest) -> ModelPlanner {
        self.frame = PlanFrame::new(request);
        self
    }

    /// Plans in `frame`: what planlock writes around the model's choices (the session's
    /// reference, the template, the decision and evidence that exist, …).
    pub fn frame(mut self, frame: PlanFrame) -> ModelPlanner {
        self.frame = frame;
        self
    }

    /// Asks for the whole plan document, with the grammar of valid plans, instead of the
    /// compact choices (default `false`): about three times the tokens to write.
    pub fn whole_plan(mut self, whole: bool) -> ModelPlanner {
        self.whole_plan = whole;
        self
    }

    /// How the request constrains the model (default: the grammar).
    pub fn constraint(mut self, constraint: Constraint) -> ModelPlanner {
        self.constraint = constraint;
        self
    }

    /// The request's seed (default 0): with temperature 0, the same goal gets the same plan.
    pub fn seed(mut self, seed: u32) -> ModelPlanner {
        self.seed = seed;
        self
    }

    /// The most tokens the model may write (default 1,536: compact choices take 30 to 150, a
    /// whole plan 300 to 800).
    pub fn max_tokens(mut self, max_tokens: u32) -> ModelPlanner {
        self.max_tokens = max_tokens;
        self
    }

    /// How long the request may take (default 300 s).
    pub fn timeout(mut self, timeout: Duration) -> ModelPlanner {
        self.timeout = timeout;
        self
    }

    /// The request's body for `goal`.
    fn body(&self, goal: &str) -> Result<Value, PlanError> {
        let told = if self.whole_plan { instructions() } else { compact_instructions(&self.frame) };
        let mut body = json!({
            "model": self.model,
            "messages": [
                { "role": "system", "content": told },
                { "role": "user", "content": format!("Goal: {goal}") },
            ],
            "temperature": 0,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        });
        let format = match self.constraint {
            Constraint::Grammar => GrammarFormat::Gbnf,
            Constraint::JsonSchema => GrammarFormat::JsonSchema,
            Constraint::Unconstrained => return Ok(body),
        };
        let text = if self.whole_plan {
            grammar(self.frame.request(), format)?
        } else {
            compact_grammar(&self.frame, format)?
        };
        match format {
            GrammarFormat::Gbnf => body["grammar"] = Value::String(text),
            _ => {
                let schema: Value = serde_json::from_str(&text).unwrap_or_default();
                let name = if self.whole_plan { "ExecutionPlan" } else { "PlanChoices" };
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": { "name": name, "strict": true, "schema": schema },
                });
            }
        }
        Ok(body)
    }

    /// Asks the model for a plan for `goal`: what it wrote, unchecked.
    pub async fn ask(&self, goal: &str) -> Result<Asked, PlanError> {
        let started = Instant::now();
        let body = self.body(goal)?;
        let answer = chat(&self.client, self.client.post(&body, self.timeout)).await?;
        let tokens = answer.usage.as_ref().map_or((None, None), |u| (u.prompt_tokens, u.completion_tokens));
        Ok(Asked { written: answer.text, model: answer.model, tokens, elapsed: started.elapsed() })
    }

    /// What a model wrote for `goal`, as a plan: the plan of its compact choices (written in
    /// the frame), or with [`whole_plan`](Self::whole_plan) its plan document (the optional nulls
    /// of the strict schema out); validated either way.
    pub fn check(&self, goal: &str, written: &str) -> Result<ValidPlan, PlanError> {
        let document = self.document(written)?;
        if self.whole_plan {
            return ValidPlan::from_value(&document).map_err(PlanError::Rejected);
        }
        let choices = Choices::from_value(&document, &self.frame).map_err(PlanError::Rejected)?;
        choices.plan(&self.frame, goal).map_err(PlanError::Rejected)
    }

    /// The plan document in what a model wrote: its JSON object, the optional nulls of the strict
    /// schema out.
    fn document(&self, written: &str) -> Result<Value, PlanError> {
        let mut value = read_plan(written)?;
        // The strict schema of the choices writes null for a step not chosen, which they read.
        if self.whole_plan && self.constraint == Constraint::JsonSchema {
            remove_optional_nulls(&mut value);
        }
        Ok(value)
    }

    /// Asks the model for a plan for `goal` and validates it.
    pub async fn plan(&self, goal: &str) -> Result<Planned, PlanError> {
        let asked = self.ask(goal).await?;
        let plan = self.check(goal, &asked.written)?;
        Ok(Planned { plan, asked })
    }

    /// [`plan`](Self::plan) from synchronous code.
    pub fn plan_blocking(&self, goal: &str) -> Result<Planned, PlanError> {
        crate::io::block_on(self.plan(goal))
    }

    /// [`ask`](Self::ask) from synchronous code.
    pub fn ask_blocking(&self, goal: &str) -> Result<Asked, PlanError> {
        crate::io::block_on(self.ask(goal))
    }
}

/// What the model is told: the task, and the steps in their order, from the registry.
fn instructions() -> String {
    let steps: Vec<String> = REGISTRY
        .iter()
        .map(|s| format!("{} ({})", s.wire_name, if s.mandatory { "mandatory" } else { "optional" }))
        .collect();
    format!(
        "You write one planlock execution plan, contract version 1, as a JSON object and nothing else. \
         Its steps come in this order, each type at most once: {}. Choose the optional steps the goal needs.",
        steps.join(", ")
    )
}

/// The JSON object in what the model wrote: the text itself, or (unconstrained, in prose or a
/// code fence) from its first `{` to its last `}`. Read by the validator's own strict parser
/// (CONTRACT §19: judged exactly as `validate` judges it), so a key written twice or a lone
/// surrogate is refused here as there, never read as its last value.
fn read_plan(text: &str) -> Result<Value, PlanError> {
    let within = match (text.find('{'), text.rfind('}')) {
        (Some(start), Some(end)) if start < end => &text[start..=end],
        _ => text,
    };
    let (parsed, problems) = crate::contract::strict::parse_strict(within.as_bytes());
    match parsed {
        Ok(_) if !problems.is_empty() => Err(PlanError::Rejected(crate::contract::problem::Rejection::new(problems))),
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err(PlanError::NotJson { reason: "not a JSON object".into(), start: super::http::start_of(text) }),
        Err(problem) => {
            Err(PlanError::NotJson { reason: problem.message().to_owned(), start: super::http::start_of(text) })
        }
    }
}

impl PolicyInterpreter for ModelPlanner {
    /// The plan the model plans for the situation's `goal` (or the whole situation, as JSON):
    /// the plan of its choices, or the plan document it wrote (its optional nulls out) with
    /// [`whole_plan`](ModelPlanner::whole_plan); `null` if it wrote nothing readable or the call
    /// failed, which the validator refuses ([`plan`](ModelPlanner::plan) says why).
    fn produce(&self, _policy_ref: &str, situation: &Value) -> Value {
        let goal = situation["goal"].as_str().map_or_else(|| situation.to_string(), str::to_owned);
        let Ok(asked) = self.ask_blocking(&goal) else { return Value::Null };
        if self.whole_plan {
            return self.document(&asked.written).unwrap_or(Value::Null);
        }
        self.check(&goal, &asked.written)
            .ok()
            .and_then(|plan| serde_json::from_str(&plan.to_json()).ok())
            .unwrap_or(Value::Null)
    }
}

/// A client of the server's chat completions.
fn client(base_url: &str, key: Option<String>) -> Client {
    Client::new(base_url, "chat/completions", key.map(std::sync::Arc::from), Duration::from_secs(5))
}
