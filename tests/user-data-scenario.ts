/**
 * What the export and erasure tests do on any deployment (split roles or the all-in-one): give a
 * user data of every kind through the API, read their export with the system's `tar`, erase
 * them, and look for anything of theirs left in the store.
 */
import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import { skillMarkdown, textReply, toolCallsReply, writeZip } from '@agent-backend/testing';
import type { ScriptedModel } from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { post } from './helpers.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

export const SERVICE_TOKEN = 'login-layer-credential-erasure-0123456789';
export const INTERNAL_SECRET = 'internal-secret-erasure-tests';

/** A deployment as the scenario reaches it. */
export interface Deployment {
  /** Base URL of API replica `i` (the same one for the all-in-one). */
  api(i: number): string;
  /** `ws://` URL of a gateway for `path` with these query parameters. */
  wsUrl(path: string, query: Record<string, string>): string;
  token(userId: string): Promise<string>;
  readonly model: ScriptedModel;
}

/** What {@link giveEverything} made, to find again in the export. */
export interface Given {
  readonly userId: string;
  readonly token: string;
  readonly refreshToken: string;
  readonly sessionId: string;
  readonly knowledgeBaseId: string;
  readonly documentName: string;
  readonly documentContent: string;
  readonly skillName: string;
  readonly taskId: string;
  /** Open sockets of the user: a web client and a registered extension node. */
  readonly sockets: TestSocket[];
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function ok(res: Response, what: string): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.status, `${what}: ${JSON.stringify(body)}`).toBeLessThan(300);
  return body;
}

/** Data of every kind the service keeps for a user, made through its API. */
export async function giveEverything(d: Deployment, userId: string): Promise<Given> {
  const pair = await ok(
    await post(`${d.api(0)}/api/auth/token`, { user_id: userId }, bearer(SERVICE_TOKEN)),
    'token',
  );
  const token = await d.token(userId);
  const llm = (modelName: string) => ({ baseUrl: d.model.baseUrl, apiKey: 'sk-x', modelName });

  // A run whose todo list waits for approval (approvals, todos, messages, runs with usage).
  d.model.script(`${userId}-plan`, [
    toolCallsReply([{ id: 'call_t', name: 'write_todos', args: { todos: [{ content: 'Pack' }] } }]),
    textReply('Planned.', 1),
  ]);
  const first = await invoke(d.api(0), token, {
    message: 'Plan my move',
    llm_config: llm(`${userId}-plan`),
    hitl_config: {},
  });
  const approval = await first.waitFor((e) => e.data.type === 'approval_request');
  await ok(
    await post(
      `${d.api(1)}/api/agent/approvals/${String(approval.data.request_id)}/decision`,
      { decision: 'approve' },
      bearer(token),
    ),
    'approve',
  );
  const events = await first.ended;
  expect(events.at(-1)?.data.type).toBe('done');
  const sessionId = String(events.find((e) => e.data.type === 'session')!.data.session_id);

  // A second run in the session saves a memory.
  d.model.script(`${userId}-mem`, [
    toolCallsReply([{ name: 'memory_save', args: { text: `${userId} moves to Lisbon` } }]),
    textReply('Noted.', 1),
  ]);
  const second = await invoke(d.api(1), token, {
    message: 'Remember where I move',
    session_id: sessionId,
    enable_memory: true,
    llm_config: llm(`${userId}-mem`),
  });
  expect((await second.ended).at(-1)?.data.type).toBe('done');

  const base = await ok(
    await post(`${d.api(0)}/api/knowledge-bases`, { name: 'Move' }, bearer(token)),
    'knowledge base',
  );
  const knowledgeBaseId = String(base.id);
  const documentName = 'boxes – list.md';
  const documentContent = `# Boxes of ${userId}\n\nBooks, plates, the cat's bed.\n`;
  await ok(
    await post(
      `${d.api(1)}/api/knowledge-bases/${knowledgeBaseId}/documents`,
      { name: documentName, content: documentContent, type: 'markdown' },
      bearer(token),
    ),
    'document',
  );

  const skillName = 'moving-checklist';
  const zip = writeZip([
    { name: `${skillName}/SKILL.md`, data: skillMarkdown(skillName) },
    { name: `${skillName}/scripts/count.py`, data: 'print(42)\n' },
  ]);
  await ok(
    await post(`${d.api(0)}/api/skills`, { zip_base64: zip.toString('base64') }, bearer(token)),
    'skill',
  );

  // A task due now that waits for confirmation: a run row and a delayed timeout job.
  const taskId = `task-of-${userId}`;
  const due = new Date(Date.now() + 1000).toISOString();
  await ok(
    await post(
      `${d.api(1)}/scheduled-task/sync`,
      {
        action: 'add',
        task_id: taskId,
        task: {
          id: taskId,
          user_id: userId,
          title: 'Call the movers',
          prompt: 'Remind me',
          repeat_type: 'no-repeat',
          run_mode: 'require-confirmation',
          scheduled_date: due.slice(0, 10),
          scheduled_time: due.slice(11, 19),
          timezone: 'UTC',
        },
      },
      { 'x-internal-secret': INTERNAL_SECRET },
    ),
    'task',
  );
  await waitUntil(async () => {
    const task = (await fetch(`${d.api(0)}/scheduled-task/${taskId}`, {
      headers: { 'x-internal-secret': INTERNAL_SECRET },
    }).then((r) => r.json())) as { runs?: unknown[] };
    return (task.runs?.length ?? 0) > 0;
  });
  await waitUntil(async () => {
    const docs = (await fetch(`${d.api(0)}/api/knowledge-bases/${knowledgeBaseId}/documents`, {
      headers: bearer(token),
    }).then((r) => r.json())) as { documents?: Array<{ status: string }> };
    return docs.documents?.[0]?.status === 'ready';
  });

  const web = await openSocket(d.wsUrl('/ws/web', { user_id: userId, token }));
  const node = await openSocket(d.wsUrl('/ws/extension', { client_id: `user_${userId}`, token }));
  node.send({
    type: 'register',
    node_id: `ext_${userId}`,
    node_type: 'extension',
    available_tools: ['tabs'],
  });
  await node.next(ofType('registered'));

  return {
    userId,
    token,
    refreshToken: String(pair.refreshToken),
    sessionId,
    knowledgeBaseId,
    documentName,
    documentContent,
    skillName,
    taskId,
    sockets: [web, node],
  };
}

/** Polls `check` until it holds (15 s at most: a loaded machine). */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `GET /api/me/export`, unpacked by the system's `tar`: file path to content. */
export async function exportOf(baseUrl: string, token: string): Promise<Map<string, Buffer>> {
  const res = await fetch(`${baseUrl}/api/me/export`, { headers: bearer(token) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/x-tar');
  const dir = mkdtempSync(join(tmpdir(), 'export-test-'));
  try {
    writeFileSync(join(dir, 'archive.tar'), Buffer.from(await res.arrayBuffer()));
    mkdirSync(join(dir, 'out'));
    execFileSync('tar', ['-xf', 'archive.tar', '-C', 'out'], { cwd: dir });
    const files = new Map<string, Buffer>();
    const walk = (at: string) => {
      for (const name of readdirSync(at)) {
        const path = join(at, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.set(relative(join(dir, 'out'), path), readFileSync(path));
      }
    };
    walk(join(dir, 'out'));
    return files;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The JSON lines of one file of an export. */
export function lines(files: Map<string, Buffer>, name: string): Array<Record<string, unknown>> {
  const file = files.get(name);
  expect(file, name).toBeDefined();
  return file!
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Checks that the export holds every kind of data {@link giveEverything} made. */
export function expectEverythingIn(files: Map<string, Buffer>, given: Given): void {
  expect(lines(files, 'sessions.jsonl').map((s) => s.session_id)).toEqual([given.sessionId]);
  expect(lines(files, 'todos.jsonl')).toMatchObject([
    { session_id: given.sessionId, content: 'Pack' },
  ]);
  const messages = lines(files, 'messages.jsonl');
  expect(messages.map((m) => (m.message as { role: string }).role)).toContain('tool');
  expect(JSON.stringify(messages)).toContain('Plan my move');
  expect(lines(files, 'runs.jsonl')).toHaveLength(2);
  expect(lines(files, 'approvals.jsonl')).toMatchObject([
    { tool_name: 'write_todos', outcome: 'approved' },
  ]);
  expect(lines(files, 'memories.jsonl')).toMatchObject([
    { content: `${given.userId} moves to Lisbon` },
  ]);
  expect(lines(files, 'knowledge-bases.jsonl')).toMatchObject([
    { knowledge_base_id: given.knowledgeBaseId },
  ]);
  const [doc] = lines(files, 'knowledge-documents.jsonl');
  expect(doc).toMatchObject({ name: given.documentName, status: 'ready' });
  expect(files.get(String(doc!.file))?.toString('utf8')).toBe(given.documentContent);
  expect(lines(files, 'skills.jsonl')).toMatchObject([{ name: given.skillName }]);
  expect(files.get(`skills/${given.skillName}/scripts/count.py`)?.toString()).toBe('print(42)\n');
  expect(files.get(`skills/${given.skillName}/SKILL.md`)?.toString()).toContain(
    `name: ${given.skillName}`,
  );
  expect(lines(files, 'scheduled-tasks.jsonl')).toMatchObject([{ task_id: given.taskId }]);
  expect(lines(files, 'scheduled-task-runs.jsonl')).toMatchObject([{ task_id: given.taskId }]);
  expect(lines(files, 'nodes.jsonl')).toMatchObject([{ nodeId: `ext_${given.userId}` }]);
  const tokens = lines(files, 'tokens.jsonl');
  expect(tokens).toHaveLength(1);
  expect(JSON.stringify(tokens)).not.toContain('token_hash');
  const manifest = JSON.parse(files.get('manifest.json')!.toString()) as {
    files: Record<string, number>;
  };
  expect(manifest.files['messages.jsonl']).toBe(messages.length);
}

/** `DELETE /api/me` with the confirmation. */
export async function eraseMe(baseUrl: string, token: string, confirm?: string) {
  const res = await fetch(`${baseUrl}/api/me`, {
    method: 'DELETE',
    headers: { 'content-type': 'application/json', ...bearer(token) },
    body: JSON.stringify(confirm === undefined ? {} : { confirm }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A table and column whose rows mention the user id somewhere. */
export type Mention = `${string}.${string}`;

/**
 * Every column of every table of the schema that can hold text (text, jsonb, arrays...), each
 * searched for `userId`: where any row mentions them.
 */
export async function mentionsIn(
  sql: <R extends Record<string, unknown>>(text: string, params?: unknown[]) => Promise<R[]>,
  userId: string,
): Promise<Mention[]> {
  const columns = await sql<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
     JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
       AND c.data_type IN ('text', 'character varying', 'jsonb', 'json', 'ARRAY', 'tsvector')`,
  );
  expect(columns.length).toBeGreaterThan(20);
  const found: Mention[] = [];
  for (const { table_name: table, column_name: column } of columns) {
    const rows = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table}" WHERE strpos("${column}"::text, $1) > 0`,
      [userId],
    );
    if ((rows[0]?.n ?? 0) > 0) found.push(`${table}.${column}`);
  }
  return found.sort();
}
