// validate() against ajv (schema/plan-v1.schema.json, draft 2020-12) on the same plans,
// interleaved rounds in one process, and what a call from JavaScript adds over the Rust
// validator alone (validateInRustNs, timed inside the addon) (issue 35, CONTRACT §17). Build the
// addon with `napi build --platform --release` for figures; `--quick` runs one short round.
// Each side gets the plan's JSON text, as a producer holds it: ajv's time includes JSON.parse;
// then each gets the object (planlock writes it as JSON once, in JSON.stringify).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const planlock = require('./planlock.js');
const native = require('./index.js');
const Ajv2020 = require('ajv/dist/2020').default;

const root = new URL('../../', import.meta.url);
const read = (p) => readFileSync(new URL(p, root), 'utf8');
const quick = process.argv.includes('--quick');
const corpus = JSON.parse(read('tests/corpus/validate.json'));
const texts = corpus.filter((c) => c.report.ok).map((c) => c.plan);
texts.push(read('examples/plans/demo_plan.json'), read('examples/plans/reviewed_plan.json'));
const ajv = new Ajv2020({ allErrors: true, strict: false });
const check = ajv.compile(JSON.parse(read('schema/plan-v1.schema.json')));

const [rounds, repeat] = quick ? [1, 3] : [7, 200];
const times = { ajv: [], planlock: [], rust: [], ajvValue: [], planlockValue: [] };
const values = texts.map((t) => JSON.parse(t));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const buffers = texts.map((t) => Buffer.from(t));
for (let r = 0; r < rounds; r++) {
  let began = process.hrtime.bigint();
  for (let i = 0; i < repeat; i++) for (const t of texts) check(JSON.parse(t));
  times.ajv.push(Number(process.hrtime.bigint() - began) / (repeat * texts.length));
  began = process.hrtime.bigint();
  for (let i = 0; i < repeat; i++) for (const t of texts) planlock.validate(t);
  times.planlock.push(Number(process.hrtime.bigint() - began) / (repeat * texts.length));
  times.rust.push(buffers.reduce((sum, b) => sum + native.validateInRustNs(b, repeat), 0) / texts.length);
  // The object a producer built, no text in hand: ajv checks it; planlock writes it as JSON once.
  began = process.hrtime.bigint();
  for (let i = 0; i < repeat; i++) for (const v of values) check(v);
  times.ajvValue.push(Number(process.hrtime.bigint() - began) / (repeat * texts.length));
  began = process.hrtime.bigint();
  for (let i = 0; i < repeat; i++) for (const v of values) planlock.validate(v);
  times.planlockValue.push(Number(process.hrtime.bigint() - began) / (repeat * texts.length));
}
const [a, p, rust] = [median(times.ajv), median(times.planlock), median(times.rust)];
console.log(`node bench: ${texts.length} plans, ${rounds} interleaved rounds of ${repeat}`);
console.log(`  ajv (JSON.parse + validate): ${(a / 1000).toFixed(1)} us a plan`);
console.log(`  planlock validate(): ${(p / 1000).toFixed(1)} us a plan (${(a / p).toFixed(2)}x ajv's speed)`);
console.log(`  the Rust validator alone: ${(rust / 1000).toFixed(1)} us a plan; the call from JavaScript: ${(p / rust).toFixed(2)}x`);
const [av, pv] = [median(times.ajvValue), median(times.planlockValue)];
console.log(`  on the object: ajv ${(av / 1000).toFixed(1)} us, planlock validate(object) ${(pv / 1000).toFixed(1)} us a plan (${(av / pv).toFixed(2)}x ajv's speed)`);
const swapped = JSON.parse(texts[texts.length - 2]);
[swapped.steps[1], swapped.steps[2]] = [swapped.steps[2], swapped.steps[1]];
const report = planlock.validate(JSON.stringify(swapped));
console.log(`  steps swapped: ajv says valid=${check(swapped)}; planlock: ${report.problems.map((q) => `${q.code} ${q.pointer}`).join(', ')}`);
if (!check(swapped) || report.ok) process.exit(1);
