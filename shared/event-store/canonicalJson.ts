/**
 * RFC 8785 JSON Canonicalization Scheme (JCS), for the values JSON.parse makes: the text an
 * auditor's tool (any JCS library) makes of the same value, so that a hash over it can be
 * recomputed outside this code (docs/events.md "The hash chain").
 *
 * - objects: members sorted by their names' UTF-16 code units (what Array.prototype.sort does with
 *   strings), no whitespace; a member whose value is undefined is left out, as JSON.stringify does;
 * - strings: as ECMAScript's JSON.stringify writes them (RFC 8785 3.2.2.2 is that serialization);
 * - numbers: ECMAScript's Number-to-String (RFC 8785 3.2.2.3 again), -0 as 0; NaN and the
 *   infinities are refused (JSON has none). A bigint is written as its decimal digits: positions are
 *   integers, exact below 2^53 in both readings;
 * - true, false, null as literals.
 * One deviation: a lone surrogate in a string (which I-JSON forbids and RFC 8785 would refuse) is
 * written escaped (`\udc00`), as JSON.stringify does, because the log may hold one and a write must
 * never fail for it.
 * No npm package: `canonicalize` (the RFC's reference implementation) is not a dependency of the
 * project; this is the same algorithm, held to it by canonicalJson.unit.spec.ts (the RFC's examples).
 */
export const canonicalJson = (value: unknown): string => {
  switch (typeof value) {
    case 'string':
      return canonicalString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${String(value)} is not a JSON number`);
      return JSON.stringify(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      return Array.isArray(value) ? canonicalArray(value) : canonicalObject(value as Record<string, unknown>);
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} is not a JSON value`);
  }
};

/** Characters JSON.stringify escapes (and lone surrogates): a string without any is written as it is, quoted. */
// eslint-disable-next-line no-control-regex -- the control characters are exactly what is looked for
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

// The writer hashes every event (storedEventHasher): plain concatenation, no intermediate arrays,
// and no JSON.stringify call for the common string that needs no escape, cut its time by about half.
const canonicalString = (text: string): string => (NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`);

const canonicalArray = (array: ReadonlyArray<unknown>): string => {
  let text = '[';
  for (let index = 0; index < array.length; index += 1) {
    const element = array[index];
    text += (index === 0 ? '' : ',') + (element === undefined ? 'null' : canonicalJson(element));
  }
  return `${text}]`;
};

const canonicalObject = (object: Record<string, unknown>): string => {
  let text = '{';
  for (const name of Object.keys(object).sort()) {
    const member = object[name];
    if (member === undefined) continue;
    text += `${text.length === 1 ? '' : ','}${canonicalString(name)}:${canonicalJson(member)}`;
  }
  return `${text}}`;
};
