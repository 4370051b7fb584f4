/* Generated from schema/plan-v1.schema.json by examples/typescript (npm run generate); do not edit.
 * The schema states the plan's shape; planlock also checks the rules its description lists. */

/**
 * A planlock execution plan, contract version 1 (registry revision 1.1): a flat, ordered list of typed steps. This schema states the document's shape: types, required and unknown fields, each step's type paired with its payload, limits and patterns. A plan this schema rejects, planlock rejects. planlock also checks what JSON Schema cannot state:
 * - the steps follow the canonical order of the registry (order-violation)
 * - every mandatory step is present: ContextSelect, PromptAssemble, LLMCall, PersistSession (missing-mandatory-step)
 * - no step type and no step id appears twice (duplicate-step-type, duplicate-step-id)
 * - a RetrieveMemory step needs metadata.topK, and its payload topK equals it (top-k-missing, top-k-mismatch)
 * - no object repeats a key (duplicate-key)
 * - the document is at most 1024 KiB and nested at most 64 levels deep (too-large, too-deep)
 * - every number, in free-form values too, has a magnitude of at most 9007199254740991 (2^53-1); an integer field holds no fraction (planlock reads 1.0 as a fraction, JSON Schema as an integer)
 * - no string holds a lone surrogate
 */
export interface ExecutionPlan {
  /**
   * Reserved: always the empty array in contract version 1.
   *
   * @maxItems 0
   */
  extensions: never[];
  metadata: PlanMetadata;
  /**
   * Validators run after each step; a missing array means [].
   */
  postValidators?: ValidatorSignature[];
  /**
   * The contract version: always the string "1".
   */
  step_contract_version: "1";
  /**
   * The steps, in canonical order; each type at most once.
   *
   * @minItems 4
   * @maxItems 12
   */
  steps: (
    | RepoScanStep
    | ContextSelectStep
    | RetrieveMemoryStep
    | RetrieveDecisionContextStep
    | PromptAssembleStep
    | LLMCallStep
    | SummarizeMemoryStep
    | PersistMemoryStep
    | PersistDecisionStep
    | PersistEvidenceStep
    | LinkDecisionEvidenceStep
    | PersistSessionStep
  )[];
  /**
   * Validators run before each step; a missing array means [].
   */
  validators?: ValidatorSignature[];
}
/**
 * The plan metadata (PRD-007 §6): exactly these five keys, no others.
 */
export interface PlanMetadata {
  budgets?: Budgets;
  /**
   * The mode.
   */
  mode: string;
  /**
   * The policy profile directory, relative to the policy root.
   */
  policyProfile: string;
  timeouts?: Timeouts;
  /**
   * How many memory items `RetrieveMemory` may return; required when the plan has one.
   */
  topK?: number;
}
/**
 * Budgets.
 */
export interface Budgets {
  /**
   * The prompt's token budget.
   */
  promptTokens?: number;
}
/**
 * Deadlines.
 */
export interface Timeouts {
  /**
   * Bounds the I/O steps: `RepoScan`, the `Retrieve*` and `Persist*` steps.
   */
  ioMs?: number;
  /**
   * Bounds the `LLMCall` step.
   */
  llmMs?: number;
}
/**
 * A validator the plan requires, pinned by version and configuration (D-021).
 */
export interface ValidatorSignature {
  /**
   * SHA-256 (lowercase hex) of the JCS form of the validator's configuration.
   */
  config_hash: string;
  /**
   * The validator's id.
   */
  id: string;
  /**
   * The validator's logic version.
   */
  version: string;
}
/**
 * A `RepoScan` step (optional, CycleFail; step 1 of the canonical order).
 */
export interface RepoScanStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: RepoScanPayload;
  type: "RepoScan";
}
/**
 * `RepoScan` payload.
 */
export interface RepoScanPayload {
  /**
   * The repository to scan.
   */
  repoPath: string;
}
/**
 * A `ContextSelect` step (mandatory, CycleFail; step 2 of the canonical order).
 */
export interface ContextSelectStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: ContextSelectPayload;
  type: "ContextSelect";
}
/**
 * `ContextSelect` payload.
 */
export interface ContextSelectPayload {
  /**
   * The user input.
   */
  input: string;
  /**
   * The context sources to choose from.
   */
  sources: string[];
}
/**
 * A `RetrieveMemory` step (optional, CycleFail; step 3 of the canonical order).
 */
export interface RetrieveMemoryStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: RetrieveMemoryPayload;
  type: "RetrieveMemory";
}
/**
 * `RetrieveMemory` payload. `topK` must equal `metadata.topK` (D-007).
 */
export interface RetrieveMemoryPayload {
  /**
   * The query.
   */
  input: string;
  /**
   * How many items at most.
   */
  topK: number;
}
/**
 * A `RetrieveDecisionContext` step (optional, CycleFail; step 4 of the canonical order).
 */
export interface RetrieveDecisionContextStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: RetrieveDecisionContextPayload;
  type: "RetrieveDecisionContext";
}
/**
 * `RetrieveDecisionContext` payload. Without `currentDomain` only `global` and `axis`
 * decisions are loaded.
 */
export interface RetrieveDecisionContextPayload {
  /**
   * The domain whose `domain:<name>` decisions are loaded too.
   */
  currentDomain?: string;
  /**
   * The query.
   */
  input: string;
}
/**
 * A `PromptAssemble` step (mandatory, CycleFail; step 5 of the canonical order).
 */
export interface PromptAssembleStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: PromptAssemblePayload;
  type: "PromptAssemble";
}
/**
 * `PromptAssemble` payload.
 */
export interface PromptAssemblePayload {
  /**
   * The template.
   */
  template: string;
  /**
   * The template's variables.
   */
  vars: {
    [k: string]: unknown | undefined;
  };
}
/**
 * A `LLMCall` step (mandatory, CycleFail; step 6 of the canonical order).
 */
export interface LLMCallStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: LlmCallPayload;
  type: "LLMCall";
}
/**
 * `LLMCall` payload.
 */
export interface LlmCallPayload {
  /**
   * The model configuration, passed through untouched.
   */
  config: {
    [k: string]: unknown | undefined;
  };
  /**
   * The prompt.
   */
  prompt: string;
}
/**
 * A `SummarizeMemory` step (optional, CycleFail; step 7 of the canonical order).
 */
export interface SummarizeMemoryStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: SummarizeMemoryPayload;
  type: "SummarizeMemory";
}
/**
 * `SummarizeMemory` payload.
 */
export interface SummarizeMemoryPayload {
  /**
   * The response to summarize.
   */
  response: string;
}
/**
 * A `PersistMemory` step (optional, FailFast; step 8 of the canonical order).
 */
export interface PersistMemoryStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: PersistMemoryPayload;
  type: "PersistMemory";
}
/**
 * `PersistMemory` payload.
 */
export interface PersistMemoryPayload {
  /**
   * Its keywords.
   */
  keywords: string[];
  /**
   * The policy's own session reference, passed through uninterpreted.
   */
  sessionRef: string;
  /**
   * The summary to store.
   */
  summary: string;
}
/**
 * A `PersistDecision` step (optional, FailFast; step 9 of the canonical order).
 */
export interface PersistDecisionStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: PersistDecisionPayload;
  type: "PersistDecision";
}
/**
 * `PersistDecision` payload.
 */
export interface PersistDecisionPayload {
  decision: Decision;
}
/**
 * The decision to store.
 */
export interface Decision {
  /**
   * The id of this version of the decision.
   */
  id: string;
  /**
   * Whether this version is the one in force.
   */
  isActive: boolean;
  /**
   * The id of the version this one replaces.
   */
  previousVersionId?: string;
  /**
   * The id of the first version; shared by every version of one decision.
   */
  rootId: string;
  /**
   * Where it applies: `global`, `axis` or `domain:<name>`.
   */
  scope: string;
  /**
   * How strongly it binds, in the policy's own words.
   */
  strength: string;
  /**
   * The decision's text.
   */
  text: string;
  /**
   * The version number, from 1.
   */
  version: number;
}
/**
 * A `PersistEvidence` step (optional, FailFast; step 10 of the canonical order).
 */
export interface PersistEvidenceStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: PersistEvidencePayload;
  type: "PersistEvidence";
}
/**
 * `PersistEvidence` payload.
 */
export interface PersistEvidencePayload {
  evidence: Evidence;
}
/**
 * The evidence to store.
 */
export interface Evidence {
  /**
   * Its id.
   */
  id: string;
  /**
   * Where it comes from.
   */
  source: string;
  /**
   * What it shows.
   */
  summary: string;
}
/**
 * A `LinkDecisionEvidence` step (optional, FailFast; step 11 of the canonical order).
 */
export interface LinkDecisionEvidenceStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: LinkDecisionEvidencePayload;
  type: "LinkDecisionEvidence";
}
/**
 * `LinkDecisionEvidence` payload.
 */
export interface LinkDecisionEvidencePayload {
  /**
   * The decision's id.
   */
  decisionId: string;
  /**
   * The evidence's id.
   */
  evidenceId: string;
}
/**
 * A `PersistSession` step (mandatory, FailFast; step 12 of the canonical order).
 */
export interface PersistSessionStep {
  /**
   * The step's id, unique in the plan; the tracing key.
   */
  id: string;
  payload: PersistSessionPayload;
  type: "PersistSession";
}
/**
 * `PersistSession` payload.
 */
export interface PersistSessionPayload {
  /**
   * Free-form session metadata.
   */
  meta: {
    [k: string]: unknown | undefined;
  };
  /**
   * The policy's own session reference, passed through uninterpreted.
   */
  sessionRef: string;
}
