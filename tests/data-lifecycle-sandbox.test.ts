import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  testDatabaseUrl,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { eventually } from './ws-client.js';

const root = mkdtempSync(join(tmpdir(), 'retention-sbx-'));
const usersRoot = join(root, 'users');
const stateDir = join(root, 'state');

/**
 * A session deleted by retention takes its sandbox with it (docs/operations.md#retention): on
 * an api replica and a worker over PostgreSQL and Redis, a session whose local sandboxes
 * (bubblewrap) ran a command is aged past `RETENTION_SESSIONS_DAYS`; the worker's retention
 * sweep deletes the session and destroys its sandbox's folder at once. The sandbox sweep, which
 * would find it as an orphan, waits an hour here, so only the retention sweep can have done it.
 */
describe('retention removes a session with its sandbox', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  const sql = async <R extends Record<string, unknown>>(text: string, params: unknown[] = []) => {
    const client = new pg.Client({
      connectionString: testDatabaseUrl(),
      options: `-c search_path=${cluster.env.DATABASE_SCHEMA}`,
    });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as R[];
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    mkdirSync(join(usersRoot, 'rita', 'project'), { recursive: true });
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 0,
      apis: 1,
      workers: 1,
      env: {
        AGENT_LLM_MAX_RETRIES: '0',
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        SANDBOX_LOCAL_ROOT: usersRoot,
        SANDBOX_STATE_DIR: stateDir,
        SANDBOX_SWEEP_INTERVAL_MS: '3600000',
        RETENTION_SESSIONS_DAYS: '30',
        RETENTION_SWEEP_INTERVAL_MS: '1000',
      },
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await model?.close();
  });

  it('deletes the expired session and destroys its sandbox folder; the user’s files stay', async () => {
    model.script('m-sandboxed', [
      toolCallsReply([{ name: 'run_command', args: { command: 'echo kept > note.txt' } }]),
      textReply('Written.'),
    ]);
    const run = await invoke(cluster.apis[0]!.url, await cluster.token('rita'), {
      message: 'Write a note',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-retention', modelName: 'm-sandboxed' },
      sandbox_mode: 'local',
      working_directory: 'project',
      session_id: 'sbx-expiring',
    });
    expect((await run.ended).at(-1)!.data.type).toBe('done');
    const [sandbox] = await sql<{ sandbox_id: string }>(
      `SELECT sandbox_id FROM session_sandboxes WHERE user_id = 'rita'`,
    );
    const folder = join(stateDir, sandbox!.sandbox_id);
    expect(existsSync(folder)).toBe(true);

    await sql(
      `UPDATE agent_sessions SET updated_at = now() - interval '40 days' WHERE user_id = 'rita'`,
    );
    await eventually(
      async () => (await sql(`SELECT 1 FROM agent_sessions WHERE user_id = 'rita'`)).length === 0,
      30_000,
    );
    expect(await sql(`SELECT 1 FROM session_sandboxes WHERE user_id = 'rita'`)).toEqual([]);
    await eventually(async () => !existsSync(folder), 10_000);
    // The working directory is the user's, not the session's: it stays.
    expect(readFileSync(join(usersRoot, 'rita', 'project', 'note.txt'), 'utf8')).toBe('kept\n');
    const metrics = await (await fetch(`${cluster.workers[0]!.url}/metrics`)).text();
    expect(metrics).toMatch(/agent_backend_retention_removed_total\{kind="sandboxes"[^}]*\} 1\b/);
  }, 120_000);
});
