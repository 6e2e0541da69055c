import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

/** `llm_config.baseUrl` is user-supplied: it passes the same SSRF guard as MCP servers. */
describe('agent model base URL guard', () => {
  let cluster: AgentCluster;
  beforeAll(async () => {
    cluster = await startAgentCluster({ MCP_ALLOW_PRIVATE_NETWORKS: 'false' });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  // Only loopback targets here: a regressed guard must never make a test reach another address.
  it('refuses loopback model URLs by default and never connects to them', async () => {
    const token = await cluster.token('ssrf-user');
    cluster.model.script('guarded', [textReply('should never be asked')]);
    for (const baseUrl of [cluster.model.baseUrl, 'http://localhost:1/v1', 'http://[::1]:1/v1']) {
      const stream = await invoke(cluster.api[0]!.url, token, {
        message: 'hi',
        llm_config: { baseUrl, apiKey: 'sk-x', modelName: 'guarded' },
      });
      expect(stream.response.status).toBe(200);
      const events = await stream.ended;
      const last = events.at(-1)!.data;
      expect(last, baseUrl).toMatchObject({ type: 'error', code: 'llm_base_url_refused' });
    }
    expect(cluster.model.requests('guarded')).toHaveLength(0);
  });
});
