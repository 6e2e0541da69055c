import { runRequest, type AgentRunner } from '@agent-backend/agent-runtime';

/**
 * Runs a scheduled task's prompt to completion and returns the answer. The seam between the
 * scheduler and the agent runtime: tests and other runtimes can provide their own.
 */
export interface TaskAgent {
  run(input: {
    userId: string;
    prompt: string;
    sessionId: string;
    connector: string;
    signal: AbortSignal;
  }): Promise<{ text: string }>;
}

/** The model of scheduled runs (`DEFAULT_LLM_*`). */
export interface DefaultLlm {
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  model?: string | undefined;
}

/** A run that did not finish; its message is safe to show the user (no secrets). */
export class TaskAgentError extends Error {
  constructor(readonly code: string) {
    super(`the agent run failed: ${code}`);
    this.name = 'TaskAgentError';
  }
}

/**
 * The default agent: `@agent-backend/agent-runtime`'s `AgentRunner` on the default model. With
 * `connector` `my-browser` the run gets the user's node tools (the browser extension's, through
 * the gateway); with `none`, no node tools.
 */
export function createRunnerTaskAgent(options: {
  runner: AgentRunner;
  llm: DefaultLlm;
}): TaskAgent {
  const { runner } = options;
  return {
    async run({ userId, prompt, sessionId, connector, signal }) {
      const { baseUrl, apiKey, model } = options.llm;
      if (!baseUrl || !apiKey || !model) throw new TaskAgentError('default_model_not_configured');
      const prepared = await runner.prepare(
        runRequest({
          userId,
          sessionId,
          message: prompt,
          model: { baseUrl, apiKey, name: model, temperature: 0.7, chosenBy: 'operator' },
          capabilities: { nodeTools: connector === 'my-browser' },
        }),
      );
      let text = '';
      let failure: string | undefined;
      const result = await prepared.execute((event) => {
        if (event.type === 'message_chunk') text += event.content;
        else if (event.type === 'error') failure = event.code;
      }, signal);
      if (result.status !== 'done') throw new TaskAgentError(failure ?? result.code ?? 'failed');
      return { text };
    },
  };
}
