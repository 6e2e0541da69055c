/**
 * Every kind of run is assembled by the one agent factory (`packages/agent`). The
 * all-in-one is composed here in-process, as `apps/all-in-one/src/main.ts` composes it, with one
 * extra tool source handed to the factory; an invoke run, a scheduled run and a chat-platform
 * run must all offer its tool to the model. And the `AGENT_*` settings, now part of the service
 * configuration, must apply to worker runs too.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAgent, type AgentOptions } from '@agent-backend/agent';
import type { ToolSource } from '@agent-backend/agent-runtime';
import { mountApi } from '@agent-backend/api';
import { mountGateway } from '@agent-backend/gateway';
import { startService, type RunningService } from '@agent-backend/runtime';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { mountWorker } from '@agent-backend/worker';
import { accessToken, invoke } from './agent-helpers.js';
import { keyFiles, post, tempDir } from './helpers.js';

const MODEL = 'assembly-model';
const SECRET = 'assembly-secret';
const PROBE = 'probe_capability';

/** A capability as a new issue would add it: a read tool offered to every run. */
const probeSource: ToolSource = async () => [
  {
    name: PROBE,
    description: 'A capability added to the agent factory.',
    parameters: { type: 'object', properties: {} },
    writes: false,
    execute: async () => ({ content: 'probed' }),
  },
];

const offeredTools = (body: { tools?: Array<{ function: { name: string } }> }) =>
  (body.tools ?? []).map((tool) => tool.function.name);

describe('one agent factory for invoke, scheduled and chat runs', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: RunningService;
  let url: string;

  beforeAll(async () => {
    model = await startScriptedModel();
    Object.assign(process.env, {
      // The embedded engines: in-process bus and jobs, PGlite under a fresh data directory.
      REDIS_URL: '',
      DATABASE_URL: '',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATA_DIR: tempDir('assembly'),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      INTERNAL_API_SECRET: SECRET,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      DEFAULT_LLM_BASE_URL: model.baseUrl,
      DEFAULT_LLM_API_KEY: 'sk-assembly',
      DEFAULT_LLM_MODEL: MODEL,
      AGENT_MAX_STEPS: '2',
    });
    const agentOptions: AgentOptions = { toolSources: [probeSource] };
    service = await startService('all-in-one', {
      migrate: true,
      // One agent for both roles, as apps/all-in-one/src/main.ts builds it.
      mount: async (context) => {
        const agent = createAgent(context, agentOptions);
        const roles = [
          await mountApi(context, { sharedAgent: agent }),
          await mountGateway(context),
          await mountWorker(context, { sharedAgent: agent }),
        ];
        context.app.addHook('onClose', () => agent.close());
        return roles;
      },
    });
    const address = service.app.server.address() as AddressInfo;
    url = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    // The service's shutdown ends with process.exit, which here would end the test worker.
    vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    await service?.shutdown();
    await model?.close();
  });

  /** Adds a scheduled task for `user` due in about two seconds. */
  const scheduleSoon = (taskId: string, user: string) => {
    const at = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString();
    return post(
      `${url}/scheduled-task/sync`,
      {
        action: 'add',
        task_id: taskId,
        task: {
          id: taskId,
          user_id: user,
          title: taskId,
          prompt: 'Go',
          run_mode: 'auto',
          connector: 'none',
          scheduled_date: at.slice(0, 10),
          scheduled_time: at.slice(11, 19),
        },
      },
      { 'x-internal-secret': SECRET },
    );
  };

  /** The task's runs once one has finished. */
  const finishedRuns = async (taskId: string) => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await fetch(`${url}/scheduled-task/${taskId}`, {
        headers: { 'x-internal-secret': SECRET },
      });
      const body = (await res.json()) as {
        runs: Array<{ status: string; output: string | null; error: string | null }>;
      };
      if (body.runs.some((run) => run.status === 'succeeded' || run.status === 'failed'))
        return body.runs;
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not run`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  it('offers the factory-added tool to an invoke run (api)', async () => {
    model.script(MODEL, [textReply('From invoke.')]);
    const token = await accessToken(keys.privateKey, 'ann');
    const stream = await invoke(url, token, {
      message: 'Hi',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-user', modelName: MODEL },
    });
    const events = await stream.ended;
    expect(events.at(-1)?.data.type).toBe('done');
    const [request] = model.requests(MODEL);
    expect(offeredTools(request!.body)).toContain(PROBE);
  });

  it('offers it to a scheduled run (worker)', async () => {
    const before = model.requests(MODEL).length;
    model.script(MODEL, [textReply('From schedule.')]);
    expect((await scheduleSoon('assembly-1', 'ann')).status).toBe(200);
    const runs = await finishedRuns('assembly-1');
    expect(runs[0]).toMatchObject({ status: 'succeeded', output: 'From schedule.' });
    const request = model.requests(MODEL)[before];
    expect(offeredTools(request!.body)).toContain(PROBE);
  });

  it('offers it to a chat-platform run (worker), which is in ask mode', async () => {
    const before = model.requests(MODEL).length;
    model.script(MODEL, [textReply('From chat.')]);
    const res = await post(`${url}/channels/lark/webhook`, {
      schema: '2.0',
      header: { event_id: 'assembly-ev-1', event_type: 'im.message.receive_v1' },
      event: {
        sender: { sender_id: { open_id: 'ou_1' } },
        message: {
          message_id: 'om_assembly',
          chat_id: 'oc_assembly',
          message_type: 'text',
          content: '{"text":"hello"}',
        },
      },
    });
    expect(await res.json()).toEqual({ code: 0, msg: 'success' });
    const [request] = (await model.waitForRequests(MODEL, before + 1, 20_000)).slice(before);
    const tools = offeredTools(request!.body);
    expect(tools).toContain(PROBE);
    // `ask` mode: the planning tools (writes) are not offered to a chat's members.
    expect(tools).not.toContain('write_todos');
  });

  it('applies AGENT_MAX_STEPS to scheduled runs', async () => {
    const before = model.requests(MODEL).length;
    // The model calls the tool forever; with AGENT_MAX_STEPS=2 the run stops after two requests.
    const call = () => toolCallsReply([{ name: PROBE, args: {} }]);
    model.script(MODEL, [call(), call(), call(), call()]);
    expect((await scheduleSoon('assembly-2', 'ann')).status).toBe(200);
    const runs = await finishedRuns('assembly-2');
    expect(runs[0]).toMatchObject({ status: 'failed' });
    expect(runs[0]!.error).toContain('max_steps_exceeded');
    expect(model.requests(MODEL).length - before).toBe(2);
  });
});
