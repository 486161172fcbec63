// The agent's configuration messages as the public API shows them (API.md "Tenant configuration").
import type { AgentMessage, ToolMessage } from './config-requests.js';
import { approvalOfText } from './approval-field.js';

/** A tool as `PUT /v1/tools/{name}` and `GET /v1/tools` answer it. */
export interface ToolView {
  name: string;
  description: string;
  inputSchema: unknown;
  kind: string;
  url?: string;
  approval: unknown;
  roles: string[];
  phases?: string[];
  timeoutMs?: number;
  builtin: boolean;
  memory?: unknown;
  affects?: string[];
  /** A client tool's result schema. */
  outputSchema?: unknown;
  userRoles?: string[];
}

/** An agent as `PUT /v1/agents/{id}` and `GET /v1/agents` answer it. */
export interface AgentView {
  id: string;
  model: string;
  instructions: string;
  tools: string[];
  maxSteps: number;
  temperature: number;
  toolResultMaxChars: number;
  phases?: unknown;
  providerOptions?: unknown;
  fallbackModels?: string[];
  promptCache?: boolean;
  autoTitle?: boolean;
  context?: unknown;
  contextSchema?: unknown;
  timeZone?: string;
}

const parsed = (text: string): unknown => (text === '' ? undefined : (JSON.parse(text) as unknown));

/** The tool message (`inputSchemaJson`) as JSON (`inputSchema`); empty fields of built-ins left out. */
export const toolView = (tool: ToolMessage & { builtin?: boolean }): ToolView => ({
  name: tool.name,
  description: tool.description,
  inputSchema: parsed(tool.inputSchemaJson) ?? {},
  kind: tool.kind,
  ...(tool.url ? { url: tool.url } : {}),
  approval: approvalOfText(tool.approval),
  roles: tool.roles ?? [],
  ...(tool.phases && tool.phases.length > 0 ? { phases: tool.phases } : {}),
  ...(tool.timeoutMs ? { timeoutMs: tool.timeoutMs } : {}),
  builtin: tool.builtin === true,
  ...(tool.memoryJson ? { memory: parsed(tool.memoryJson) } : {}),
  ...(tool.affects && tool.affects.length > 0 ? { affects: tool.affects } : {}),
  ...(tool.outputSchemaJson ? { outputSchema: parsed(tool.outputSchemaJson) } : {}),
  ...(tool.userRoles && tool.userRoles.length > 0 ? { userRoles: tool.userRoles } : {}),
});

/** The agent message as JSON: `agentId` is `id`, `phasesJson` is `phases`. */
export const agentView = (agent: AgentMessage): AgentView => {
  const phases = parsed(agent.phasesJson);
  return {
    id: agent.agentId,
    model: agent.model,
    instructions: agent.instructions,
    tools: agent.tools ?? [],
    maxSteps: agent.maxSteps,
    temperature: agent.temperature,
    toolResultMaxChars: agent.toolResultMaxChars,
    ...(phases === undefined ? {} : { phases }),
    ...(parsed(agent.optionsJson ?? '') as Partial<AgentView> | undefined),
  };
};
