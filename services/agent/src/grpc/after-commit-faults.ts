import { sleep } from '@keel/core';
/** RPC names listed in a test-only variable (comma-separated), e.g. `SubmitMessage,CancelTurn`. */
const listed = (value: string | undefined, rpc: string): boolean =>
  !!value && value.split(',').some((name) => name.trim() === rpc);

/** How long KEEL_TEST_HOLD_AFTER_COMMIT holds a reply: past the gateway's 10 s deadline. */
const HOLD_MS = 20_000;

/**
 * Test-only fault injection between a command's commit and the RPC's reply, for the unknown
 * outcome an Idempotency-Key retry must resolve to the first answer (e2e
 * `exactly-once-edge.spec.ts`). Both variables list AgentService RPC names (comma-separated:
 * `CreateConversation`, `SubmitMessage`, `DecideApproval`, `CancelTurn`):
 * - `KEEL_TEST_CRASH_AFTER_COMMIT`: this process SIGKILLs itself right after the command is
 *   committed to the log and before it replies (the caller sees UNAVAILABLE; the work is done);
 * - `KEEL_TEST_HOLD_AFTER_COMMIT`: the reply waits 20 s after the commit (long enough for a test
 *   to kill the gateway that is waiting for it).
 * Unset (always, outside such tests) they do nothing; `KEEL_TEST_*` names are reserved for tests.
 */
export const faultAfterCommit = async (rpc: string, env: NodeJS.ProcessEnv = process.env): Promise<void> => {
  if (listed(env.KEEL_TEST_CRASH_AFTER_COMMIT, rpc)) process.kill(process.pid, 'SIGKILL');
  if (listed(env.KEEL_TEST_HOLD_AFTER_COMMIT, rpc)) await sleep(HOLD_MS);
};
