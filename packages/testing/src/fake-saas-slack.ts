import { sendJson } from './fake-http.js';
import { page, type FakeApiRequest } from './fake-saas-data.js';

/** Slack's Web API: channels (cursor pages), history, auth.test, permalinks, search, posting. */
export function slackApi({ res, route, q, parsed, data }: FakeApiRequest): boolean {
  if (route === 'GET /api/conversations.list') {
    // Slack may answer fewer than `limit` channels with a cursor for more (it filters after
    // paging); here at most two a page.
    const { items, next } = page(
      data.channels,
      Math.min(2, Number(q.get('limit') ?? 100)),
      q.get('cursor'),
    );
    return sendJson(res, 200, {
      ok: true,
      channels: items,
      response_metadata: { next_cursor: next ?? '' },
    });
  }
  if (route === 'GET /api/conversations.history') {
    const channel = q.get('channel') ?? '';
    if (!data.channels.some((c) => c.id === channel))
      return sendJson(res, 200, { ok: false, error: 'channel_not_found' });
    const { items, next } = page(
      data.slack.filter((s) => s.channel === channel).reverse(),
      Math.min(999, Number(q.get('limit') ?? 100)),
      q.get('cursor'),
    );
    return sendJson(res, 200, {
      ok: true,
      messages: items,
      has_more: next !== undefined,
      ...(next ? { response_metadata: { next_cursor: next } } : {}),
    });
  }
  if (route === 'GET /api/auth.test') {
    return sendJson(res, 200, {
      ok: true,
      url: 'https://acme.slack.com/',
      team: 'Acme',
      user: 'bot',
      team_id: 'T01',
      user_id: 'UBOT',
    });
  }
  if (route === 'GET /api/chat.getPermalink') {
    const channel = q.get('channel') ?? '';
    const ts = q.get('message_ts') ?? '';
    if (!data.slack.some((s) => s.channel === channel && s.ts === ts))
      return sendJson(res, 200, { ok: false, error: 'message_not_found' });
    return sendJson(res, 200, {
      ok: true,
      channel,
      permalink: `https://acme.slack.com/archives/${channel}/p${ts.replace('.', '')}`,
    });
  }
  if (route === 'GET /api/search.messages') {
    const term = (q.get('query') ?? '').toLowerCase();
    const all = data.slack.filter((s) => s.text.toLowerCase().includes(term));
    const count = Math.min(100, Number(q.get('count') ?? 20));
    const number = Math.max(1, Number(q.get('page') ?? 1));
    const matches = all.slice((number - 1) * count, number * count);
    const pages = Math.max(1, Math.ceil(all.length / count));
    return sendJson(res, 200, {
      ok: true,
      query: q.get('query'),
      messages: {
        total: all.length,
        paging: { count, total: all.length, page: number, pages },
        pagination: {
          total_count: all.length,
          page: number,
          per_page: count,
          page_count: pages,
          first: (number - 1) * count + 1,
          last: (number - 1) * count + matches.length,
        },
        matches: matches.map((s) => ({
          ...s,
          username: 'ana',
          channel: { id: s.channel, name: 'general' },
          permalink: `https://acme.slack.com/archives/${s.channel}/p${s.ts.replace('.', '')}`,
        })),
      },
    });
  }
  if (route === 'POST /api/chat.postMessage') {
    const ts = `${1_700_000_100 + data.slack.length}.000200`;
    data.slack.push({
      channel: String(parsed.channel),
      user: 'UBOT',
      text: String(parsed.text),
      ts,
    });
    return sendJson(res, 200, {
      ok: true,
      channel: parsed.channel,
      ts,
      message: { text: parsed.text },
    });
  }
  return false;
}
