/**
 * The few DOM types the `/docs` page script (docs-page-script.ts) uses, declared here: the
 * service's code is type-checked without the DOM library (its `fetch` and `Headers` types differ
 * from Node.js's).
 */
export interface PageNode {
  append(...nodes: Array<PageNode | string>): void;
}
export interface PageElement extends PageNode {
  setAttribute(name: string, value: string): void;
  addEventListener(type: 'toggle', listener: () => void): void;
  replaceChildren(...nodes: PageNode[]): void;
  readonly childElementCount: number;
  /** `<details>` only. */
  readonly open?: boolean;
  readonly dataset: Record<string, string>;
}
export interface PageDocument {
  readonly body: PageElement;
  getElementById(id: string): PageElement | null;
  createElement(tag: string): PageElement;
  createTextNode(text: string): PageNode;
  createDocumentFragment(): PageNode;
}
