// Plans the generated types refuse. Each `@ts-expect-error` fails the build if its line
// compiles, so `npm run build` proves the types catch these mistakes before planlock sees them.
import type { ExecutionPlan, LLMCallStep, PlanMetadata, Step } from "./types.js";

const metadata: PlanMetadata = { policyProfile: "profiles/default", mode: "chat" };

// @ts-expect-error: a step's payload must be the one its type takes.
export const wrongPayload: LLMCallStep = { id: "llm", type: "LLMCall", payload: { repoPath: "." } };

// @ts-expect-error: no field outside the contract (no onFail, no branches).
export const unknownField: Step = { id: "ctx", type: "ContextSelect", payload: { input: "hi", sources: [] }, onFail: "retry" };

// @ts-expect-error: an unknown step type.
export const unknownType: Step = { id: "x", type: "WebSearch", payload: { input: "hi" } };

// @ts-expect-error: metadata has exactly five keys.
export const extraMetadata: PlanMetadata = { ...metadata, retries: 3 };

export const wrongVersion: ExecutionPlan = {
  // @ts-expect-error: the contract version is the string "1".
  step_contract_version: 1,
  extensions: [],
  metadata,
  steps: [],
};

export const extensions: ExecutionPlan = {
  step_contract_version: "1",
  // @ts-expect-error: extensions are always empty in contract version 1.
  extensions: [{ name: "x" }],
  metadata,
  steps: [],
};
