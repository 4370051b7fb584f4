// The shared corpus (tests/corpus/, CONTRACT §17), run against the addon: every verdict, code,
// class, pointer and message, and every hash, equal to the Rust library's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const planlock = require('../index.js');
const corpus = new URL('../../../tests/corpus/', import.meta.url);
const read = (name) => JSON.parse(readFileSync(new URL(name, corpus), 'utf8'));
const text = (c) => c.plan + ' '.repeat(c.pad ?? 0);
const sorted = (r) => ({ ok: r.ok, class: r.class ?? null, problems: r.problems.map((p) => ({ ...p })) });

test('every case of the validator corpus gets the Rust report', () => {
  const cases = read('validate.json');
  assert.ok(cases.length > 90);
  for (const c of cases) {
    assert.deepEqual(sorted(planlock.validate(text(c))), c.report, c.name);
    // Bytes give the same report as a string.
    assert.deepEqual(sorted(planlock.validate(Buffer.from(text(c)))), c.report, `${c.name} (Buffer)`);
  }
});

test('every hash vector hashes the same, from documents and from a profile directory', () => {
  for (const v of read('hash.json')) {
    assert.equal(planlock.planHashOf(v.documents, v.plan), v.hash, v.name);
    const dir = mkdtempSync(join(tmpdir(), 'planlock-'));
    ['modes.yaml', 'triggers.yaml', 'bundles.yaml'].forEach((f, i) => writeFileSync(join(dir, f), v.documents[i]));
    assert.equal(planlock.planHash(dir, v.plan), v.hash, `${v.name} (directory)`);
  }
});

test('errors carry the stable code; nothing is read outside the directory given', () => {
  const plan = read('hash.json')[0].plan;
  assert.throws(() => planlock.planHashOf(['a: [', '[]', '{}'], plan), { code: 'yaml', message: /^yaml: / });
  assert.throws(() => planlock.planHashOf(['{}', '[]', '{}'], '{}'), { code: 'plan-rejected' });
  assert.throws(() => planlock.planHashOf(['{}', '[]'], plan), { code: 'invalid-arg' });
  const dir = mkdtempSync(join(tmpdir(), 'planlock-'));
  const outside = mkdtempSync(join(tmpdir(), 'planlock-'));
  writeFileSync(join(outside, 'modes.yaml'), 'secret: 1\n');
  symlinkSync(join(outside, 'modes.yaml'), join(dir, 'modes.yaml'));
  writeFileSync(join(dir, 'triggers.yaml'), '[]\n');
  writeFileSync(join(dir, 'bundles.yaml'), '{}\n');
  assert.throws(() => planlock.planHash(dir, plan), { code: 'profile-outside-root' });
});

test('canonical JSON, the schema and the registry', () => {
  assert.equal(planlock.canonicalJson({ b: 1, a: [1.5, 'é', 1e21] }), '{"a":[1.5,"é",1e+21],"b":1}');
  assert.equal(planlock.canonicalJsonText('{"b":1,"a":2}'), '{"a":2,"b":1}');
  assert.throws(() => planlock.canonicalJsonText('{"a":1e400}'), { code: 'invalid-json' });
  assert.equal(JSON.parse(planlock.schema()).$schema, 'https://json-schema.org/draft/2020-12/schema');
  const steps = planlock.registry();
  assert.equal(steps.length, 12);
  assert.deepEqual(steps.filter((s) => s.mandatory).map((s) => s.type), ['ContextSelect', 'PromptAssemble', 'LLMCall', 'PersistSession']);
});

test('hostile inputs are answered, never a crash', () => {
  for (const bad of ['', '\u0000', '['.repeat(100000), '{"a":' + '1'.repeat(100000) + '}', '\ud800']) {
    const r = planlock.validate(bad);
    assert.equal(r.ok, false);
  }
  assert.throws(() => planlock.validate(42), /none of these types/);
});
