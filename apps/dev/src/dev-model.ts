/** The model the dev mode's demo agent runs, and why. */
export interface DevModel {
  /** `provider:model`. */
  model: string;
  /** Shown in the banner: where the choice came from. */
  reason: string;
}

/** The demo model: deterministic, no API key, calls `current_time` and `calculator`. */
export const DEMO_MODEL = 'demo:keel-demo';

/** Each provider's key variable and the small model the demo agent uses with it, in order of preference. */
const PROVIDER_MODELS: ReadonlyArray<{ variable: string; model: string }> = [
  { variable: 'OPENAI_API_KEY', model: 'openai:gpt-4o-mini' },
  { variable: 'ANTHROPIC_API_KEY', model: 'anthropic:claude-3-5-haiku-latest' },
  { variable: 'GOOGLE_API_KEY', model: 'google:gemini-1.5-flash' },
];

/**
 * The dev agent's model: `KEEL_DEV_MODEL` when set, else the first provider whose API key is in
 * the environment, else the demo model.
 */
export const devModelFrom = (env: Readonly<Record<string, string | undefined>>): DevModel => {
  const pinned = env.KEEL_DEV_MODEL?.trim();
  if (pinned) return { model: pinned, reason: 'KEEL_DEV_MODEL' };
  for (const { variable, model } of PROVIDER_MODELS) {
    if (env[variable]?.trim()) return { model, reason: `${variable} is set` };
  }
  return { model: DEMO_MODEL, reason: 'no provider API key set: the built-in demo model' };
};
