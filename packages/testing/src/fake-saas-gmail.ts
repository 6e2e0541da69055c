import { sendJson } from './fake-http.js';
import { errorBody, page, type FakeApiRequest } from './fake-saas-data.js';

/** Gmail's API: message search (page tokens), a message in `full` or `metadata` form, drafts and sending (raw MIME). */
export function gmailApi({ req, res, path, route, q, parsed, data }: FakeApiRequest): boolean {
  if (route === 'GET /gmail/v1/users/me/messages') {
    const text = (q.get('q') ?? '').toLowerCase();
    const found = data.gmail.filter(
      (m) => !m.draft && `${m.subject} ${m.text} ${m.from}`.toLowerCase().includes(text),
    );
    const { items, next } = page(
      found,
      Math.min(500, Number(q.get('maxResults') ?? 100)),
      q.get('pageToken'),
    );
    return sendJson(res, 200, {
      ...(items.length ? { messages: items.map((m) => ({ id: m.id, threadId: m.id })) } : {}),
      ...(next ? { nextPageToken: next } : {}),
      resultSizeEstimate: found.length,
    });
  }
  const m = /^\/gmail\/v1\/users\/me\/messages\/([\w-]+)$/.exec(path);
  if (m && req.method === 'GET') {
    const msg = data.gmail.find((x) => x.id === m[1]);
    if (!msg) return sendJson(res, 404, errorBody('gmail', 404, 'Requested entity was not found.'));
    const headers = [
      { name: 'From', value: msg.from },
      { name: 'To', value: msg.to },
      { name: 'Subject', value: msg.subject },
      { name: 'Date', value: 'Mon, 23 Nov 2026 10:00:00 +0000' },
    ];
    return sendJson(res, 200, {
      id: msg.id,
      threadId: msg.id,
      snippet: msg.text.slice(0, 100),
      payload: {
        mimeType: 'multipart/alternative',
        headers:
          q.get('format') === 'metadata' ? headers.filter((h) => h.name === 'Subject') : headers,
        parts: [
          {
            mimeType: 'text/plain',
            body: { data: Buffer.from(msg.text).toString('base64url') },
          },
          {
            mimeType: 'text/html',
            body: { data: Buffer.from(`<p>${msg.text}</p>`).toString('base64url') },
          },
        ],
      },
    });
  }
  if (
    route === 'POST /gmail/v1/users/me/drafts' ||
    route === 'POST /gmail/v1/users/me/messages/send'
  ) {
    const raw = Buffer.from(
      String(route.endsWith('send') ? parsed.raw : parsed.message?.raw),
      'base64url',
    ).toString('utf8');
    const [head, ...text] = raw.split('\r\n\r\n');
    const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(head ?? '')?.[1] ?? '';
    const subjectMatch = /=\?UTF-8\?B\?(.*)\?=/.exec(field('Subject'));
    const id = `msg-${data.gmail.length + 1}`;
    const draft = !route.endsWith('send');
    data.gmail.push({
      id,
      from: 'me@example.com',
      to: field('To'),
      subject: subjectMatch ? Buffer.from(subjectMatch[1]!, 'base64').toString() : field('Subject'),
      text: text.join('\r\n\r\n'),
      draft,
      sent: !draft,
    });
    return sendJson(
      res,
      200,
      draft ? { id: `draft-${id}`, message: { id } } : { id, threadId: id, labelIds: ['SENT'] },
    );
  }
  return false;
}
