import { describe, expect, it } from 'vitest';
import { configWarnings } from './config-warnings.js';
import { loadConfig } from './load-config.js';

const gateway = (env: Record<string, string>) => loadConfig('all-in-one', env);

describe('configWarnings', () => {
  it('says nothing at the defaults, nor with pings under 2/3 of the silent timeout', () => {
    expect(configWarnings(gateway({}))).toEqual([]);
    expect(
      configWarnings(
        gateway({ GATEWAY_PING_INTERVAL_MS: '59999', NODE_SILENT_TIMEOUT_MS: '90000' }),
      ),
    ).toEqual([]);
  });

  it('names both variables and the bounds when pings are 2/3 of the silent timeout or more apart', () => {
    for (const ping of ['60000', '600000']) {
      const [warning, ...rest] = configWarnings(
        gateway({ GATEWAY_PING_INTERVAL_MS: ping, NODE_SILENT_TIMEOUT_MS: '90000' }),
      );
      expect(rest).toEqual([]);
      expect(warning).toContain(`GATEWAY_PING_INTERVAL_MS (${ping})`);
      expect(warning).toContain('NODE_SILENT_TIMEOUT_MS (90000)');
      expect(warning).toContain('GATEWAY_PING_INTERVAL_MS below 60000');
      expect(warning).toContain(`NODE_SILENT_TIMEOUT_MS above ${(Number(ping) * 3) / 2}`);
    }
  });

  it('concerns only the roles that run the gateway', () => {
    const env = { GATEWAY_PING_INTERVAL_MS: '600000', NODE_SILENT_TIMEOUT_MS: '90000' };
    const config = gateway(env);
    expect(configWarnings({ ...config, role: 'gateway' })).toHaveLength(1);
    expect(configWarnings({ ...config, role: 'api' })).toEqual([]);
    expect(configWarnings({ ...config, role: 'worker' })).toEqual([]);
  });
});
