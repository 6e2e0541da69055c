import { sendJson } from './fake-http.js';
import { errorBody, page, type FakeApiRequest, type FakeSaasData } from './fake-saas-data.js';

/** Google Drive's API: file search, metadata, export or media download, multipart upload. */
export function driveApi({ req, res, path, route, q, body, data }: FakeApiRequest): boolean {
  const file = (f: FakeSaasData['files'][number]) => ({
    id: f.id,
    name: f.name,
    mimeType: f.mimeType,
    webViewLink: `https://docs.google.com/document/d/${f.id}`,
    modifiedTime: '2026-11-20T10:00:00Z',
  });
  if (route === 'GET /drive/v3/files') {
    const term = /contains '((?:[^'\\]|\\.)*)'/.exec(q.get('q') ?? '')?.[1]?.toLowerCase() ?? '';
    const { items, next } = page(
      data.files.filter((f) => `${f.name} ${f.content}`.toLowerCase().includes(term)),
      Math.min(1000, Number(q.get('pageSize') ?? 100)),
      q.get('pageToken'),
    );
    return sendJson(res, 200, {
      kind: 'drive#fileList',
      ...(next ? { nextPageToken: next } : {}),
      files: items.map(file),
    });
  }
  const m = /^\/drive\/v3\/files\/([\w-]+)(\/export)?$/.exec(path);
  if (m && req.method === 'GET') {
    const f = data.files.find((x) => x.id === m[1]);
    if (!f) return sendJson(res, 404, errorBody('google_drive', 404, `File not found: ${m[1]}.`));
    if (m[2] || q.get('alt') === 'media') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(f.content);
      return true;
    }
    return sendJson(res, 200, file(f));
  }
  if (route === 'POST /upload/drive/v3/files' && q.get('uploadType') === 'multipart') {
    const boundary = /boundary=([^;]+)/.exec(req.headers['content-type'] ?? '')?.[1];
    const parts = body
      .split(`--${boundary}`)
      .slice(1, -1)
      .map((p) => p.split('\r\n\r\n').slice(1).join('\r\n\r\n').replace(/\r\n$/, ''));
    const meta = JSON.parse(parts[0]!) as { name: string; mimeType: string };
    const created = {
      id: `file-${data.files.length + 1}`,
      name: meta.name,
      mimeType: meta.mimeType,
      content: parts[1] ?? '',
    };
    data.files.push(created);
    return sendJson(res, 200, file(created));
  }
  return false;
}
