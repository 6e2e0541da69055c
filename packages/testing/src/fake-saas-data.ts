import type { IncomingMessage, ServerResponse } from 'node:http';

/** The five providers the fake serves. */
export type FakeSaasProvider = 'github' | 'gmail' | 'google_drive' | 'slack' | 'notion';

export interface FakeSaasData {
  issues: Array<{
    repo: string;
    number: number;
    title: string;
    body: string;
    state: string;
    comments: string[];
  }>;
  gmail: Array<{
    id: string;
    from: string;
    to: string;
    subject: string;
    text: string;
    sent?: boolean;
    draft?: boolean;
  }>;
  files: Array<{ id: string; name: string; mimeType: string; content: string }>;
  repos: Array<{ full_name: string; private: boolean; description: string }>;
  channels: Array<{ id: string; name: string; is_private: boolean }>;
  slack: Array<{ channel: string; user: string; text: string; ts: string }>;
  pages: Array<{ id: string; title: string; parent?: string; blocks: string[] }>;
}

/** Request bodies as the fakes read them: loosely typed JSON, checked by use. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseJson = Record<string, any>;

/** An authenticated API request, as each provider's routes see it. */
export interface FakeApiRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** The path below the provider's prefix. */
  readonly path: string;
  /** `METHOD path`. */
  readonly route: string;
  readonly q: URLSearchParams;
  /** The JSON body (`{}` when there is none). */
  readonly parsed: LooseJson;
  /** The raw body. */
  readonly body: string;
  readonly data: FakeSaasData;
}

/** Google's canonical error `status` for an HTTP status (cloud.google.com/apis/design/errors). */
const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
};

/** Notion's error `code` for an HTTP status (developers.notion.com/reference/status-codes). */
const NOTION_CODE: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'restricted_resource',
  404: 'object_not_found',
  409: 'conflict_error',
  429: 'rate_limited',
  500: 'internal_server_error',
  502: 'internal_server_error',
  503: 'service_unavailable',
};

/** A page of `items` from an opaque cursor (the index of the first item), and the next one. */
export function page<T>(items: T[], size: number, cursor: string | null | undefined) {
  const start = cursor ? Number(Buffer.from(cursor, 'base64url').toString()) || 0 : 0;
  const end = start + size;
  return {
    items: items.slice(start, end),
    next: end < items.length ? Buffer.from(String(end)).toString('base64url') : undefined,
  };
}

/** Each provider's error body, as its real API shapes it. */
export function errorBody(provider: FakeSaasProvider, status: number, message: string): unknown {
  switch (provider) {
    case 'github':
      return { message, documentation_url: 'https://docs.github.com/rest' };
    case 'gmail':
    case 'google_drive':
      return { error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } };
    case 'notion':
      return { object: 'error', status, code: NOTION_CODE[status] ?? 'invalid_request', message };
    case 'slack':
      return { ok: false, error: status === 429 ? 'ratelimited' : message };
  }
}

/** What the fakes hold when they start. */
export function seedData(): FakeSaasData {
  return {
    issues: [
      {
        repo: 'acme/widgets',
        number: 7,
        title: 'Crash on empty input',
        body: 'Steps: send an empty form.',
        state: 'open',
        comments: [],
      },
    ],
    gmail: [
      {
        id: 'msg-1',
        from: 'ana@example.com',
        to: 'me@example.com',
        subject: 'Quarterly report',
        text: 'The report is attached.',
      },
      {
        id: 'msg-2',
        from: 'bo@example.com',
        to: 'me@example.com',
        subject: 'Re: Quarterly report',
        text: 'Thanks for the report.',
      },
    ],
    files: [
      {
        id: 'doc-1',
        name: 'Roadmap',
        mimeType: 'application/vnd.google-apps.document',
        content: 'Q1: ship search.',
      },
      {
        id: 'doc-2',
        name: 'Roadmap 2027',
        mimeType: 'application/vnd.google-apps.document',
        content: 'Later.',
      },
    ],
    repos: [
      { full_name: 'acme/widgets', private: false, description: 'Widgets' },
      { full_name: 'acme/gadgets', private: true, description: 'Gadgets' },
      { full_name: 'ana/dotfiles', private: false, description: '' },
    ],
    channels: [
      { id: 'C01', name: 'general', is_private: false },
      { id: 'C02', name: 'random', is_private: false },
      { id: 'C03', name: 'deploys', is_private: true },
    ],
    slack: [{ channel: 'C01', user: 'U1', text: 'deploy at 5pm', ts: '1700000000.000100' }],
    pages: [
      { id: 'page-1', title: 'Team notes', blocks: ['First note.'] },
      {
        id: 'page-2',
        title: 'Long list',
        blocks: Array.from({ length: 150 }, (_, i) => `Item ${i + 1}.`),
      },
    ],
  };
}
