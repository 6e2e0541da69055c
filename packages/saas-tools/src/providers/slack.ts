import { z } from 'zod';
import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { cut, SaasError } from '../saas-http.js';
import type { ErrorText, SaasAccount } from '../account.js';

/** Slack answers HTTP 200 `{ ok: false, error: "channel_not_found" }` for most failures. */
export const slackErrorText: ErrorText = (body) =>
  typeof (body as { error?: unknown })?.error === 'string'
    ? (body as { error: string }).error
    : undefined;

interface Message {
  user?: string;
  username?: string;
  text?: string;
  ts?: string;
  permalink?: string;
  channel?: { name?: string };
}

const Channel = z
  .string()
  .min(1)
  .max(80)
  .describe('Channel id (C0123...) as list_channels gives it');

/** `conversations.list` pages followed at most (Slack may answer fewer than `limit` a page). */
const MAX_CHANNEL_PAGES = 5;

type Call = (request: {
  path: string;
  query?: Record<string, string | number | undefined>;
}) => Promise<unknown>;

/**
 * Slack: list channels, read a channel's history, search messages, post a message. Channel ids
 * go in the query or the body, never the path (Web API methods are fixed paths).
 */
export function slackTools(account: SaasAccount): AgentTool[] {
  /**
   * The workspace's URL (`auth.test`), asked once per run, for channel and message links in
   * Slack's permalink form `{workspace}/archives/{channel}/p{ts without the dot}`. Unknown
   * (auth.test refused): no links rather than a failed read.
   */
  let workspace: Promise<string | undefined> | undefined;
  const workspaceUrl = (call: Call) => {
    workspace ??= (async () => {
      try {
        const answer = (await call({ path: '/auth.test' })) as { url?: string };
        return typeof answer.url === 'string' && /^https:\/\//.test(answer.url)
          ? answer.url.replace(/\/*$/, '/')
          : undefined;
      } catch (error) {
        workspace = undefined;
        if (error instanceof SaasError) return undefined;
        throw error;
      }
    })();
    return workspace;
  };
  const channelLink = (base: string | undefined, channel: string) =>
    base ? ` ${base}archives/${encodeURIComponent(channel)}` : '';
  const messageLink = (base: string | undefined, channel: string, ts: string | undefined) =>
    base && ts ? ` ${base}archives/${encodeURIComponent(channel)}/p${ts.replace('.', '')}` : '';
  return [
    defineTool({
      name: 'slack_list_channels',
      description: 'Lists the Slack channels of the workspace (id and name).',
      schema: z.object({ limit: z.number().int().min(1).max(200).default(50) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          // Slack filters after paging, so a page may hold fewer than `limit` channels with a
          // cursor for more: the cursor is followed (at most MAX_CHANNEL_PAGES pages) until
          // `limit` channels are in; a cursor left over is reported.
          const channels: Array<{ id: string; name: string; is_private?: boolean }> = [];
          let cursor: string | undefined;
          for (
            let pages = 0;
            pages < MAX_CHANNEL_PAGES && channels.length < args.limit;
            pages += 1
          ) {
            const answer = (await call({
              path: '/conversations.list',
              query: {
                limit: args.limit - channels.length,
                types: 'public_channel,private_channel',
                exclude_archived: 'true',
                cursor,
              },
            })) as {
              channels: Array<{ id: string; name: string; is_private?: boolean }>;
              response_metadata?: { next_cursor?: string };
            };
            channels.push(...answer.channels.slice(0, args.limit - channels.length));
            cursor = answer.response_metadata?.next_cursor || undefined;
            if (!cursor) break;
          }
          if (channels.length === 0) return { content: 'No channels.' };
          const base = await workspaceUrl(call);
          const lines = channels.map(
            (c) =>
              `${c.id} #${c.name}${c.is_private ? ' (private)' : ''}${channelLink(base, c.id)}`,
          );
          if (cursor) lines.push('More channels exist; raise the limit (up to 200) to see them.');
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'slack_read_history',
      description: 'Reads the latest messages of a Slack channel, newest first.',
      schema: z.object({ channel: Channel, limit: z.number().int().min(1).max(100).default(20) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const answer = (await call({
            path: '/conversations.history',
            query: { channel: args.channel, limit: args.limit },
          })) as { messages: Message[]; has_more?: boolean };
          if (answer.messages.length === 0) return { content: 'No messages.' };
          const base = await workspaceUrl(call);
          // One page of `limit`, newest first; `has_more` is reported, not followed.
          const lines = answer.messages.map(
            (m) =>
              `[${m.ts}] ${m.user ?? m.username ?? '?'}: ${m.text ?? ''}${messageLink(base, args.channel, m.ts)}`,
          );
          if (answer.has_more)
            lines.push('Older messages exist; raise the limit (up to 100) to read further back.');
          return { content: cut(lines.join('\n'), 8_000) };
        }),
    }),
    defineTool({
      name: 'slack_search_messages',
      description: 'Searches Slack messages (Slack search syntax), with links.',
      schema: z.object({
        query: z.string().min(1).max(256),
        limit: z.number().int().min(1).max(50).default(10),
      }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const answer = (await call({
            path: '/search.messages',
            query: { query: args.query, count: args.limit },
          })) as { messages: { total: number; matches: Message[] } };
          const matches = answer.messages.matches;
          if (matches.length === 0) return { content: `No messages match "${args.query}".` };
          // One page of `limit` (search's own `permalink`s); the total says how many more match.
          const lines = matches.map(
            (m) =>
              `#${m.channel?.name ?? '?'} ${m.username ?? m.user ?? '?'}: ${m.text ?? ''} ${m.permalink ?? ''}`,
          );
          if (answer.messages.total > matches.length) {
            lines.unshift(`${answer.messages.total} match; the first ${matches.length}:`);
          }
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'slack_post_message',
      description: 'Posts a message to a Slack channel.',
      schema: z.object({ channel: Channel, text: z.string().min(1).max(4_000) }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const answer = (await call({
            method: 'POST',
            path: '/chat.postMessage',
            json: { channel: args.channel, text: args.text },
          })) as { channel: string; ts: string };
          // The message's permalink; should asking for it fail, the post stands without one.
          let link = '';
          try {
            const permalink = (await call({
              path: '/chat.getPermalink',
              query: { channel: answer.channel, message_ts: answer.ts },
            })) as { permalink?: string };
            if (typeof permalink.permalink === 'string') link = ` ${permalink.permalink}`;
          } catch (error) {
            if (!(error instanceof SaasError)) throw error;
          }
          return { content: `Posted to ${answer.channel} (message ${answer.ts}).${link}` };
        }),
    }),
  ];
}
