import { describe, expect, it } from 'vitest';
import { createLlmClient, LLM_CLIENTS_KEPT } from './llm-client.js';

describe('createLlmClient', () => {
  it('reuses the client of the same base URL, key and settings across runs, keeping the last few', async () => {
    const model = { baseUrl: 'http://127.0.0.1:9/v1/', apiKey: 'sk-one' };
    const first = await createLlmClient(model);
    expect(await createLlmClient({ ...model, baseUrl: 'http://127.0.0.1:9/v1' })).toBe(first);
    expect(first.apiKey).toBe('sk-one');
    const otherKey = await createLlmClient({ ...model, apiKey: 'sk-two' });
    expect(otherKey).not.toBe(first);
    expect(otherKey.apiKey).toBe('sk-two');
    expect(await createLlmClient(model, { maxRetries: 3 })).not.toBe(first);
    // The least recently used goes once more than LLM_CLIENTS_KEPT were made.
    for (let i = 0; i < LLM_CLIENTS_KEPT; i++) {
      await createLlmClient({ ...model, apiKey: `sk-${i}` });
    }
    expect(await createLlmClient(model)).not.toBe(first);
  });
});
