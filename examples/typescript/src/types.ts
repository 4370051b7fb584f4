// The generated plan types, and the one name the schema has no definition for.
import type { ExecutionPlan } from "../../../schema/plan-v1.js";

export type * from "../../../schema/plan-v1.js";

/** Any one step of a plan: the union of the twelve step types. */
export type Step = ExecutionPlan["steps"][number];
