// The shared corpus (tests/corpus/, CONTRACT §17), run against the addon: every verdict, code,
// class, pointer and message, and every hash, equal to the Rust library's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync, mkdtempSync, writeFileSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const planlock = require('../planlock.js');
const corpus = new URL('../../../tests/corpus/', import.meta.url);
const read = (name) => JSON.parse(readFileSync(new URL(name, corpus), 'utf8'));
const text = (c) => c.plan + ' '.repeat(c.pad ?? 0);
const sorted = (r) => ({ ok: r.ok, class: r.class, problems: r.problems.map((p) => ({ ...p })) });

test('every case of the validator corpus gets the Rust report', () => {
  const cases = read('validate.json');
  assert.ok(cases.length > 90);
  for (const c of cases) {
    assert.deepEqual(sorted(planlock.validate(text(c))), c.report, c.name);
    // Bytes give the same report as a string.
    assert.deepEqual(sorted(planlock.validate(Buffer.from(text(c)))), c.report, `${c.name} (Buffer)`);
    // And the value JSON.parse reads gets the report its text (JSON.stringify) gets, or is refused
    // as having no JSON form when its text is not valid (a number past the double range).
    let value;
    try {
      value = JSON.parse(text(c));
    } catch {
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    let report;
    try {
      report = planlock.validate(value);
    } catch (e) {
      assert.ok(e instanceof planlock.PlanlockError && e.code === 'invalid-json', `${c.name}: ${e}`);
      assert.equal(planlock.validate(JSON.stringify(value)).ok, false, c.name);
      continue;
    }
    assert.deepEqual(sorted(report), sorted(planlock.validate(JSON.stringify(value))), `${c.name} (value)`);
  }
});

test('every hash vector hashes the same, from documents and from a profile directory', () => {
  for (const v of read('hash.json')) {
    assert.equal(planlock.planHashOf(v.documents, v.plan), v.hash, v.name);
    assert.equal(planlock.planHashOf(v.documents, JSON.parse(v.plan)), v.hash, `${v.name} (value)`);
    // As the CLI: the plan's policyProfile under a policy root; and the profile directory itself.
    const root = mkdtempSync(join(tmpdir(), 'planlock-'));
    const dir = join(root, JSON.parse(v.plan).metadata.policyProfile);
    mkdirSync(dir, { recursive: true });
    ['modes.yaml', 'triggers.yaml', 'bundles.yaml'].forEach((f, i) => writeFileSync(join(dir, f), v.documents[i]));
    assert.equal(planlock.planHash(root, v.plan), v.hash, `${v.name} (policy root)`);
    assert.equal(planlock.planHashIn(dir, v.plan), v.hash, `${v.name} (directory)`);
  }
});

test('errors carry the stable code; nothing is read outside the directory given', () => {
  const plan = read('hash.json')[0].plan;
  assert.throws(() => planlock.planHashOf(['a: [', '[]', '{}'], plan), { name: 'PlanlockError', code: 'yaml', class: 'FailFast' });
  assert.throws(() => planlock.planHashOf(['{}', '[]', '{}'], '{}'), (e) => e.code === 'plan-rejected' && e.problems.length > 0);
  assert.throws(() => planlock.planHashOf(['{}', '[]'], plan), { name: 'TypeError', message: /^documents must be three strings/ });
  const dir = mkdtempSync(join(tmpdir(), 'planlock-'));
  const outside = mkdtempSync(join(tmpdir(), 'planlock-'));
  writeFileSync(join(outside, 'modes.yaml'), 'secret: 1\n');
  symlinkSync(join(outside, 'modes.yaml'), join(dir, 'modes.yaml'));
  writeFileSync(join(dir, 'triggers.yaml'), '[]\n');
  writeFileSync(join(dir, 'bundles.yaml'), '{}\n');
  assert.throws(() => planlock.planHashIn(dir, plan), { code: 'profile-outside-root' });
});

test('canonical JSON, the schema and the registry', () => {
  assert.equal(planlock.canonicalJson({ b: 1, a: [1.5, 'é', 1e21] }), '{"a":[1.5,"é",1e+21],"b":1}');
  // A string is a string, not JSON text: canonicalJsonText reads text.
  assert.equal(planlock.canonicalJson('{"b":1,"a":2}'), '"{\\"b\\":1,\\"a\\":2}"');
  assert.equal(planlock.canonicalJsonText('{"b":1,"a":2}'), '{"a":2,"b":1}');
  assert.equal(planlock.canonicalJsonText(Buffer.from('[1.0]')), '[1]');
  for (const bad of ['{"a":1e400}', '{"a":1,"a":2}', '["\\udfff"]', '[' + '1,'.repeat(600000) + '1]']) {
    assert.throws(() => planlock.canonicalJsonText(bad), { name: 'PlanlockError', code: 'invalid-json' }, bad.slice(0, 40));
  }
  // What has no JSON form is refused, never dropped or repaired (the same values as Python's).
  const loop = {};
  loop.self = loop;
  for (const bad of [NaN, Infinity, { when: new Date(0) }, { ['a\udfff']: 1, b: 2 }, 'x\ud800', { f: () => 1 }, { u: undefined }, [undefined], 10n, new Map(), loop]) {
    assert.throws(() => planlock.canonicalJson(bad), { name: 'PlanlockError', code: 'invalid-json', class: 'CycleFail' }, String(bad));
  }
  assert.throws(() => planlock.canonicalJson({ a: { when: new Date(0) } }), { message: /at \/a\/when/ });
  assert.equal(JSON.parse(planlock.schema()).$schema, 'https://json-schema.org/draft/2020-12/schema');
  const steps = planlock.registry();
  assert.equal(steps.length, 12);
  assert.deepEqual(steps.filter((s) => s.mandatory).map((s) => s.type), ['ContextSelect', 'PromptAssemble', 'LLMCall', 'PersistSession']);
});

test('hostile inputs are answered, never a crash', () => {
  for (const bad of ['', '\u0000', '['.repeat(100000), '{"a":' + '1'.repeat(100000) + '}']) {
    const r = planlock.validate(bad);
    assert.equal(r.ok, false);
  }
  assert.throws(() => planlock.validate(42), { name: 'TypeError', message: /^plan must be the plan/ });
  assert.throws(() => planlock.planHash(7, '{}'), { name: 'TypeError', message: /^policyRoot must be a path/ });
  // A lone surrogate in text cannot be UTF-8: refused in every function, never repaired.
  for (const call of [() => planlock.validate('{"a":"\ud800"}'), () => planlock.planHashOf(['{}', '[]', '{}'], '\udfff'), () => planlock.canonicalJsonText('"\udfff"')]) {
    assert.throws(call, { name: 'PlanlockError', code: 'invalid-json' });
  }
  // A value nested past any plan is cut where the validator says so, as its text would be.
  let deep = {};
  for (let i = 0; i < 100000; i++) deep = { a: deep };
  assert.equal(planlock.validate(deep).problems[0].code, 'too-deep');
});

test('errors and reports are native', () => {
  let err;
  try {
    planlock.planHashOf(['{}', '[]', '{}'], '{}');
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof planlock.PlanlockError && err instanceof Error);
  assert.ok(planlock.ERROR_CODES.includes(err.code) && !err.message.startsWith(err.code), err.message);
  const json = JSON.parse(JSON.stringify(err));
  assert.deepEqual(Object.keys(json), ['name', 'code', 'class', 'message', 'problems']);
  assert.ok(json.problems.length > 0 && json.problems[0].pointer !== undefined);
  const report = planlock.validate('{}');
  assert.equal(report.class === 'CycleFail' || report.class === 'FailFast', true);
  assert.equal(planlock.validate(read('hash.json')[0].plan).class, null, 'a valid plan\'s class is null');
  assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(report))), ['ok', 'class', 'problems']);
  assert.equal(planlock.version, '0.1.0');
  assert.equal(planlock.validateInRustNs, undefined, 'the bench helper is not the package\'s');
});
