import { describe, expect, it } from 'vitest';
import { DEFAULT_AGENT_SETTINGS } from '@agent-backend/agent-runtime';
import { ConfigError, loadConfig } from '@agent-backend/config';
import { DEFAULT_MAX_TOOL_NODES } from '@agent-backend/node-tools';
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

  it('bounds the tools of a run at 128 from 32 nodes by default, as configured otherwise', () => {
    // The node bound is the node tools capability's setting (packages/node-tools).
    const config = loadConfig('all-in-one', {});
    expect([agentSettings(config).runner.maxTools, config.AGENT_MAX_TOOL_NODES]).toEqual([128, 32]);
    expect([DEFAULT_AGENT_SETTINGS.maxTools, DEFAULT_MAX_TOOL_NODES]).toEqual([128, 32]);
    const set = loadConfig('all-in-one', { AGENT_MAX_TOOLS: '64', AGENT_MAX_TOOL_NODES: '4' });
    expect([agentSettings(set).runner.maxTools, set.AGENT_MAX_TOOL_NODES]).toEqual([64, 4]);
    for (const env of [{ AGENT_MAX_TOOLS: '7' }, { AGENT_MAX_TOOL_NODES: '0' }]) {
      expect(() => loadConfig('all-in-one', env)).toThrow(ConfigError);
    }
  });
});
