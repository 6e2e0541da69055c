/**
 * Helpers of the limits tests on an agent cluster: a run held open by its model, and the body of
 * a refusal.
 */
import { expect } from 'vitest';
import { invoke, type AgentCluster, type SseClient } from './agent-helpers.js';

/** `llm_config` of a run on the cluster's scripted model under `modelName`. */
export const clusterLlm = (cluster: AgentCluster, modelName: string) => ({
  baseUrl: cluster.model.baseUrl,
  apiKey: 'sk-limits-key',
  modelName,
});

/** A run whose model answer stays open until `release()`. */
export async function heldRun(
  cluster: AgentCluster,
  base: string,
  token: string,
  model: string,
  body: Record<string, unknown> = {},
) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  cluster.model.script(model, [
    { kind: 'stream', pieces: [{ text: 'Working' }, { waitFor: gate }, { finish: 'stop' }] },
  ]);
  const stream = await invoke(base, token, {
    message: 'hold',
    llm_config: clusterLlm(cluster, model),
    ...body,
  });
  expect(stream.response.status).toBe(200);
  await stream.waitFor((e) => e.data.type === 'message_chunk');
  return { stream, release };
}

/** A refused invoke's status, `Retry-After` and error body. */
export async function refusal(stream: SseClient) {
  return {
    status: stream.response.status,
    retryAfter: stream.response.headers.get('retry-after'),
    body: (await stream.response.json()) as { error: { code: string; details?: unknown } },
  };
}
