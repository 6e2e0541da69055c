import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../node-client.js';
import { demoTools } from '../demo-tools.js';
import { ToolParamsError } from '../input-schema.js';
import { waitFor } from '../testing/wait.js';
import { type ClientContract } from './context.contract.js';

/** JSON-RPC tool calls through the gateway to a node. */
export function describeToolCalls(t: ClientContract): void {
  const { call, user } = t;
  describe('JSON-RPC tool calls', () => {
    let userId: string;
    let client: NodeClient;
    const seen: Array<{ sessionId?: string; aborted?: boolean }> = [];

    beforeAll(async () => {
      userId = user();
      client = new NodeClient({
        url: t.gateway.url,
        kind: 'desktop',
        userId,
        token: await t.gateway.token(userId),
        reconnect: t.fast,
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
}
