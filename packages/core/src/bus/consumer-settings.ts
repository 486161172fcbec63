import { ValidationError } from '../errors/index.js';
import { assertTenantId, streamName } from '../typing/index.js';
import type { ConsumerFilter, ConsumerOptions } from './event-bus.js';

/** Consumer options with every default applied and every value checked. */
export interface ConsumerSettings {
  name: string;
  filter: ConsumerFilter;
  maxDeliver: number;
  backoffMs: number[];
  ackWaitMs: number;
  idempotency: 'inbox' | 'none';
  deliverFrom: 'all' | 'new';
  maxInFlight: number;
}

const DURABLE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const positiveInt = (value: number, field: string, min: number, max: number): number => {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be an integer from ${min} to ${max}`, { field });
  }
  return value;
};

/** Validates a consumer filter: the tenant and category become subject tokens. */
export const checkFilter = (filter: ConsumerFilter = {}): ConsumerFilter => {
  if (filter.tenantId !== undefined) assertTenantId(filter.tenantId);
  if (filter.category !== undefined) streamName(filter.category, 'x');
  return { ...filter };
};

/** Applies the documented defaults of ConsumerOptions; throws ValidationError on a bad value. */
export const consumerSettings = (options: ConsumerOptions): ConsumerSettings => {
  if (!DURABLE_NAME.test(options.name)) {
    throw new ValidationError(`consumer name "${options.name}" must be 1-64 letters, digits, _ or -`, {
      field: 'name',
    });
  }
  const backoffMs = options.backoffMs ?? [200, 1000, 5000];
  if (backoffMs.length === 0 || backoffMs.some((ms) => !Number.isInteger(ms) || ms < 0)) {
    throw new ValidationError('backoffMs must be a non-empty list of non-negative integers', {
      field: 'backoffMs',
    });
  }
  const idempotency = options.idempotency ?? 'inbox';
  const deliverFrom = options.deliverFrom ?? 'all';
  if (idempotency !== 'inbox' && idempotency !== 'none') {
    throw new ValidationError('idempotency must be inbox or none', { field: 'idempotency' });
  }
  if (deliverFrom !== 'all' && deliverFrom !== 'new') {
    throw new ValidationError('deliverFrom must be all or new', { field: 'deliverFrom' });
  }
  return {
    name: options.name,
    filter: checkFilter(options.filter),
    maxDeliver: positiveInt(options.maxDeliver ?? 5, 'maxDeliver', 1, 1000),
    backoffMs: [...backoffMs],
    ackWaitMs: positiveInt(options.ackWaitMs ?? 30_000, 'ackWaitMs', 100, 24 * 3600_000),
    idempotency,
    deliverFrom,
    maxInFlight: positiveInt(options.maxInFlight ?? 1, 'maxInFlight', 1, 10_000),
  };
};

/** The delay before redelivering after the given (1-based) delivery failed; the last one repeats. */
export const backoffDelay = (backoffMs: readonly number[], deliveryCount: number): number =>
  backoffMs[Math.min(deliveryCount, backoffMs.length) - 1] ?? 0;
