import { z } from 'zod';
import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { cut, type ErrorText, type SaasAccount } from '../account.js';

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

/** Slack: list channels, read a channel's history, search messages, post a message. */
export function slackTools(account: SaasAccount): AgentTool[] {
  return [
    defineTool({
      name: 'slack_list_channels',
      description: 'Lists the Slack channels of the workspace (id and name).',
      schema: z.object({ limit: z.number().int().min(1).max(200).default(50) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const answer = (await call({
            path: '/conversations.list',
            query: {
              limit: args.limit,
              types: 'public_channel,private_channel',
              exclude_archived: 'true',
            },
          })) as { channels: Array<{ id: string; name: string; is_private?: boolean }> };
          if (answer.channels.length === 0) return { content: 'No channels.' };
          return {
            content: answer.channels
              .map((c) => `${c.id} #${c.name}${c.is_private ? ' (private)' : ''}`)
              .join('\n'),
          };
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
          })) as { messages: Message[] };
          if (answer.messages.length === 0) return { content: 'No messages.' };
          return {
            content: cut(
              answer.messages
                .map((m) => `[${m.ts}] ${m.user ?? m.username ?? '?'}: ${m.text ?? ''}`)
                .join('\n'),
              8_000,
            ),
          };
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
          return {
            content: matches
              .map(
                (m) =>
                  `#${m.channel?.name ?? '?'} ${m.username ?? m.user ?? '?'}: ${m.text ?? ''} ${m.permalink ?? ''}`,
              )
              .join('\n'),
          };
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
          return { content: `Posted to ${answer.channel} (message ${answer.ts}).` };
        }),
    }),
  ];
}
