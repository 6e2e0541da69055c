import { z } from 'zod';
import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { cut, SaasError, segment } from '../saas-http.js';
import type { ErrorText, SaasAccount } from '../account.js';

/** Notion's errors: `{ object: "error", status, code, message }`. */
export const notionErrorText: ErrorText = (body) =>
  typeof (body as { message?: unknown })?.message === 'string'
    ? (body as { message: string }).message
    : undefined;

/** Every Notion request names the API version the tools were written for. */
export const NOTION_HEADERS = { 'notion-version': '2022-06-28' };

type RichText = Array<{ plain_text?: string; text?: { content?: string } }>;
interface Block {
  id: string;
  type: string;
  [key: string]: unknown;
}

const plain = (rich: RichText | undefined) =>
  (rich ?? []).map((t) => t.plain_text ?? t.text?.content ?? '').join('');

/** A page's title: the property of type `title`, whatever its name. */
function titleOf(page: {
  properties?: Record<string, { type?: string; title?: RichText }>;
}): string {
  const property = Object.values(page.properties ?? {}).find((p) => p.type === 'title');
  return plain(property?.title) || '(untitled)';
}

function blockText(block: Block): string {
  const content = block[block.type] as { rich_text?: RichText; checked?: boolean } | undefined;
  const text = plain(content?.rich_text);
  switch (block.type) {
    case 'heading_1':
      return `# ${text}`;
    case 'heading_2':
      return `## ${text}`;
    case 'heading_3':
      return `### ${text}`;
    case 'bulleted_list_item':
      return `- ${text}`;
    case 'numbered_list_item':
      return `1. ${text}`;
    case 'to_do':
      return `[${content?.checked ? 'x' : ' '}] ${text}`;
    default:
      return text;
  }
}

/** Paragraph blocks from text, one per paragraph (Notion caps a text object at 2,000 chars). */
function paragraphs(text: string) {
  return text
    .split(/\n{2,}/)
    .filter((p) => p.trim())
    .slice(0, 100)
    .map((p) => ({
      object: 'block',
      type: 'paragraph',
      paragraph: { rich_text: [{ type: 'text', text: { content: p.slice(0, 2_000) } }] },
    }));
}

const PageId = z.string().min(1).max(64).describe('Page id (with or without dashes)');

/** A page's blocks are read this many pages of 100 at most (and until the text is long enough). */
const MAX_BLOCK_PAGES = 10;
const MAX_TEXT = 8_000;

const MORE = 'More results exist; narrow the query or raise the limit to see them.';

/** Notion: search, read a page, create a page, append paragraphs. */
export function notionTools(account: SaasAccount): AgentTool[] {
  return [
    defineTool({
      name: 'notion_search',
      description: 'Searches the Notion pages shared with the integration, by title.',
      schema: z.object({
        query: z.string().max(256).default(''),
        limit: z.number().int().min(1).max(50).default(10),
      }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const answer = (await call({
            method: 'POST',
            path: '/v1/search',
            json: {
              query: args.query,
              page_size: args.limit,
              filter: { property: 'object', value: 'page' },
            },
          })) as {
            results: Array<{
              id: string;
              url: string;
              properties?: Record<string, { type?: string; title?: RichText }>;
            }>;
            has_more?: boolean;
          };
          if (answer.results.length === 0) return { content: `No pages match "${args.query}".` };
          // One page of `limit`; `has_more` is reported, not followed.
          const lines = answer.results.map((p) => `${titleOf(p)} ${p.url} (id ${p.id})`);
          if (answer.has_more) lines.push(MORE);
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'notion_read_page',
      description: 'Reads a Notion page: its title and its text, block by block.',
      schema: z.object({ page_id: PageId }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const id = segment(args.page_id);
          const page = (await call({ path: `/v1/pages/${id}` })) as {
            url: string;
            properties?: Record<string, { type?: string; title?: RichText }>;
          };
          // The blocks follow `next_cursor`, up to MAX_BLOCK_PAGES pages or enough text.
          const lines: string[] = [];
          let length = 0;
          let cursor: string | undefined;
          for (let pages = 0; pages < MAX_BLOCK_PAGES; pages += 1) {
            const blocks = (await call({
              path: `/v1/blocks/${id}/children`,
              query: { page_size: 100, start_cursor: cursor },
            })) as { results: Block[]; has_more?: boolean; next_cursor?: string | null };
            for (const text of blocks.results.map(blockText).filter(Boolean)) {
              lines.push(text);
              length += text.length + 1;
            }
            cursor = blocks.has_more && blocks.next_cursor ? blocks.next_cursor : undefined;
            if (!cursor || length > MAX_TEXT) break;
          }
          if (cursor && length <= MAX_TEXT) lines.push('[the page goes on; not read further]');
          const text = lines.join('\n');
          return {
            content: cut(`${titleOf(page)} ${page.url}\n\n${text || '(empty page)'}`, MAX_TEXT),
          };
        }),
    }),
    defineTool({
      name: 'notion_create_page',
      description: 'Creates a Notion page under a parent page, with a title and text.',
      schema: z.object({
        parent_page_id: PageId,
        title: z.string().min(1).max(200),
        text: z.string().max(50_000).default(''),
      }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const page = (await call({
            method: 'POST',
            path: '/v1/pages',
            json: {
              parent: { page_id: args.parent_page_id },
              properties: { title: { title: [{ type: 'text', text: { content: args.title } }] } },
              children: paragraphs(args.text),
            },
          })) as { id: string; url: string };
          return { content: `Created "${args.title}": ${page.url} (id ${page.id})` };
        }),
    }),
    defineTool({
      name: 'notion_append_text',
      description: 'Appends paragraphs of text at the end of a Notion page.',
      schema: z.object({ page_id: PageId, text: z.string().min(1).max(50_000) }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const blocks = paragraphs(args.text);
          const id = segment(args.page_id);
          await call({
            method: 'PATCH',
            path: `/v1/blocks/${id}/children`,
            json: { children: blocks },
          });
          // The append answers the new blocks, not the page: its URL takes one read. Should that
          // read fail, the append has happened all the same, so the id-only URL stands in.
          let url = `https://www.notion.so/${encodeURIComponent(args.page_id.replace(/-/g, ''))}`;
          try {
            url = ((await call({ path: `/v1/pages/${id}` })) as { url: string }).url;
          } catch (error) {
            if (!(error instanceof SaasError)) throw error;
          }
          return {
            content: `Appended ${blocks.length} paragraph(s) to page ${args.page_id}: ${url}`,
          };
        }),
    }),
  ];
}
