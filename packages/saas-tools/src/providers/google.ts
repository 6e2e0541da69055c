import { z } from 'zod';
import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { cut, segment } from '../saas-http.js';
import type { ErrorText, SaasAccount } from '../account.js';

/** Google APIs' errors: `{ error: { code, message, status } }`. */
export const googleErrorText: ErrorText = (body) => {
  const error = (body as { error?: unknown })?.error;
  if (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { message?: unknown }).message === 'string'
  ) {
    return (error as { message: string }).message;
  }
  return typeof error === 'string' ? error : undefined;
};

interface GmailPart {
  mimeType?: string;
  body?: { data?: string };
  parts?: GmailPart[];
}
interface GmailMessage {
  id: string;
  threadId?: string;
  snippet?: string;
  payload?: GmailPart & { headers?: Array<{ name: string; value: string }> };
}

const header = (m: GmailMessage, name: string) =>
  m.payload?.headers?.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value ?? '';

/** The first text/plain part, decoded (base64url). */
function plainText(part: GmailPart | undefined): string | undefined {
  if (!part) return undefined;
  if (part.mimeType === 'text/plain' && part.body?.data) {
    return Buffer.from(part.body.data, 'base64url').toString('utf8');
  }
  for (const child of part.parts ?? []) {
    const text = plainText(child);
    if (text !== undefined) return text;
  }
  return undefined;
}

/** An RFC 2822 message, base64url, as Gmail's `raw` takes it. Header values lose line breaks. */
function rawMessage(to: string, subject: string, body: string): string {
  const clean = (v: string) => v.replace(/[\r\n]+/g, ' ');
  const encodedSubject = `=?UTF-8?B?${Buffer.from(clean(subject)).toString('base64')}?=`;
  const message = [
    `To: ${clean(to)}`,
    `Subject: ${encodedSubject}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=UTF-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    body,
  ].join('\r\n');
  return Buffer.from(message, 'utf8').toString('base64url');
}

const Email = z.object({
  to: z.string().min(3).max(1_000).describe('Recipients, comma-separated'),
  subject: z.string().max(500),
  body: z.string().max(100_000),
});

const mailLink = (id: string) => `https://mail.google.com/mail/u/0/#all/${encodeURIComponent(id)}`;

const MORE = 'More results exist; narrow the query or raise the limit to see them.';

/** Gmail: search, read a message, create a draft, send. */
export function gmailTools(account: SaasAccount): AgentTool[] {
  return [
    defineTool({
      name: 'gmail_search',
      description: 'Searches the Gmail mailbox (Gmail search syntax, e.g. "from:ana is:unread").',
      schema: z.object({
        query: z.string().min(1).max(500),
        limit: z.number().int().min(1).max(20).default(10),
      }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const list = (await call({
            path: '/gmail/v1/users/me/messages',
            query: { q: args.query, maxResults: args.limit },
          })) as { messages?: Array<{ id: string }>; nextPageToken?: string };
          const ids = (list.messages ?? []).map((m) => m.id);
          if (ids.length === 0) return { content: `No messages match "${args.query}".` };
          const lines: string[] = [];
          for (const id of ids) {
            const m = (await call({
              path: `/gmail/v1/users/me/messages/${segment(id)}`,
              query: { format: 'metadata', metadataHeaders: 'Subject' },
            })) as GmailMessage;
            lines.push(
              `${id}: ${header(m, 'Subject') || '(no subject)'} — ${m.snippet ?? ''} ${mailLink(id)}`,
            );
          }
          // One page of `limit` (each message is one more request); a nextPageToken is reported.
          if (list.nextPageToken) lines.push(MORE);
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'gmail_read_message',
      description: 'Reads a Gmail message: sender, recipients, date, subject and text.',
      schema: z.object({ id: z.string().min(1).max(100) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const m = (await call({
            path: `/gmail/v1/users/me/messages/${segment(args.id)}`,
            query: { format: 'full' },
          })) as GmailMessage;
          const text = plainText(m.payload) ?? m.snippet ?? '';
          return {
            content: cut(
              `From: ${header(m, 'From')}\nTo: ${header(m, 'To')}\nDate: ${header(m, 'Date')}\nSubject: ${header(m, 'Subject')}\n${mailLink(m.id)}\n\n${text}`,
              8_000,
            ),
          };
        }),
    }),
    defineTool({
      name: 'gmail_create_draft',
      description: 'Creates a Gmail draft (not sent).',
      schema: Email,
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const draft = (await call({
            method: 'POST',
            path: '/gmail/v1/users/me/drafts',
            json: { message: { raw: rawMessage(args.to, args.subject, args.body) } },
          })) as { id: string; message?: { id: string } };
          return { content: `Draft ${draft.id} created: https://mail.google.com/mail/u/0/#drafts` };
        }),
    }),
    defineTool({
      name: 'gmail_send',
      description: 'Sends an email from the Gmail account.',
      schema: Email,
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const sent = (await call({
            method: 'POST',
            path: '/gmail/v1/users/me/messages/send',
            json: { raw: rawMessage(args.to, args.subject, args.body) },
          })) as { id: string };
          return { content: `Sent (message ${sent.id}) ${mailLink(sent.id)}` };
        }),
    }),
  ];
}

interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  webViewLink?: string;
  modifiedTime?: string;
}

const GOOGLE_EXPORTS: Record<string, string> = {
  'application/vnd.google-apps.document': 'text/plain',
  'application/vnd.google-apps.spreadsheet': 'text/csv',
  'application/vnd.google-apps.presentation': 'text/plain',
};

const FIELDS = 'id,name,mimeType,webViewLink,modifiedTime';

/** Google Drive: search files, read one (Google Docs exported as text), create a text file. */
export function driveTools(account: SaasAccount): AgentTool[] {
  return [
    defineTool({
      name: 'drive_search',
      description: 'Searches Google Drive files by name and content.',
      schema: z.object({
        query: z.string().min(1).max(200),
        limit: z.number().int().min(1).max(50).default(10),
      }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const quoted = args.query.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
          const found = (await call({
            path: '/drive/v3/files',
            query: {
              q: `(name contains '${quoted}' or fullText contains '${quoted}') and trashed = false`,
              pageSize: args.limit,
              fields: `nextPageToken,files(${FIELDS})`,
            },
          })) as { files: DriveFile[]; nextPageToken?: string };
          if (found.files.length === 0) return { content: `No files match "${args.query}".` };
          const lines = found.files.map(
            (f) => `${f.name} (${f.mimeType}, id ${f.id}) ${f.webViewLink ?? ''}`,
          );
          if (found.nextPageToken) lines.push(MORE);
          return { content: lines.join('\n') };
        }),
    }),
    defineTool({
      name: 'drive_read_file',
      description:
        'Reads a Google Drive file as text (Google Docs, Sheets and Slides are exported).',
      schema: z.object({ id: z.string().min(1).max(200) }),
      writes: false,
      run: (args, context) =>
        account.run(context, async (call) => {
          const file = (await call({
            path: `/drive/v3/files/${segment(args.id)}`,
            query: { fields: FIELDS },
          })) as DriveFile;
          const exportAs = GOOGLE_EXPORTS[file.mimeType];
          let text: string;
          if (exportAs) {
            text = (await call({
              path: `/drive/v3/files/${segment(args.id)}/export`,
              query: { mimeType: exportAs },
              text: true,
            })) as string;
          } else if (file.mimeType.startsWith('text/') || file.mimeType === 'application/json') {
            text = (await call({
              path: `/drive/v3/files/${segment(args.id)}`,
              query: { alt: 'media' },
              text: true,
            })) as string;
          } else {
            return {
              content: `${file.name} is ${file.mimeType}, which cannot be read as text. ${file.webViewLink ?? ''}`,
            };
          }
          return { content: cut(`${file.name} ${file.webViewLink ?? ''}\n\n${text}`, 16_000) };
        }),
    }),
    defineTool({
      name: 'drive_create_file',
      description: 'Creates a text file in Google Drive (optionally in a folder).',
      schema: z.object({
        name: z.string().min(1).max(200),
        content: z.string().max(1_000_000),
        folder_id: z.string().min(1).max(200).optional(),
      }),
      writes: true,
      run: (args, context) =>
        account.run(context, async (call) => {
          const boundary = `agent-backend-${Date.now().toString(36)}`;
          const metadata = {
            name: args.name,
            mimeType: 'text/plain',
            ...(args.folder_id ? { parents: [args.folder_id] } : {}),
          };
          const body = [
            `--${boundary}`,
            'Content-Type: application/json; charset=UTF-8',
            '',
            JSON.stringify(metadata),
            `--${boundary}`,
            'Content-Type: text/plain; charset=UTF-8',
            '',
            args.content,
            `--${boundary}--`,
            '',
          ].join('\r\n');
          const file = (await call({
            method: 'POST',
            path: '/upload/drive/v3/files',
            query: { uploadType: 'multipart', fields: FIELDS },
            raw: { body, contentType: `multipart/related; boundary=${boundary}` },
          })) as DriveFile;
          return { content: `Created ${file.name} (id ${file.id}) ${file.webViewLink ?? ''}` };
        }),
    }),
  ];
}
