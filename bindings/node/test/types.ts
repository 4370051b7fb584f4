// What `planlock.d.ts` promises a TypeScript producer, checked by `tsc --noEmit` (`npm test`):
// the unions are the code tables', a report's class is what it is at run time, and wrong uses
// do not compile.
import planlock = require('../planlock');
import type { ErrorCode, FailureClass, ProblemCode, RegistryEntry, Report, StepType } from '../planlock';

declare const text: string;
const report: Report = planlock.validate(text);
const klass: FailureClass | null = report.class;
const code: ProblemCode | undefined = report.problems[0]?.code;
const order: ProblemCode = 'order-violation';
const step: StepType = 'LLMCall';
const failure: ErrorCode = 'plan-rejected';
const entries: RegistryEntry[] = planlock.registry();
const timeout: 'compute' | 'llm' | 'io' = entries[0].timeout;
const hash: string = planlock.planHashOf(['', '', ''], { steps: [] });
const byValue = planlock.validate({ metadata: { topK: 5 } });

// @ts-expect-error: not a problem code
const wrong: ProblemCode = 'no-such-code';
// @ts-expect-error: a report's class is a class or null, not any string
const other: 'Other' = report.class;
// @ts-expect-error: three documents
planlock.planHashOf(['', ''], text);
// @ts-expect-error: a number is not a plan
planlock.validate(42);
// @ts-expect-error: the bench helper is not the package's
planlock.validateInRustNs;

try {
  planlock.canonicalJson({ a: [1, 'b', null] });
} catch (e) {
  if (e instanceof planlock.PlanlockError) {
    const c: ErrorCode = e.code;
    const k: FailureClass = e.class;
    void [c, k];
  }
}
void [klass, code, order, step, failure, timeout, hash, byValue, wrong, other];
