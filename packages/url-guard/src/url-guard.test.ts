import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { UrlRefusedError } from './errors.js';
import { createUrlGuard, parseOrigin, type Resolve } from './url-guard.js';

/** A resolver from a fixed table, so DNS answers are whatever the test needs. */
function fakeDns(table: Record<string, string[]>): Resolve {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
};

describe('UrlGuard.check', () => {
  const strict = createUrlGuard();
  const dev = createUrlGuard({ allowPrivateNetworks: true });

  const loopbackSpellings = [
    'http://127.0.0.1/',
    'http://2130706433/',
    'http://0x7f.0.0.1/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://127.000.000.001/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'http://localhost:8080/mcp',
    'http://LOCALHOST./',
    'http://api.localhost/',
  ];
  it.each(loopbackSpellings)('refuses %s as loopback by default', (url) => {
    const error = refusal(() => strict.check(url));
    expect(error).toBeInstanceOf(UrlRefusedError);
    expect(error).toMatchObject({ code: 'url_refused', reason: 'loopback' });
  });
  it.each(loopbackSpellings)('allows %s with allowPrivateNetworks', (url) => {
    expect(dev.check(url)).toBeInstanceOf(URL);
  });

  it('refuses private, link-local and unspecified literals by default', () => {
    expect(refusal(() => strict.check('http://10.0.0.1/'))).toMatchObject({ reason: 'private' });
    expect(refusal(() => strict.check('http://[fd00::1]/'))).toMatchObject({ reason: 'private' });
    expect(refusal(() => strict.check('http://169.254.10.1/'))).toMatchObject({
      reason: 'link-local',
    });
    expect(refusal(() => strict.check('http://0.0.0.0:8000/'))).toMatchObject({
      reason: 'unspecified',
    });
  });

  it('refuses metadata addresses and names even with allowPrivateNetworks', () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://METADATA.google.internal./',
      'http://100.100.100.200/',
    ]) {
      expect(
        refusal(() => dev.check(url)),
        url,
      ).toMatchObject({ reason: 'metadata' });
    }
  });

  it('refuses other schemes and URLs with credentials', () => {
    expect(refusal(() => dev.check('file:///etc/passwd'))).toMatchObject({ reason: 'scheme' });
    expect(refusal(() => dev.check('ftp://example.com/'))).toMatchObject({ reason: 'scheme' });
    expect(refusal(() => dev.check('gopher://127.0.0.1:6379/'))).toMatchObject({
      reason: 'scheme',
    });
    expect(refusal(() => dev.check('http://user:pw@example.com/'))).toMatchObject({
      reason: 'credentials',
    });
  });

  it('accepts public literals and names (names are vetted when they are resolved)', () => {
    expect(strict.check('https://93.184.216.34/mcp').hostname).toBe('93.184.216.34');
    expect(strict.check('https://mcp.example.com/mcp').hostname).toBe('mcp.example.com');
  });

  it('messages name the host and the reason, never the path or query', () => {
    const error = refusal(() => strict.check('http://127.1/mcp?api_key=secret')) as Error;
    expect(error.message).toBe('127.0.0.1 is a loopback address');
  });
});

describe('UrlGuard.resolve and lookup', () => {
  const dns = fakeDns({
    'public.test': ['93.184.216.34'],
    'loop.test': ['127.0.0.1'],
    'mixed.test': ['93.184.216.34', '10.0.0.7'],
    'v6loop.test': ['::ffff:127.0.0.1'],
    'meta.test': ['169.254.169.254'],
    'internal.test': ['10.1.2.3'],
  });
  const strict = createUrlGuard({ resolve: dns });

  it('resolves names whose every address is public', async () => {
    expect(await strict.resolve('public.test')).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('refuses a name that resolves to loopback, in any family', async () => {
    await expect(strict.resolve('loop.test')).rejects.toMatchObject({
      reason: 'loopback',
      address: '127.0.0.1',
      message: 'loop.test resolves to 127.0.0.1, a loopback address',
    });
    await expect(strict.resolve('v6loop.test')).rejects.toMatchObject({ reason: 'loopback' });
  });

  it('refuses a name when any one of its addresses is refused', async () => {
    await expect(strict.resolve('mixed.test')).rejects.toMatchObject({
      reason: 'private',
      address: '10.0.0.7',
    });
  });

  it('allowedAddresses opens chosen private ranges, never metadata', async () => {
    const guard = createUrlGuard({
      resolve: dns,
      allowedAddresses: ['10.0.0.0/8', '169.254.169.254'],
    });
    expect(await guard.resolve('internal.test')).toHaveLength(1);
    await expect(guard.resolve('loop.test')).rejects.toMatchObject({ reason: 'loopback' });
    await expect(guard.resolve('meta.test')).rejects.toMatchObject({ reason: 'metadata' });
    expect(() => createUrlGuard({ allowedAddresses: ['not-an-ip'] })).toThrow(TypeError);
  });

  it('lookup answers in both callback shapes and passes refusals as errors', async () => {
    const lookup = (host: string, all: boolean) =>
      new Promise<unknown>((resolve, reject) =>
        strict.lookup(host, { all }, (error, address, family) =>
          error ? reject(error) : resolve(all ? address : { address, family }),
        ),
      );
    expect(await lookup('public.test', false)).toEqual({ address: '93.184.216.34', family: 4 });
    expect((await lookup('public.test', true)) as LookupAddress[]).toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
    await expect(lookup('loop.test', true)).rejects.toBeInstanceOf(UrlRefusedError);
    await expect(lookup('nowhere.test', false)).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('the real resolver maps localhost to loopback and refuses it', async () => {
    await expect(createUrlGuard().resolve('localhost')).rejects.toMatchObject({
      reason: 'loopback',
    });
    const dev = createUrlGuard({ allowPrivateNetworks: true });
    const addresses = await dev.resolve('localhost');
    expect(addresses.length).toBeGreaterThan(0);
  });
});

describe('allowedOrigins', () => {
  const dns = fakeDns({
    'ollama.test': ['127.0.0.1'],
    'meta.test': ['169.254.169.254'],
  });
  const guard = createUrlGuard({
    resolve: dns,
    allowedOrigins: ['http://127.0.0.1:11434', 'http://ollama.test:8080/', 'http://meta.test'],
  });

  it('opens exactly the listed scheme, host and port', async () => {
    expect(guard.check('http://127.0.0.1:11434/v1').origin).toBe('http://127.0.0.1:11434');
    for (const url of [
      'http://127.0.0.1:11435/v1',
      'https://127.0.0.1:11434/v1',
      'http://127.0.0.2:11434/v1',
      'http://localhost:11434/v1',
    ]) {
      expect(
        refusal(() => guard.check(url)),
        url,
      ).toMatchObject({ reason: 'loopback' });
    }
    const named = guard.forUrl(new URL('http://ollama.test:8080/v1'));
    expect(named.allowedOrigin).toBe(true);
    expect(await named.resolve()).toEqual([{ address: '127.0.0.1', family: 4 }]);
    const otherPort = guard.forUrl(new URL('http://ollama.test:8081/v1'));
    expect(otherPort.allowedOrigin).toBe(false);
    await expect(otherPort.resolve()).rejects.toMatchObject({ reason: 'loopback' });
    // The guard's own checks (no URL, so no origin) stay strict.
    await expect(guard.resolve('ollama.test')).rejects.toMatchObject({ reason: 'loopback' });
  });

  it('never opens a metadata address, whatever the origin resolves to', async () => {
    await expect(guard.forUrl(new URL('http://meta.test/')).resolve()).rejects.toMatchObject({
      reason: 'metadata',
    });
  });

  it('takes only bare http(s) origins', () => {
    expect(parseOrigin(' http://127.0.0.1:11434/ ')).toEqual({ origin: 'http://127.0.0.1:11434' });
    expect(parseOrigin('HTTP://LocalHost:80')).toEqual({ origin: 'http://localhost' });
    expect(parseOrigin('http://[::1]:8000')).toEqual({ origin: 'http://[::1]:8000' });
    expect(parseOrigin('127.0.0.1:11434')).toEqual({
      problem: 'is not an origin such as http://127.0.0.1:11434',
    });
    expect(parseOrigin('ftp://127.0.0.1')).toEqual({
      problem: 'must start with http:// or https://',
    });
    expect(parseOrigin('http://127.0.0.1:11434/v1')).toEqual({
      problem: 'must be an origin without a path (http://127.0.0.1:11434)',
    });
    expect(parseOrigin('http://u:p@127.0.0.1')).toEqual({
      problem: 'must not contain credentials',
    });
    for (const metadata of [
      'http://169.254.169.254',
      'http://[::ffff:a9fe:a9fe]',
      'http://metadata.google.internal',
    ]) {
      expect(parseOrigin(metadata), metadata).toEqual({
        problem: 'is a cloud metadata address, which is never allowed',
      });
    }
    expect(() => createUrlGuard({ allowedOrigins: ['http://x/v1'] })).toThrow(TypeError);
  });
});
