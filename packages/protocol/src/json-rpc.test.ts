import { describe, expect, it } from 'vitest';
import { JsonRpcErrorCode, parseToolCallResult } from './json-rpc.js';

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
