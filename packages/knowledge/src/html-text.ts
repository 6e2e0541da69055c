import { Parser } from 'htmlparser2';

/** Elements whose content is never text a reader sees. */
const HIDDEN = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'canvas',
  'iframe',
  'object',
  'head',
]);

/** Elements that start and end a paragraph: they become blank lines, the splitter's delimiter. */
const BLOCKS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'caption',
  'dd',
  'details',
  'dialog',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'html',
  'legend',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'tbody',
  'tfoot',
  'thead',
  'title',
  'ul',
]);

/** Elements that start a line of their own, without a blank line. */
const LINES = new Set(['br', 'li', 'tr']);

/**
 * The text a reader sees in an HTML document, for ingestion (`type: "html"`): the content of
 * `<script>`, `<style>`, `<head>` (except `<title>`) and other hidden elements is dropped,
 * entities are decoded, whitespace is collapsed as a browser does (kept inside `<pre>`), block
 * elements become paragraphs separated by blank lines (the splitter's default delimiter), and
 * `<br>`, list items and table rows start new lines (items with "- ", cells separated by " | ").
 * Forgiving like a browser: unclosed and stray tags never fail. docs/knowledge-base.md.
 */
export function htmlToText(html: string): string {
  const out: string[] = [];
  /** Open hidden elements (nesting depth), and `<pre>` depth. */
  let hidden = 0;
  let pre = 0;
  let titleDepth = 0;
  let pendingSpace = false;
  const last = () => out.at(-1) ?? '\n\n';
  const breakLine = (text: '\n' | '\n\n') => {
    pendingSpace = false;
    const tail = last();
    if (tail.endsWith('\n\n')) return;
    if (tail.endsWith('\n')) {
      if (text === '\n\n') out.push('\n');
      return;
    }
    out.push(text);
  };
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === 'title') titleDepth += 1;
        if (HIDDEN.has(name)) hidden += 1;
        if (hidden > 0 && titleDepth === 0) return;
        if (name === 'pre') pre += 1;
        if (BLOCKS.has(name)) breakLine('\n\n');
        else if (LINES.has(name)) breakLine('\n');
        if (name === 'li') out.push('- ');
        else if ((name === 'td' || name === 'th') && !last().endsWith('\n')) out.push(' | ');
      },
      onclosetag(name) {
        if (HIDDEN.has(name)) hidden = Math.max(0, hidden - 1);
        if (name === 'title') {
          titleDepth = Math.max(0, titleDepth - 1);
          breakLine('\n\n');
          return;
        }
        if (hidden > 0 && titleDepth === 0) return;
        if (name === 'pre') pre = Math.max(0, pre - 1);
        if (BLOCKS.has(name)) breakLine('\n\n');
        else if (name === 'li' || name === 'tr') breakLine('\n');
      },
      ontext(text) {
        if (hidden > 0 && titleDepth === 0) return;
        if (pre > 0) {
          if (pendingSpace) out.push(' ');
          pendingSpace = false;
          out.push(text);
          return;
        }
        // Collapse like a browser: runs of whitespace are one space, none at a line's start.
        const words = text.split(/[ \t\n\r\f]+/);
        for (let i = 0; i < words.length; i++) {
          if (i > 0) pendingSpace = true;
          const word = words[i]!;
          if (word === '') continue;
          if (pendingSpace && !last().endsWith('\n') && !last().endsWith(' ')) out.push(' ');
          pendingSpace = false;
          out.push(word);
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.end(html);
  return out
    .join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
