import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * The benchmark's baseline: what a validation does, written with nothing but the SDK and the
 * platform `fetch` (no SSRF guard, no deadline, no error classification): connect, list every
 * page of tools and prompts, end the session, close.
 */
export async function bareSdkValidate(url: string): Promise<{ tools: Tool[]; prompts: Prompt[] }> {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'bench-baseline', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const prompts: Prompt[] = [];
    if (client.getServerCapabilities()?.prompts) {
      do {
        const page = await client.listPrompts(cursor ? { cursor } : undefined);
        prompts.push(...page.prompts);
        cursor = page.nextCursor;
      } while (cursor);
    }
    return { tools, prompts };
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}
