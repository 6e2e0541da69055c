/**
 * The package map of docs/architecture.md ("Packages by layer") is the dependency graph: every
 * package and app is in it once, with exactly the workspace dependencies of its package.json,
 * and each dependency in a lower layer. README's layout names every package and app. The map is
 * read from the page, so a new package, a new dependency or an arrow pointing up fails here
 * until the page says so.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SCOPE = '@agent-backend/';

/** A workspace member as its package.json says: runtime and development workspace dependencies. */
interface Member {
  readonly dir: string;
  readonly dependencies: string[];
  readonly devDependencies: string[];
}

function workspace(): Map<string, Member> {
  const members = new Map<string, Member>();
  for (const top of ['packages', 'apps']) {
    for (const name of readdirSync(join(ROOT, top))) {
      const manifest = JSON.parse(readFileSync(join(ROOT, top, name, 'package.json'), 'utf8')) as {
        name: string;
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        optionalDependencies?: Record<string, string>;
      };
      const ours = (deps: Record<string, string> | undefined) =>
        Object.keys(deps ?? {})
          .filter((d) => d.startsWith(SCOPE))
          .map((d) => d.slice(SCOPE.length))
          .sort();
      expect(manifest.name, `${top}/${name}`).toBe(`${SCOPE}${name}`);
      members.set(name, {
        dir: `${top}/${name}`,
        dependencies: ours({ ...manifest.dependencies, ...manifest.optionalDependencies }),
        devDependencies: ours({ ...manifest.devDependencies, ...manifest.peerDependencies }),
      });
    }
  }
  return members;
}

interface MapEntry {
  readonly layer: number;
  readonly dependencies: string[];
}

/**
 * The tables under "## Packages by layer": `### Layer N: ...` headings, each followed by rows
 * `| \`name\` | what it holds | \`dep\`, \`dep\` |` (`—` for none).
 */
function packageMap(markdown: string): Map<string, MapEntry> {
  const start = markdown.indexOf('\n## Packages by layer\n');
  expect(start, 'docs/architecture.md has a "Packages by layer" section').toBeGreaterThan(-1);
  const rest = markdown.slice(start + 1);
  const end = rest.indexOf('\n## ', 1);
  const section = end === -1 ? rest : rest.slice(0, end);
  const map = new Map<string, MapEntry>();
  let layer: number | undefined;
  for (const line of section.split('\n')) {
    const heading = /^### Layer (\d+)\b/.exec(line);
    if (heading) layer = Number(heading[1]);
    else if (line.startsWith('### ')) layer = undefined;
    const row = /^\| `([a-z0-9-]+)` \|.*\| ([^|]*) \|$/.exec(line);
    if (!row || layer === undefined) continue;
    const [, name, deps] = row;
    expect(map.has(name!), `${name} is in the map once`).toBe(false);
    const dependencies =
      deps!.trim() === '—' ? [] : deps!.split(',').map((d) => d.trim().replace(/^`|`$/g, ''));
    map.set(name!, { layer, dependencies: dependencies.sort() });
  }
  return map;
}

describe('the package map of docs/architecture.md', () => {
  const members = workspace();
  const map = packageMap(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));

  it('lists every package and app once, and nothing else', () => {
    expect([...map.keys()].sort()).toEqual([...members.keys()].sort());
  });

  it("gives each one exactly its package.json's workspace dependencies", () => {
    const documented = Object.fromEntries([...map].map(([name, e]) => [name, e.dependencies]));
    const declared = Object.fromEntries([...members].map(([name, m]) => [name, m.dependencies]));
    expect(documented).toEqual(declared);
  });

  it('has every dependency in a lower layer (no arrow up or sideways, so no cycle)', () => {
    const upward: string[] = [];
    for (const [name, entry] of map) {
      for (const dep of entry.dependencies) {
        const target = map.get(dep);
        if (!target || target.layer >= entry.layer) {
          upward.push(`${name} (layer ${entry.layer}) -> ${dep} (layer ${target?.layer ?? '?'})`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it('leaves out only `testing`, a development dependency', () => {
    const others = [...members].flatMap(([name, m]) =>
      m.devDependencies.filter((d) => d !== 'testing').map((d) => `${name} -> ${d}`),
    );
    expect(others).toEqual([]);
  });
});

describe("README's layout", () => {
  it('names every package and app', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf('\n## Layout\n');
    expect(start).toBeGreaterThan(-1);
    const layout = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const named = new Set(layout.match(/\b(?:packages|apps)\/[a-z0-9-]+/g) ?? []);
    const missing = [...workspace().values()].map((m) => m.dir).filter((dir) => !named.has(dir));
    expect(missing).toEqual([]);
  });
});
