/**
 * The docs stand on their own. Every relative link in the README and docs/ reaches a
 * file of the repository (and a heading, for `#anchors` into Markdown), and
 * docs/configuration.md is the one generated from the configuration schema (every variable).
 * And docs/openapi.json and docs/asyncapi.json are the generated API documents.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvSchema, renderConfigurationDoc } from '@agent-backend/config';
import { apiDocFiles } from '../scripts/api-docs-files.js';

const ROOT = resolve(import.meta.dirname, '..');
const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...readdirSync(join(ROOT, 'packages'))
    .filter((p) => existsSync(join(ROOT, 'packages', p, 'README.md')))
    .map((p) => `packages/${p}/README.md`),
];

/** Published specifications a page may name; anything else called "the spec" is not in the repository. */
const PUBLIC_SPECIFICATIONS =
  /\b(OpenTelemetry|OpenAPI|AsyncAPI|Compose|Agent Skills|JSON Schema)\s+specification\b/gi;

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const counts = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const seen = counts.get(slug) ?? 0;
    counts.set(slug, seen + 1);
    found.add(seen === 0 ? slug : `${slug}-${seen}`);
  }
  return found;
}

describe('documentation', () => {
  it('links only to files (and headings) that exist in the repository', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // http(s), mailto
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const path = file ? resolve(dirname(join(ROOT, page)), file) : join(ROOT, page);
        if (!existsSync(path)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor && path.endsWith('.md') && !anchors(readFileSync(path, 'utf8')).has(anchor)) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('cites no file outside the repository', () => {
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      expect(text, page).not.toMatch(/DESIGN\.md|STYLE\.md|agent-backend-service\.md/);
      const prose = text.replace(PUBLIC_SPECIFICATIONS, '');
      // "spec 4.2", "the spec's", "the service specification": a document no reader has.
      const citations = [
        ...prose.matchAll(/\bspec\s+\d[\d.]*|\b(the|bare)\s+spec\b|specification/gi),
      ];
      expect(
        citations.map((m) => m[0]),
        page,
      ).toEqual([]);
    }
  });

  it('docs/protocol.md describes every HTTP route of docs/openapi.json', () => {
    const protocol = readFileSync(join(ROOT, 'docs/protocol.md'), 'utf8');
    const openapi = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(openapi.paths)) {
      // `{id}` may be written `:id`, `{id}` or `<id>`, under any name.
      const pattern = path
        .split(/\{[^}]+\}/)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('(?::\\w+|\\{\\w+\\}|<\\w+>)');
      for (const method of Object.keys(operations)) {
        const route = new RegExp(`\`${method.toUpperCase()} ${pattern}[\`?]`);
        if (!route.test(protocol)) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('docs/configuration.md is generated from the schema and is current', () => {
    const text = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    // Stale: run `pnpm docs:config`.
    expect(text).toBe(renderConfigurationDoc());
    const documented = [...text.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(documented).toEqual(Object.keys(EnvSchema.shape));
  });

  it('.env.example names only variables the configuration reads, and is git-ignored as .env', () => {
    const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const named = [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((name) => !(name in EnvSchema.shape))).toEqual([]);
    const ignored = readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['.env', 'tokens.json']));
  });

  it('docs/openapi.json and docs/asyncapi.json are generated from the schemas and are current', async () => {
    // Stale: run `pnpm docs:api`.
    for (const [path, text] of Object.entries(await apiDocFiles())) {
      expect(readFileSync(join(ROOT, path), 'utf8'), path).toBe(text);
    }
  });
});
