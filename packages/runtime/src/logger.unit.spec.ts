import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, withLogContext } from './logger.js';

const capture = (): { lines: Record<string, unknown>[]; destination: Writable } => {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, destination };
};

describe('createLogger', () => {
  it('writes JSON lines with the service, the level label and the message', () => {
    const { lines, destination } = capture();
    createLogger('agent', { level: 'info', destination }).info({ turn: 3 }, 'hello');
    expect(lines).toEqual([
      expect.objectContaining({ service: 'agent', level: 'info', msg: 'hello', turn: 3 }),
    ]);
  });

  it('drops lines below the configured level', () => {
    const { lines, destination } = capture();
    const logger = createLogger('agent', { level: 'warn', destination });
    logger.info('quiet');
    logger.warn('loud');
    expect(lines.map((line) => line.msg)).toEqual(['loud']);
  });

  it('redacts credentials at the top level and one level down', () => {
    const { lines, destination } = capture();
    createLogger('gateway', { level: 'info', destination }).info(
      {
        authorization: 'Bearer sk-live-1',
        apiKey: 'sk-2',
        key: 'k-3',
        secret: 's-4',
        password: 'p-5',
        provider: { name: 'openai', apiKey: 'sk-6' },
        headers: { authorization: 'Bearer sk-7' },
        keyHash: 'h-8',
        entry: { keyId: 'k1', keyHash: 'h-9' },
      },
      'configured',
    );
    const text = JSON.stringify(lines);
    for (const secret of ['sk-live-1', 'sk-2', 'k-3', 's-4', 'p-5', 'sk-6', 'sk-7', 'h-8', 'h-9'])
      expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      apiKey: '[redacted]',
      provider: { name: 'openai', apiKey: '[redacted]' },
    });
  });

  it('adds the request context to every line of a child logger, leaving out absent ids', () => {
    const { lines, destination } = capture();
    const logger = withLogContext(createLogger('agent', { level: 'info', destination }), {
      tenantId: 't1',
      conversationId: 'c1',
      correlationId: undefined,
    });
    logger.info('one');
    logger.info('two');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatchObject({ tenantId: 't1', conversationId: 'c1' });
      expect(line).not.toHaveProperty('correlationId');
    }
  });
});
