import { z } from 'zod';
import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { cut, segment } from '../saas-http.js';
import type { ErrorText, SaasAccount } from '../account.js';

/** GitHub's REST errors: `{ message, documentation_url }`. */
export const githubErrorText: ErrorText = (body) =>
  typeof (body as { message?: unknown })?.message === 'string'
    ? (body as { message: string }).message
    : undefined;

/** Every GitHub request: the REST media type and the API version the tools were written for. */
export const GITHUB_HEADERS = {
  accept: 'application/vnd.github+json',
  'x-github-api-version': '2022-11-28',
};

/**
 * `owner/name` as GitHub allows them: an owner of letters, digits, `-` and `_`; a name of
 * those and `.`, but never `.` or `..` (which would walk the URL path).
 */
const Repo = z
  .string()
  .regex(/^[\w-]{1,39}\/(?!\.{1,2}$)[\w.-]{1,100}$/, 'owner/name')
  .describe('owner/name');

/** The repository's URL path, each part encoded. */
const repoPath = (repo: string) => repo.split('/').map(segment).join('/');

interface Issue {
  number: number;
  title: string;
  state: string;
  html_url: string;
  body?: string | null;
  comments?: number;
  user?: { login?: string };
  pull_request?: unknown;
  repository_url?: string;
}

const line = (i: Issue) =>
  `#${i.number} ${i.title} [${i.state}${i.pull_request ? ', pull request' : ''}] ${i.html_url}`;

/** GitHub: search issues and PRs, read one, list repositories, open an issue, comment. */
export function githubTools(account: SaasAccount): AgentTool[] {
  return [
    defineTool({
      name: 'github_search_issues',
      description:
        'Searches GitHub issues and pull requests with GitHub search syntax (e.g. "repo:o/r is:open bug").',
      schema: z.object({
        query: z.string().min(1).max(256),
        limit: z.number().int().min(1).max(30).default(10),
      }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const found = (await call({
            path: '/search/issues',
            query: { q: args.query, per_page: args.limit },
          })) as { total_count: number; items: Issue[] };
          if (found.items.length === 0) return { content: `No issues match "${args.query}".` };
          return {
            content: `${found.total_count} found; the first ${found.items.length}:\n${found.items.map(line).join('\n')}`,
          };
        }),
    }),
    defineTool({
      name: 'github_get_issue',
      description: 'Reads a GitHub issue or pull request: title, state, author, text.',
      schema: z.object({ repo: Repo, number: z.number().int().positive() }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const issue = (await call({
            path: `/repos/${repoPath(args.repo)}/issues/${args.number}`,
          })) as Issue;
          return {
            content: cut(
              `${line(issue)}\nby ${issue.user?.login ?? 'unknown'}, ${issue.comments ?? 0} comments\n\n${issue.body ?? '(no description)'}`,
              8_000,
            ),
          };
        }),
    }),
    defineTool({
      name: 'github_list_repos',
      description:
        "Lists the repositories the user's GitHub account can access, most recently updated first.",
      schema: z.object({ limit: z.number().int().min(1).max(50).default(20) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (_call, paged) => {
          // One page of `limit` (at most 50, GitHub's pages go to 100); a Link rel="next" means
          // there are more, which the model is told rather than the tool following them.
          const answer = await paged({
            path: '/user/repos',
            query: { per_page: args.limit, sort: 'updated' },
          });
          const repos = answer.body as Array<{
            full_name: string;
            html_url: string;
            private: boolean;
            description?: string | null;
          }>;
          if (repos.length === 0) return { content: 'The account has no repositories.' };
          const lines = repos.map(
            (r) =>
              `${r.full_name}${r.private ? ' (private)' : ''} ${r.html_url}${r.description ? ` — ${r.description}` : ''}`,
          );
          if (answer.hasNextPage) {
            lines.push(
              args.limit < 50
                ? `More repositories exist; ask with a higher limit (up to 50) to see more.`
                : 'More repositories exist; these are the 50 most recently updated.',
            );
          }
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'github_create_issue',
      description: 'Opens an issue in a GitHub repository.',
      schema: z.object({
        repo: Repo,
        title: z.string().min(1).max(256),
        body: z.string().max(60_000).default(''),
      }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const issue = (await call({
            method: 'POST',
            path: `/repos/${repoPath(args.repo)}/issues`,
            json: { title: args.title, body: args.body },
          })) as Issue;
          return { content: `Opened ${line(issue)}` };
        }),
    }),
    defineTool({
      name: 'github_comment',
      description: 'Comments on a GitHub issue or pull request.',
      schema: z.object({
        repo: Repo,
        number: z.number().int().positive(),
        body: z.string().min(1).max(60_000),
      }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const comment = (await call({
            method: 'POST',
            path: `/repos/${repoPath(args.repo)}/issues/${args.number}/comments`,
            json: { body: args.body },
          })) as { html_url: string };
          return { content: `Commented: ${comment.html_url}` };
        }),
    }),
  ];
}
