import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NotFoundError, PreconditionError, ValidationError } from '../errors/index.js';
import { uuidv7 } from '../typing/index.js';
import type { ConsumerOptions, Delivery, EventBus } from './event-bus.js';
import { event, recordingConsumer, sleep, unique } from './event-bus.contract-support.js';

/** What the contract needs the adapter under test to be configured with. */
export interface EventBusContractSettings {
  /** The publish deduplication window; the inbox case republishes an event after it. */
  duplicateWindowMs: number;
}

/** A fresh bus for one test, and how to dispose of it (close the bus, delete its stream). */
export interface EventBusUnderTest {
  bus: EventBus;
  cleanup(): Promise<void>;
}

const SETTINGS: EventBusContractSettings = { duplicateWindowMs: 1_000 };
const FAST = { ackWaitMs: 2_000, backoffMs: [100] } satisfies Partial<ConsumerOptions>;
const WAIT = { timeout: 15_000, interval: 20 };

/** The one behaviour suite every EventBus adapter (in-memory, NATS JetStream) must pass. */
export const describeEventBusContract = (
  name: string,
  factory: (settings: EventBusContractSettings) => Promise<EventBusUnderTest>,
): void => {
  describe(`EventBus contract: ${name}`, () => {
    let bus: EventBus;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ bus, cleanup } = await factory(SETTINGS));
    });

    afterEach(async () => {
      await cleanup();
    });

    it('delivers published events to durable consumers, scoped by tenant and category', async () => {
      const [t1, t2, t3] = [unique('t1'), unique('t2'), unique('t3')];
      const live = await recordingConsumer(bus, { name: unique('all'), ...FAST });
      const e = [
        event(t1, 'order-a', 1, { 'key.with.dots': 1, $dollar: ['x', { deep: 'ünï ✓' }], big: 2 ** 53 - 1 }),
        event(t1, 'order-a', 2),
        event(t1, 'invoice-x/y z', 1),
        event(t2, 'order-b', 1),
      ] as const;
      await bus.publish([...e]);
      // Created after the publish: a new durable starts from the first event on the bus.
      const ofT1 = await recordingConsumer(bus, { name: unique('t1'), filter: { tenantId: t1 }, ...FAST });
      const t1Orders = await recordingConsumer(bus, {
        name: unique('t1o'),
        filter: { tenantId: t1, category: 'order' },
        ...FAST,
      });
      const orders = await recordingConsumer(bus, {
        name: unique('o'),
        filter: { category: 'order' },
        ...FAST,
      });
      const ofT3 = await recordingConsumer(bus, { name: unique('t3'), filter: { tenantId: t3 }, ...FAST });
      // A later event of t3: once its consumer has it, any earlier event it could get came first.
      const sentinel = event(t3, 'order-c', 1);
      await bus.publish([sentinel]);

      await vi.waitFor(() => expect(ofT3.handledIds()).toEqual([sentinel.eventId]), WAIT);
      await vi.waitFor(() => expect(live.handledIds()).toEqual([...e, sentinel].map((x) => x.eventId)), WAIT);
      await vi.waitFor(
        () => expect(orders.handledIds()).toEqual([e[0], e[1], e[3], sentinel].map((x) => x.eventId)),
        WAIT,
      );
      await vi.waitFor(
        () => expect(ofT1.handledIds()).toEqual([e[0], e[1], e[2]].map((x) => x.eventId)),
        WAIT,
      );
      await vi.waitFor(() => expect(t1Orders.handledIds()).toEqual([e[0], e[1]].map((x) => x.eventId)), WAIT);
      expect(live.deliveries.map((d) => d.event)).toEqual([...e, sentinel]);
      expect(live.deliveries.every((d) => d.deliveryCount === 1 && d.replayOf === undefined)).toBe(true);
    });

    it('starts a durable declared with deliverFrom new at the events published after it', async () => {
      const tenant = unique('t');
      const old = event(tenant, 'order-a', 1);
      await bus.publish([old]);
      const fromNew = await recordingConsumer(bus, { name: unique('new'), deliverFrom: 'new', ...FAST });
      const fresh = event(tenant, 'order-a', 2);
      await bus.publish([fresh]);
      await vi.waitFor(() => expect(fromNew.handledIds()).toEqual([fresh.eventId]), WAIT);
    });

    it('delivers an event published twice (by event id) once', async () => {
      const tenant = unique('t');
      const [e1, e2] = [event(tenant, 'order-a', 1), event(tenant, 'order-a', 2)];
      const c = await recordingConsumer(bus, { name: unique('dedup'), idempotency: 'none', ...FAST });
      await bus.publish([e1]);
      await bus.publish([e1]);
      await bus.publish([e1, e2, e2]);
      await vi.waitFor(() => expect(c.handledIds()).toContain(e2.eventId), WAIT);
      await sleep(200);
      expect(c.attempts.map((a) => a.eventId)).toEqual([e1.eventId, e2.eventId]);
    });

    it('redelivers an event after a handler error, after the backoff, then goes on', async () => {
      const tenant = unique('t');
      const [e1, e2] = [event(tenant, 'order-a', 1), event(tenant, 'order-a', 2)];
      const c = await recordingConsumer(bus, { name: unique('retry'), ...FAST }, (d) => {
        if (d.event.eventId === e1.eventId && d.deliveryCount === 1) throw new Error('transient');
      });
      await bus.publish([e1, e2]);
      await vi.waitFor(() => expect(c.handledIds()).toEqual([e1.eventId, e2.eventId]), WAIT);
      const [first, second] = c.attemptsOf(e1.eventId);
      expect([first?.status, first?.deliveryCount, second?.status, second?.deliveryCount]).toEqual([
        'failed',
        1,
        'ok',
        2,
      ]);
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(FAST.backoffMs[0]! - 20);
    });

    it('handles events in publish order, and retries a failed event before any later one', async () => {
      const tenant = unique('t');
      const a = [1, 2, 3, 4, 5].map((v) => event(tenant, 'order-a', v));
      const b = [1, 2, 3, 4, 5].map((v) => event(tenant, 'order-b', v));
      const c = await recordingConsumer(bus, { name: unique('order'), ...FAST }, (d) => {
        if (d.event.eventId === a[2]!.eventId && d.deliveryCount === 1) throw new Error('once');
      });
      await bus.publish([a[0]!, b[0]!, a[1]!, b[1]!, a[2]!, b[2]!]);
      await bus.publish([a[3]!, b[3]!, a[4]!, b[4]!]);
      await vi.waitFor(() => expect(c.handled()).toHaveLength(10), WAIT);
      expect(c.attempts.map((x) => `${x.key}#${x.deliveryCount}`)).toEqual([
        'order-a:1#1',
        'order-b:1#1',
        'order-a:2#1',
        'order-b:2#1',
        'order-a:3#1',
        'order-a:3#2',
        'order-b:3#1',
        'order-a:4#1',
        'order-b:4#1',
        'order-a:5#1',
        'order-b:5#1',
      ]);
    });

    it('dead-letters an event after maxDeliver failed deliveries and never delivers it again', async () => {
      const tenant = unique('t');
      const [e1, e2, e3] = [
        event(tenant, 'order-a', 1),
        event(tenant, 'order-a', 2),
        event(tenant, 'order-a', 3),
      ];
      const name = unique('dead');
      const c = await recordingConsumer(
        bus,
        { name, maxDeliver: 3, ackWaitMs: 2_000, backoffMs: [50] },
        (d) => {
          if (d.event.eventId === e1.eventId) throw new Error(`boom ${d.deliveryCount}`);
        },
      );
      await bus.publish([e1, e2]);
      await vi.waitFor(() => expect(c.handledIds()).toEqual([e2.eventId]), WAIT);
      const dead = await bus.deadLetters.list({ consumer: name });
      expect(dead).toHaveLength(1);
      const [letter] = dead;
      expect(letter).toMatchObject({
        consumer: name,
        tenantId: tenant,
        event: e1,
        error: 'boom 3',
        deliveryCount: 3,
      });
      expect(letter!.replayedAt).toBeUndefined();
      expect(Date.parse(letter!.deadAt)).toBeLessThanOrEqual(Date.now());
      expect(await bus.deadLetters.get(letter!.id)).toEqual(letter);
      expect(await bus.deadLetters.list({ tenantId: tenant })).toEqual(dead);
      expect(await bus.deadLetters.list({ consumer: unique('other') })).toEqual([]);
      expect(c.attemptsOf(e1.eventId).map((a) => a.deliveryCount)).toEqual([1, 2, 3]);

      await bus.publish([e3]);
      await vi.waitFor(() => expect(c.handledIds()).toEqual([e2.eventId, e3.eventId]), WAIT);
      expect(c.attemptsOf(e1.eventId)).toHaveLength(3);
    });

    it('tells the observer each delivery’s outcome, and counts a consumer’s pending events', async () => {
      const tenant = unique('t');
      const [e1, e2, e3] = [
        event(tenant, 'order-a', 1),
        event(tenant, 'order-a', 2),
        event(tenant, 'order-a', 3),
      ];
      const name = unique('pend');
      const reports: Array<{ outcome: string; deliveryCount: number; eventId?: string }> = [];
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let seen = 0;
      const consumer = await bus.consume(
        {
          name,
          maxDeliver: 2,
          ackWaitMs: 2_000,
          backoffMs: [50],
          observe: (report) => {
            expect(report.consumer).toBe(name);
            expect(report.seconds).toBeGreaterThanOrEqual(0);
            reports.push({ outcome: report.outcome, deliveryCount: report.deliveryCount });
          },
        },
        async ({ event: e }) => {
          seen++;
          if (e.eventId === e1.eventId) throw new Error('boom');
          if (e.eventId === e2.eventId) await held;
        },
      );
      expect(await bus.pending?.(unique('unknown'))).toBeUndefined();
      await bus.publish([e1, e2, e3]);
      // e1 fails twice (dead-lettered), then e2 is held in flight with e3 behind it: 2 pending.
      await vi.waitFor(() => expect(seen).toBe(3), WAIT);
      await vi.waitFor(async () => expect(await bus.pending?.(name)).toBe(2), WAIT);
      release();
      await vi.waitFor(async () => expect(await bus.pending?.(name)).toBe(0), WAIT);
      await vi.waitFor(() => expect(reports).toHaveLength(4), WAIT);
      expect(reports).toEqual([
        { outcome: 'retry', deliveryCount: 1 },
        { outcome: 'dead-lettered', deliveryCount: 2 },
        { outcome: 'handled', deliveryCount: 1 },
        { outcome: 'handled', deliveryCount: 1 },
      ]);
      await consumer.stop();
    });

    it('replays a dead letter to its own consumer only and marks it replayed', async () => {
      const tenant = unique('t');
      const [e1, e2, e3] = [
        event(tenant, 'order-a', 1),
        event(tenant, 'order-a', 2),
        event(tenant, 'order-a', 3),
      ];
      let broken = true;
      const failingName = unique('fail');
      const failing = await recordingConsumer(
        bus,
        { name: failingName, maxDeliver: 2, ackWaitMs: 2_000, backoffMs: [50] },
        (d) => {
          if (broken && d.event.eventId === e1.eventId) throw new Error('broken');
        },
      );
      // Without an inbox, only the replay targeting tells this consumer to leave the replay alone.
      const other = await recordingConsumer(bus, { name: unique('other'), idempotency: 'none', ...FAST });
      await bus.publish([e1, e2]);
      await vi.waitFor(() => expect(failing.handledIds()).toEqual([e2.eventId]), WAIT);
      await vi.waitFor(() => expect(other.handledIds()).toEqual([e1.eventId, e2.eventId]), WAIT);
      const [letter] = await bus.deadLetters.list({ consumer: failingName });
      expect(letter?.event.eventId).toBe(e1.eventId);

      // A replay that fails again updates the same dead letter instead of adding one.
      await bus.replayDeadLetter(letter!.id);
      const replayAttempts = () => failing.attempts.filter((a) => a.replayOf === letter!.id);
      await vi.waitFor(
        () => expect(replayAttempts().map((a) => a.status)).toEqual(['failed', 'failed']),
        WAIT,
      );
      await vi.waitFor(
        async () => expect((await bus.deadLetters.get(letter!.id))?.deadAt).not.toBe(letter!.deadAt),
        WAIT,
      );
      expect(await bus.deadLetters.list({ consumer: failingName, includeReplayed: true })).toMatchObject([
        { id: letter!.id, error: 'broken', deliveryCount: 2 },
      ]);

      broken = false;
      await bus.replayDeadLetter(letter!.id);
      await vi.waitFor(() => expect(failing.handledIds()).toEqual([e2.eventId, e1.eventId]), WAIT);
      const replayed = failing.handled(e1.eventId)[0]!;
      expect([replayed.replayOf, replayed.deliveryCount]).toEqual([letter!.id, 1]);
      await vi.waitFor(
        async () => expect((await bus.deadLetters.get(letter!.id))?.replayedAt).toBeDefined(),
        WAIT,
      );
      expect(await bus.deadLetters.list({ consumer: failingName })).toEqual([]);
      expect(await bus.deadLetters.list({ consumer: failingName, includeReplayed: true })).toHaveLength(1);

      await bus.publish([e3]);
      await vi.waitFor(() => expect(other.handledIds()).toEqual([e1.eventId, e2.eventId, e3.eventId]), WAIT);
      await expect(bus.replayDeadLetter(letter!.id)).rejects.toBeInstanceOf(PreconditionError);
      await expect(bus.replayDeadLetter(uuidv7())).rejects.toBeInstanceOf(NotFoundError);
    });

    it('does not handle an event again when it is redelivered after being handled (inbox)', async () => {
      const tenant = unique('t');
      const [e1, e2] = [event(tenant, 'order-a', 1), event(tenant, 'order-a', 2)];
      const withInbox = await recordingConsumer(bus, { name: unique('inbox'), ...FAST });
      const without = await recordingConsumer(bus, { name: unique('none'), idempotency: 'none', ...FAST });
      await bus.publish([e1]);
      await vi.waitFor(() => expect(withInbox.handledIds()).toEqual([e1.eventId]), WAIT);
      await vi.waitFor(() => expect(without.handledIds()).toEqual([e1.eventId]), WAIT);
      // Past the duplicate window the bus takes the same event again, as after a long outbox outage.
      await sleep(SETTINGS.duplicateWindowMs * 2 + 100);
      await bus.publish([e1, e2]);
      await vi.waitFor(
        () => expect(without.handledIds()).toEqual([e1.eventId, e1.eventId, e2.eventId]),
        WAIT,
      );
      await vi.waitFor(() => expect(withInbox.handledIds()).toEqual([e1.eventId, e2.eventId]), WAIT);
      expect(withInbox.attemptsOf(e1.eventId)).toHaveLength(1);
    });

    it('shares the work between instances of one durable, never handling an event twice', async () => {
      const tenant = unique('t');
      const name = unique('shared');
      const events = Array.from({ length: 20 }, (_, i) =>
        event(tenant, `order-${i % 4}`, Math.floor(i / 4) + 1),
      );
      const slow = () => sleep(5);
      const one = await recordingConsumer(bus, { name, ...FAST }, slow);
      const two = await recordingConsumer(bus, { name, ...FAST }, slow);
      await bus.publish(events);
      await vi.waitFor(() => expect(one.handled().length + two.handled().length).toBe(20), WAIT);
      await sleep(200);
      const all = [...one.attempts, ...two.attempts].map((a) => a.eventId);
      expect(all.sort()).toEqual(events.map((e) => e.eventId).sort());
      expect(one.handled().length).toBeGreaterThan(0);
      expect(two.handled().length).toBeGreaterThan(0);
    });

    it('stop() waits for the handler in progress, which acks its event', async () => {
      const tenant = unique('t');
      const name = unique('stop');
      const [e1, e2] = [event(tenant, 'order-a', 1), event(tenant, 'order-a', 2)];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started = false;
      let finished = false;
      const first = await recordingConsumer(bus, { name, ...FAST }, async () => {
        started = true;
        await gate;
        finished = true;
      });
      await bus.publish([e1]);
      await vi.waitFor(() => expect(started).toBe(true), WAIT);
      let stopped = false;
      const stopping = first.consumer.stop().then(() => (stopped = true));
      await sleep(150);
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(finished).toBe(true);

      const second = await recordingConsumer(bus, { name, ...FAST });
      await bus.publish([e2]);
      await vi.waitFor(() => expect(second.handledIds()).toEqual([e2.eventId]), WAIT);
      expect(first.attempts).toHaveLength(1);
    });

    it('keeps a delivery whose handler outlives ackWait (the bus calls working())', async () => {
      const tenant = unique('t');
      const [e1, e2] = [event(tenant, 'order-a', 1), event(tenant, 'order-a', 2)];
      const options = { name: unique('slow'), ackWaitMs: 1_000, backoffMs: [100] };
      const behave = async (d: Delivery): Promise<void> => {
        if (d.event.eventId === e1.eventId) await sleep(1_700);
      };
      // A second, idle instance would take a redelivery at once.
      const [one, two] = [
        await recordingConsumer(bus, options, behave),
        await recordingConsumer(bus, options, behave),
      ];
      await bus.publish([e1, e2]);
      await vi.waitFor(
        () =>
          expect([...one.handledIds(), ...two.handledIds()].sort()).toEqual([e1.eventId, e2.eventId].sort()),
        WAIT,
      );
      await sleep(200);
      expect([...one.attempts, ...two.attempts].map((a) => a.deliveryCount)).toEqual([1, 1]);
    });

    it('rejects invalid events and consumer options, publishing nothing of a bad batch', async () => {
      const tenant = unique('t');
      const good = event(tenant, 'order-a', 1);
      const c = await recordingConsumer(bus, { name: unique('valid'), ...FAST });
      await expect(bus.publish([good, event('bad tenant!', 'order-a', 1)])).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(bus.publish([good, event(tenant, 'NoCategory', 1)])).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(bus.consume({ name: 'bad.name' }, async () => {})).rejects.toBeInstanceOf(ValidationError);
      await expect(bus.consume({ name: unique('c'), maxDeliver: 0 }, async () => {})).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(
        bus.consume({ name: unique('c'), filter: { category: 'Bad-Cat' } }, async () => {}),
      ).rejects.toBeInstanceOf(ValidationError);
      const sentinel = event(tenant, 'order-a', 2);
      await bus.publish([sentinel]);
      await vi.waitFor(() => expect(c.handledIds()).toEqual([sentinel.eventId]), WAIT);
    });
  });
};
