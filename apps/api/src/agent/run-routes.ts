import type { ConversationRepository } from '@agent-backend/agent-runtime';
import { AppError } from '@agent-backend/http-server';
import { AgentRun, RunParams } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { unstoredRun, type RunStopper } from '@agent-backend/agent';

const notFound = (runId: string) => new AppError('not_found', `run ${runId} not found`);

/**
 * `GET /api/agent/runs/:run_id` and `POST /api/agent/runs/:run_id/cancel` (docs/protocol.md):
 * the caller's runs only, another user's run answers 404 like an unknown one. Cancel works from
 * any API replica: the one running the run stops it (through the bus).
 */
export function registerRunRoutes(
  { app, engines, requireUser }: ServiceContext,
  conversations: ConversationRepository,
  stopper: RunStopper,
): void {
  app.get(
    '/api/agent/runs/:run_id',
    {
      params: RunParams,
      preHandler: requireUser,
      doc: {
        tag: 'agent',
        summary: 'Read a run: status, times, error code and token usage',
        description:
          'A run whose rows are not stored yet (an invoked run streams while they are written) ' +
          'is answered to its own user as `running`, `started_at` being the time of the answer ' +
          'and `usage` zero until they are.',
        responses: { 200: { description: 'The run.', json: AgentRun } },
        errors: ['not_found'],
      },
    },
    async (request) => {
      const { run_id: runId } = request.params;
      const run =
        (await conversations.run(request.userId, runId)) ??
        (await unstoredRunAnswer(engines, request.userId, runId)) ??
        // Its rows stored and its lease freed between the two reads: a run that just ended.
        (await conversations.run(request.userId, runId));
      if (!run) throw notFound(runId);
      return run satisfies AgentRun;
    },
  );

  app.post(
    '/api/agent/runs/:run_id/cancel',
    {
      params: RunParams,
      preHandler: requireUser,
      doc: {
        tag: 'agent',
        summary: 'Cancel a run, from any replica',
        description:
          'The replica running it stops the model request and its tools; its stream ends with ' +
          'the `error` event `run_aborted`, as when its client went away, and the conversation ' +
          'so far stays stored. Answers once the run is recorded as ended and its last event ' +
          'is in the run log, at most 5 s: a run still `running` then (no process runs it, as a ' +
          'queued background run or one whose replica died) is recorded as ended by the cancel, ' +
          'so no worker starts or takes it over later. ' +
          'A run that already ended is answered unchanged.',
        responses: { 200: { description: 'The run after the cancel.', json: AgentRun } },
        errors: ['not_found'],
      },
    },
    async (request) => {
      const run = await stopper.stop(request.userId, request.params.run_id);
      if (!run) throw notFound(request.params.run_id);
      return run satisfies AgentRun;
    },
  );
}

/**
 * The caller's run while its rows are not stored yet, as the join routes find it (its run log and
 * its session's lease): `running`, started now as far as this answer knows (the row's own start,
 * a few ms earlier, is not readable yet), no tokens counted. Null when nothing names it as the
 * caller's running run.
 */
async function unstoredRunAnswer(
  engines: ServiceContext['engines'],
  userId: string,
  runId: string,
): Promise<AgentRun | null> {
  const run = await unstoredRun(engines, userId, runId);
  if (!run) return null;
  return {
    run_id: run.runId,
    session_id: run.sessionId,
    status: 'running',
    // The stored times' form: microseconds (docs/protocol.md).
    started_at: new Date().toISOString().replace('Z', '000Z'),
    ended_at: null,
    error: null,
    usage: { prompt_tokens: 0, completion_tokens: 0 },
  };
}
