/**
 * Item 8: the all-in-one on the embedded default (no Redis, PGlite) runs scheduled tasks
 * in-process, delivers the result to the user's web clients through its own gateway, and
 * reconciles the schedules from PGlite after a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { accessToken } from './agent-helpers.js';
import { keyFiles, post, requireBuild, tempDir } from './helpers.js';
import { ofType, openSocket } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const SECRET = 'embedded-secret';
const MODEL = 'embedded-model';

describe('scheduled tasks on the embedded default', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    env = {
      DATA_DIR: tempDir('sched-embedded'),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      INTERNAL_API_SECRET: SECRET,
      DEFAULT_LLM_BASE_URL: model.baseUrl,
      DEFAULT_LLM_API_KEY: 'sk-embedded',
      DEFAULT_LLM_MODEL: MODEL,
    };
    service = await startServiceProcess({ entry: MAIN, env });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  const syncDueIn = (id: string, seconds: number, extra: Record<string, unknown> = {}) => {
    const at = new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000).toISOString();
    return post(
      `${service.url}/scheduled-task/sync`,
      {
        action: 'add',
        task_id: id,
        task: {
          id,
          user_id: 'erin',
          title: `Task ${id}`,
          prompt: 'Go',
          run_mode: 'auto',
          scheduled_date: at.slice(0, 10),
          scheduled_time: at.slice(11, 19),
          ...extra,
        },
      },
      { 'x-internal-secret': SECRET },
    );
  };

  it('runs a due task in-process and sends the result to the web clients', async () => {
    model.script(MODEL, [textReply('Embedded answer.')]);
    const token = await accessToken(keys.privateKey, 'erin');
    const wsUrl = service.url.replace('http', 'ws');
    const web = await openSocket(`${wsUrl}/ws/web?user_id=erin&token=${token}`);
    try {
      expect((await syncDueIn('emb-1', 2)).status).toBe(200);
      const result = await web.next(ofType('scheduled_task_result'), 20_000);
      expect(result).toMatchObject({
        task_id: 'emb-1',
        success: true,
        output: 'Embedded answer.',
        title: 'Task emb-1',
      });
    } finally {
      await web.close();
    }
  });

  it('keeps a pending task across a restart (schedules rebuilt from PGlite)', async () => {
    model.script(MODEL, [textReply('After restart.')]);
    expect((await syncDueIn('emb-2', 8)).status).toBe(200);
    expect(await service.stop('SIGTERM')).toBe(0);
    service = await startServiceProcess({ entry: MAIN, env });
    const read = () =>
      fetch(`${service.url}/scheduled-task/emb-2`, { headers: { 'x-internal-secret': SECRET } })
        .then((r) => r.json())
        .then((b) => b as { status: string; runs: Array<{ output: string }> });
    const deadline = Date.now() + 30_000;
    while ((await read()).status !== 'completed' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    expect(await read()).toMatchObject({
      status: 'completed',
      runs: [{ output: 'After restart.' }],
    });
  });

  it("lists a user's own tasks with their runs (GET /api/scheduled-tasks), and nobody else's", async () => {
    const list = async (user: string | undefined) => {
      const response = await fetch(`${service.url}/api/scheduled-tasks`, {
        headers: user
          ? { authorization: `Bearer ${await accessToken(keys.privateKey, user)}` }
          : {},
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    expect((await list(undefined)).status).toBe(401);
    const erin = await list('erin');
    expect(erin.status).toBe(200);
    const tasks = erin.body.tasks as Array<{ task_id: string; status: string; runs: unknown[] }>;
    // Both tasks above are erin's and ran; the newest change first.
    expect(tasks.map((t) => t.task_id).sort()).toEqual(['emb-1', 'emb-2']);
    expect(tasks.find((t) => t.task_id === 'emb-2')).toMatchObject({
      status: 'completed',
      task: { title: 'Task emb-2', user_id: 'erin' },
      runs: [{ status: 'succeeded', output: 'After restart.', error: null }],
    });
    expect(await list('frank')).toEqual({ status: 200, body: { tasks: [] } });
  });
});
