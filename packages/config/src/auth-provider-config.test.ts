import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig('all-in-one', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

const PROVIDER = {
  AUTH_JWKS_URL: 'https://idp.example.com/.well-known/openid-configuration',
  AUTH_ISSUER: 'https://idp.example.com/',
  AUTH_AUDIENCE: 'https://agents.example.com',
};

describe('identity-provider settings (AUTH_*)', () => {
  it('default to RS256 and ES256, the sub claim and 30 s of skew', () => {
    expect(loadConfig('all-in-one', PROVIDER)).toMatchObject({
      ...PROVIDER,
      AUTH_AUDIENCE: ['https://agents.example.com'],
      AUTH_ALGORITHMS: ['RS256', 'ES256'],
      AUTH_USER_CLAIM: 'sub',
      AUTH_CLOCK_SKEW_SECONDS: 30,
      AUTH_JWKS_REFETCH_SECONDS: 30,
    });
  });

  it('need an issuer and an audience with a JWKS URL', () => {
    expect(problemsOf({ AUTH_JWKS_URL: PROVIDER.AUTH_JWKS_URL })).toEqual([
      'AUTH_ISSUER: required with AUTH_JWKS_URL',
      expect.stringContaining('AUTH_AUDIENCE: required with AUTH_JWKS_URL'),
    ]);
  });

  it('never accept none or an HMAC algorithm', () => {
    for (const algorithms of ['none', 'HS256', 'RS256,HS512']) {
      const problems = problemsOf({ ...PROVIDER, AUTH_ALGORITHMS: algorithms });
      expect(problems, algorithms).toHaveLength(1);
      expect(problems[0], algorithms).toMatch(/^AUTH_ALGORITHMS\.\d: each must be one of RS256/);
    }
    expect(
      loadConfig('all-in-one', { ...PROVIDER, AUTH_ALGORITHMS: 'ES384, PS256' }),
    ).toMatchObject({ AUTH_ALGORITHMS: ['ES384', 'PS256'] });
  });
});
