import type { UsageRepository } from '@agent-backend/agent-runtime';
import { AppError } from '@agent-backend/http-server';
import { UsageQuery, UsageReport } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/** Days of a report when the query gives no `from`, and the most it may span. */
const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const isCalendarDay = (value: string) => {
  const ms = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(ms) && day(ms) === value;
};
const invalid = (path: string, message: string) =>
  new AppError('invalid_request', 'invalid request query', [{ path, message }]);

/**
 * `GET /api/usage` (docs/protocol.md): the caller's token usage by UTC day, summed from what the
 * model providers reported for each run.
 */
export function registerUsageRoutes(
  { app, requireUser, limits }: ServiceContext,
  usage: UsageRepository,
): void {
  app.get(
    '/api/usage',
    {
      query: UsageQuery,
      preHandler: requireUser,
      doc: {
        tag: 'usage',
        summary: "The caller's token usage by day",
        description:
          'Prompt and completion tokens and runs per UTC day (the day a run started), as the ' +
          'model providers reported them, from `from` to `to` (both included, at most 366 ' +
          'days; by default the 30 days up to today), and their total; with ' +
          "`TOKEN_BUDGET_PER_USER_PER_DAY` set, `budget`: today's tokens against it (counted " +
          'as each model request reports them, so a running run is included) and what remains.',
        responses: { 200: { description: 'The days with runs.', json: UsageReport } },
      },
    },
    async (request) => {
      const { query } = request;
      for (const field of ['from', 'to'] as const) {
        const value = query[field];
        // The schema checks the shape; a day that does not exist (02-30) is refused here.
        if (value !== undefined && !isCalendarDay(value)) throw invalid(field, 'is not a date');
      }
      const to = query.to ?? day(Date.now());
      const from = query.from ?? day(Date.parse(to) - (DEFAULT_DAYS - 1) * DAY_MS);
      const span = (Date.parse(to) - Date.parse(from)) / DAY_MS;
      if (span < 0 || span >= MAX_DAYS) {
        throw invalid('from', `must be at most ${MAX_DAYS - 1} days before to, and not after it`);
      }
      const [report, status] = await Promise.all([
        usage.daily(request.userId, { from, to }),
        limits.budgetStatus(request.userId),
      ]);
      const budget = status && {
        day: status.day,
        limit: status.limit,
        used: status.used,
        remaining: status.remaining,
        resets_at: new Date(Date.parse(status.day) + DAY_MS).toISOString(),
      };
      return { ...report, budget } satisfies UsageReport;
    },
  );
}
