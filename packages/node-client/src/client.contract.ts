import type { NodeInfo, NodeType, ParsedToolResult } from '@agent-backend/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClientError } from './errors.js';
import { NodeClient, type NodeClientOptions } from './node-client.js';
import { ToolParamsError } from './input-schema.js';
import { expectHandlesBackTo, nextEvent, record, settledHandles, waitFor } from './testing/wait.js';
import { WebClient, type WebClientOptions } from './web-client.js';
import { demoTools, demoWorkflows } from './demo-tools.js';
import { randomBytes } from 'node:crypto';

/**
 * What the client tests need from a gateway. The fake in `testing/fake-gateway.ts` implements
 * it today; the real gateway can implement it with `pnpm token:issue`-style tokens, the node
 * listing (`GET /node/devices`), the node tool caller and a restart of the gateway process.
 */
export interface GatewayHarness {
  /** `ws://host:port` of the gateway. */
  readonly url: string;
  /** A valid access token for the user. */
  token(userId: string): Promise<string>;
  /** A token the gateway refuses (garbage, expired, wrong signature). */
  invalidToken(): string;
  /** The user's registered nodes as the node listing returns them. */
  listNodes(userId: string): Promise<NodeInfo[]>;
  /** The tool descriptors each node registered with. */
  listTools(userId: string): Promise<HarnessTools[]>;
  /** Sends a `tools/call` to a node and returns its answer. */
  callTool(call: HarnessToolCall): Promise<HarnessToolOutcome>;
  /**
   * Ends every connection of the user from the server side, without a final close code (a
   * network failure or a server restart); the gateway stays reachable at `url`.
   */
  dropConnections(userId: string): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessTools {
  nodeId: string;
  nodeType: NodeType;
  tools: Array<{ name: string; description?: string; inputSchema?: Record<string, unknown> }>;
}

export interface HarnessToolCall {
  userId: string;
  nodeType: NodeType;
  nodeId?: string;
  name: string;
  arguments: Record<string, unknown>;
  sessionId?: string;
}

export type HarnessToolOutcome =
  { ok: true; result: ParsedToolResult } | { ok: false; code: number; message: string };

/**
 * How long a reconnect after `dropConnections` may take: a real harness restarts a gateway
 * process, which is slow on a loaded machine.
 */
const DROP_RECOVERY_MS = 20_000;

/** The client behaviour every gateway must support, run against `makeHarness()`. */
export function describeClientContract(
  name: string,
  makeHarness: () => Promise<GatewayHarness>,
): void {
  describe(`node and web clients against ${name}`, () => {
    let gateway: GatewayHarness;
    const clients: Array<NodeClient | WebClient> = [];
    const user = () => `u${randomBytes(4).toString('hex')}`;
    const fast = { initialDelayMs: 50, maxDelayMs: 1_000, factor: 2, jitter: 0 };

    async function node(
      userId: string,
      options: Partial<NodeClientOptions> = {},
    ): Promise<NodeClient> {
      const client = new NodeClient({
        url: gateway.url,
        kind: 'desktop',
        userId,
        token: await gateway.token(userId),
        tools: demoTools(),
        reconnect: fast,
        ...options,
      });
      clients.push(client);
      return client;
    }

    async function web(
      userId: string,
      options: Partial<WebClientOptions> = {},
    ): Promise<WebClient> {
      const client = new WebClient({
        url: gateway.url,
        userId,
        token: await gateway.token(userId),
        reconnect: fast,
        ...options,
      });
      clients.push(client);
      return client;
    }

    const call = (
      userId: string,
      toolName: string,
      args: Record<string, unknown>,
      extra: Partial<HarnessToolCall> = {},
    ) =>
      gateway.callTool({ userId, nodeType: 'desktop', name: toolName, arguments: args, ...extra });

    beforeAll(async () => {
      gateway = await makeHarness();
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });
    afterAll(async () => {
      await gateway.close();
    });

    describe('registration and heartbeats', () => {
      it('registers with its description and rich tool descriptors', async () => {
        const userId = user();
        const client = await node(userId, {
          kind: 'extension',
          nodeId: 'laptop-1',
          node: {
            name: 'Test Laptop',
            os: 'TestOS',
            osVersion: '1.2',
            appVersion: '9.9.9',
            capabilities: ['tools'],
            maxConcurrentTasks: 2,
          },
        });
        const registered = nextEvent(client, 'registered');
        await client.start();
        expect((await registered).node_id).toBe('laptop-1');
        const [listed] = await waitFor(async () => {
          const nodes = await gateway.listNodes(userId);
          return nodes.length === 1 ? nodes : undefined;
        }, 'the node in the listing');
        expect(listed).toMatchObject({
          node_id: 'laptop-1',
          node_type: 'extension',
          node_name: 'Test Laptop',
          os: 'TestOS',
          os_version: '1.2',
          app_version: '9.9.9',
          capabilities: ['tools'],
          available_tools: ['echo', 'add', 'screenshot', 'fail', 'slow'],
          max_concurrent_tasks: 2,
          status: 'online',
        });
        const [tools] = await gateway.listTools(userId);
        expect(tools?.tools.find((t) => t.name === 'add')).toMatchObject({
          description: 'Adds two numbers.',
          inputSchema: { required: ['a', 'b'] },
        });
      });

      it('uses the spec default node id when none is given', async () => {
        const userId = user();
        const desktop = await node(userId);
        const extension = await node(userId, { kind: 'extension' });
        await Promise.all([desktop.start(), extension.start()]);
        const ids = (await gateway.listNodes(userId)).map((n) => n.node_id).sort();
        expect(ids).toEqual([`desktop_${userId}`, `ext_${userId}`]);
      });

      it('sends heartbeats that the server acknowledges', async () => {
        const client = await node(user(), { heartbeatMs: 50 });
        const acks = record(client, 'heartbeatAck');
        await client.start();
        await waitFor(() => acks.length >= 3, 'three heartbeat acks');
      });

      it('reports the status it is given and busy at max_concurrent_tasks', async () => {
        const userId = user();
        const client = await node(userId, { node: { maxConcurrentTasks: 1 } });
        await client.start();
        const statusOf = async () => (await gateway.listNodes(userId))[0];
        client.setStatus('busy');
        await waitFor(async () => (await statusOf())?.status === 'busy', 'status busy');
        client.setStatus('online');
        await waitFor(async () => (await statusOf())?.status === 'online', 'status online');

        const slow = call(userId, 'slow', { ms: 400 });
        await waitFor(async () => {
          const n = await statusOf();
          return n?.status === 'busy' && n.current_tasks === 1;
        }, 'busy with one task');
        expect(client.status).toBe('busy');
        const refused = await call(userId, 'echo', { text: 'hi' });
        expect(refused).toMatchObject({ ok: false, code: -32000 });
        expect(await slow).toMatchObject({ ok: true, result: { text: 'waited 400 ms' } });
        await waitFor(async () => {
          const n = await statusOf();
          return n?.status === 'online' && n.current_tasks === 0;
        }, 'online with no task');
      });
    });

    describe('JSON-RPC tool calls', () => {
      let userId: string;
      let client: NodeClient;
      const seen: Array<{ sessionId?: string; aborted?: boolean }> = [];

      beforeAll(async () => {
        userId = user();
        client = new NodeClient({
          url: gateway.url,
          kind: 'desktop',
          userId,
          token: await gateway.token(userId),
          reconnect: fast,
          tools: {
            ...demoTools(),
            whoami: { handler: (_args, ctx) => ctx.sessionId ?? 'no session' },
            picky: {
              handler: (args) => {
                if (args.mode !== 'ok') throw new ToolParamsError('mode must be "ok"');
                return 'fine';
              },
            },
            soft_error: {
              handler: () => ({ content: [{ type: 'text', text: 'not found' }], isError: true }),
            },
            garbage: { handler: () => ({ content: 'oops' }) as never },
            hang: {
              timeoutMs: 100,
              handler: (_args, { signal }) =>
                new Promise((_, reject) => {
                  signal.addEventListener('abort', () => {
                    seen.push({ aborted: true });
                    reject(new Error('aborted'));
                  });
                }),
            },
          },
        });
        await client.start();
      });
      afterAll(async () => {
        await client.close();
      });

      it('answers with the tool result', async () => {
        expect(await call(userId, 'echo', { text: 'hello' })).toEqual({
          ok: true,
          result: { success: true, text: 'hello', images: [] },
        });
        expect(await call(userId, 'add', { a: 2, b: 40 })).toMatchObject({
          ok: true,
          result: { text: '42' },
        });
      });

      it('passes the session id to the handler', async () => {
        expect(await call(userId, 'whoami', {}, { sessionId: 's-1' })).toMatchObject({
          ok: true,
          result: { text: 's-1' },
        });
      });

      it('returns images and _screenshot', async () => {
        const outcome = await call(userId, 'screenshot', {});
        if (!outcome.ok) throw new Error(outcome.message);
        expect(outcome.result.images[0]?.mimeType).toBe('image/png');
        expect(
          Buffer.from(outcome.result.screenshot ?? '', 'base64')
            .subarray(1, 4)
            .toString(),
        ).toBe('PNG');
      });

      it('maps isError to an unsuccessful result, not a JSON-RPC error', async () => {
        expect(await call(userId, 'soft_error', {})).toMatchObject({
          ok: true,
          result: { success: false, text: 'not found' },
        });
      });

      it('answers -32603 when the tool throws, times out or returns garbage', async () => {
        expect(await call(userId, 'fail', { message: 'disk on fire' })).toEqual({
          ok: false,
          code: -32603,
          message: 'disk on fire',
        });
        const timedOut = await call(userId, 'hang', {});
        expect(timedOut).toMatchObject({ ok: false, code: -32603 });
        expect(timedOut.ok || timedOut.message).toMatch(/timed out after 100 ms/);
        await waitFor(() => seen.some((s) => s.aborted), 'the handler to see the abort');
        expect(await call(userId, 'garbage', {})).toMatchObject({ ok: false, code: -32603 });
      });

      it('answers -32601 for an unknown tool and -32602 for bad params', async () => {
        expect(await call(userId, 'no_such_tool', {})).toEqual({
          ok: false,
          code: -32601,
          message: 'Unknown tool: no_such_tool',
        });
        const bad = await call(userId, 'add', { a: 'two' });
        expect(bad).toMatchObject({ ok: false, code: -32602 });
        expect(bad.ok || bad.message).toMatch(
          /a: expected number.*b: required|b: required.*a: expected number/,
        );
        expect(await call(userId, 'picky', { mode: 'no' })).toEqual({
          ok: false,
          code: -32602,
          message: 'mode must be "ok"',
        });
      });
    });

    describe('reconnection', () => {
      it('reconnects with growing backoff after the server drops the socket', async () => {
        const userId = user();
        const client = await node(userId, { reconnect: { ...fast, stableAfterMs: 60_000 } });
        const downs = record(client, 'disconnected');
        await client.start();
        // The first delay after each drop: 50, then larger, as the connection never became
        // stable. (A harness that restarts the gateway adds refused attempts in between.)
        const firstDelays: Array<number | undefined> = [];
        for (let i = 0; i < 2; i++) {
          const seen = downs.length;
          const again = nextEvent(client, 'registered', 30_000);
          await gateway.dropConnections(userId);
          await again;
          expect(downs[seen]).toMatchObject({ willReconnect: true });
          firstDelays.push(downs[seen]?.delayMs);
        }
        expect(firstDelays[0]).toBe(50);
        expect(firstDelays[1]).toBeGreaterThanOrEqual(100);
        const backResult = await call(userId, 'echo', { text: 'back' });
        const listed = backResult.ok ? '' : JSON.stringify(await gateway.listNodes(userId));
        expect(backResult, `nodes listed: ${listed}`).toMatchObject({
          ok: true,
          result: { text: 'back' },
        });
      });

      it('resets the backoff after a stable connection', async () => {
        const userId = user();
        const client = await node(userId, { reconnect: { ...fast, stableAfterMs: 100 } });
        const downs = record(client, 'disconnected');
        await client.start();
        const firstDelays: Array<number | undefined> = [];
        for (let i = 0; i < 2; i++) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          const seen = downs.length;
          const again = nextEvent(client, 'registered', 30_000);
          await gateway.dropConnections(userId);
          await again;
          firstDelays.push(downs[seen]?.delayMs);
        }
        expect(firstDelays).toEqual([50, 50]);
      });

      it('aborts running tool calls when the connection drops', async () => {
        const userId = user();
        let aborted: unknown;
        const client = await node(userId, {
          tools: {
            wait: {
              handler: (_a, { signal }) =>
                new Promise((_, reject) =>
                  signal.addEventListener('abort', () => reject((aborted = signal.reason))),
                ),
            },
          },
        });
        await client.start();
        void call(userId, 'wait', {}).catch(() => {});
        await waitFor(() => client.currentTasks === 1, 'the call to start');
        await gateway.dropConnections(userId);
        await waitFor(() => aborted, 'the abort');
        expect(aborted).toMatchObject({ code: 'disconnected' });
        expect(client.currentTasks).toBe(0);
      });

      it('does not reconnect after 4403 (token of another user)', async () => {
        const client = new NodeClient({
          url: gateway.url,
          kind: 'desktop',
          userId: user(),
          token: await gateway.token(user()),
          reconnect: fast,
        });
        clients.push(client);
        const attempts = record(client, 'connecting');
        const stopped = nextEvent(client, 'stopped');
        await expect(client.start()).rejects.toMatchObject({ code: 'forbidden' });
        expect((await stopped).error).toBeInstanceOf(ClientError);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(attempts).toHaveLength(1);
      });

      it('asks getToken for a fresh token after 4401 and reconnects', async () => {
        const userId = user();
        const reasons: string[] = [];
        const client = await node(userId, {
          token: undefined,
          getToken: async ({ reason }) => {
            reasons.push(reason);
            return reasons.length === 1 ? gateway.invalidToken() : gateway.token(userId);
          },
        });
        const downs = record(client, 'disconnected');
        await client.start();
        expect(reasons).toEqual(['connect', 'unauthorized']);
        expect(downs).toHaveLength(1);
        expect(downs[0]).toMatchObject({ willReconnect: true, delayMs: 0 });
      });

      it('stops with unauthorized when there is no fresh token', async () => {
        const fixed = await node(user(), { token: gateway.invalidToken() });
        await expect(fixed.start()).rejects.toMatchObject({ code: 'unauthorized' });
        let calls = 0;
        const refreshing = await node(user(), {
          token: undefined,
          getToken: () => {
            calls++;
            return gateway.invalidToken();
          },
        });
        await expect(refreshing.start()).rejects.toMatchObject({ code: 'unauthorized' });
        expect(calls).toBe(2);
      });

      it('stops the older connection of a node with replaced (4009)', async () => {
        const userId = user();
        const first = await node(userId, { nodeId: 'same' });
        await first.start();
        const stopped = nextEvent(first, 'stopped');
        const second = await node(userId, {
          nodeId: 'same',
          tools: { who: { handler: () => 'second' } },
        });
        await second.start();
        expect((await stopped).error.code).toBe('replaced');
        expect(await call(userId, 'who', {})).toMatchObject({
          ok: true,
          result: { text: 'second' },
        });
      });
    });

    describe('web client', () => {
      it('reports when no extension is connected', async () => {
        const client = await web(user());
        await client.start();
        expect(await client.getWorkflows()).toMatchObject({
          success: false,
          error: 'Extension not connected',
        });
      });

      it('lists and runs the extension workflows', async () => {
        const userId = user();
        const extension = await node(userId, { kind: 'extension', workflows: demoWorkflows() });
        const runs = record(extension, 'workflowRun');
        await extension.start();
        const client = await web(userId);
        await client.start();

        const list = await client.getWorkflows();
        expect(list.success).toBe(true);
        expect(list.workflows?.map((w) => w.id)).toEqual(['wf_summarize_page', 'wf_fill_form']);

        const completions = record(client, 'workflowComplete');
        const started = await client.executeWorkflow('wf_summarize_page', {
          url: 'https://example.com',
          delay_ms: 50,
        });
        expect(started).toMatchObject({
          workflow_id: 'wf_summarize_page',
          task_id: expect.any(String),
        });
        await waitFor(
          () => completions.find((c) => c.task_id === started.task_id),
          'workflow_complete',
        );
        expect(completions[0]).toMatchObject({
          success: true,
          output: 'Summary of https://example.com: a demo page with 42 words.',
          result: { words: 42 },
        });
        expect(runs[0]).toMatchObject({
          workflowId: 'wf_summarize_page',
          variables: { url: 'https://example.com' },
        });

        expect(
          await client.runWorkflow('wf_fill_form', { fields: { a: 1, b: 2 }, delay_ms: 0 }),
        ).toMatchObject({ success: true, result: { filled: ['a', 'b'] } });
        expect(await client.runWorkflow('wf_fill_form', { fail: true })).toMatchObject({
          success: false,
          error: 'demo failure requested',
        });
      });

      it('answers ping with pong and reconnects after a drop', async () => {
        const userId = user();
        const client = await web(userId);
        await client.start();
        await expect(client.ping()).resolves.toBe(true);
        const again = nextEvent(client, 'connected', DROP_RECOVERY_MS);
        await gateway.dropConnections(userId);
        await again;
        await expect(client.ping()).resolves.toBe(true);
      });

      it('stops after 4403 and rejects requests when not connected', async () => {
        const client = await web(user(), { token: await gateway.token(user()) });
        await expect(client.start()).rejects.toMatchObject({ code: 'forbidden' });
        await expect(client.getWorkflows()).rejects.toMatchObject({ code: 'not_connected' });
        await expect(client.executeWorkflow('')).rejects.toMatchObject({
          code: 'invalid_argument',
        });
      });
    });

    describe('close()', () => {
      it('aborts running tasks, rejects pending requests and leaves no timer or socket', async () => {
        const before = await settledHandles();
        const userId = user();
        let aborted: unknown;
        const client = await node(userId, {
          kind: 'extension',
          heartbeatMs: 30,
          workflows: { list: () => new Promise(() => {}), execute: () => ({}) },
          tools: {
            wait: {
              handler: (_a, { signal }) =>
                new Promise((_, reject) =>
                  signal.addEventListener('abort', () => reject((aborted = signal.reason))),
                ),
            },
          },
        });
        const webClient = await web(userId, { pingIntervalMs: 30 });
        await Promise.all([client.start(), webClient.start()]);
        void gateway
          .callTool({ userId, nodeType: 'extension', name: 'wait', arguments: {} })
          .catch(() => {});
        await waitFor(() => client.currentTasks === 1, 'the call to start');
        const listFails = expect(webClient.getWorkflows()).rejects.toMatchObject({
          code: 'closed',
        });
        await Promise.all([client.close(), webClient.close()]);
        expect(aborted).toMatchObject({ code: 'closed' });
        await listFails;
        await client.close();
        await expectHandlesBackTo(before);
      });
    });
  });
}
