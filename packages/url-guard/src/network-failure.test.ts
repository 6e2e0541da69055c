import { describe, expect, it } from 'vitest';
import { RedirectRefusedError, UrlRefusedError } from './errors.js';
import { classifyOutboundFailure } from './network-failure.js';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('classifyOutboundFailure', () => {
  it('sorts failures into policy, redirect, DNS, connection and TLS, through causes', () => {
    const refusal = new UrlRefusedError('127.0.0.1', 'loopback');
    expect(classifyOutboundFailure(new Error('wrapped', { cause: refusal }))).toEqual({
      kind: 'refused',
      refusal,
    });
    const redirect = new RedirectRefusedError(302, 'http://127.0.0.1:9');
    expect(classifyOutboundFailure(redirect)).toEqual({ kind: 'redirect', redirect });
    expect(classifyOutboundFailure(coded('getaddrinfo ENOTFOUND x.invalid', 'ENOTFOUND'))).toEqual({
      kind: 'dns',
      code: 'ENOTFOUND',
      description: 'the host name does not resolve',
    });
    expect(
      classifyOutboundFailure(
        new TypeError('fetch failed', { cause: coded('connect ECONNREFUSED', 'ECONNREFUSED') }),
      ),
    ).toMatchObject({ kind: 'connect', code: 'ECONNREFUSED' });
    expect(classifyOutboundFailure(coded('connect ETIMEDOUT', 'ETIMEDOUT'))).toMatchObject({
      kind: 'connect',
      description: 'the connection attempt timed out',
    });
    expect(classifyOutboundFailure(new Error('socket hang up'))).toMatchObject({ kind: 'connect' });
    expect(
      classifyOutboundFailure(coded('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT')),
    ).toEqual({
      kind: 'tls',
      code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      description: 'the certificate is self-signed',
    });
    expect(classifyOutboundFailure(coded('x', 'ERR_TLS_HANDSHAKE_TIMEOUT'))).toMatchObject({
      kind: 'tls',
    });
  });

  it('leaves aborts, HTTP errors and bugs alone', () => {
    expect(classifyOutboundFailure(new DOMException('aborted', 'AbortError'))).toBeUndefined();
    expect(classifyOutboundFailure(new RangeError('a bug'))).toBeUndefined();
    expect(classifyOutboundFailure(undefined)).toBeUndefined();
  });
});
