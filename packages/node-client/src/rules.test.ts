import { describe, expect, it } from 'vitest';
import { closeAction, CloseCode, handshakeAction } from './close-codes.js';
import { checkArguments } from './input-schema.js';
import { TypedEmitter } from './typed-emitter.js';
import { gatewayUrl, redactUrl } from './ws-url.js';

describe('close codes', () => {
  it('stops on the final codes, refreshes on 4401 and reconnects on everything else', () => {
    expect(closeAction(CloseCode.Forbidden)).toMatchObject({ action: 'stop', code: 'forbidden' });
    expect(closeAction(CloseCode.MissingIdentity)).toMatchObject({
      action: 'stop',
      code: 'missing_identity',
    });
    expect(closeAction(CloseCode.InvalidIdentity)).toMatchObject({
      action: 'stop',
      code: 'invalid_identity',
    });
    expect(closeAction(CloseCode.Replaced)).toMatchObject({ action: 'stop', code: 'replaced' });
    expect(closeAction(CloseCode.Unauthorized)).toEqual({ action: 'refresh_token' });
    for (const code of [1000, 1001, 1006, 1009, 1011, 4008, CloseCode.Stale, 4000, 4999])
      expect(closeAction(code)).toEqual({ action: 'reconnect' });
  });

  it('treats HTTP refusals of the upgrade like their close codes', () => {
    expect(handshakeAction(401)).toEqual({ action: 'refresh_token' });
    expect(handshakeAction(403)).toMatchObject({ action: 'stop', code: 'forbidden' });
    for (const status of [400, 404, 429, 500, 501, 502, 503])
      expect(handshakeAction(status)).toEqual({ action: 'reconnect' });
  });
});

describe('gateway URLs', () => {
  it('appends the path of the kind to the base, keeping a proxy prefix', () => {
    expect(
      gatewayUrl('ws://localhost:8000', 'extension', { client_id: 'user_a', node_id: 'n 1' }).href,
    ).toBe('ws://localhost:8000/ws/extension?client_id=user_a&node_id=n+1');
    expect(gatewayUrl('https://example.com/gw/', 'web', { user_id: 'a' }).href).toBe(
      'wss://example.com/gw/ws/web?user_id=a',
    );
    expect(gatewayUrl('http://h?x=1#f', 'desktop', {}).href).toBe('ws://h/ws/desktop');
    expect(() => gatewayUrl('ftp://h', 'web', {})).toThrow(TypeError);
  });

  it('redacts the token', () => {
    const url = gatewayUrl('ws://h', 'web', { user_id: 'a', token: 'secret' });
    expect(redactUrl(url)).toBe('ws://h/ws/web?user_id=a&token=REDACTED');
    expect(url.searchParams.get('token')).toBe('secret');
  });
});

describe('checkArguments', () => {
  const schema = {
    type: 'object',
    properties: {
      text: { type: 'string' },
      n: { type: 'integer' },
      x: { type: ['number', 'null'] },
      tags: { type: 'array' },
      any: {},
    },
    required: ['text'],
  };

  it('accepts arguments that match the top level', () => {
    expect(
      checkArguments(schema, { text: 'a', n: 2, x: null, tags: [], any: { deep: 1 }, extra: true }),
    ).toEqual([]);
  });

  it('reports missing and mistyped arguments', () => {
    expect(checkArguments(schema, { n: 1.5, x: 'y', tags: {} })).toEqual([
      'text: required',
      'n: expected integer',
      'x: expected number or null',
      'tags: expected array',
    ]);
  });

  it('ignores schemas it cannot read', () => {
    expect(checkArguments({ required: 'text', properties: [] }, {})).toEqual([]);
    expect(checkArguments({ properties: { a: { type: 'uuid' } } }, { a: 1 })).toEqual([]);
  });
});

describe('TypedEmitter', () => {
  class Emitter extends TypedEmitter<{ ping: number }> {
    readonly thrown: unknown[] = [];
    constructor() {
      super((error) => this.thrown.push(error));
    }
    fire(n: number) {
      this.emit('ping', n);
    }
  }

  it('delivers to every listener even when one throws, and reports the throw', () => {
    const emitter = new Emitter();
    const got: number[] = [];
    emitter.on('ping', () => {
      throw new Error('listener bug');
    });
    const off = emitter.on('ping', (n) => got.push(n));
    emitter.once('ping', (n) => got.push(-n));

    emitter.fire(1);
    off();
    emitter.fire(2);
    expect(got).toEqual([1, -1]);
    expect(emitter.thrown).toEqual([new Error('listener bug'), new Error('listener bug')]);
  });
});

describe('client construction', () => {
  it('refuses ids the gateway would refuse', async () => {
    const { NodeClient, WebClient } = await import('./index.js');
    const base = { url: 'ws://h', kind: 'desktop' as const, token: 't' };
    expect(() => new NodeClient({ ...base, userId: '' })).toThrow(TypeError);
    expect(() => new NodeClient({ ...base, userId: 'a', nodeId: 'n'.repeat(129) })).toThrow(
      TypeError,
    );
    expect(() => new WebClient({ url: 'ws://h', userId: 'u'.repeat(129) })).toThrow(TypeError);
    expect(() => new NodeClient({ ...base, userId: 'a', node: { maxConcurrentTasks: 0 } })).toThrow(
      RangeError,
    );
    expect(() => new NodeClient({ ...base, userId: 'a', heartbeatMs: 0 })).toThrow(RangeError);
    expect(() => new WebClient({ url: 'ftp://h', userId: 'u' })).toThrow(TypeError);
  });
});
