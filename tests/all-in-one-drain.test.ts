/**
 * The all-in-one's shutdown drain. Its gateway shares the process with the api, so
 * the gateway must keep the nodes connected until the api's drain is over: a run that is calling
 * a tool on a node when SIGTERM arrives gets the node's answer and finishes; the node is told
 * 1001 only afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importKeys, signAccessToken } from '@agent-backend/auth';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  textReply,
  toolCallsReply,
  uniquePrefix,
  type ScriptedModel,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { keyFiles, requireBuild } from './helpers.js';
import { eventually, ofType, openSocket } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';

describe('all-in-one shutdown drain', () => {
  let model: ScriptedModel;
  let schema: TestSchema;
  let service: ServiceProcess;
  let token: string;

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    schema = await createTestSchema('drain');
    const files = keyFiles();
    token = (await signAccessToken(await importKeys(files), 'iris')).accessToken;
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        REDIS_URL: testRedisUrl(),
        REDIS_KEY_PREFIX: uniquePrefix('drain'),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        JWT_PUBLIC_KEY_FILE: files.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: files.privateKeyFile,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        LOG_LEVEL: 'info',
      },
    });
  }, 120_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await schema?.drop();
    await model?.close();
  });

  it("a run calling a node tool when SIGTERM arrives gets the node's answer and finishes", async () => {
    const wsUrl = new URL('/ws/desktop', service.url.replace('http', 'ws'));
    wsUrl.search = new URLSearchParams({
      client_id: 'desktop_iris',
      node_id: 'desk',
      token,
    }).toString();
    const node = await openSocket(wsUrl.href);
    node.send({
      type: 'register',
      node_id: 'desk',
      node_type: 'desktop',
      tools: [{ name: 'read_notes', description: 'Read the notes', writes: false }],
    });
    await node.next(ofType('registered'));
    model.script('drain-node', [
      toolCallsReply([{ name: 'read_notes', args: {} }]),
      textReply('Your notes say: buy milk.'),
    ]);

    const stream = await invoke(service.url, token, {
      message: 'What do my notes say?',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-drain', modelName: 'drain-node' },
    });
    const call = await node.next((f) => f.method === 'tools/call', 30_000);

    // SIGTERM while the node is working on the call; answer once the service is draining.
    const exit = service.stop('SIGTERM');
    await eventually(() =>
      fetch(`${service.url}/healthz`).then(
        () => false,
        () => true,
      ),
    );
    node.send({
      jsonrpc: '2.0',
      id: call.id,
      result: { content: [{ type: 'text', text: 'buy milk' }], isError: false },
    });

    const events = await stream.ended;
    expect(events.find((e) => e.data.type === 'tool_result')?.data).toMatchObject({
      tool_name: 'read_notes',
      result: 'buy milk',
    });
    expect(events.at(-1)!.data.type).toBe('done');
    // Then the node is told the replica is going away, and the process exits cleanly.
    expect(await node.closed).toMatchObject({ code: 1001 });
    expect(await exit).toBe(0);
  });
});
