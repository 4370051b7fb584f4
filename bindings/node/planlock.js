'use strict';
// `require("@planlock/planlock")`: planlock's validator and plan hash for producers of plans in
// Node.js (CONTRACT §17). The answers are the Rust library's own (the addon, `index.js`); this
// file gives them the language's shape: a `TypeError` for a wrong argument, a `PlanlockError`
// (`code`, `class`, `problems`) for what planlock refuses, a plan given as text, bytes or a value.
// The types are `planlock.d.ts`.

const native = require('./index.js');
const { version } = require('./package.json');

// A lone surrogate: a UTF-16 half without its pair. In a `u` regular expression a pair is one
// code point, so only a lone half matches.
const LONE_SURROGATE = /\p{Cs}/u;

// The deepest a value is written: past a plan's nesting (64), a value is cut, and the validator
// reports it as it would the text.
const MAX_WRITTEN_DEPTH = 65;

/** What planlock refused: `code` is its stable code, `class` `CycleFail` or `FailFast`. */
class PlanlockError extends Error {
  constructor(code, klass, message, problems = []) {
    super(message);
    this.name = 'PlanlockError';
    this.code = code;
    this.class = klass;
    this.problems = problems;
  }

  toJSON() {
    return { name: this.name, code: this.code, class: this.class, message: this.message, problems: this.problems };
  }
}

/** The validator's verdict on one plan. */
class Report {
  constructor(native) {
    this.ok = native.ok;
    this.class = native.class ?? null;
    this.problems = native.problems.map(problem);
  }

  toJSON() {
    return { ok: this.ok, class: this.class, problems: this.problems };
  }
}

function problem(p) {
  return { code: p.code, class: p.class, pointer: p.pointer, message: p.message };
}

function invalid(pointer, what) {
  const where = pointer === '' ? '' : ` at ${pointer}`;
  return new PlanlockError('invalid-json', 'CycleFail', `not a JSON value${where}: ${what}`);
}

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? `a ${value.constructor?.name ?? 'object'}` : `a ${typeof value}`;
}

function pointerKey(key) {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1');
}

const wellFormed = typeof String.prototype.isWellFormed === 'function'
  ? (s) => s.isWellFormed()
  : (s) => !LONE_SURROGATE.test(s);

/**
 * Whether `value` has a JSON form that `JSON.stringify` writes as it is: every value a string,
 * a finite number, a boolean, null, a plain array or object, at most `MAX_WRITTEN_DEPTH` deep,
 * none containing itself, no `toJSON`. A walk with no allocation but the ancestors' set; when it
 * says no, `stringify` writes the value with a replacer that says where it is wrong (or cuts it).
 */
function plain(value, depth, ancestors) {
  switch (typeof value) {
    case 'string':
      return wellFormed(value);
    case 'number':
      return Number.isFinite(value);
    case 'boolean':
      return true;
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_WRITTEN_DEPTH || ancestors.has(value) || typeof value.toJSON === 'function') return false;
      const proto = Object.getPrototypeOf(value);
      const array = Array.isArray(value);
      if (!array && proto !== Object.prototype && proto !== null) return false;
      ancestors.add(value);
      let ok = true;
      if (array) {
        for (let i = 0; ok && i < value.length; i++) ok = plain(value[i], depth + 1, ancestors);
      } else {
        for (const key in value) {
          if (!Object.hasOwn(value, key)) continue;
          if (!wellFormed(key) || !plain(value[key], depth + 1, ancestors)) {
            ok = false;
            break;
          }
        }
      }
      ancestors.delete(value);
      return ok;
    }
    default:
      return false;
  }
}

/** `value` written as JSON once: what has no JSON form is refused, saying where. */
function stringify(value) {
  if (plain(value, 0, new Set())) return JSON.stringify(value);
  return stringifyChecked(value);
}

/** `value` written with a replacer that refuses what has no JSON form, saying where. */
function stringifyChecked(value) {
  const at = new Map(); // each object written: its JSON Pointer and depth
  try {
    return JSON.stringify(value, function replace(key, v) {
      const holder = at.get(this) ?? { pointer: '', depth: 0 };
      const pointer = this === undefined || (key === '' && holder.depth === 0) ? '' : `${holder.pointer}/${pointerKey(key)}`;
      if (LONE_SURROGATE.test(key)) throw invalid(holder.pointer, 'a key with a lone surrogate, which UTF-8 cannot hold');
      const original = this?.[key];
      if (original instanceof Date) throw invalid(pointer, 'a Date has no JSON form; give its ISO string');
      if (original instanceof Map || original instanceof Set || ArrayBuffer.isView(original)) {
        throw invalid(pointer, `${describe(original)} has no JSON form; give an object or an array`);
      }
      switch (typeof v) {
        case 'number':
          if (!Number.isFinite(v)) throw invalid(pointer, 'NaN and infinities are not JSON numbers');
          return v;
        case 'string':
          if (LONE_SURROGATE.test(v)) throw invalid(pointer, 'a string with a lone surrogate, which UTF-8 cannot hold');
          return v;
        case 'bigint':
          throw invalid(pointer, 'a bigint has no JSON form; give a number or a string');
        case 'undefined':
        case 'function':
        case 'symbol':
          throw invalid(pointer, `${typeof v} has no JSON form`);
        case 'object': {
          if (v === null) return v;
          const depth = holder.depth + 1;
          if (depth > MAX_WRITTEN_DEPTH) return null;
          at.set(v, { pointer, depth });
          return v;
        }
        default:
          return v;
      }
    });
  } catch (e) {
    if (e instanceof PlanlockError) throw e;
    // A value that contains itself (JSON.stringify's TypeError), or no room left.
    throw invalid('', e instanceof TypeError && /circular/i.test(e.message) ? 'a value that contains itself' : e.message);
  }
}

/** JSON text given as a string (with no lone surrogate: its UTF-8 is exact) or bytes, as the
 * addon takes it; `null` for anything else. */
function textOf(text) {
  if (typeof text === 'string') {
    if (!wellFormed(text)) {
      throw invalid('', 'the text holds a lone surrogate, which UTF-8 cannot hold; nothing is repaired');
    }
    return text;
  }
  if (text instanceof Uint8Array) return Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  return null;
}

/** A plan's JSON text: its text (a string, a Buffer) or its value (an object) written as JSON. */
function planText(plan, argument) {
  const bytes = textOf(plan);
  if (bytes !== null) return bytes;
  if (plan !== null && typeof plan === 'object' && !(plan instanceof Date)) return stringify(plan);
  throw new TypeError(
    `${argument} must be the plan: its JSON text (a string or a Buffer) or its value (an object), not ${describe(plan)}`,
  );
}

function path(value, argument) {
  if (typeof value === 'string') return value;
  if (value instanceof URL) return value.pathname;
  throw new TypeError(`${argument} must be a path (a string or a file URL), not ${describe(value)}`);
}

/** The value of an answer, or its failure thrown as a `PlanlockError`. */
function valueOf(answer) {
  if (answer.failure) {
    const f = answer.failure;
    throw new PlanlockError(f.code, f.class, f.message, f.problems.map(problem));
  }
  return answer.value;
}

/** Validates a plan: every problem with its code, class, JSON Pointer and message. */
function validate(plan) {
  return new Report(native.validate(planText(plan, 'plan')));
}

/** The plan hash as `planlock hash --policy-root` computes it. */
function planHash(policyRoot, plan) {
  return valueOf(native.planHash(path(policyRoot, 'policyRoot'), planText(plan, 'plan')));
}

/** The plan hash with the profile in `profileDir` (its three documents; nothing else read). */
function planHashIn(profileDir, plan) {
  return valueOf(native.planHashIn(path(profileDir, 'profileDir'), planText(plan, 'plan')));
}

/** The plan hash with the profile's three documents given as text: `[modes, triggers, bundles]`. */
function planHashOf(documents, plan) {
  if (!Array.isArray(documents) || documents.length !== 3 || !documents.every((d) => typeof d === 'string')) {
    throw new TypeError(`documents must be three strings, [modes, triggers, bundles], not ${describe(documents)}`);
  }
  for (const d of documents) {
    if (!wellFormed(d)) throw invalid('', 'a document holds a lone surrogate, which UTF-8 cannot hold');
  }
  return valueOf(native.planHashOf(documents[0], documents[1], documents[2], planText(plan, 'plan')));
}

/** A value's canonical JSON (RFC 8785): a string is a JSON string (text is `canonicalJsonText`'s). */
function canonicalJson(value) {
  const text = stringify(value);
  if (text === undefined) throw invalid('', `${describe(value)} has no JSON form`);
  return valueOf(native.canonicalJson(text));
}

/** JSON text (a string or a Buffer) written canonically, read as a plan is read. */
function canonicalJsonText(text) {
  const bytes = textOf(text);
  if (bytes === null) throw new TypeError(`text must be JSON text (a string or a Buffer), not ${describe(text)}`);
  return valueOf(native.canonicalJson(bytes));
}

/** The plan's JSON Schema (draft 2020-12), as text. */
function schema() {
  return native.schema();
}

/** The step registry, in canonical order. */
function registry() {
  return native.registry();
}

module.exports = {
  PlanlockError,
  Report,
  ERROR_CODES: Object.freeze(native.errorCodes()),
  version,
  validate,
  planHash,
  planHashIn,
  planHashOf,
  canonicalJson,
  canonicalJsonText,
  schema,
  registry,
};
