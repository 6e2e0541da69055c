import { CST, Lexer } from 'yaml';
import { SKILL_LIMITS } from './limits.js';

/**
 * Why a SKILL.md's YAML front matter is too large or too complex to parse, if it is. The
 * `yaml` package parses on the event loop at a few microseconds a token, and recursively: 64 KiB
 * of `[[[[...` took it over half a second and then overflowed its stack, so ten such uploads
 * stalled every other request of the process. Checked before parsing, from the
 * package's own lexer (so quoted text, comments and block scalars count as the parser sees
 * them), stopping at the first bound crossed:
 *
 * - bytes: {@link SKILL_LIMITS.frontMatterBytes};
 * - tokens: {@link SKILL_LIMITS.frontMatterTokens}, which bounds the parser's work;
 * - nesting: {@link SKILL_LIMITS.frontMatterDepth}, counted generously rather than exactly: a
 *   line nests as deep as the block indentation levels open above it, plus each `-`, `?` and
 *   `:` indicator on it, plus the open flow collections (`[`, `{`). A real front matter (a
 *   mapping with a `metadata` mapping) counts 3.
 *
 * Alias expansion is bounded when the document is converted (`frontMatterAliases`).
 */
export function frontMatterBoundsProblem(source: string): string | undefined {
  const limits = SKILL_LIMITS;
  if (Buffer.byteLength(source) > limits.frontMatterBytes) {
    return `the front matter is larger than ${limits.frontMatterBytes} bytes`;
  }
  const indents: number[] = [];
  let tokens = 0;
  let flow = 0;
  let onLine = 0;
  let lineStart = true;
  let indent = 0;
  for (const token of new Lexer().lex(source)) {
    if (++tokens > limits.frontMatterTokens) {
      return `the front matter has more than ${limits.frontMatterTokens} YAML tokens (keys, values, indicators, comments, line ends)`;
    }
    const type = CST.tokenType(token);
    if (type === 'newline') {
      lineStart = true;
      indent = 0;
      onLine = 0;
      continue;
    }
    if (type === 'space') {
      if (lineStart) indent = token.length;
      continue;
    }
    if (type === 'comment' || type === 'doc-mode' || type === 'byte-order-mark') continue;
    if (lineStart) {
      lineStart = false;
      // Inside a flow collection, indentation opens nothing.
      if (flow === 0) {
        while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
        indents.push(indent);
      }
    }
    switch (type) {
      case 'flow-map-start':
      case 'flow-seq-start':
        flow++;
        break;
      case 'flow-map-end':
      case 'flow-seq-end':
        flow = Math.max(0, flow - 1);
        break;
      case 'seq-item-ind':
      case 'explicit-key-ind':
      case 'map-value-ind':
        if (flow === 0) onLine++;
        break;
      default:
        break;
    }
    if (indents.length + onLine + flow > limits.frontMatterDepth) {
      return `the front matter nests deeper than ${limits.frontMatterDepth} levels`;
    }
  }
  return undefined;
}
