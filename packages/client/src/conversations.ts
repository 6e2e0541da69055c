import type {
  AgentRun as AgentRunRecord,
  MessageList,
  SessionDetail,
  SessionList,
  SessionSummary,
  StoredMessage,
  UsageReport,
} from '@agent-backend/protocol';
import type { CallOptions, JsonRequest } from './call-options.js';
import { paginate } from './paginate.js';

const sessionPath = (sessionId: string, rest = '') =>
  `/api/agent/sessions/${encodeURIComponent(sessionId)}${rest}`;

/** `?a=1&b=2` of the defined values, or nothing. */
function search(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, String(value));
  }
  return params.size > 0 ? `?${params}` : '';
}

/** The caller's sessions (`/api/agent/sessions`): list, read, messages, rename, delete. */
export function sessionsApi(json: JsonRequest) {
  const api = {
    /**
     * Every session of the caller (whose title contains `q`), latest activity first, page after
     * page as the loop asks (`for await (const session of client.sessions.list())`); `limit`
     * is the page size.
     */
    list: (query: { q?: string; limit?: number } = {}, options?: CallOptions) =>
      paginate<SessionSummary>(async (cursor) => {
        const page = await api.page({ ...query, cursor }, options);
        return { items: page.sessions, nextCursor: page.next_cursor };
      }),
    /** One page of `GET /api/agent/sessions`; `cursor` is the previous `next_cursor`. */
    page: (
      query: { q?: string; cursor?: string | undefined; limit?: number } = {},
      options?: CallOptions,
    ): Promise<SessionList> => json('GET', `/api/agent/sessions${search(query)}`, options),
    /** The session with its todo list, waiting plan and last settings; `NotFoundError` if none. */
    get: (sessionId: string, options?: CallOptions): Promise<SessionDetail> =>
      json('GET', sessionPath(sessionId), options),
    /** The stored conversation, oldest first, page after page as the loop asks. */
    messages: (sessionId: string, query: { limit?: number } = {}, options?: CallOptions) =>
      paginate<StoredMessage>(async (cursor) => {
        const page = await api.messagesPage(sessionId, { ...query, cursor }, options);
        return { items: page.messages, nextCursor: page.next_cursor };
      }),
    /** One page of `GET /api/agent/sessions/:session_id/messages`. */
    messagesPage: (
      sessionId: string,
      query: { cursor?: string | undefined; limit?: number } = {},
      options?: CallOptions,
    ): Promise<MessageList> =>
      json('GET', sessionPath(sessionId, `/messages${search(query)}`), options),
    /** Sets the title (`PATCH`); answers the session as listed. */
    rename: (sessionId: string, title: string, options?: CallOptions): Promise<SessionSummary> =>
      json('PATCH', sessionPath(sessionId), { ...options, body: { title } }),
    /** Deletes the session with everything of it, cancelling its running run first. */
    delete: (sessionId: string, options?: CallOptions): Promise<void> =>
      json('DELETE', sessionPath(sessionId), options),
  };
  return api;
}

/** The caller's runs (`/api/agent/runs/:run_id`): status and usage, cancel from any replica. */
export function runsApi(json: JsonRequest) {
  const runPath = (runId: string, rest = '') =>
    `/api/agent/runs/${encodeURIComponent(runId)}${rest}`;
  return {
    /** Status, times, error code and token usage of a run. */
    get: (runId: string, options?: CallOptions): Promise<AgentRunRecord> =>
      json('GET', runPath(runId), options),
    /** Cancels the run (its stream ends with `run_aborted`); answers the run once it ended. */
    cancel: (runId: string, options?: CallOptions): Promise<AgentRunRecord> =>
      json('POST', runPath(runId, '/cancel'), options),
  };
}

/** The caller's token usage (`GET /api/usage`). */
export function usageApi(json: JsonRequest) {
  return {
    /** Daily totals between two UTC days (`YYYY-MM-DD`, both included; default the last 30). */
    get: (
      range: { from?: string; to?: string } = {},
      options?: CallOptions,
    ): Promise<UsageReport> => json('GET', `/api/usage${search(range)}`, options),
  };
}
