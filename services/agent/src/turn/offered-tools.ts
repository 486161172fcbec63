import type { EndUser } from '@keel/events';
import { allowsEndUser } from '@keel/events';
import type { ResolvedTool } from './tool-catalog.js';

/**
 * The tools the model is told of in a turn (API.md "The end user"): those the turn's end-user
 * role may use (`userRoles`) and the current phase allows (`phases`). The guard still judges a
 * call to any of the agent's tools, so a call to one left out is refused with the reason
 * (`forbidden_for_user_role`, `wrong_phase`) rather than as an unknown tool.
 */
export const offeredTools = (
  tools: readonly ResolvedTool[],
  user: EndUser | undefined,
  phase: string | undefined,
): ResolvedTool[] =>
  tools.filter(
    (tool) =>
      allowsEndUser(tool.userRoles, user) &&
      (phase === undefined || tool.phases.length === 0 || tool.phases.includes(phase)),
  );
