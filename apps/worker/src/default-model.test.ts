import { LlmConfig } from '@agent-backend/protocol';
import { describe, expect, it } from 'vitest';
import { defaultRunModel } from './default-model.js';

describe('defaultRunModel', () => {
  it('is the DEFAULT_LLM_* model at the temperature an llm_config without one gets', () => {
    const { temperature } = LlmConfig.parse({
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey: 'k',
      modelName: 'm',
    });
    expect(
      defaultRunModel({
        DEFAULT_LLM_BASE_URL: 'http://127.0.0.1:1/v1',
        DEFAULT_LLM_API_KEY: 'key',
        DEFAULT_LLM_MODEL: 'model-a',
      }),
    ).toEqual({
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey: 'key',
      name: 'model-a',
      temperature,
      chosenBy: 'operator',
    });
  });

  it('is absent without a base URL or a model name, and keyless without an API key', () => {
    expect(defaultRunModel({ DEFAULT_LLM_MODEL: 'model-a' })).toBeUndefined();
    expect(defaultRunModel({ DEFAULT_LLM_BASE_URL: 'http://127.0.0.1:1/v1' })).toBeUndefined();
    expect(
      defaultRunModel({ DEFAULT_LLM_BASE_URL: 'http://127.0.0.1:1/v1', DEFAULT_LLM_MODEL: 'm' })
        ?.apiKey,
    ).toBe('');
  });
});
