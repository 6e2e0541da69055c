import {
  runRequest,
  runToText,
  type AgentRunner,
  type RunModel,
} from '@agent-backend/agent-runtime';

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
  /** The default model (`defaultRunModel`); absent, or without an API key: runs fail. */
  llm: RunModel | undefined;
}): TaskAgent {
  const { runner, llm } = options;
  return {
    async run({ userId, prompt, sessionId, connector, signal }) {
      if (!llm?.apiKey) throw new TaskAgentError('default_model_not_configured');
      const prepared = await runner.prepare(
        runRequest({
          userId,
          sessionId,
          message: prompt,
          model: llm,
          capabilities: { nodeTools: connector === 'my-browser' },
        }),
      );
      const { text, result, error } = await runToText(prepared, signal);
      if (result.status !== 'done')
        throw new TaskAgentError(error?.code ?? result.code ?? 'failed');
      return { text };
    },
  };
}
