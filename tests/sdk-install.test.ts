/**
 * The SDK as a client author gets it: the three publishable packages packed with `pnpm pack`
 * (what `pnpm publish` uploads, `workspace:*` rewritten to versions), installed together with
 * plain npm from the tarballs into a project outside the workspace (their third-party
 * dependencies come from the registry), type-checked as a TypeScript consumer would, and run
 * against the all-in-one: a streamed run's events read, its session listed, read, renamed and
 * deleted, its run and the usage read, and a refused call's typed error.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const PACKAGES = ['protocol', 'node-client', 'client'];

/** What the author's script prints: the run's event types and text, and a refused call. */
const SCRIPT = `
import { AgentBackendClient, ApiError, UnauthorizedError } from '@agent-backend/client';
import { WebClient } from '@agent-backend/client/node';

const [baseUrl, token, llm] = [process.env.BASE_URL, process.env.TOKEN, JSON.parse(process.env.LLM)];
const client = new AgentBackendClient({ baseUrl, token });
const run = client.invoke({ message: 'Hello', llm_config: llm, sandbox_mode: 'none' });
const events = [];
for await (const event of run) events.push(event);
const listed = [];
for await (const session of client.sessions.list({ limit: 1 }, { timeout: 30_000 })) listed.push(session.session_id);
const messages = [];
for await (const message of client.sessions.messages(run.sessionId)) messages.push(message.role);
const renamed = await client.sessions.rename(run.sessionId, 'From npm');
const runStatus = (await client.runs.get(run.runId, { retries: 2 })).status;
const usageRuns = (await client.usage.get()).total.runs;
await client.sessions.delete(run.sessionId);
let deleted;
try {
  await client.sessions.get(run.sessionId);
} catch (error) {
  deleted = error.name;
}
let refused;
try {
  await new AgentBackendClient({ baseUrl, token: 'not-a-token' }).whoami({ timeout: 30_000, retries: 1 });
} catch (error) {
  refused = {
    isApiError: error instanceof ApiError,
    isUnauthorized: error instanceof UnauthorizedError,
    status: error.status,
    code: error.code,
  };
}
console.log(JSON.stringify({
  types: events.map((e) => e.type),
  text: events.filter((e) => e.type === 'message_chunk').map((e) => e.content).join(''),
  sessionId: run.sessionId,
  error: events.find((e) => e.type === 'error'),
  refused,
  webClient: typeof WebClient,
  conversations: { listed, messages, title: renamed.title, runStatus, usageRuns, deleted },
}));
`;

/** The same calls in TypeScript, checked against the installed declarations only. */
const TYPED = `
import {
  AgentBackendClient,
  ApiError,
  NotFoundError,
  type AgentEvent,
  type CallOptions,
} from '@agent-backend/client';
import { NodeClient } from '@agent-backend/client/node';

const client = new AgentBackendClient({ baseUrl: 'http://127.0.0.1:1', token: 't' });
export async function texts(): Promise<string[]> {
  const out: string[] = [];
  const llm_config = { baseUrl: 'http://127.0.0.1:2/v1', apiKey: 'k', modelName: 'm' };
  for await (const event of client.invoke({ message: 'hi', llm_config })) {
    const typed: AgentEvent = event;
    if (typed.type === 'message_chunk') out.push(typed.content);
  }
  return out;
}
export const isApiError = (error: unknown): error is ApiError => error instanceof ApiError;
export async function skillNames(signal: AbortSignal): Promise<string[]> {
  try {
    const options: CallOptions = { signal, timeout: 5_000, retries: 2 };
    return (await client.skills.list(options)).map((skill) => skill.name);
  } catch (error) {
    if (error instanceof NotFoundError) return [];
    throw error;
  }
}
export async function titles(): Promise<string[]> {
  const out: string[] = [];
  for await (const session of client.sessions.list({ q: 'plan' }, { retries: 1 })) {
    out.push(session.title ?? session.session_id);
  }
  const run = await client.runs.cancel('run_1', { timeout: 1_000 });
  return run.status === 'aborted' ? out : [];
}
export type Node = NodeClient;
`;

describe('the SDK installed with npm outside the repository', () => {
  let project: string;
  let service: ServiceProcess;
  let model: ScriptedModel;
  const env = {
    DATA_DIR: tempDir('sdk-install'),
    LOG_LEVEL: 'info',
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
  };

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE, ...PACKAGES.map((name) => `packages/${name}/dist/index.js`));
    const tarballs = mkdtempSync(join(tmpdir(), 'sdk-tarballs-'));
    for (const name of PACKAGES) {
      execFileSync('pnpm', ['pack', '--pack-destination', tarballs], {
        cwd: join(REPO_ROOT, 'packages', name),
        env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0' },
        stdio: 'pipe',
      });
    }
    // Under the system's temporary directory: no workspace, no node_modules above it.
    project = mkdtempSync(join(tmpdir(), 'sdk-author-'));
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'sdk-author', private: true, type: 'module' }),
    );
    const files = PACKAGES.map((name) => join(tarballs, `agent-backend-${name}-0.1.0.tgz`));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...files], {
      cwd: project,
      stdio: 'pipe',
    });
    model = await startScriptedModel();
    service = await startServiceProcess({ entry: MAIN, env, timeoutMs: 200_000 });
  }, 300_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('runs an author script: a streamed run, its conversation through the SDK, and a typed error', async () => {
    model.script('sdk-install', [textReply('Installed and running')]);
    const { accessToken } = JSON.parse((await runEntry(TOKEN_ISSUE, ['frank'], env)).stdout) as {
      accessToken: string;
    };
    writeFileSync(join(project, 'script.mjs'), SCRIPT);
    // Asynchronously: the scripted model answers from this process's event loop.
    const { stdout: out } = await promisify(execFile)(process.execPath, ['script.mjs'], {
      cwd: project,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '',
        BASE_URL: service.url,
        TOKEN: accessToken,
        LLM: JSON.stringify({ baseUrl: model.baseUrl, apiKey: 'sk-x', modelName: 'sdk-install' }),
      },
    });
    const result = JSON.parse(out) as Record<string, unknown> & { types: string[] };
    expect(result.text, out).toBe('Installed and running');
    expect(result.types.at(-1)).toBe('done');
    expect(result.sessionId).toMatch(/\S/);
    expect(result.refused).toEqual({
      isApiError: true,
      isUnauthorized: true,
      status: 401,
      code: 'unauthorized',
    });
    expect(result.webClient).toBe('function');
    expect(result.conversations).toEqual({
      listed: [result.sessionId],
      messages: ['user', 'assistant'],
      title: 'From npm',
      runStatus: 'done',
      usageRuns: 1,
      deleted: 'NotFoundError',
    });
  });

  it('type-checks a TypeScript consumer against the installed declarations', () => {
    writeFileSync(join(project, 'consumer.ts'), TYPED);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'dom'],
          types: [],
          skipLibCheck: false,
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    // tsc's diagnostics when a declaration names something not installed.
    const checked = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(checked.stdout).toBe('');
    expect(checked.status).toBe(0);
  });
});
