/**
 * fast-check arbitraries derived from the protocol's zod schemas (through their JSON Schema,
 * `z.toJSONSchema`): values the schema accepts, and the same values mutated the ways hostile or
 * broken clients send them: wrong types, missing fields, huge strings, deep nesting, odd
 * unicode, prototype keys, non-objects and text that is not JSON.
 *
 * Every string a schema calls a URL is a loopback address on the discard port, so a valid body
 * never sends the service anywhere but this machine (and then nowhere that answers).
 */
import fc from 'fast-check';
import { z } from 'zod';

type JsonSchema = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  prefixItems?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
};

/** Where every URL-ish string of a generated body points: loopback, the discard port. */
export const LOOPBACK_URL = 'http://127.0.0.1:9/fuzz';
const URL_KEY = /url|uri|endpoint|href|origin/i;
const MAX_ITEMS = 3;
const MAX_STRING = 40;

/** Values the schema accepts (mostly: refinements the JSON Schema cannot carry may refuse some). */
export function validValue(schema: z.ZodType): fc.Arbitrary<unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return fromJsonSchema(json, json.$defs ?? {}, undefined, 0);
}

function fromJsonSchema(
  schema: JsonSchema,
  defs: Record<string, JsonSchema>,
  key: string | undefined,
  depth: number,
): fc.Arbitrary<unknown> {
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop()!;
    const target = defs[name];
    if (!target || depth > 6) return fc.constant(null);
    return fromJsonSchema(target, defs, key, depth + 1);
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return fc.oneof(...choices.map((s) => fromJsonSchema(s, defs, key, depth + 1)));
  if (schema.allOf?.[0]) return fromJsonSchema(schema.allOf[0], defs, key, depth + 1);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) {
    return fc.oneof(...types.map((t) => fromJsonSchema({ ...schema, type: t }, defs, key, depth)));
  }
  switch (types[0]) {
    case 'string':
      return stringFor(schema, key);
    case 'integer': {
      const min = num(schema.minimum) ?? (num(schema.exclusiveMinimum) ?? -1_000_001) + 1;
      const max = num(schema.maximum) ?? (num(schema.exclusiveMaximum) ?? 1_000_001) - 1;
      return fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) });
    }
    case 'number': {
      const min = num(schema.minimum) ?? num(schema.exclusiveMinimum) ?? -1e6;
      const max = num(schema.maximum) ?? num(schema.exclusiveMaximum) ?? 1e6;
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      if (schema.prefixItems) {
        return fc.tuple(...schema.prefixItems.map((s) => fromJsonSchema(s, defs, key, depth + 1)));
      }
      const item = schema.items
        ? fromJsonSchema(schema.items, defs, key, depth + 1)
        : fc.jsonValue();
      const minLength = num(schema.minItems) ?? 0;
      const maxLength = Math.max(minLength, Math.min(num(schema.maxItems) ?? MAX_ITEMS, MAX_ITEMS));
      return fc.array(item, { minLength, maxLength });
    }
    case 'object': {
      const properties = schema.properties ?? {};
      const names = Object.keys(properties);
      if (names.length === 0) {
        const extra = schema.additionalProperties;
        if (extra && typeof extra === 'object') {
          return fc.dictionary(
            fc.string({ minLength: 1, maxLength: 12 }),
            fromJsonSchema(extra, defs, undefined, depth + 1),
            { maxKeys: MAX_ITEMS },
          );
        }
        return fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: MAX_ITEMS,
        });
      }
      const arbs = Object.fromEntries(
        names.map((name) => [name, fromJsonSchema(properties[name]!, defs, name, depth + 1)]),
      );
      return fc.record(arbs, { requiredKeys: (schema.required ?? []).filter((n) => n in arbs) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringFor(schema: JsonSchema, key: string | undefined): fc.Arbitrary<string> {
  if (key && URL_KEY.test(key)) return fc.constant(LOOPBACK_URL);
  const minLength = num(schema.minLength) ?? 0;
  const maxLength = Math.max(minLength, Math.min(num(schema.maxLength) ?? MAX_STRING, MAX_STRING));
  if (schema.format === 'date-time') {
    return fc
      .date({ min: new Date('2020-01-01'), max: new Date('2035-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  if (schema.format === 'uri') return fc.constant(LOOPBACK_URL);
  if (typeof schema.pattern === 'string') {
    try {
      return fc
        .stringMatching(new RegExp(schema.pattern))
        .filter((s) => s.length >= minLength && s.length <= Math.max(maxLength, minLength, 200));
    } catch {
      // A pattern fast-check cannot generate from: plain strings.
    }
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** How a valid value is spoiled. */
export const MUTATIONS = [
  'wrong-type',
  'drop-field',
  'huge-string',
  'deep-nesting',
  'odd-unicode',
  'prototype-keys',
  'not-an-object',
  'not-json',
] as const;
export type Mutation = (typeof MUTATIONS)[number];

const ODD_STRINGS = [
  '\u0000',
  '\ud800',
  '\udfff lone',
  '\u202e\u202d',
  '\u200b\u200c\u200d\ufeff',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  'ﷺ'.repeat(200),
  'a\r\nset-cookie: x=1',
  '${process.exit()}',
  '<script>alert(1)</script>',
];

/** A JSON body text: a valid value as is, or spoiled one way. */
export function bodyText(
  schema: z.ZodType,
): fc.Arbitrary<{ mutation: Mutation | 'valid'; text: string }> {
  const valid = validValue(schema);
  return fc.oneof(
    {
      weight: 1,
      arbitrary: valid.map((value) => ({
        mutation: 'valid' as const,
        text: JSON.stringify(value),
      })),
    },
    {
      weight: 4,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...MUTATIONS), fc.nat(), fc.jsonValue({ maxDepth: 1 }))
        .map(([value, mutation, seed, other]) => ({
          mutation,
          text: mutate(value, mutation, seed, other),
        })),
    },
  );
}

function mutate(value: unknown, mutation: Mutation, seed: number, other: unknown): string {
  const copy = structuredClone(value) as unknown;
  switch (mutation) {
    case 'wrong-type': {
      const spot = pick(paths(copy), seed);
      if (!spot) return JSON.stringify(other);
      const current = get(copy, spot);
      const replacement = [42, 'text', true, null, [1, 2], { a: 1 }].find(
        (v) => typeof v !== typeof current || Array.isArray(v) !== Array.isArray(current),
      );
      return JSON.stringify(set(copy, spot, replacement));
    }
    case 'drop-field': {
      const spot = pick(
        paths(copy).filter((p) => typeof p.at(-1) === 'string'),
        seed,
      );
      if (!spot) return '{}';
      const parent = get(copy, spot.slice(0, -1)) as Record<string, unknown>;
      delete parent[spot.at(-1) as string];
      return JSON.stringify(copy);
    }
    case 'huge-string': {
      const huge = 'x'.repeat(seed % 2 === 0 ? 200_000 : 1_500_000);
      const spot = pick(
        paths(copy).filter((p) => typeof get(copy, p) === 'string'),
        seed,
      );
      return JSON.stringify(spot ? set(copy, spot, huge) : { huge });
    }
    case 'deep-nesting': {
      const depth = 2_000 + (seed % 8_000);
      const deep = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
      const text = JSON.stringify(copy);
      return text.startsWith('{') && text.length > 2
        ? `{"deep":${deep},${text.slice(1)}`
        : `{"deep":${deep}}`;
    }
    case 'odd-unicode': {
      const odd = ODD_STRINGS[seed % ODD_STRINGS.length]!;
      const strings = paths(copy).filter((p) => typeof get(copy, p) === 'string');
      for (const spot of strings) set(copy, spot, `${get(copy, spot) as string}${odd}`);
      return JSON.stringify(strings.length > 0 ? copy : { odd });
    }
    case 'prototype-keys': {
      const text = JSON.stringify(copy);
      const inject =
        '"__proto__":{"polluted":true,"isAdmin":true},"constructor":{"prototype":{"polluted":true}},';
      return text.startsWith('{') && text.length > 2
        ? `{${inject}${text.slice(1)}`
        : `{${inject.slice(0, -1)}}`;
    }
    case 'not-an-object':
      return JSON.stringify([copy, 'text', 12, null, true][seed % 5]);
    case 'not-json':
      return ['{', '{"a":', "{'single':1}", 'undefined', '\u0000\u0001', '{"a":1}}', 'NaN'][
        seed % 7
      ]!;
  }
}

type Path = Array<string | number>;

/** Every path to a value inside `value` (objects and arrays walked, at most 200). */
function paths(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (out.length >= 200 || value === null || typeof value !== 'object') return out;
  const entries = Array.isArray(value)
    ? value.map((v, i) => [i, v] as const)
    : Object.entries(value as Record<string, unknown>);
  for (const [k, v] of entries) {
    const path = [...prefix, k];
    out.push(path);
    paths(v, path, out);
  }
  return out;
}

function pick<T>(list: T[], seed: number): T | undefined {
  return list.length === 0 ? undefined : list[seed % list.length];
}

function get(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], value);
}

function set(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const parent = get(value, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path.at(-1)!] = replacement;
  return value;
}
