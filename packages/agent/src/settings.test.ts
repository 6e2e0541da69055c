import { describe, expect, it } from 'vitest';
import { DEFAULT_AGENT_SETTINGS } from '@agent-backend/agent-runtime';
import { ConfigError, loadConfig } from '@agent-backend/config';
import { agentSettings } from './settings.js';

describe('agentSettings', () => {
  it('gives runs the documented parallel tool limit by default and the configured one when set', () => {
    expect(agentSettings(loadConfig('all-in-one', {})).runner.maxParallelTools).toBe(8);
    expect(DEFAULT_AGENT_SETTINGS.maxParallelTools).toBe(8);
    const sequential = loadConfig('all-in-one', { AGENT_MAX_PARALLEL_TOOLS: '1' });
    expect(agentSettings(sequential).runner.maxParallelTools).toBe(1);
  });

  it('refuses a limit below 1 or above 64 at start', () => {
    for (const value of ['0', '65', 'many']) {
      expect(() => loadConfig('all-in-one', { AGENT_MAX_PARALLEL_TOOLS: value })).toThrow(
        ConfigError,
      );
    }
  });
});
