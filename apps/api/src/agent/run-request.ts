import type { RunRequest } from '@agent-backend/agent-runtime';
import type { InvokeRequest, McpToolEntry, OAuthToolEntry } from '@agent-backend/protocol';

/**
 * The one place the invoke body (spec 4.2) becomes the runtime's {@link RunRequest}. The user id
 * is the verified token's subject, never a field of the body.
 */
export function toRunRequest(userId: string, body: InvokeRequest): RunRequest {
  return {
    userId,
    ...(body.session_id !== undefined ? { sessionId: body.session_id } : {}),
    message: body.message,
    mode: body.mode,
    model: {
      baseUrl: body.llm_config.baseUrl,
      apiKey: body.llm_config.apiKey,
      name: body.llm_config.modelName,
      temperature: body.llm_config.temperature,
      chosenBy: 'request',
    },
    history: body.chat_history,
    attachments: body.chat_attachments,
    resourceFiles: body.resource_files,
    capabilities: {
      nodeTools: true,
      mcpServers: body.tools.filter((entry): entry is McpToolEntry => entry.type === 'mcp'),
      oauthTools: body.tools.filter((entry): entry is OAuthToolEntry => entry.type === 'oauth'),
      knowledgeBaseIds: body.knowledge_base_ids,
      memory: body.enable_memory,
      webSearch: body.enable_web_search,
      ...(body.skills ? { skills: body.skills } : {}),
      sandbox: {
        ...(body.sandbox_mode !== undefined ? { mode: body.sandbox_mode } : {}),
        ...(body.working_directory !== undefined
          ? { workingDirectory: body.working_directory }
          : {}),
        files: body.sandbox_files,
      },
    },
    ...(body.hitl_config ? { hitl: body.hitl_config } : {}),
  };
}
