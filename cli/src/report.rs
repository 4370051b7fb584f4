//! What `run` and `resume` report, as typed structs: serialized as one JSON object, or written as
//! text lines.

use planlock::Problem;
use planlock::session::InterventionRecord;
use serde::Serialize;

use crate::output::{Report, Text, line};

/// Why a record of a paused cycle is a leftover, as `run`, `resume` and `status` say it.
pub const LEFTOVER_WHY: &str = "its cycle had completed (a resume was stopped after saving the session, before removing the \
     record); nothing was run again";

/// A leftover record of a paused cycle: a resume that completed its cycle and was stopped before
/// removing the record.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leftover {
    pub cycle: u64,
    pub step_id: String,
    why: &'static str,
}

impl Leftover {
    /// The leftover `record`.
    pub fn of(record: &InterventionRecord) -> Leftover {
        Leftover { cycle: record.cycle, step_id: record.step_id.clone(), why: LEFTOVER_WHY }
    }
}

/// The model a cycle asked.
#[derive(Serialize, Clone)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ModelInfo {
    /// The offline demo model.
    Demo,
    /// An OpenAI-compatible server.
    #[serde(rename_all = "camelCase")]
    Openai {
        model: String,
        /// The URL without credentials.
        url: String,
        /// The tokens the server reported for this cycle.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Whether `model` is the plan's `config.model`, which wins over `--llm-model`.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        named_by_plan: bool,
    },
}

/// Tokens a server reported.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The embedder of a bundle whose providers rank by meaning.
#[derive(Serialize, Clone)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum EmbedderInfo {
    /// The offline demo embedder: words hashed, not a model.
    Demo { model: &'static str, dimension: usize },
    /// An OpenAI-compatible embeddings server.
    Openai { model: String, url: String, dimension: usize },
}

/// One step of the plan and what became of it in this cycle.
#[derive(Serialize)]
pub struct StepStatus {
    pub id: String,
    #[serde(rename = "type")]
    pub step_type: &'static str,
    /// `completed`, `blocked`, `failed` or `not-run`.
    pub status: &'static str,
}

/// Boot's cleanup, when it removed a leftover record.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootCleanup {
    /// The record of a finished resume that boot removed (a crash had left it).
    pub removed_record: Leftover,
}

/// What `run` and `resume` report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// `cold`, `resume` or `paused`; null when boot failed.
    pub boot: Option<&'static str>,
    /// Null when the run stopped before choosing.
    pub model: Option<ModelInfo>,
    /// Only when the bundle ranks by meaning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder: Option<EmbedderInfo>,
    /// `completed`, `InterventionRequired`, `CycleFail`, `FailFast` or `error`.
    pub outcome: &'static str,
    pub hash: Option<String>,
    pub cycle: Option<u64>,
    pub steps: Vec<StepStatus>,
    pub error: Option<String>,
    /// The failure's stable code, beside `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<&'static str>,
    pub problems: Vec<Problem>,
    pub intervention: Option<InterventionRecord>,
    /// The paused cycle a rejection abandoned in this run (gone: it cannot be resumed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<InterventionRecord>,
    /// Only when boot removed the record a finished resume left behind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_cleanup: Option<BootCleanup>,
    /// With a pause: the command that decides on it under the installed rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_decide: Option<String>,
}

impl RunReport {
    /// The report of a run that stopped before its cycle: `outcome` is the failure's class, or
    /// `error` for usage and I/O.
    pub fn failed(outcome: &'static str, code: &'static str, error: String) -> RunReport {
        RunReport {
            boot: None,
            model: None,
            embedder: None,
            outcome,
            hash: None,
            cycle: None,
            steps: vec![],
            error: Some(error),
            error_code: Some(code),
            problems: vec![],
            intervention: None,
            abandoned: None,
            boot_cleanup: None,
            to_decide: None,
        }
    }
}

impl Report for RunReport {
    fn text(&self, out: &mut Text) {
        if let Some(b) = self.boot {
            line!(out, "boot: {b}");
        }
        if let Some(BootCleanup { removed_record: r }) = &self.boot_cleanup {
            line!(out, "boot removed the record of cycle {} (step `{}`): {LEFTOVER_WHY}", r.cycle, r.step_id);
        }
        match &self.model {
            Some(ModelInfo::Openai { model, url, usage, named_by_plan }) => {
                let by_plan = if *named_by_plan { " (named by the plan's config.model, over --llm-model)" } else { "" };
                match usage {
                    Some(u) => line!(
                        out,
                        "model: {model} at {url}{by_plan} ({} input and {} output tokens)",
                        u.input_tokens,
                        u.output_tokens
                    ),
                    None => line!(out, "model: {model} at {url}{by_plan}"),
                }
            }
            Some(ModelInfo::Demo) => {
                line!(out, "model: the offline demo model (pass --llm-url and --llm-model for a real one)")
            }
            None => {}
        }
        match &self.embedder {
            Some(EmbedderInfo::Openai { model, url, dimension }) => {
                line!(out, "embedder: {model} at {url} ({dimension} dimensions)")
            }
            Some(EmbedderInfo::Demo { .. }) => line!(
                out,
                "embedder: the offline demo embedder, words hashed, not a model (pass --embed-url and --embed-model for a real one)"
            ),
            None => {}
        }
        for s in &self.steps {
            line!(out, "  {:<10} {:<24} {}", s.id, s.step_type, s.status);
        }
        match self.cycle {
            Some(cycle) => line!(out, "outcome: {} (cycle {cycle})", self.outcome),
            None => line!(out, "outcome: {}", self.outcome),
        }
        if let Some(e) = &self.error {
            line!(out, "error: {e}");
        }
        for p in &self.problems {
            line!(out, "  {p}");
        }
        if let Some(a) = &self.abandoned {
            line!(
                out,
                "abandoned: cycle {} (paused at step `{}`) is given up; to go on: planlock run again (same --root, --policy-root and plan) runs cycle {} anew",
                a.cycle,
                a.step_id,
                a.cycle
            );
        }
        if let Some(i) = &self.intervention {
            line!(out, "paused: validator `{}` blocked step `{}`: {}", i.validator.id, i.step_id, i.reason);
            match &self.to_decide {
                Some(command) => line!(out, "to decide: {command} (or `inbox reject`, the same way)"),
                None => {
                    line!(out, "to decide: planlock inbox approve --by NAME --reason TEXT SESSION (or `inbox reject`)")
                }
            }
            line!(out, "then run again (same --policy-root and plan) to act on the decision, or planlock abandon");
        }
    }
}
