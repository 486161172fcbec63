/** The agent's RPCs that only read: repeating one on another instance changes nothing. */
const READS: ReadonlySet<string> = new Set([
  'GetConversation',
  'ListConversations',
  'ListTools',
  'GetAgent',
  'ListAgents',
]);

/**
 * The agent's writes that honour the public request's Idempotency-Key (the agent's log answers a
 * repeat with the first outcome, on any instance): safe to repeat only when the key is set.
 */
const KEYED_WRITES: ReadonlySet<string> = new Set([
  'CreateConversation',
  'SubmitMessage',
  'DecideApproval',
  'CancelTurn',
]);

/**
 * Whether an AgentService call may go again to another agent instance after UNAVAILABLE (the
 * instance may have done the work and died before answering): a read always; a keyed write only
 * with its Idempotency-Key; any other write (PutTool, PutAgent, PutProvider, RotateWebhookSecret,
 * a write without a key) never: the client sees the 503 and decides.
 */
export const agentCallRetrySafe = (path: string, request: unknown): boolean => {
  const rpc = path.slice(path.lastIndexOf('/') + 1);
  if (READS.has(rpc)) return true;
  if (!KEYED_WRITES.has(rpc)) return false;
  const inner = (request as { request?: { idempotencyKey?: unknown } } | undefined)?.request;
  return typeof inner?.idempotencyKey === 'string' && inner.idempotencyKey !== '';
};
