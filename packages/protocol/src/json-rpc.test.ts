import { describe, expect, it } from 'vitest';
import {
  JsonRpcErrorCode,
  JsonRpcResponse,
  parseToolCallResult,
  toolCallSuccessOf,
} from './json-rpc.js';

describe('parseToolCallResult', () => {
  it('joins texts with newlines, collects images and the screenshot', () => {
    expect(
      parseToolCallResult({
        content: [
          { type: 'text', text: 'first' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'text', text: 'second' },
        ],
        isError: false,
        _screenshot: 'BBBB',
      }),
    ).toStrictEqual({
      success: true,
      text: 'first\nsecond',
      images: [{ data: 'AAAA', mimeType: 'image/png' }],
      screenshot: 'BBBB',
    });
  });

  it('maps isError to success false', () => {
    const parsed = parseToolCallResult({
      content: [{ type: 'text', text: 'no such tab' }],
      isError: true,
    });
    expect(parsed.success).toBe(false);
    expect(parsed.text).toBe('no such tab');
  });

  it('treats a missing isError as success and leaves out an absent screenshot', () => {
    expect(parseToolCallResult({ content: [] })).toStrictEqual({
      success: true,
      text: '',
      images: [],
    });
  });
});

describe('JsonRpcErrorCode', () => {
  it('has the standard values', () => {
    expect(JsonRpcErrorCode).toStrictEqual({
      ParseError: -32700,
      InvalidRequest: -32600,
      MethodNotFound: -32601,
      InvalidParams: -32602,
      InternalError: -32603,
    });
  });
});

describe('toolCallSuccessOf', () => {
  const ok = { jsonrpc: '2.0', id: 'c1', result: { content: [{ type: 'text', text: 'hi' }] } };
  const image = { type: 'image', data: 'AA==', mimeType: 'image/png' };
  /** Variants of a success response, well-formed or not in one field each. */
  const cases: unknown[] = [
    ok,
    { ...ok, extra: 1, error: { code: 1, message: 'both' } },
    { ...ok, result: { content: [], isError: true, _screenshot: 'AA==', more: [1] } },
    { ...ok, result: { content: [{ type: 'text', text: 'é 🌍', x: 1 }, image] } },
    { ...ok, result: { content: [image], isError: false } },
    { ...ok, jsonrpc: '1.0' },
    { ...ok, id: '' },
    { ...ok, id: 7 },
    { ...ok, id: null },
    { ...ok, result: null },
    { ...ok, result: [] },
    { ...ok, result: {} },
    { ...ok, result: { content: {} } },
    { ...ok, result: { content: [], isError: 'no' } },
    { ...ok, result: { content: [], isError: null } },
    { ...ok, result: { content: [], _screenshot: 1 } },
    { ...ok, result: { content: [null] } },
    { ...ok, result: { content: [[]] } },
    { ...ok, result: { content: [{ type: 'text' }] } },
    { ...ok, result: { content: [{ type: 'text', text: 1 }] } },
    { ...ok, result: { content: [{ type: 'video', text: 'x' }] } },
    { ...ok, result: { content: [{ ...image, mimeType: '' }] } },
    { ...ok, result: { content: [{ ...image, data: null }] } },
    { jsonrpc: '2.0', id: 'c1', error: { code: -32603, message: 'disk full' } },
    { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'x' } },
    null,
    [ok],
    'ok',
  ];

  it('accepts exactly the successes the schema accepts, with the same parsed result', () => {
    for (const raw of cases) {
      const parsed = JsonRpcResponse.safeParse(raw);
      const schemaResult =
        parsed.success && 'result' in parsed.data ? parsed.data.result : undefined;
      const hand = toolCallSuccessOf(raw);
      expect({ raw, accepted: hand !== undefined }).toEqual({
        raw,
        accepted: schemaResult !== undefined,
      });
      if (hand && schemaResult) {
        expect(parseToolCallResult(hand)).toStrictEqual(parseToolCallResult(schemaResult));
      }
    }
  });

  it("returns the response's own result object, not a copy", () => {
    expect(toolCallSuccessOf(ok)).toBe(ok.result);
  });
});
