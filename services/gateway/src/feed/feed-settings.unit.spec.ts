import { describe, expect, it } from 'vitest';
import { feedSettingsFromEnv } from './events-feed.service.js';

describe('the SSE feed settings', () => {
  it('take the schema defaults, the values given, and refuse a malformed one naming it', () => {
    expect(feedSettingsFromEnv({})).toEqual({
      heartbeatMs: 15_000,
      pollMs: 250,
      watchedPollMs: 5_000,
      maxBufferedBytes: 1_048_576,
    });
    expect(feedSettingsFromEnv({ KEEL_SSE_HEARTBEAT_MS: '5000', KEEL_SSE_POLL_MS: '50' })).toMatchObject({
      heartbeatMs: 5000,
      pollMs: 50,
    });
    // It used to fall back to the default in silence.
    expect(() => feedSettingsFromEnv({ KEEL_SSE_POLL_MS: '-5' })).toThrow(/KEEL_SSE_POLL_MS/);
  });
});
