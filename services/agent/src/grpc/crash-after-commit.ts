/**
 * Test-only fault injection: `KEEL_TEST_CRASH_AFTER_COMMIT` (comma-separated RPC names of
 * AgentService, e.g. `SubmitMessage,DecideApproval,CancelTurn,CreateConversation`) makes this
 * process SIGKILL itself right after that RPC's command is committed to the log and before it
 * replies: the caller sees the call fail (UNAVAILABLE) although its work is done, which is the
 * unknown outcome an Idempotency-Key retry must resolve to the first answer (e2e
 * `exactly-once-edge.spec.ts`). Unset (always, outside such tests) it does nothing.
 */
export const crashAfterCommitIfAsked = (rpc: string, env: NodeJS.ProcessEnv = process.env): void => {
  const asked = env.KEEL_TEST_CRASH_AFTER_COMMIT;
  if (!asked) return;
  if (!asked.split(',').some((name) => name.trim() === rpc)) return;
  process.kill(process.pid, 'SIGKILL');
};
