import type { RunModel } from '@agent-backend/agent-runtime';
import { DEFAULT_TEMPERATURE } from '@agent-backend/protocol';

/** The operator's model settings (`DEFAULT_LLM_*`), as the configuration holds them. */
export interface DefaultLlmConfig {
  readonly DEFAULT_LLM_BASE_URL?: string | undefined;
  readonly DEFAULT_LLM_API_KEY?: string | undefined;
  readonly DEFAULT_LLM_MODEL?: string | undefined;
}

/**
 * The model of the runs no client configures (scheduled tasks, chat replies): `DEFAULT_LLM_*` at
 * the temperature an `llm_config` without one gets. Absent when the base URL or the model name
 * is unset. An unset API key is empty (a local model server may need none).
 */
export function defaultRunModel(config: DefaultLlmConfig): RunModel | undefined {
  const { DEFAULT_LLM_BASE_URL: baseUrl, DEFAULT_LLM_MODEL: name } = config;
  if (!baseUrl || !name) return undefined;
  return {
    baseUrl,
    apiKey: config.DEFAULT_LLM_API_KEY ?? '',
    name,
    temperature: DEFAULT_TEMPERATURE,
    chosenBy: 'operator',
  };
}
