/**
 * The knowledge panel: bases, their documents (upload a text file or typed text; the status
 * follows ingestion), search, and the chunk preview with each chunk's start drawn in the text.
 */
import type { ChunkPreviewItem, KnowledgeBase } from '@agent-backend/client';
import type { Panel, SignedIn } from './panel.js';
import { button, byId, el, guarded, showStatus } from './dom.js';

/** While a document is `pending`, its base's list is asked again this often (a few times). */
const INGEST_POLL_MS = 1000;
const INGEST_POLLS = 20;

export function createKnowledgePanel(): Panel {
  let session: SignedIn | undefined;
  let bases: KnowledgeBase[] = [];
  let poll: ReturnType<typeof setTimeout> | undefined;
  const select = byId<HTMLSelectElement>('kb-select');

  async function loadBases(selectId?: string) {
    if (!session) return;
    bases = await session.client.knowledgeBases.list();
    const keep = selectId ?? select.value;
    select.replaceChildren(...bases.map((base) => el('option', { value: base.id }, base.name)));
    if (bases.some((base) => base.id === keep)) select.value = keep;
    await loadDocuments();
  }

  async function loadDocuments(pollsLeft = 0) {
    if (poll) clearTimeout(poll);
    poll = undefined;
    const list = byId('kb-documents');
    if (!session || !select.value) return list.replaceChildren();
    const baseId = select.value;
    const documents = await session.client.knowledgeBases.documents(baseId);
    list.replaceChildren(
      ...documents.map((doc) =>
        el(
          'li',
          { class: 'card', 'data-status': doc.status },
          el('h3', {}, doc.name),
          el(
            'p',
            {},
            `${doc.status}${doc.status === 'ready' ? `, ${doc.chunk_count} chunk${doc.chunk_count === 1 ? '' : 's'}` : ''}${doc.error ? `: ${doc.error}` : ''} `,
            button('Delete', async () => {
              await session?.client.knowledgeBases.deleteDocument(baseId, doc.id);
              await loadDocuments();
            }),
          ),
        ),
      ),
    );
    if (pollsLeft > 0 && documents.some((doc) => doc.status === 'pending')) {
      poll = setTimeout(() => void guarded(() => loadDocuments(pollsLeft - 1)), INGEST_POLL_MS);
    }
  }
  select.addEventListener('change', () => void guarded(() => loadDocuments()));

  byId<HTMLFormElement>('kb-create-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const name = byId<HTMLInputElement>('kb-name').value.trim();
      if (!session || !name) return;
      const base = await session.client.knowledgeBases.create({ name });
      byId<HTMLInputElement>('kb-name').value = '';
      await loadBases(base.id);
    });
  });

  byId<HTMLFormElement>('kb-doc-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      if (!session) return;
      if (!select.value) throw new Error('Create a knowledge base first.');
      const file = byId<HTMLInputElement>('kb-doc-file').files?.[0];
      const content = file ? await file.text() : byId<HTMLTextAreaElement>('kb-doc-content').value;
      const name = byId<HTMLInputElement>('kb-doc-name').value.trim() || file?.name || 'untitled';
      const type = /\.html?$/i.test(name) ? 'html' : /\.md$/i.test(name) ? 'markdown' : 'text';
      await session.client.knowledgeBases.addDocument(select.value, { name, content, type });
      byId<HTMLFormElement>('kb-doc-form').reset();
      showStatus(`${name} uploaded; the worker is chunking it.`);
      await loadDocuments(INGEST_POLLS);
    });
  });

  byId<HTMLFormElement>('kb-search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const query = byId<HTMLInputElement>('kb-query').value.trim();
      if (!session || !query) return;
      const ids = select.value ? [select.value] : bases.map((base) => base.id);
      if (ids.length === 0) throw new Error('Create a knowledge base first.');
      const hits = await session.client.knowledgeBases.search(query, ids, 10);
      byId('kb-hits').replaceChildren(
        ...(hits.length === 0
          ? [el('li', { class: 'hint' }, 'Nothing found.')]
          : hits.map((hit) =>
              el(
                'li',
                { class: 'card' },
                el('h3', {}, `${hit.document_name} #${hit.chunk_index} (${hit.score.toFixed(3)})`),
                el('pre', {}, hit.content),
              ),
            )),
      );
    });
  });

  byId<HTMLFormElement>('preview-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      if (!session) return;
      const content = byId<HTMLTextAreaElement>('preview-text').value;
      const chunks = await session.client.knowledgeBases.previewChunks({
        content,
        chunk_size: Number(byId<HTMLInputElement>('preview-size').value),
        chunk_overlap: Number(byId<HTMLInputElement>('preview-overlap').value),
      });
      byId('preview-output').replaceChildren(
        el('p', {}, `${chunks.length} chunk${chunks.length === 1 ? '' : 's'}`),
        drawBoundaries(content, chunks),
      );
    });
  });

  return {
    start(signedIn) {
      session = signedIn;
    },
    stop() {
      session = undefined;
      if (poll) clearTimeout(poll);
      select.replaceChildren();
      byId('kb-documents').replaceChildren();
      byId('kb-hits').replaceChildren();
    },
    shown(visible) {
      if (visible) void guarded(() => loadBases());
    },
  };
}

/**
 * The source text with a numbered mark where each chunk starts and the stretch up to the next
 * start shaded in alternating colours. Chunks overlap: a stretch belongs to the chunk that
 * starts it. A chunk the splitter rewrote (trimmed) is found by its first characters.
 */
export function drawBoundaries(text: string, chunks: readonly ChunkPreviewItem[]): HTMLElement {
  const starts: number[] = [];
  let from = 0;
  for (const chunk of chunks) {
    const probe = chunk.content.slice(0, 40);
    let at = text.indexOf(probe, from);
    if (at < 0) at = text.indexOf(probe);
    starts.push(at < 0 ? from : at);
    from = Math.max(from, (at < 0 ? from : at) + 1);
  }
  const figure = el('div', { class: 'chunked', 'aria-label': 'Text with chunk boundaries' });
  if (starts.length === 0) {
    figure.append(text);
    return figure;
  }
  if (starts[0]! > 0) figure.append(text.slice(0, starts[0]));
  starts.forEach((start, index) => {
    const end = index + 1 < starts.length ? Math.max(start, starts[index + 1]!) : text.length;
    figure.append(
      el(
        'mark',
        { class: 'boundary', 'data-chunk': String(index), title: `chunk ${index + 1} starts` },
        String(index + 1),
      ),
      el(
        'span',
        { class: `chunk chunk-${index % 2 === 0 ? 'even' : 'odd'}` },
        text.slice(start, end),
      ),
    );
  });
  return figure;
}
