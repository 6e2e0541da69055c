import { sendJson } from './fake-http.js';
import { errorBody, page, type FakeApiRequest, type FakeSaasData } from './fake-saas-data.js';

/** Notion's API (version 2022-06-28): search, pages, block children (read and append), page creation. */
export function notionApi({ req, res, path, route, q, parsed, data }: FakeApiRequest): boolean {
  if (req.headers['notion-version'] !== '2022-06-28')
    return sendJson(res, 400, errorBody('notion', 400, 'Notion-Version header missing'));
  const notionPage = (p: FakeSaasData['pages'][number]) => ({
    object: 'page',
    id: p.id,
    url: `https://www.notion.so/${p.id}`,
    properties: { Name: { type: 'title', title: [{ plain_text: p.title }] } },
  });
  if (route === 'POST /v1/search') {
    const term = String(parsed.query ?? '').toLowerCase();
    const { items, next } = page(
      data.pages.filter((p) => p.title.toLowerCase().includes(term)),
      Math.min(100, Number(parsed.page_size ?? 100)),
      parsed.start_cursor as string | undefined,
    );
    return sendJson(res, 200, {
      object: 'list',
      results: items.map(notionPage),
      next_cursor: next ?? null,
      has_more: next !== undefined,
      type: 'page_or_database',
    });
  }
  let m = /^\/v1\/pages\/([\w-]+)$/.exec(path);
  if (m && req.method === 'GET') {
    const p = data.pages.find((x) => x.id === m![1]);
    return p
      ? sendJson(res, 200, notionPage(p))
      : sendJson(res, 404, errorBody('notion', 404, `Could not find page with ID: ${m[1]}.`));
  }
  m = /^\/v1\/blocks\/([\w-]+)\/children$/.exec(path);
  if (m) {
    const p = data.pages.find((x) => x.id === m![1]);
    if (!p)
      return sendJson(res, 404, errorBody('notion', 404, `Could not find block with ID: ${m[1]}.`));
    const block = (text: string, i: number) => ({
      object: 'block',
      id: `${p.id}-b${i}`,
      type: 'paragraph',
      paragraph: { rich_text: [{ plain_text: text }] },
    });
    if (req.method === 'PATCH') {
      const first = p.blocks.length;
      for (const child of parsed.children as Array<{
        paragraph: { rich_text: Array<{ text: { content: string } }> };
      }>) {
        p.blocks.push(child.paragraph.rich_text.map((t) => t.text.content).join(''));
      }
      // The append answers the appended blocks (a list), not the page.
      return sendJson(res, 200, {
        object: 'list',
        results: p.blocks.slice(first).map((text, i) => block(text, first + i)),
        next_cursor: null,
        has_more: false,
        type: 'block',
        block: {},
      });
    }
    const { items, next } = page(
      p.blocks.map(block),
      Math.min(100, Number(q.get('page_size') ?? 100)),
      q.get('start_cursor'),
    );
    return sendJson(res, 200, {
      object: 'list',
      results: items,
      next_cursor: next ?? null,
      has_more: next !== undefined,
      type: 'block',
      block: {},
    });
  }
  if (route === 'POST /v1/pages') {
    const created = {
      id: `page-${data.pages.length + 1}`,
      title: String(parsed.properties?.title?.title?.[0]?.text?.content ?? ''),
      parent: String(parsed.parent?.page_id),
      blocks: (
        (parsed.children ?? []) as Array<{
          paragraph: { rich_text: Array<{ text: { content: string } }> };
        }>
      ).map((b) => b.paragraph.rich_text[0]!.text.content),
    };
    data.pages.push(created);
    return sendJson(res, 200, notionPage(created));
  }
  return false;
}
