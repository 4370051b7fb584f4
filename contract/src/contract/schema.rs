//! The typed payloads and results of the twelve steps and the shared objects (docs/CONTRACT.md,
//! "Payloads, results, shared objects").
//!
//! Every type here is strict: an undefined field, a missing required field or a wrong JSON type
//! is an error, and an absent optional field is omitted, never `null`. Each struct and its
//! validation come from one field list (see `contract_object!`).
use crate::contract::object::contract_object;
use crate::contract::rules::RECORD_ID;
use crate::contract::value::{AnyObject, AnyValue, PositiveInt};

contract_object! {
    /// A decision record (B-007 v1.1).
    ///
    /// `scope` is `"global"`, `"axis"` or `"domain:<name>"`.
    pub struct Decision {
        /// The id of this version of the decision.
        req id: String = "id" where RECORD_ID,
        /// Whether this version is the one in force.
        req is_active: bool = "isActive",
        /// The id of the version this one replaces.
        opt previous_version_id: String = "previousVersionId" where RECORD_ID,
        /// The id of the first version; shared by every version of one decision.
        req root_id: String = "rootId" where RECORD_ID,
        /// Where it applies: `global`, `axis` or `domain:<name>`.
        req scope: String = "scope" where crate::contract::rules::DECISION_SCOPE,
        /// How strongly it binds, in the policy's own words.
        req strength: String = "strength",
        /// The decision's text.
        req text: String = "text",
        /// The version number, from 1.
        req version: PositiveInt = "version",
    }
}

contract_object! {
    /// A piece of evidence (B-007 v1.1).
    pub struct Evidence {
        /// Its id.
        req id: String = "id" where RECORD_ID,
        /// Where it comes from.
        req source: String = "source",
        /// What it shows.
        req summary: String = "summary",
    }
}

contract_object! {
    /// A link between a decision and a piece of evidence.
    pub struct Anchor {
        /// The decision's id.
        req decision_id: String = "decisionId" where RECORD_ID,
        /// The evidence's id.
        req evidence_id: String = "evidenceId" where RECORD_ID,
    }
}

contract_object! {
    /// One remembered item returned by `RetrieveMemory`.
    pub struct MemoryItem {
        /// Its id.
        req id: String = "id" where RECORD_ID,
        /// Its summary.
        req summary: String = "summary",
        /// When it was stored, as the memory store wrote it.
        req timestamp: String = "timestamp",
    }
}

contract_object! {
    /// `RepoScan` payload.
    pub struct RepoScanPayload {
        /// The repository to scan.
        req repo_path: String = "repoPath",
    }
}

contract_object! {
    /// `RepoScan` result.
    pub struct RepoScanResult {
        /// How many files were scanned.
        req file_count: u64 = "fileCount",
        /// An identifier of the scanned content.
        req version_id: String = "versionId",
    }
}

contract_object! {
    /// `ContextSelect` payload.
    pub struct ContextSelectPayload {
        /// The user input.
        req input: String = "input",
        /// The context sources to choose from.
        req sources: Vec<String> = "sources",
    }
}

contract_object! {
    /// `ContextSelect` result.
    pub struct ContextSelectResult {
        /// The selected context, in any JSON form.
        req selected_context: Vec<AnyValue> = "selectedContext",
    }
}

contract_object! {
    /// `RetrieveMemory` payload. `topK` must equal `metadata.topK` (D-007).
    pub struct RetrieveMemoryPayload {
        /// The query.
        req input: String = "input",
        /// How many items at most.
        req top_k: PositiveInt = "topK",
    }
}

contract_object! {
    /// `RetrieveMemory` result: 0 to `topK` items.
    pub struct RetrieveMemoryResult {
        /// The items found.
        req items: Vec<MemoryItem> = "items",
    }
}

contract_object! {
    /// `RetrieveDecisionContext` payload. Without `currentDomain` only `global` and `axis`
    /// decisions are loaded.
    pub struct RetrieveDecisionContextPayload {
        /// The domain whose `domain:<name>` decisions are loaded too.
        opt current_domain: String = "currentDomain",
        /// The query.
        req input: String = "input",
    }
}

contract_object! {
    /// `RetrieveDecisionContext` result.
    pub struct RetrieveDecisionContextResult {
        /// Their links to evidence.
        req anchors: Vec<Anchor> = "anchors",
        /// The decisions in force.
        req decisions: Vec<Decision> = "decisions",
    }
}

contract_object! {
    /// `PromptAssemble` payload.
    pub struct PromptAssemblePayload {
        /// The template.
        req template: String = "template",
        /// The template's variables.
        req vars: AnyObject = "vars",
    }
}

contract_object! {
    /// `PromptAssemble` result.
    pub struct PromptAssembleResult {
        /// The assembled prompt.
        req prompt: String = "prompt",
    }
}

contract_object! {
    /// `LLMCall` payload.
    pub struct LlmCallPayload {
        /// The model configuration, passed through untouched.
        req config: AnyObject = "config",
        /// The prompt.
        req prompt: String = "prompt",
    }
}

contract_object! {
    /// `LLMCall` result.
    pub struct LlmCallResult {
        /// The model's response.
        req response: String = "response",
    }
}

contract_object! {
    /// `SummarizeMemory` payload.
    pub struct SummarizeMemoryPayload {
        /// The response to summarize.
        req response: String = "response",
    }
}

contract_object! {
    /// `SummarizeMemory` result.
    pub struct SummarizeMemoryResult {
        /// Its keywords.
        req keywords: Vec<String> = "keywords",
        /// The summary.
        req summary: String = "summary",
    }
}

contract_object! {
    /// `PersistMemory` payload.
    pub struct PersistMemoryPayload {
        /// Its keywords.
        req keywords: Vec<String> = "keywords",
        /// The policy's own session reference, passed through uninterpreted.
        req session_ref: String = "sessionRef",
        /// The summary to store.
        req summary: String = "summary",
    }
}

contract_object! {
    /// `PersistMemory` result.
    pub struct PersistMemoryResult {
        /// The stored memory's id; becomes the session's `memoryRef`.
        req id: String = "id" where RECORD_ID,
    }
}

contract_object! {
    /// `PersistDecision` payload.
    pub struct PersistDecisionPayload {
        /// The decision to store.
        req decision: Decision = "decision",
    }
}

contract_object! {
    /// `PersistDecision` result.
    pub struct PersistDecisionResult {
        /// The stored decision's id.
        req id: String = "id" where RECORD_ID,
    }
}

contract_object! {
    /// `PersistEvidence` payload.
    pub struct PersistEvidencePayload {
        /// The evidence to store.
        req evidence: Evidence = "evidence",
    }
}

contract_object! {
    /// `PersistEvidence` result.
    pub struct PersistEvidenceResult {
        /// The stored evidence's id.
        req id: String = "id" where RECORD_ID,
    }
}

contract_object! {
    /// `LinkDecisionEvidence` payload.
    pub struct LinkDecisionEvidencePayload {
        /// The decision's id.
        req decision_id: String = "decisionId" where RECORD_ID,
        /// The evidence's id.
        req evidence_id: String = "evidenceId" where RECORD_ID,
    }
}

contract_object! {
    /// `LinkDecisionEvidence` result.
    pub struct LinkDecisionEvidenceResult {
        /// The link's status.
        req status: String = "status",
    }
}

contract_object! {
    /// `PersistSession` payload.
    pub struct PersistSessionPayload {
        /// Free-form session metadata.
        req meta: AnyObject = "meta",
        /// The policy's own session reference, passed through uninterpreted.
        req session_ref: String = "sessionRef",
    }
}

contract_object! {
    /// `PersistSession` result.
    pub struct PersistSessionResult {
        /// The save's status.
        req status: String = "status",
    }
}
