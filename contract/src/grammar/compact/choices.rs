//! [`Choices`]: what a model chose, read from its compact answer, and the plan planlock writes
//! of them with the typestate builder (CONTRACT §19: the model chooses, the contract writes).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::frame::{PlanFrame, QUESTION_VAR};
use super::rules::{exists, form_steps};
use super::table::{MAX_TEXT_CHARS, ModelField, model_fields, needs};
use crate::builder::PlanBuilder;
use crate::contract::problem::{Problem, ProblemCode, Rejection};
use crate::contract::registry::StepType;
use crate::contract::schema::*;
use crate::contract::value::{AnyObject, PositiveInt};
use crate::grammar::step_id;
use crate::hash::Digest;
use crate::json::pointer::JsonPointer;
use crate::text::printable;
use crate::validate::ValidPlan;

/// What a model chose for one plan: the optional steps, and the texts of the steps it writes
/// something of. Read with [`Choices::read`], written into a plan with [`Choices::plan`].
///
/// ```
/// use planlock_contract::grammar::{Choices, GrammarRequest, PlanFrame};
/// use planlock_contract::StepType;
/// let frame = PlanFrame::new(GrammarRequest::new());
/// let answer = r#"{"ContextSelect":{"question":"How do I rotate the key?"},"RetrieveMemory":{},
///     "PersistDecision":{"text":"Rotate every 90 days","strength":"must"},
///     "PersistEvidence":{"summary":"The 2026 audit"},"LinkDecisionEvidence":{}}"#;
/// let choices = Choices::read(answer, &frame)?;
/// let plan = choices.plan(&frame, "rotate the key, and record the rule")?;
/// let types: Vec<StepType> = plan.steps().iter().map(|s| s.step_type()).collect();
/// assert_eq!(types.len(), 8);
/// // The link names the decision and the evidence the same plan persists.
/// let link = serde_json::to_value(&plan.steps()[6].payload).unwrap();
/// let decision = serde_json::to_value(&plan.steps()[4].payload).unwrap();
/// assert_eq!(link["decisionId"], decision["decision"]["id"]);
/// # Ok::<(), planlock_contract::Rejection>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choices {
    chosen: Vec<StepType>,
    texts: BTreeMap<(StepType, String), String>,
}

impl Choices {
    /// The choices in what a model wrote: its JSON object (from the first `{` to the last `}`
    /// when it wrote prose around it), read by the validator's strict parser, each step of the
    /// form an object of its texts (or `null`: not chosen). At most [`MAX_PLAN_BYTES`]
    /// (`too-large` past it). Every problem is reported, each with a JSON Pointer into the answer.
    ///
    /// [`MAX_PLAN_BYTES`]: crate::json::MAX_PLAN_BYTES
    pub fn read(written: &str, frame: &PlanFrame) -> Result<Choices, Rejection> {
        let within = match (written.find('{'), written.rfind('}')) {
            (Some(start), Some(end)) if start < end => &written[start..=end],
            _ => written,
        };
        // An answer is bounded as a plan is: a choice of steps and a few texts is far smaller.
        if within.len() > crate::json::MAX_PLAN_BYTES {
            return Err(crate::validate::too_large_rejection(within.len()));
        }
        let (parsed, problems) = crate::contract::strict::parse_strict(within.as_bytes());
        match parsed {
            Ok(_) if !problems.is_empty() => Err(Rejection::new(problems)),
            Ok(value) => Choices::from_value(&value, frame),
            Err(problem) => Err(Rejection::new(vec![problem])),
        }
    }

    /// The choices in an answer already read as JSON (by a strict parser: a key written twice
    /// must have been refused there).
    pub fn from_value(value: &Value, frame: &PlanFrame) -> Result<Choices, Rejection> {
        let Value::Object(object) = value else {
            return Err(Rejection::new(vec![Problem::wrong_type(String::new(), "an object", value)]));
        };
        let mut problems = Vec::new();
        let choices = read_object(object, frame, &mut problems);
        if problems.is_empty() { Ok(choices) } else { Err(Rejection::new(problems)) }
    }

    /// Whether the model chose a step of type `ty` (the mandatory steps always).
    pub fn has(&self, ty: StepType) -> bool {
        ty.is_mandatory() || self.chosen.contains(&ty)
    }

    /// The text the model wrote under `key` of step `ty`, if any.
    pub fn text(&self, ty: StepType, key: &str) -> Option<&str> {
        self.texts.get(&(ty, key.to_owned())).map(String::as_str)
    }

    /// The plan of these choices in `frame`, for `goal`: written with the typestate builder
    /// (step ids, the profile's mode and `topK`, keywords, ids of what it persists — derived from
    /// the goal and the texts, so the same answer gives the same plan — and the references
    /// between its steps), and validated by `build` like any plan.
    pub fn plan(&self, frame: &PlanFrame, goal: &str) -> Result<ValidPlan, Rejection> {
        let question = self.text(StepType::ContextSelect, "question").unwrap_or(goal).to_owned();
        let (mode, top_k) = frame.chosen_mode();
        let text = |ty, key| self.text(ty, key).unwrap_or_default().to_owned();
        let decision_id =
            self.has(StepType::PersistDecision).then(|| record_id("d", goal, &text(StepType::PersistDecision, "text")));
        let evidence_id = self
            .has(StepType::PersistEvidence)
            .then(|| record_id("e", goal, &text(StepType::PersistEvidence, "summary")));
        let link = match (
            decision_id.clone().or_else(|| frame.existing_decision.clone()),
            evidence_id.clone().or_else(|| frame.existing_evidence.clone()),
        ) {
            (Some(decision_id), Some(evidence_id)) if self.has(StepType::LinkDecisionEvidence) => {
                Some(LinkDecisionEvidencePayload { decision_id, evidence_id })
            }
            _ => None,
        };
        let summary = text(StepType::PersistMemory, "summary");
        PlanBuilder::new(frame.profile(), mode)
            .top_k(top_k)
            .maybe_repo_scan(
                step_id(StepType::RepoScan),
                self.has(StepType::RepoScan).then(|| RepoScanPayload { repo_path: frame.repo_path.clone() }),
            )
            .context_select(
                step_id(StepType::ContextSelect),
                ContextSelectPayload { input: question.clone(), sources: self.sources() },
            )
            .maybe_retrieve_memory(
                step_id(StepType::RetrieveMemory),
                self.has(StepType::RetrieveMemory).then(|| question.clone()),
            )
            .maybe_retrieve_decision_context(
                step_id(StepType::RetrieveDecisionContext),
                self.has(StepType::RetrieveDecisionContext)
                    .then(|| RetrieveDecisionContextPayload { input: question.clone(), current_domain: None }),
            )
            .prompt_assemble(
                step_id(StepType::PromptAssemble),
                PromptAssemblePayload { template: frame.template(), vars: self.vars(frame, &question) },
            )
            .llm_call(
                step_id(StepType::LLMCall),
                LlmCallPayload { prompt: frame.instruction.clone(), config: AnyObject::new() },
            )
            .maybe_summarize_memory(
                step_id(StepType::SummarizeMemory),
                self.has(StepType::SummarizeMemory).then(|| SummarizeMemoryPayload { response: question.clone() }),
            )
            .maybe_persist_memory(
                step_id(StepType::PersistMemory),
                self.has(StepType::PersistMemory).then(|| PersistMemoryPayload {
                    keywords: keywords(&summary),
                    session_ref: frame.session_ref.clone(),
                    summary: summary.clone(),
                }),
            )
            .maybe_persist_decision(
                step_id(StepType::PersistDecision),
                decision_id.map(|id| PersistDecisionPayload {
                    decision: Decision {
                        root_id: id.clone(),
                        id,
                        is_active: true,
                        previous_version_id: None,
                        scope: "global".to_owned(),
                        strength: text(StepType::PersistDecision, "strength"),
                        text: text(StepType::PersistDecision, "text"),
                        version: PositiveInt::MIN,
                    },
                }),
            )
            .maybe_persist_evidence(
                step_id(StepType::PersistEvidence),
                evidence_id.map(|id| PersistEvidencePayload {
                    evidence: Evidence {
                        id,
                        source: frame.evidence_source.clone(),
                        summary: text(StepType::PersistEvidence, "summary"),
                    },
                }),
            )
            .maybe_link_decision_evidence(step_id(StepType::LinkDecisionEvidence), link)
            .persist_session(
                step_id(StepType::PersistSession),
                PersistSessionPayload { meta: goal_meta(goal), session_ref: frame.session_ref.clone() },
            )
            .build()
    }

    /// `ContextSelect`'s sources: the goal, and what the chosen retrieval steps bring.
    fn sources(&self) -> Vec<String> {
        let from = [
            (StepType::RepoScan, "repo"),
            (StepType::RetrieveMemory, "memory"),
            (StepType::RetrieveDecisionContext, "decisions"),
        ];
        let chosen = from.iter().filter(|(ty, _)| self.has(*ty)).map(|(_, s)| (*s).to_owned());
        std::iter::once("goal".to_owned()).chain(chosen).collect()
    }

    /// `PromptAssemble`'s variables: the question, and the others as the model wrote them.
    fn vars(&self, frame: &PlanFrame, question: &str) -> AnyObject {
        let mut vars = Map::new();
        vars.insert(QUESTION_VAR.to_owned(), Value::String(question.to_owned()));
        for key in frame.other_vars() {
            let text = self.text(StepType::PromptAssemble, &format!("vars/{key}")).unwrap_or_default();
            vars.insert(key, Value::String(text.to_owned()));
        }
        AnyObject(vars)
    }
}

/// The choices in the answer's object, its problems into `problems`.
fn read_object(object: &Map<String, Value>, frame: &PlanFrame, problems: &mut Vec<Problem>) -> Choices {
    let steps = form_steps(frame);
    let root = JsonPointer::new();
    let mut choices = Choices { chosen: Vec::new(), texts: BTreeMap::new() };
    for key in object.keys() {
        if !steps.iter().any(|ty| ty.wire_name() == key) {
            let allowed: Vec<&str> = steps.iter().map(|ty| ty.wire_name()).collect();
            problems.push(Problem::unknown_field(&root, &printable(key), &allowed));
        }
    }
    for ty in &steps {
        let mut at = JsonPointer::new();
        at.push_key(ty.wire_name());
        match object.get(ty.wire_name()) {
            None | Some(Value::Null) if ty.is_mandatory() => {
                problems.push(Problem::missing_field(&root, ty.wire_name()))
            }
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) => {
                choices.chosen.push(*ty);
                read_fields(*ty, fields, frame, &mut at, &mut choices, problems);
            }
            Some(other) => problems.push(Problem::wrong_type(at.pointer(), "an object (or null: not chosen)", other)),
        }
    }
    for ty in &choices.chosen {
        for need in needs(*ty) {
            if !exists(frame, *need) && !choices.chosen.contains(&need.provider()) {
                problems.push(Problem::new(
                    ProblemCode::InvalidValue,
                    format!("/{}", ty.wire_name()),
                    format!(
                        "`{ty}` needs `{}` in the same plan (or the frame's existing one); choose it or leave `{ty}` out",
                        need.provider()
                    ),
                ));
            }
        }
    }
    choices
}

/// A chosen step's texts, as the table says.
fn read_fields(
    ty: StepType,
    fields: &Map<String, Value>,
    frame: &PlanFrame,
    at: &mut JsonPointer<'_>,
    choices: &mut Choices,
    problems: &mut Vec<Problem>,
) {
    let other_vars = frame.other_vars();
    let mut allowed: Vec<&str> = Vec::new();
    for field in model_fields(ty) {
        match field {
            ModelField::Text { key, max } => {
                allowed.push(key);
                if let Some(text) = read_text(fields, key, *max, at, problems) {
                    choices.texts.insert((ty, (*key).to_owned()), text);
                }
            }
            ModelField::Vars if other_vars.is_empty() => {}
            ModelField::Vars => {
                allowed.push("vars");
                match fields.get("vars") {
                    Some(Value::Object(vars)) => {
                        at.push_key("vars");
                        let names: Vec<&str> = other_vars.iter().map(String::as_str).collect();
                        for key in vars.keys().filter(|k| !names.contains(&k.as_str())) {
                            problems.push(Problem::unknown_field(at, &printable(key), &names));
                        }
                        for key in &other_vars {
                            if let Some(text) = read_text(vars, key, MAX_TEXT_CHARS, at, problems) {
                                choices.texts.insert((ty, format!("vars/{key}")), text);
                            }
                        }
                        at.pop();
                    }
                    Some(other) => problems.push(Problem::wrong_type(at.child("vars"), "an object", other)),
                    None => problems.push(Problem::missing_field(at, "vars")),
                }
            }
        }
    }
    for key in fields.keys().filter(|k| !allowed.contains(&k.as_str())) {
        problems.push(Problem::unknown_field(at, &printable(key), &allowed));
    }
}

/// The text under `key`: a string of 1 to `max` characters.
fn read_text(
    fields: &Map<String, Value>,
    key: &str,
    max: u32,
    at: &JsonPointer<'_>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match fields.get(key) {
        Some(Value::String(text)) if (1..=max as usize).contains(&text.chars().count()) => Some(text.clone()),
        Some(Value::String(_)) => {
            let message = format!("`{}` holds 1 to {max} characters", printable(key));
            problems.push(Problem::new(ProblemCode::InvalidValue, at.child(key), message));
            None
        }
        Some(other) => {
            problems.push(Problem::wrong_type(at.child(key), "a string", other));
            None
        }
        None => {
            problems.push(Problem::missing_field(at, key));
            None
        }
    }
}

/// The id of a record the plan persists: `prefix-` and 16 hex digits of the goal and the
/// record's text, so the same answer gives the same plan (and plan hash).
fn record_id(prefix: &str, goal: &str, text: &str) -> String {
    let digest = Digest::of(format!("{prefix}\n{goal}\n{text}").as_bytes()).to_string();
    format!("{prefix}-{}", &digest[..16])
}

/// A memory's keywords: its words of four letters or more, lowercased, each once, at most five.
fn keywords(summary: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in summary.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 3) {
        let word = word.to_lowercase();
        if !out.contains(&word) && out.len() < 5 {
            out.push(word);
        }
    }
    out
}

/// `PersistSession`'s `meta`: the goal the plan was written for (its first 256 characters).
fn goal_meta(goal: &str) -> AnyObject {
    let mut meta = Map::new();
    meta.insert("goal".to_owned(), Value::String(goal.chars().take(256).collect()));
    AnyObject(meta)
}
