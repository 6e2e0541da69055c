import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** Tool messages longer than this are cut, so one chatty server cannot fill the context. */
export const MAX_RESULT_CHARS = 100_000;

/**
 * Turns an MCP tool result into the text of the tool message (and the `tool_result` event).
 *
 * Text items are kept as they are, joined by blank lines. Tool messages and `tool_result` are
 * text (`ToolOutput.content`, spec 6.1), so binary items are announced here, not inlined (images
 * also travel in `tool_result.images`, see {@link resultImages}):
 * an image becomes `[image: image/png, 1234 bytes]`, audio likewise; an embedded resource with
 * text contributes that text, a blob or a resource link a line naming its URI. A result with
 * no content but `structuredContent` shows that as JSON. Empty results read `(no output)`.
 */
export function resultText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    switch (item.type) {
      case 'text':
        parts.push(item.text);
        break;
      case 'image':
      case 'audio':
        parts.push(`[${item.type}: ${item.mimeType}, ${base64Bytes(item.data)} bytes]`);
        break;
      case 'resource':
        parts.push(
          'text' in item.resource && typeof item.resource.text === 'string'
            ? item.resource.text
            : `[resource: ${item.resource.uri}]`,
        );
        break;
      case 'resource_link':
        parts.push(`[resource link: ${item.uri}]`);
        break;
      default:
        parts.push(`[unsupported content: ${(item as { type: string }).type}]`);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  const text = parts.join('\n\n') || '(no output)';
  return text.length > MAX_RESULT_CHARS
    ? `${text.slice(0, MAX_RESULT_CHARS)}\n[truncated: ${text.length} characters in all]`
    : text;
}

/** The image items of a result, for `tool_result.images` (the text announces them). */
export function resultImages(result: CallToolResult): Array<{ data: string; mimeType: string }> {
  const images: Array<{ data: string; mimeType: string }> = [];
  for (const item of result.content ?? []) {
    if (item.type === 'image') images.push({ data: item.data, mimeType: item.mimeType });
  }
  return images;
}

/** Decoded size of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
