import type { ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type { ComputeCostRequest } from '@keel/proto/keel/pricing/v1/pricing';
import { PricingServiceService } from '@keel/proto/keel/pricing/v1/pricing';
import { sleep } from '@keel/core';
import { DEFAULT_GRPC_PORTS, GrpcClient } from '@keel/runtime';
import type { PricedUsage, UsagePricing, UsageToPrice } from './usage-pricing.js';
import { uncachedInputTokens } from './usage-pricing.js';

/**
 * The pricing service's address: `PRICING_GRPC_URL`, else this host on `PRICING_GRPC_PORT` or the
 * pricing service's default port (what the one-process dev mode binds it to).
 */
export const pricingAddressFromEnv = (env: NodeJS.ProcessEnv = process.env): string =>
  env['PRICING_GRPC_URL']?.trim() ||
  `127.0.0.1:${env['PRICING_GRPC_PORT']?.trim() || DEFAULT_GRPC_PORTS.pricing}`;

/** Timing of the calls to the pricing service. */
export interface PricingCallOptions {
  /** Deadline of one attempt. Default 1.5 s. */
  deadlineMs?: number;
  /** Attempts in all (UNAVAILABLE and DEADLINE_EXCEEDED are retried). Default 2. */
  attempts?: number;
  /** After a missed deadline: the pause before the retry, doubled after each. Default 100 ms. */
  backoffMs?: number;
  /** After UNAVAILABLE: how long to wait for the channel to (re)connect before the retry. Default 1 s. */
  reconnectWaitMs?: number;
}

const RETRIED = new Set<number>([status.UNAVAILABLE, status.DEADLINE_EXCEEDED]);

/** After UNAVAILABLE, how long a call waits for the channel to reconnect before its retry. */
const RECONNECT_WAIT_MS = 1_000;

/**
 * While the service is down the channel tries to reconnect at least twice within a retry's wait
 * (grpc-js's default backoff grows to two minutes: a restarted pricing service would go unused
 * that long). The cap is half the wait because grpc-js adds up to 20% jitter to each backoff: a
 * cap equal to the wait (1 s, as it was) let the channel's next attempt fall after the wait ended,
 * so the first call after the service came back could still be recorded unpriced.
 */
const CHANNEL_OPTIONS = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': RECONNECT_WAIT_MS / 2,
};

/**
 * Prices usage with the pricing service's ComputeCost over gRPC, with a deadline per attempt and
 * a retry when the service is unreachable (after waiting up to a second for the channel to
 * reconnect: a restarted service is reached at once) or slow. Calls fail fast otherwise, so a
 * pricing service that is down costs a step about a second, not several deadlines. The answer's price carries the
 * model's context window. An unknown model, or a pricing service that stays unreachable, gives
 * `costUsd: null` and the reason; it never throws and never makes up a 0.
 */
export class GrpcUsagePricing implements UsagePricing {
  private readonly client: GrpcClient;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly reconnectWaitMs: number;

  constructor(address: string = pricingAddressFromEnv(), options: PricingCallOptions = {}) {
    this.client = new GrpcClient(address, {
      deadlineMs: options.deadlineMs ?? 1_500,
      channelOptions: CHANNEL_OPTIONS,
    });
    this.attempts = Math.max(1, options.attempts ?? 2);
    this.backoffMs = options.backoffMs ?? 100;
    this.reconnectWaitMs = options.reconnectWaitMs ?? RECONNECT_WAIT_MS;
  }

  async price(usage: UsageToPrice): Promise<PricedUsage> {
    const request: ComputeCostRequest = {
      model: usage.model,
      inputTokens: uncachedInputTokens(usage),
      outputTokens: usage.completionTokens,
      cacheReadTokens: usage.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens,
      at: usage.at,
    };
    let lastError: ServiceError | undefined;
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      if (lastError?.code === status.UNAVAILABLE) await this.client.waitForReady(this.reconnectWaitMs);
      else if (lastError) await sleep(this.backoffMs * 2 ** (attempt - 2));
      try {
        const response = await this.client.unary(PricingServiceService.computeCost, request);
        const window = response.price?.contextWindowTokens;
        const windowTokens = window !== undefined && window > 0 ? window : null;
        if (typeof response.costUsd === 'number') return { costUsd: response.costUsd, windowTokens };
        return { costUsd: null, reason: response.reason || 'the pricing service gave no cost', windowTokens };
      } catch (error) {
        lastError = error as ServiceError;
        if (!RETRIED.has(lastError.code)) break;
      }
    }
    const code = lastError ? (status[lastError.code] ?? String(lastError.code)) : 'UNKNOWN';
    return {
      costUsd: null,
      reason: `pricing unavailable (${code}: ${lastError?.details ?? 'no answer'})`,
      windowTokens: null,
    };
  }

  /** Closes the channel. */
  close(): void {
    this.client.close();
  }
}
