import type { CheckpointStore } from '@keel/core';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import { Inject, Injectable } from '@nestjs/common';

/** A key's last use is written at most this often per gateway process (API.md `lastUsedAt`). */
export const KEY_USE_RESOLUTION_MS = 60_000;

const nameOf = (keyId: string): string => `key-last-used:${keyId}`;

/**
 * When each tenant key last authenticated a request (`GET /v1/keys` → `lastUsedAt`), without an
 * event per request. Stored as one checkpoint per key (`key-last-used:<keyId>`, epoch ms): the
 * checkpoint store's `save` never moves a position backwards (`$max` on MongoDB), which is the
 * merge several gateways writing one key's last use need, in any order. Each process writes a
 * key's use at most once per `KEY_USE_RESOLUTION_MS`: the first use after that pause is written
 * before the request goes on, so `lastUsedAt` is never more than that behind, on any gateway.
 */
@Injectable()
export class KeyUsage {
  private readonly checkpoints: CheckpointStore;
  /** Per key: when this process last wrote its use. */
  private readonly written = new Map<string, number>();

  constructor(
    @Inject(KEEL_INFRA) infra: Pick<Infrastructure, 'checkpoints'>,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
    private readonly now: () => number = Date.now,
  ) {
    this.checkpoints = infra.checkpoints;
  }

  /** Notes that `keyId` authenticated a request now. Never fails the request: a lost write is logged. */
  async recordUse(keyId: string): Promise<void> {
    const now = this.now();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < KEY_USE_RESOLUTION_MS) return;
    this.written.set(keyId, now);
    try {
      await this.checkpoints.save(nameOf(keyId), now);
    } catch (error) {
      this.written.delete(keyId);
      this.logger.warn({ err: error, keyId }, 'recording a key use failed');
    }
  }

  /** When each of `keyIds` was last used (ISO 8601), or null for a key never used. */
  async lastUsed(keyIds: readonly string[]): Promise<Map<string, string | null>> {
    const times = await Promise.all(keyIds.map((keyId) => this.checkpoints.load(nameOf(keyId))));
    return new Map(keyIds.map((keyId, i) => [keyId, times[i] ? new Date(times[i]).toISOString() : null]));
  }
}
