/**
 * The fenced code blocks of a Markdown page, and a runner for its shell blocks: the commands a
 * reader would type, against a service the test started instead of `localhost:8000`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '@agent-backend/testing';

export interface CodeBlock {
  readonly page: string;
  /** The fence's info string: `sh`, `ts`, ... (empty for plain text). */
  readonly lang: string;
  readonly code: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

export function codeBlocks(page: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = readFileSync(join(REPO_ROOT, page), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    blocks.push({ page, lang: open[1]!, code: body.join('\n'), line: start + 1 });
  }
  return blocks;
}

/** Shell commands a test does not run: it started the service itself, and runs no suite. */
const NOT_RUN = [
  /^npm (start|test|run (setup|demo))\b/,
  /^pnpm (start|test|demo|setup)\b/,
  /^docker\b/,
];
/** Commands that run until stopped: started in the background, awaited until registered. */
const LONG_RUNNING = /(\bnode:simulate\b|simulate-node\.js)/;

/** What the pages' commands use besides Node.js: a shell, curl and a few core utilities. */
const BASE_TOOLS = ['bash', 'sh', 'curl', 'grep', 'sed', 'cat', 'sleep', 'seq', 'env'];

function which(tool: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

/**
 * A PATH with Node.js (node, npm, npx) and {@link BASE_TOOLS} only, as on a machine where the
 * README's "you need Node.js, nothing else" holds: no pnpm.
 */
function nodeOnlyPath(scratch: string): string {
  const bin = join(scratch, 'node-only-bin');
  mkdirSync(bin, { recursive: true });
  const tools = new Map<string, string>([['node', process.execPath]]);
  // npm and npx beside this node when its installation has them (a bare binary, like CI's
  // second Node version, has not: then the ones on the PATH, run by this node).
  for (const tool of ['npm', 'npx']) {
    const beside = join(dirname(process.execPath), tool);
    const found = existsSync(beside) ? beside : which(tool);
    if (found) tools.set(tool, found);
  }
  for (const tool of BASE_TOOLS) {
    const found = which(tool);
    if (found) tools.set(tool, found);
  }
  for (const [name, target] of tools) {
    try {
      symlinkSync(realpathSync(target), join(bin, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return bin;
}

export interface ShellRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The script as run, for failure messages. */
  script: string;
}

/**
 * Runs shell blocks as one bash script from the repository root (`set -e`), with Node.js but
 * no pnpm on the PATH: `localhost:8000`
 * becomes `origin`'s host and port, the token files the pages write (`tokens.json`) go to
 * `scratch`, the service commands listed in {@link NOT_RUN} are left out, and a simulator is
 * started in the background and awaited until it registered (it is stopped at the end).
 */
export function runShellBlocks(
  blocks: readonly CodeBlock[],
  options: {
    origin: string;
    scratch: string;
    env: Record<string, string>;
    /** More replacements, for pages with other addresses than `localhost:8000`. */
    replace?: ReadonlyArray<readonly [RegExp, string]>;
  },
): Promise<ShellRun> {
  const host = new URL(options.origin).host;
  const lines: string[] = ['set -euo pipefail'];
  let simulators = 0;
  for (const block of blocks) {
    lines.push(`# ${block.page}:${block.line}`);
    // Continuation lines joined, so a command is one line here.
    const commands = block.code.replace(/\\\n\s*/g, ' ').split('\n');
    for (const raw of commands) {
      let command = raw;
      for (const [pattern, replacement] of options.replace ?? []) {
        command = command.replace(pattern, replacement);
      }
      command = command
        .replace(/localhost:8000/g, host)
        .replace(/(\.\/)?\btokens\.json\b/g, join(options.scratch, 'tokens.json'))
        .replace(/\s+#\s.*$/, '');
      if (command.trim() === '' || command.trim().startsWith('#')) continue;
      if (NOT_RUN.some((pattern) => pattern.test(command.trim()))) continue;
      // Started in the background by the page itself: left as written.
      if (LONG_RUNNING.test(command) && !command.trim().endsWith('&')) {
        const log = join(options.scratch, `simulator-${Date.now()}-${++simulators}.log`);
        // Its own output to a file: the script's pipes close when the script ends.
        lines.push(`${command} >${log} 2>&1 &`);
        lines.push(
          `for _ in $(seq 600); do grep -q ' registered ' ${log} && break; sleep 0.1; done`,
          `grep -q ' registered ' ${log} || { cat ${log} >&2; exit 9; }`,
        );
        continue;
      }
      lines.push(command);
    }
  }
  const script = lines.join('\n');
  const child = spawn('bash', ['-c', script], {
    cwd: REPO_ROOT,
    env: {
      PATH: nodeOnlyPath(options.scratch),
      HOME: process.env.HOME ?? '',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so what it started in the background (npm, the simulator under
    // it) is stopped with it.
    detached: true,
  });
  child.once('exit', () => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // Nothing left.
    }
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr, script })),
  );
}

/** The JSON objects in a command's output (curl prints no newline after one). */
export function jsonObjects(text: string): unknown[] {
  const found: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === '}' && depth > 0 && --depth === 0) {
      try {
        found.push(JSON.parse(text.slice(start, i + 1)));
      } catch {
        // Not JSON after all (a shell message with braces).
      }
    }
  }
  return found;
}

/**
 * The JSON answers a block promises in `# {...}` comments after its commands, with `...` in a
 * string standing for any text (`"eyJ..."`).
 */
export function promisedAnswers(block: CodeBlock): Array<Record<string, unknown>> {
  return block.code
    .split('\n')
    .map((line) => /^#\s*(\{.*\})\s*$/.exec(line.trim())?.[1])
    .filter((json): json is string => json !== undefined)
    .map((json) => JSON.parse(json) as Record<string, unknown>);
}

/** Whether `actual` has the promised keys and values (a `...` string matches by its prefix). */
export function keeps(promised: Record<string, unknown>, actual: unknown): boolean {
  if (!actual || typeof actual !== 'object') return false;
  const got = actual as Record<string, unknown>;
  return Object.entries(promised).every(([key, value]) => {
    if (!(key in got)) return false;
    if (typeof value === 'string' && value.endsWith('...')) {
      return typeof got[key] === 'string' && (got[key] as string).startsWith(value.slice(0, -3));
    }
    return JSON.stringify(got[key]) === JSON.stringify(value);
  });
}
