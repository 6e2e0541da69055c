import type { ChatAttachment, ResourceFile, SandboxFile } from '@agent-backend/protocol';
import type { ChatMessage } from './chat-message.js';
import { truncate, type ContextLimits } from './context-limits.js';

/**
 * Drops the oldest turns of the stored conversation until it fits `maxChars`. A turn starts at
 * a user message, so an assistant message is never separated from its tool results; the latest
 * turn is always kept whole.
 */
export function fitHistory(history: readonly ChatMessage[], maxChars: number): ChatMessage[] {
  const size = (m: ChatMessage) =>
    (m.content ?? '').length +
    (m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []).length : 0);
  const starts = history.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  let total = history.reduce((sum, m) => sum + size(m), 0);
  let from = 0;
  for (let k = 1; k < starts.length && total > maxChars; k++) {
    const next = starts[k]!;
    for (let i = from; i < next; i++) total -= size(history[i]!);
    from = next;
  }
  return history.slice(from);
}

function fileBlocks(
  files: readonly { name: string; type: string; content: string }[],
  limits: ContextLimits,
  label: string,
): string[] {
  let budget = limits.filesTotalChars;
  const blocks: string[] = [];
  for (const [i, file] of files.entries()) {
    if (budget <= 0) {
      blocks.push(`[${files.length - i} more ${label}(s) left out: context limit reached]`);
      break;
    }
    const content = truncate(file.content, Math.min(limits.fileChars, budget));
    budget -= Math.min(file.content.length, limits.fileChars);
    blocks.push(`<${label} name="${file.name}" type="${file.type}">\n${content}\n</${label}>`);
  }
  return blocks;
}

/** The resource files and sandbox listing, for the system prompt. */
export function contextSection(
  resourceFiles: readonly ResourceFile[],
  sandboxFiles: readonly SandboxFile[],
  limits: ContextLimits,
): string {
  const parts: string[] = [];
  if (resourceFiles.length > 0) {
    parts.push(
      'Resource files the user provided:',
      ...fileBlocks(resourceFiles, limits, 'resource_file'),
    );
  }
  if (sandboxFiles.length > 0) {
    const listed = sandboxFiles.slice(0, limits.sandboxFiles).map((f) => {
      const size = f.size === undefined ? '' : `, ${f.size} bytes`;
      return `- ${f.path} (${f.name}, ${f.type}${size})`;
    });
    if (sandboxFiles.length > limits.sandboxFiles) {
      listed.push(`- … and ${sandboxFiles.length - limits.sandboxFiles} more`);
    }
    parts.push('Files in the sandbox:', ...listed);
  }
  return parts.join('\n');
}

/**
 * The user message as the model gets it and as it is stored: the text, then the attachments
 * (text content inlined within limits; the conversation keeps them, so later turns can refer
 * to them). Images and other binary content are named, not sent.
 */
export function userMessage(
  message: string,
  attachments: readonly ChatAttachment[],
  limits: ContextLimits,
): ChatMessage {
  const text = truncate(message, limits.messageChars);
  if (attachments.length === 0) return { role: 'user', content: text };
  const textual = attachments.filter((a) => isTextual(a.type));
  const binary = attachments.filter((a) => !isTextual(a.type));
  const blocks = fileBlocks(textual, limits, 'attachment');
  for (const a of binary) {
    blocks.push(`[attachment "${a.name}" (${a.type}, ${a.size} bytes) is not shown to the model]`);
  }
  return { role: 'user', content: `${text}\n\nAttachments:\n${blocks.join('\n')}` };
}

/** Text MIME types and common text file extensions count as text; the rest as binary. */
function isTextual(type: string): boolean {
  const t = type.toLowerCase();
  return (
    t.startsWith('text/') ||
    /(json|xml|yaml|csv|javascript|typescript|markdown|x-sh|sql)/.test(t) ||
    /^\.?(txt|md|csv|json|ya?ml|xml|html?|js|ts|py|java|go|rs|c|cpp|h|sh|sql|log)$/.test(t)
  );
}
