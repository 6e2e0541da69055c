/**
 * The repository does not carry its issue list, so "issue 21.5" in a page or a comment tells a
 * reader nothing: docs, code comments and scripts say what they mean instead. (Commit messages
 * may name issues; they are not checked.) An issue of another project (`ioredis issue #2037`)
 * names its tracker and is allowed.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SEARCHED = [
  'README.md',
  'docs',
  'packages',
  'apps',
  'scripts',
  'tests',
  'bench',
  'infra',
  '.ci',
];
const SKIPPED = new Set(['node_modules', 'dist', 'artifacts']);
const TEXT = /\.(ts|mts|mjs|js|json|md|yaml|yml|sh|conf|html|css)$|(^|\/)(run|Dockerfile[^/]*)$/;

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return TEXT.test(path) ? [path] : [];
  return readdirSync(path)
    .filter((name) => !SKIPPED.has(name))
    .flatMap((name) => files(join(path, name)));
}

describe('references to issues', () => {
  it('are not made: each says what it refers to', () => {
    const self = resolve(import.meta.filename);
    const found: string[] = [];
    for (const file of SEARCHED.flatMap((p) => files(join(ROOT, p)))) {
      if (file === self) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/\bissues? [0-9]/i.test(line))
            found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});
