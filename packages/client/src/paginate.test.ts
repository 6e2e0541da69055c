import { describe, expect, it } from 'vitest';
import { paginate, type Page } from './paginate.js';

/** A list of `total` numbers served `size` at a time, recording the cursors asked for. */
function pagedList(total: number, size: number) {
  const asked: Array<string | undefined> = [];
  const fetchPage = (cursor: string | undefined): Promise<Page<number>> => {
    asked.push(cursor);
    const start = cursor === undefined ? 0 : Number(cursor);
    const items = Array.from({ length: Math.min(size, total - start) }, (_, i) => start + i);
    const next = start + size < total ? String(start + size) : null;
    return Promise.resolve({ items, nextCursor: next });
  };
  return { asked, fetchPage };
}

describe('paginate', () => {
  it('yields every item of every page in order, following each next cursor', async () => {
    const list = pagedList(7, 3);
    const items: number[] = [];
    for await (const item of paginate(list.fetchPage)) items.push(item);
    expect(items).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(list.asked).toEqual([undefined, '3', '6']);
  });

  it('fetches no further page once the loop is left', async () => {
    const list = pagedList(100, 10);
    for await (const item of paginate(list.fetchPage)) if (item === 12) break;
    expect(list.asked).toEqual([undefined, '10']);
  });

  it('ends on an empty list, and refuses a cursor that does not advance', async () => {
    const empty = pagedList(0, 5);
    const none: number[] = [];
    for await (const item of paginate(empty.fetchPage)) none.push(item);
    expect(none).toEqual([]);
    const stuck = paginate(() => Promise.resolve({ items: [1], nextCursor: 'same' }));
    await expect(
      (async () => {
        for await (const item of stuck) void item;
      })(),
    ).rejects.toThrow('the cursor same did not advance');
  });
});
