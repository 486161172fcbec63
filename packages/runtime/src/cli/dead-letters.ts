/**
 * The operator's view of dead letters: events a consumer failed `maxDeliver` times.
 *
 *   npm run dead-letters -- list [--consumer NAME] [--tenant ID] [--all] [--limit N]
 *   npm run dead-letters -- replay <id>
 *
 * Runs against the platform's MongoDB and NATS (MONGODB_URL, NATS_URL, KEEL_NATS_STREAM,
 * KEEL_SUBJECT_PREFIX). `list` prints one JSON line per dead letter (the event's payload is not
 * printed); `replay` redelivers the event to its consumer only, which marks it replayed once handled.
 */
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { KeelError, messageOf } from '@keel/core';
import { loadConfig } from '../config.js';
import { createInfrastructure } from '../infrastructure.js';
import { createLogger } from '../logger.js';

const USAGE = `usage: dead-letters list [--consumer NAME] [--tenant ID] [--all] [--limit N]
       dead-letters replay <id>`;

const fail = (message: string, code: number): never => {
  process.stderr.write(`${message}\n`);
  process.exit(code);
};

const { positionals, values } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        consumer: { type: 'string' },
        tenant: { type: 'string' },
        all: { type: 'boolean', default: false },
        limit: { type: 'string', default: '100' },
      },
    });
  } catch (error) {
    return fail(`${messageOf(error)}\n${USAGE}`, 2);
  }
})();
const [command, id] = positionals;
const limit = Number(values.limit);
if (command === 'list' ? positionals.length !== 1 : command !== 'replay' || !id || positionals.length !== 2) {
  fail(USAGE, 2);
}
if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
  fail('--limit must be an integer from 1 to 10000', 2);

const config = loadConfig('gateway');
if (!config.mongodbUrl || !config.natsUrl) {
  fail(
    'dead-letters needs MONGODB_URL and NATS_URL: dead letters live with the platform, not in this process',
    2,
  );
}
// Logs go to stderr: stdout is the JSON lines a caller parses (e.g. the warning of a platform without
// KEEL_MASTER_KEY would otherwise read as a dead letter).
const logger = createLogger('dead-letters', {
  level: 'warn',
  destination: pino.destination({ dest: 2, sync: true }),
});
const infra = await createInfrastructure(config, logger, {
  startRelay: false,
});
let exitCode = 0;
try {
  if (command === 'list') {
    const letters = await infra.bus.deadLetters.list({
      ...(values.consumer ? { consumer: values.consumer } : {}),
      ...(values.tenant ? { tenantId: values.tenant } : {}),
      includeReplayed: values.all,
      limit,
    });
    for (const l of letters) {
      const { event } = l;
      const line = {
        id: l.id,
        consumer: l.consumer,
        tenantId: l.tenantId,
        eventId: event.eventId,
        type: event.type,
        streamName: event.streamName,
        version: event.version,
        deliveryCount: l.deliveryCount,
        error: l.error,
        deadAt: l.deadAt,
        ...(l.replayedAt ? { replayedAt: l.replayedAt } : {}),
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
  } else {
    await infra.bus.replayDeadLetter(id!);
    process.stdout.write(`${JSON.stringify({ replayed: id })}\n`);
  }
} catch (error) {
  process.stderr.write(`${error instanceof KeelError ? `${error.code}: ${error.message}` : String(error)}\n`);
  exitCode = 1;
} finally {
  await infra.close();
}
process.exit(exitCode);
