/** One page of a cursor-paginated list: its items and the cursor of the next (none: the last). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null | undefined;
}

/**
 * Every item of a cursor-paginated list as an async iterable
 * (`for await (const memory of client.memories.iterate())`): a page is fetched only when the
 * loop reaches it, so leaving the loop early fetches no more. `fetchPage` gets `undefined` for
 * the first page, then each page's `nextCursor`.
 */
export async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (!page.nextCursor) return;
    // A service answering the same cursor again would loop forever.
    if (page.nextCursor === cursor) throw new Error(`the cursor ${cursor} did not advance`);
    cursor = page.nextCursor;
  }
}
