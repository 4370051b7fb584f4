// A policy layer in TypeScript: builds a plan with the types generated from planlock's JSON
// Schema, computes its plan hash exactly as docs/CONTRACT.md ("Plan hash") says, and writes both.
//
//   node dist/producer.js --policy-root ../policy --out plan.json [--hash-out plan.hash]
//
// planlock then validates the plan and computes the same hash:
//   cargo run -p planlock-cli -- hash --policy-root examples/policy plan.json
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";

import canonicalize from "canonicalize";
import { parseDocument } from "yaml";

import type { ExecutionPlan, PromptAssembleStep, RetrieveMemoryStep } from "./types.js";

const TOP_K = 3;

const retrieve: RetrieveMemoryStep = {
  id: "memory",
  type: "RetrieveMemory",
  // planlock requires this to equal metadata.topK; the types cannot say so, the schema's
  // description does.
  payload: { input: "API key rotation", topK: TOP_K },
};

const prompt: PromptAssembleStep = {
  id: "prompt",
  type: "PromptAssemble",
  payload: {
    template: "Answer {{ question }} in {{ lang }}.",
    vars: {
      question: "How do I rotate the API key?",
      lang: "en",
      // Numbers and keys where a careless canonical form would differ from RFC 8785: doubles
      // printed as ECMAScript prints them, keys sorted by UTF-16 code units (the emoji's
      // surrogates sort before U+E000, unlike by code point).
      weights: [0.1, 1e-7, 123.456, 0.000001, 1e15, -2.5],
      "\u{e000}": "private use",
      "\u{1f600}": "emoji",
      "é": "accent",
      Z: "upper",
      a: "lower",
    },
  },
};

export const plan: ExecutionPlan = {
  step_contract_version: "1",
  extensions: [],
  metadata: {
    policyProfile: "profiles/default",
    mode: "chat",
    topK: TOP_K,
    timeouts: { llmMs: 20000, ioMs: 1500 },
    budgets: { promptTokens: 2000 },
  },
  // Always written: a plan without them and one with [] hash the same in planlock, and
  // writing them keeps this producer's hash document identical to planlock's.
  validators: [],
  postValidators: [],
  steps: [
    { id: "ctx", type: "ContextSelect", payload: { input: "How do I rotate the API key?", sources: ["repo", "memory"] } },
    retrieve,
    { id: "decisions", type: "RetrieveDecisionContext", payload: { input: "API key rotation", currentDomain: "security" } },
    prompt,
    {
      id: "llm",
      type: "LLMCall",
      payload: { prompt: "You are a careful assistant.", config: { model: "demo-1", temperature: 0.2, max_tokens: 512 } },
    },
    {
      id: "remember",
      type: "PersistMemory",
      payload: { summary: "key rotation", keywords: ["api", "key", "rotation"], sessionRef: "session-ts" },
    },
    { id: "save", type: "PersistSession", payload: { sessionRef: "session-ts", meta: { channel: "typescript" } } },
  ],
};

/** Reads a policy file as its JSON data model, refusing what planlock refuses (aliases, merge keys, unknown tags). */
async function readPolicyYaml(path: string): Promise<unknown> {
  const doc = parseDocument(await readFile(path, "utf8"), {
    version: "1.2",
    schema: "core",
    merge: false,
    uniqueKeys: true,
  });
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) {
    throw new Error(`${path}: ${problems.map((p) => p.message).join("; ")}`);
  }
  return doc.toJS({ maxAliasCount: 0 });
}

/** lastExecutionPlanHash: SHA-256 of the RFC 8785 form of { policyProfile, modes, triggers, bundles, executionPlan }. */
export async function planHash(policyRoot: string, executionPlan: ExecutionPlan): Promise<string> {
  const profile = join(policyRoot, executionPlan.metadata.policyProfile);
  const document = {
    policyProfile: executionPlan.metadata.policyProfile,
    modes: await readPolicyYaml(join(profile, "modes.yaml")),
    triggers: await readPolicyYaml(join(profile, "triggers.yaml")),
    bundles: await readPolicyYaml(join(profile, "bundles.yaml")),
    executionPlan,
  };
  const canonical = canonicalize(document);
  if (canonical === undefined) {
    throw new Error("the hash document has no JSON form");
  }
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "policy-root": { type: "string" },
      out: { type: "string" },
      "hash-out": { type: "string" },
    },
  });
  const policyRoot = values["policy-root"];
  const out = values.out;
  if (policyRoot === undefined || out === undefined) {
    console.error("usage: node dist/producer.js --policy-root DIR --out PLAN.json [--hash-out FILE]");
    process.exit(2);
  }
  const hash = await planHash(policyRoot, plan);
  await writeFile(out, JSON.stringify(plan, null, 2) + "\n");
  if (values["hash-out"] !== undefined) {
    await writeFile(values["hash-out"], hash + "\n");
  }
  console.log(hash);
}

await main();
