// `require("@planlock/planlock")`: planlock's validator and plan hash for producers of plans in
// Node.js (CONTRACT §17). The answers are the Rust library's own; the unions between the
// GENERATED marks are written from its code tables (`tests/corpus.rs` checks them;
// `PLANLOCK_BLESS=1 cargo test -p planlock-contract --test it corpus` rewrites them).

// BEGIN GENERATED
/** A validation problem's stable code. */
export type ProblemCode =
  | 'unsupported-version'
  | 'invalid-extensions'
  | 'malformed-json'
  | 'duplicate-key'
  | 'unknown-field'
  | 'missing-field'
  | 'invalid-type'
  | 'invalid-value'
  | 'unknown-step-type'
  | 'duplicate-step-type'
  | 'duplicate-step-id'
  | 'order-violation'
  | 'missing-mandatory-step'
  | 'top-k-missing'
  | 'top-k-mismatch'
  | 'too-large'
  | 'too-deep';
/** The stable code of a call's failure. */
export type ErrorCode =
  | 'plan-rejected'
  | 'profile-path'
  | 'profile-outside-root'
  | 'profile-unreadable'
  | 'profile-invalid'
  | 'yaml'
  | 'invalid-json';
/** A step type, in canonical order. */
export type StepType =
  | 'RepoScan'
  | 'ContextSelect'
  | 'RetrieveMemory'
  | 'RetrieveDecisionContext'
  | 'PromptAssemble'
  | 'LLMCall'
  | 'SummarizeMemory'
  | 'PersistMemory'
  | 'PersistDecision'
  | 'PersistEvidence'
  | 'LinkDecisionEvidence'
  | 'PersistSession';
// END GENERATED

/** A failure's class: a `CycleFail` ends the cycle, a `FailFast` halts the runtime. */
export type FailureClass = 'CycleFail' | 'FailFast';

/** A JSON value as planlock reads it (no `undefined`, NaN, `Date` or bigint: they are refused). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A plan: its JSON text (a string, a Buffer) or its value. */
export type PlanInput = string | Uint8Array | { [key: string]: JsonValue } | JsonValue[];

/** One problem the validator found. */
export interface Problem {
  /** The stable code, such as `order-violation`. */
  readonly code: ProblemCode;
  /** The class this problem gives the rejection. */
  readonly class: FailureClass;
  /** Where, as a JSON Pointer (`""` for the whole document). */
  readonly pointer: string;
  /** What was wrong and what is allowed. */
  readonly message: string;
}

/** The validator's verdict on one plan. */
export declare class Report {
  /** Whether the plan is valid. */
  readonly ok: boolean;
  /** `FailFast` if any problem is, else `CycleFail`; `null` for a valid plan. */
  readonly class: FailureClass | null;
  /** Every problem, in the validator's order. */
  readonly problems: Problem[];
  /** `{ ok, class, problems }`. */
  toJSON(): { ok: boolean; class: FailureClass | null; problems: Problem[] };
}

/** What planlock refused: a plan, a profile, a value with no JSON form. */
export declare class PlanlockError extends Error {
  readonly name: 'PlanlockError';
  /** The stable code. */
  readonly code: ErrorCode;
  /** `CycleFail` or `FailFast`. */
  readonly class: FailureClass;
  /** A rejected plan's problems (empty otherwise). */
  readonly problems: Problem[];
  /** `{ name, code, class, message, problems }`. */
  toJSON(): { name: 'PlanlockError'; code: ErrorCode; class: FailureClass; message: string; problems: Problem[] };
}

/** One step type of the registry. */
export interface RegistryEntry {
  /** Its wire name. */
  readonly type: StepType;
  /** Whether every plan has it. */
  readonly mandatory: boolean;
  /** The class of its failure. */
  readonly failureClass: FailureClass;
  /** The timeout class that bounds it (`metadata.timeouts`). */
  readonly timeout: 'compute' | 'llm' | 'io';
}

/** Every code a call can fail with (`PlanlockError.code`). */
export declare const ERROR_CODES: readonly ErrorCode[];
/** The version of planlock this addon was built from. */
export declare const version: string;

/** Validates a plan: every problem with its code, class, JSON Pointer and message. Throws a
 * `TypeError` for another type of argument, a `PlanlockError` (`invalid-json`) for a value with
 * no JSON form. */
export declare function validate(plan: PlanInput): Report;
/** The plan hash (64 hex digits) as `planlock hash --policy-root` computes it: the profile is the
 * plan's `metadata.policyProfile` under `policyRoot`. */
export declare function planHash(policyRoot: string | URL, plan: PlanInput): string;
/** The plan hash with the profile in `profileDir` (`modes.yaml`, `triggers.yaml`,
 * `bundles.yaml`; nothing else is read). */
export declare function planHashIn(profileDir: string | URL, plan: PlanInput): string;
/** The plan hash with the profile's three documents given as text. */
export declare function planHashOf(documents: [modes: string, triggers: string, bundles: string], plan: PlanInput): string;
/** A value's canonical JSON (RFC 8785): a string is a JSON string (text is `canonicalJsonText`'s). */
export declare function canonicalJson(value: JsonValue): string;
/** JSON text written canonically, read as a plan is read (a key twice, a lone surrogate refused). */
export declare function canonicalJsonText(text: string | Uint8Array): string;
/** The plan's JSON Schema (draft 2020-12), as text. */
export declare function schema(): string;
/** The step registry, in canonical order. */
export declare function registry(): RegistryEntry[];
