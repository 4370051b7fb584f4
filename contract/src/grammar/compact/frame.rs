//! [`PlanFrame`]: what planlock writes into every plan a model chooses the steps of — the
//! profile and its mode, the template, the model's instruction, the session's reference, where
//! the repository is, and the decision and evidence that exist already.

use super::super::GrammarRequest;

/// The session reference a frame writes when none is given.
pub const DEFAULT_SESSION_REF: &str = "planlock";

/// The model's instruction (`LLMCall`'s `prompt`) a frame writes when none is given.
pub const DEFAULT_INSTRUCTION: &str = "Answer the question with the context given, briefly.";

/// The variable that holds the model's question in every plan a frame writes.
pub const QUESTION_VAR: &str = "question";

/// What planlock writes around a model's choices ([`Choices::plan`](super::Choices::plan)):
/// the profile and its mode, the template, the model's instruction, the session's reference,
/// where the repository is, and the decision and evidence that exist already.
///
/// ```
/// use planlock_contract::grammar::{GrammarRequest, PlanFrame};
/// let frame = PlanFrame::new(GrammarRequest::new().vars(["question", "context"]))
///     .session_ref("support-7")
///     .existing_decision("d-1");
/// assert_eq!(frame.template(), "question: {{ question }}\ncontext: {{ context }}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFrame {
    pub(crate) request: GrammarRequest,
    pub(super) mode: Option<String>,
    pub(super) session_ref: String,
    pub(super) template: Option<String>,
    pub(super) instruction: String,
    pub(super) repo_path: String,
    pub(super) evidence_source: String,
    pub(crate) existing_decision: Option<String>,
    pub(crate) existing_evidence: Option<String>,
}

impl Default for PlanFrame {
    fn default() -> PlanFrame {
        PlanFrame::new(GrammarRequest::new())
    }
}

impl PlanFrame {
    /// A frame for `request`'s plans (its profile and modes, its template variables), with
    /// the defaults: the profile's first mode, session `planlock`, a template of the variables,
    /// [`DEFAULT_INSTRUCTION`], the repository at `.`, evidence from `planner`, nothing existing.
    pub fn new(request: GrammarRequest) -> PlanFrame {
        PlanFrame {
            request,
            mode: None,
            session_ref: DEFAULT_SESSION_REF.to_owned(),
            template: None,
            instruction: DEFAULT_INSTRUCTION.to_owned(),
            repo_path: ".".to_owned(),
            evidence_source: "planner".to_owned(),
            existing_decision: None,
            existing_evidence: None,
        }
    }

    /// The grammar request the frame was made from.
    pub fn request(&self) -> &GrammarRequest {
        &self.request
    }

    /// Plans of this mode (one of the profile's; by default its first).
    pub fn mode(mut self, mode: impl Into<String>) -> PlanFrame {
        self.mode = Some(mode.into());
        self
    }

    /// `sessionRef` of `PersistMemory` and `PersistSession`.
    pub fn session_ref(mut self, session_ref: impl Into<String>) -> PlanFrame {
        self.session_ref = session_ref.into();
        self
    }

    /// `PromptAssemble`'s template (by default one line per variable).
    pub fn with_template(mut self, template: impl Into<String>) -> PlanFrame {
        self.template = Some(template.into());
        self
    }

    /// `LLMCall`'s `prompt`: the instruction sent as the system message.
    pub fn instruction(mut self, instruction: impl Into<String>) -> PlanFrame {
        self.instruction = instruction.into();
        self
    }

    /// `RepoScan`'s `repoPath`.
    pub fn repo_path(mut self, path: impl Into<String>) -> PlanFrame {
        self.repo_path = path.into();
        self
    }

    /// `PersistEvidence`'s `source`.
    pub fn evidence_source(mut self, source: impl Into<String>) -> PlanFrame {
        self.evidence_source = source.into();
        self
    }

    /// A decision that exists: a plan may link evidence to it without persisting one.
    pub fn existing_decision(mut self, id: impl Into<String>) -> PlanFrame {
        self.existing_decision = Some(id.into());
        self
    }

    /// An evidence that exists: a plan may link a decision to it without persisting one.
    pub fn existing_evidence(mut self, id: impl Into<String>) -> PlanFrame {
        self.existing_evidence = Some(id.into());
        self
    }

    /// The template the plans get: the one given, or a line `name: {{ name }}` for
    /// [`QUESTION_VAR`] and each of the request's variables that is a template name.
    pub fn template(&self) -> String {
        if let Some(template) = &self.template {
            return template.clone();
        }
        let others = self.other_vars();
        let names = std::iter::once(QUESTION_VAR).chain(others.iter().map(String::as_str));
        let lines: Vec<String> = names.filter(|n| is_name(n)).map(|n| format!("{n}: {{{{ {n} }}}}")).collect();
        lines.join("\n")
    }

    /// The request's variables the model writes under `PromptAssemble` (all but the question).
    pub(crate) fn other_vars(&self) -> Vec<String> {
        // The question is written once, in `ContextSelect`.
        self.request.vars.iter().filter(|v| *v != QUESTION_VAR).cloned().collect()
    }

    /// The plans' `policyProfile`: the request's profile, or `default` without one.
    pub(super) fn profile(&self) -> &str {
        self.request.profile.as_deref().unwrap_or("default")
    }

    /// The plans' mode and its `topK`: the one chosen, or the profile's first (`default`
    /// without a profile); the `topK` its profile fixes, or [`DEFAULT_TOP_K`].
    pub(super) fn chosen_mode(&self) -> (String, u64) {
        let modes = &self.request.modes;
        let found = match &self.mode {
            Some(name) => modes.iter().find(|m| &m.name == name),
            None => modes.first(),
        };
        let name = self.mode.clone().or_else(|| found.map(|m| m.name.clone())).unwrap_or_else(|| "default".to_owned());
        (name, found.and_then(|m| m.top_k).unwrap_or(DEFAULT_TOP_K))
    }
}

/// The `topK` of a plan whose mode fixes none.
pub const DEFAULT_TOP_K: u64 = 5;

/// Whether `name` can be written `{{ name }}` in a template: an ASCII identifier.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
