#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Parses HTTP structured field values with the structured-headers package
// and prints them as JSON, so that the Perl suite reads RateLimit-Policy and
// RateLimit with a real RFC 8941/9651 parser instead of a regular expression.
//
//   node parse.js list|item|dictionary FIELD-LINE [FIELD-LINE...]
//
// Several field lines are one field, combined as RFC 9110 5.3 says (joined
// with ", "). Output on success (exit 0):
//   {"canonical": "<the value serialized again>", "members": [MEMBER...]}
// where MEMBER is {"type": T, "value": V, "params": {KEY: {"type", "value"}}}
// (dictionary members also carry "key"), T is one of integer, decimal,
// string, token, binary (value in base64), boolean, date, displaystring,
// innerlist (value: an array of MEMBER). A value that does not parse exits 1
// with the parser's message on stderr.
//
// It runs as make sf bundles it, with structured-headers, for Node.js 12
// (node_modules/.sl/parse.cjs, made by esbuild): Debian 11's Node.js has no
// optional chaining, which structured-headers uses.
import * as sf from 'structured-headers';

// structured-headers reads and writes byte sequences with atob and btoa,
// globals from Node.js 16 on. Before, these do what they do there: the
// WHATWG's forgiving base64 (a length of 4n+1, or "=" anywhere but in the
// last two places, is refused), and only code points up to U+00FF encoded.
if (typeof globalThis.atob !== 'function') {
  globalThis.atob = (input) => {
    let s = String(input).replace(/[\t\n\f\r ]/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) {
      throw new Error('The string to be decoded is not correctly encoded.');
    }
    return Buffer.from(s, 'base64').toString('latin1');
  };
}
if (typeof globalThis.btoa !== 'function') {
  globalThis.btoa = (input) => {
    const s = String(input);
    if (/[^\u0000-\u00ff]/.test(s)) throw new Error('Invalid character');
    return Buffer.from(s, 'latin1').toString('base64');
  };
}

function bare(v) {
  if (typeof v === 'number') {
    return { type: Number.isInteger(v) ? 'integer' : 'decimal', value: v };
  }
  if (typeof v === 'string') return { type: 'string', value: v };
  if (typeof v === 'boolean') return { type: 'boolean', value: v };
  if (v instanceof sf.Token) return { type: 'token', value: v.toString() };
  if (v instanceof sf.DisplayString) {
    return { type: 'displaystring', value: v.toString() };
  }
  if (v instanceof Date) return { type: 'date', value: v.getTime() / 1000 };
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) {
    return { type: 'binary', value: sf.arrayBufferToBase64(v) };
  }
  throw new Error(`unexpected bare item ${String(v)}`);
}

function params(p) {
  const out = {};
  for (const [k, v] of p) out[k] = bare(v);
  return out;
}

function member(m) {
  if (sf.isInnerList(m)) {
    return { type: 'innerlist', value: m[0].map(member), params: params(m[1]) };
  }
  return { ...bare(m[0]), params: params(m[1]) };
}

const [kind, ...lines] = process.argv.slice(2);
if (!['list', 'item', 'dictionary'].includes(kind) || lines.length === 0) {
  process.stderr.write('usage: parse.js list|item|dictionary FIELD-LINE...\n');
  process.exit(2);
}
const input = lines.join(', ');
try {
  let out;
  if (kind === 'list') {
    const v = sf.parseList(input);
    out = { canonical: sf.serializeList(v), members: v.map(member) };
  } else if (kind === 'item') {
    const v = sf.parseItem(input);
    out = { canonical: sf.serializeItem(v), members: [member(v)] };
  } else {
    const v = sf.parseDictionary(input);
    out = {
      canonical: sf.serializeDictionary(v),
      members: [...v].map(([key, m]) => ({ key, ...member(m) })),
    };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
} catch (e) {
  process.stderr.write(`parse.js: ${kind} ${JSON.stringify(input)}: ${e.message}\n`);
  process.exit(1);
}
