import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger, REDACTED, redactSecrets, redactUrl } from './index.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: createLogger({ destination, level: 'debug' }) };
}

describe('redaction', () => {
  it('removes secrets nested at any depth and keeps the rest', () => {
    const out = redactSecrets({
      llm_config: { baseUrl: 'https://x', apiKey: 'sk-1', modelName: 'm' },
      tools: [{ type: 'mcp', api_key: 'mcp-1', headers: { Authorization: 'Bearer h' } }],
      refreshToken: 'rt',
    });
    expect(out).toEqual({
      llm_config: { baseUrl: 'https://x', apiKey: REDACTED, modelName: 'm' },
      tools: [{ type: 'mcp', api_key: REDACTED, headers: { Authorization: REDACTED } }],
      refreshToken: REDACTED,
    });
  });

  it('removes credentials from query strings', () => {
    expect(redactUrl('/ws/web?user_id=u1&token=eyJabc.def&x=1')).toBe(
      `/ws/web?user_id=u1&token=${REDACTED}&x=1`,
    );
    expect(redactUrl('https://h/cb?access_token=a&refresh_token=b')).toBe(
      `https://h/cb?access_token=${REDACTED}&refresh_token=${REDACTED}`,
    );
    expect(redactUrl('/healthz')).toBe('/healthz');
  });

  it('compares query parameter names percent-decoded', () => {
    expect(redactUrl('/scheduled-task/sync?x-internal-s%65cret=abc&n=1')).toBe(
      `/scheduled-task/sync?x-internal-s%65cret=${REDACTED}&n=1`,
    );
    expect(redactUrl('/x?api%5Fkey=k&%54OKEN=t&pass%2577ord=p&c%6Fde=c&name=%73ecret')).toBe(
      `/x?api%5Fkey=${REDACTED}&%54OKEN=${REDACTED}&pass%2577ord=${REDACTED}&c%6Fde=${REDACTED}&name=%73ecret`,
    );
    // A malformed escape is kept as it is, and the name still checked.
    expect(redactUrl('/x?%zztoken=t&%e0=1')).toBe(`/x?%zztoken=${REDACTED}&%e0=1`);
  });

  it('survives cycles and errors', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(redactSecrets(a)).toEqual({ name: 'a', self: '[Circular]' });
    const err = Object.assign(new Error('failed GET /x?token=abc'), { code: 'E1', apiKey: 'k' });
    expect(redactSecrets(err)).toMatchObject({
      type: 'Error',
      message: `failed GET /x?token=${REDACTED}`,
      code: 'E1',
      apiKey: REDACTED,
    });
  });

  it('never writes a secret to the log output', () => {
    const { lines, logger } = capture();
    const secrets = [
      'sk-live-123',
      'internal-xyz',
      'eyJhbGciOiJSUzI1NiJ9.payload.sig',
      'rt_secret_value',
    ];
    logger.info(
      {
        req: {
          url: `/ws/desktop?client_id=desktop_u1&token=${secrets[2]}`,
          headers: { authorization: `Bearer ${secrets[2]}`, 'x-internal-secret': secrets[1] },
        },
        body: { llm_config: { apiKey: secrets[0] }, refresh_token: secrets[3] },
      },
      'request',
    );
    logger.error({ err: Object.assign(new Error('boom'), { access_token: secrets[2] }) }, 'failed');
    const output = lines.join('\n');
    expect(lines).toHaveLength(2);
    for (const secret of secrets) expect(output).not.toContain(secret);
    expect(output).toContain('desktop_u1');
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'error', err: { message: 'boom' } });
  });
});
