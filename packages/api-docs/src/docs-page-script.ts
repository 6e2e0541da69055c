import type { PageDocument, PageElement, PageNode } from './docs-page-dom.js';

/**
 * The script of the `/docs` page, run in the browser. It is served as this function's source
 * (`String(docsPageScript)`), so it must stay self-contained: no imports, no outer variables.
 * It fetches `openapi.json` and `asyncapi.json` next to the page and renders them: HTTP
 * operations grouped by tag, WebSocket channels with their frames, and every schema, each
 * expandable. Text is set with `textContent` only.
 */
export function docsPageScript(): void {
  type Json = Record<string, unknown>;
  const document = (globalThis as unknown as { document: PageDocument }).document;
  const root = document.getElementById('app')!;

  const el = (
    tag: string,
    attrs: Record<string, string> = {},
    ...children: Array<PageNode | string | null | undefined>
  ): PageElement => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  };

  /** Inline Markdown: `code` and **bold**. */
  const inline = (text: string): PageNode => {
    const fragment = document.createDocumentFragment();
    for (const part of text.split(/(`[^`]+`|\*\*[^*]+\*\*)/)) {
      if (!part) continue;
      if (part.startsWith('`') && part.endsWith('`'))
        fragment.append(el('code', {}, part.slice(1, -1)));
      else if (part.startsWith('**')) fragment.append(el('strong', {}, part.slice(2, -2)));
      else fragment.append(document.createTextNode(part));
    }
    return fragment;
  };

  /** Block Markdown: paragraphs and pipe tables. */
  const markdown = (text: unknown): PageElement => {
    const box = el('div', { class: 'md' });
    if (typeof text !== 'string') return box;
    for (const block of text.split(/\n\s*\n/)) {
      const lines = block.trim().split('\n');
      if (lines.every((line) => line.trim().startsWith('|'))) {
        const cells = (line: string) =>
          line
            .trim()
            .replace(/^\||\|$/g, '')
            .split('|')
            .map((c) => c.trim());
        const table = el('table');
        const head = el('tr');
        for (const cell of cells(lines[0]!)) head.append(el('th', {}, inline(cell)));
        table.append(head);
        for (const line of lines.slice(2)) {
          const row = el('tr');
          for (const cell of cells(line)) row.append(el('td', {}, inline(cell)));
          table.append(row);
        }
        box.append(table);
      } else box.append(el('p', {}, inline(lines.join(' '))));
    }
    return box;
  };

  const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);

  /** A short description of a schema's type, for one line. */
  const typeLabel = (schema: Json): string => {
    if (typeof schema.$ref === 'string') return refName(schema.$ref);
    if ('const' in schema) return JSON.stringify(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      const options = schema[key];
      if (Array.isArray(options)) {
        return options.map((o) => typeLabel(o as Json)).join(key === 'allOf' ? ' & ' : ' | ');
      }
    }
    if (schema.type === 'array' && schema.items && typeof schema.items === 'object') {
      return `${typeLabel(schema.items as Json)}[]`;
    }
    const type = Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type;
    if (type === 'object' && !schema.properties && schema.additionalProperties) {
      return `map of ${typeLabel(schema.additionalProperties as Json)}`;
    }
    return typeof type === 'string' ? type : 'any';
  };

  const CONSTRAINTS = [
    'format',
    'pattern',
    'minLength',
    'maxLength',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'minItems',
    'maxItems',
    'default',
  ];

  /** A schema as a tree: objects list their properties, references expand when opened. */
  const schemaView = (schema: Json, components: Json): PageElement => {
    const box = el('div', { class: 'schema' });
    const notes = CONSTRAINTS.filter((key) => key in schema).map(
      (key) => `${key}: ${JSON.stringify(schema[key])}`,
    );
    if (typeof schema.$ref === 'string') {
      if (notes.length > 0) box.append(el('div', { class: 'notes' }, notes.join(', ')));
      const name = refName(schema.$ref);
      const details = el('details', { class: 'ref' }, el('summary', {}, el('code', {}, name)));
      details.addEventListener('toggle', () => {
        const target = components[name];
        if (details.open && details.childElementCount === 1 && target) {
          details.append(schemaView(target as Json, components));
        }
      });
      box.append(details);
      return box;
    }
    if (typeof schema.description === 'string') box.append(markdown(schema.description));
    if (notes.length > 0) box.append(el('div', { class: 'notes' }, notes.join(', ')));
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      const options = schema[key];
      if (!Array.isArray(options)) continue;
      const list = el('ul', { class: 'options' });
      for (const option of options) {
        const item = el('li', {}, el('span', { class: 'type' }, typeLabel(option as Json)));
        item.append(schemaView(option as Json, components));
        list.append(item);
      }
      box.append(el('div', { class: 'notes' }, key === 'allOf' ? 'all of:' : 'one of:'), list);
    }
    if (schema.type === 'array' && schema.items && typeof schema.items === 'object') {
      box.append(
        el('div', { class: 'notes' }, 'items:'),
        schemaView(schema.items as Json, components),
      );
    }
    const properties = schema.properties as Record<string, Json> | undefined;
    if (properties) {
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const table = el('table', { class: 'props' });
      for (const [name, property] of Object.entries(properties)) {
        const nested =
          property.$ref ||
          property.properties ||
          property.anyOf ||
          property.oneOf ||
          property.items;
        const cell = el('td');
        if (nested) {
          const details = el(
            'details',
            {},
            el('summary', {}, el('span', { class: 'type' }, typeLabel(property))),
          );
          details.addEventListener('toggle', () => {
            if (details.open && details.childElementCount === 1) {
              details.append(schemaView(property, components));
            }
          });
          cell.append(details);
        } else {
          cell.append(
            el('span', { class: 'type' }, typeLabel(property)),
            schemaView(property, components),
          );
        }
        table.append(
          el(
            'tr',
            {},
            el(
              'td',
              {},
              el('code', {}, name),
              required.has(name) ? el('span', { class: 'req' }, ' required') : null,
            ),
            cell,
          ),
        );
      }
      box.append(table);
    }
    return box;
  };

  const section = (title: string, id: string) => {
    const box = el('section', { id }, el('h2', {}, title));
    root.append(box);
    return box;
  };

  const renderOpenApi = (doc: Json) => {
    const info = doc.info as Json;
    const components = ((doc.components as Json | undefined)?.schemas as Json | undefined) ?? {};
    const box = section(`HTTP API ${String(info.version)}`, 'http');
    box.append(markdown(info.description));
    const byTag = new Map<string, PageElement>();
    for (const tag of (doc.tags as Json[] | undefined) ?? []) {
      const group = el(
        'div',
        { class: 'tag' },
        el('h3', {}, String(tag.name)),
        markdown(tag.description),
      );
      byTag.set(String(tag.name), group);
      box.append(group);
    }
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, value] of Object.entries(item)) {
        const op = value as Json;
        const security = (op.security as Json[] | undefined) ?? [];
        const auth =
          security.map((s) => Object.keys(s).join(' + ') || 'none').join(' or ') || 'none';
        const details = el(
          'details',
          { class: 'op', id: String(op.operationId) },
          el(
            'summary',
            {},
            el('span', { class: `method ${method}` }, method.toUpperCase()),
            el('code', {}, path),
            el('span', { class: 'summary' }, String(op.summary ?? '')),
          ),
        );
        details.append(
          markdown(op.description),
          el('p', {}, 'Authentication: ', el('code', {}, auth)),
        );
        const parameters = (op.parameters as Json[] | undefined) ?? [];
        if (parameters.length > 0) {
          const table = el(
            'table',
            { class: 'props' },
            el('tr', {}, el('th', {}, 'parameter'), el('th', {}, 'in'), el('th', {}, 'schema')),
          );
          for (const p of parameters) {
            table.append(
              el(
                'tr',
                {},
                el(
                  'td',
                  {},
                  el('code', {}, String(p.name)),
                  p.required ? el('span', { class: 'req' }, ' required') : null,
                  markdown(p.description),
                ),
                el('td', {}, String(p.in)),
                el(
                  'td',
                  {},
                  el('span', { class: 'type' }, typeLabel(p.schema as Json)),
                  schemaView(p.schema as Json, components),
                ),
              ),
            );
          }
          details.append(el('h4', {}, 'Parameters'), table);
        }
        const body = op.requestBody as Json | undefined;
        if (body) {
          details.append(el('h4', {}, 'Request body'));
          for (const [type, media] of Object.entries(body.content as Record<string, Json>)) {
            details.append(
              el('div', { class: 'notes' }, type),
              schemaView(media.schema as Json, components),
            );
          }
        }
        details.append(el('h4', {}, 'Responses'));
        for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
          const answer = el(
            'div',
            { class: 'response' },
            el('strong', {}, status),
            markdown(response.description),
          );
          for (const [type, media] of Object.entries(
            (response.content as Record<string, Json> | undefined) ?? {},
          )) {
            answer.append(
              el('div', { class: 'notes' }, type),
              schemaView(media.schema as Json, components),
            );
          }
          details.append(answer);
        }
        const tag = ((op.tags as string[] | undefined) ?? [])[0] ?? '';
        (byTag.get(tag) ?? box).append(details);
      }
    }
    renderSchemas('HTTP schemas', 'http-schemas', components);
  };

  const renderAsyncApi = (doc: Json) => {
    const info = doc.info as Json;
    const components = ((doc.components as Json | undefined)?.schemas as Json | undefined) ?? {};
    const box = section(`WebSocket protocol ${String(info.version)}`, 'ws');
    box.append(markdown(info.description));
    const operations = Object.values(doc.operations as Record<string, Json>);
    for (const [key, value] of Object.entries(doc.channels as Record<string, Json>)) {
      const channel = value as Json;
      const group = el(
        'div',
        { class: 'tag' },
        el('h3', {}, `${String(channel.title)}: `, el('code', {}, String(channel.address))),
        markdown(channel.description),
      );
      const query = ((channel.bindings as Json | undefined)?.ws as Json | undefined)?.query as
        Json | undefined;
      if (query) group.append(el('h4', {}, 'Query'), schemaView(query, components));
      const messages = channel.messages as Record<string, Json>;
      for (const op of operations) {
        if ((op.channel as Json).$ref !== `#/channels/${key}`) continue;
        group.append(
          el(
            'h4',
            {},
            `${String(op.title)} (${op.action === 'send' ? 'server to client' : 'client to server'})`,
          ),
        );
        if (op.description) group.append(markdown(op.description));
        const refs = [
          ...(op.messages as Json[]),
          ...(((op.reply as Json | undefined)?.messages as Json[] | undefined) ?? []),
        ];
        for (const ref of refs) {
          const message = messages[refName(String(ref.$ref))];
          if (!message) continue;
          const details = el(
            'details',
            { class: 'op' },
            el(
              'summary',
              {},
              el('code', {}, String(message.name)),
              el('span', { class: 'summary' }, String(message.title ?? '')),
            ),
          );
          details.addEventListener('toggle', () => {
            if (details.open && details.childElementCount === 1)
              details.append(schemaView(message.payload as Json, components));
          });
          group.append(details);
        }
      }
      box.append(group);
    }
    renderSchemas('WebSocket schemas', 'ws-schemas', components);
  };

  const renderSchemas = (title: string, id: string, components: Json) => {
    const box = section(title, id);
    for (const name of Object.keys(components).sort()) {
      box.append(schemaView({ $ref: `#/components/schemas/${name}` }, components));
    }
  };

  const load = async (url: string) => {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return (await response.json()) as Json;
  };
  Promise.all([load('openapi.json'), load('asyncapi.json')]).then(
    ([openapi, asyncapi]) => {
      root.replaceChildren();
      renderOpenApi(openapi);
      renderAsyncApi(asyncapi);
      document.body.dataset.ready = 'true';
    },
    (error: unknown) => {
      root.replaceChildren(
        el('p', { class: 'error' }, `Could not load the documents: ${String(error)}`),
      );
    },
  );
}
