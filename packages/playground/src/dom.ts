/** Small DOM helpers: the playground has no framework, only the page and the client SDK. */

/** The element with this id; a missing one is a bug in index.html. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

type Child = Node | string | null | undefined | false;

/** Creates an element with attributes (`class`, `aria-*`, ...) and children (text is escaped). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** A button that runs `action` and shows its failure in the status line. */
export function button(label: string, action: () => unknown, attributes = {}): HTMLButtonElement {
  const node = el('button', { type: 'button', ...attributes }, label);
  node.addEventListener('click', () => void guarded(action));
  return node;
}

/** The page's status line (`role="status"`): progress and errors of the last action. */
export function showStatus(message: string, kind: 'info' | 'error' = 'info'): void {
  const status = byId('status');
  status.textContent = message;
  status.classList.toggle('error', kind === 'error');
}

/** Runs an action; an error (an `ApiError` of the SDK, a bad JSON text) goes to the status line. */
export async function guarded(action: () => unknown): Promise<void> {
  try {
    await action();
  } catch (error) {
    showStatus(describeError(error), 'error');
  }
}

export function describeError(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && 'status' in error) {
    const { status, code, message } = error as { status: number; code: string; message: string };
    return `${message} (${status} ${code})`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Images of a tool result (base64 + MIME type) as `<img>` elements. */
export function images(list: readonly { data: string; mimeType: string }[] = []): HTMLElement[] {
  return list.map((image, index) =>
    el('img', {
      src: `data:${image.mimeType};base64,${image.data}`,
      alt: `image ${index + 1} returned by the tool`,
    }),
  );
}

/** JSON of a value, indented, in a `<pre>`. */
export function json(value: unknown): HTMLPreElement {
  return el('pre', {}, JSON.stringify(value, null, 2));
}

/** Local storage that never throws (private mode, quota): the playground works without it. */
export const stored = {
  get<T>(key: string): T | undefined {
    try {
      const text = localStorage.getItem(`playground.${key}`);
      return text === null ? undefined : (JSON.parse(text) as T);
    } catch {
      return undefined;
    }
  },
  set(key: string, value: unknown): void {
    try {
      if (value === undefined) localStorage.removeItem(`playground.${key}`);
      else localStorage.setItem(`playground.${key}`, JSON.stringify(value));
    } catch {
      // Full or unavailable: the value lives for this page only.
    }
  },
};
