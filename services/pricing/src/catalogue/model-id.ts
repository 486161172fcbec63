/** The providers Keel prices: the first half of every `provider:model` key. */
export const PRICED_PROVIDERS = ['openai', 'anthropic', 'google', 'ollama', 'demo'] as const;

/** One of the providers Keel prices. */
export type PricedProvider = (typeof PRICED_PROVIDERS)[number];

/** A model id split into the parts the catalogue is keyed by. */
export interface ModelKey {
  provider: PricedProvider;
  /** The model name, lower case, dots as dashes, with its variant (`:thinking`) when it has one. */
  model: string;
  /** `provider:model`. */
  key: string;
}

/** Prefixes gateways and SDKs put before a model name, and the provider each one means. */
const PROVIDER_PREFIXES: Readonly<Record<string, PricedProvider>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'google',
  gemini: 'google',
  vertex: 'google',
  vertex_ai: 'google',
  'google-vertex': 'google',
  models: 'google',
  ollama: 'ollama',
  demo: 'demo',
};

/** Prefixes that say where a model runs but not whose it is (the name that follows does). */
const HOST_PREFIXES = new Set(['bedrock', 'openrouter', 'litellm']);

/** Bedrock ids: `[region.]anthropic.<model>[-v<n>[:<m>]]`, e.g. `us.anthropic.claude-3-7-sonnet-20250219-v1:0`. */
const BEDROCK_ANTHROPIC = /^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\.(claude-[^:]+?)(?:-v\d+(?::\d+)?)?$/;

/** Model families whose name alone says the provider. */
const FAMILIES: ReadonlyArray<readonly [RegExp, PricedProvider]> = [
  [/^(?:gpt-|chatgpt-|o\d(?:[-:]|$))/, 'openai'],
  [/^claude-/, 'anthropic'],
  [/^gemini-/, 'google'],
  [/^keel-demo$/, 'demo'],
];

/**
 * Normalises a model id as providers, gateways and SDKs spell it to the catalogue's key:
 * lower case; provider prefixes (`openai:`, `openai/`, `models/`, `gemini/`, Bedrock's
 * `anthropic.` with its region and `-v1:0`) become the provider; a bare name gets its provider
 * from its family (`gpt-…`, `claude-…`, `gemini-…`); dots become dashes (`claude-3.5-sonnet` =
 * `claude-3-5-sonnet`). A variant suffix (`:thinking`) stays: it is a model of its own. Date and
 * version suffixes are NOT removed here (see `modelKeyCandidates`): a dated snapshot may have a
 * price of its own. Undefined when no provider can be told.
 */
export const normaliseModelId = (raw: string): ModelKey | undefined => {
  let rest = raw.trim().toLowerCase();
  let provider: PricedProvider | undefined;
  // Peel prefixes: `openrouter/anthropic/…`, `openai:anthropic/…` (an OpenAI-compatible gateway).
  for (let i = 0; i < 4; i++) {
    const prefix = /^([a-z0-9_-]+)[:/]/.exec(rest)?.[1];
    if (prefix === undefined) break;
    // Own entries only: `constructor:` or `tostring:` must not find Object.prototype's members.
    const named = Object.hasOwn(PROVIDER_PREFIXES, prefix) ? PROVIDER_PREFIXES[prefix] : undefined;
    if (named === undefined && !HOST_PREFIXES.has(prefix)) break;
    if (named === 'ollama' || named === 'demo') {
      // Ollama names carry tags after a colon (`llama3.1:8b`): the rest is the name as is.
      const model = rest.slice(prefix.length + 1);
      return model === '' ? undefined : { provider: named, model, key: `${named}:${model}` };
    }
    provider = named ?? provider;
    rest = rest.slice(prefix.length + 1);
  }
  const bedrock = BEDROCK_ANTHROPIC.exec(rest);
  if (bedrock?.[1] !== undefined) {
    provider = 'anthropic';
    rest = bedrock[1];
  }
  if (rest === '' || /\s/.test(rest)) return undefined;
  provider ??= FAMILIES.find(([family]) => family.test(rest))?.[1];
  if (provider === undefined) return undefined;
  const colon = rest.indexOf(':');
  const base = (colon < 0 ? rest : rest.slice(0, colon)).replace(/\./g, '-');
  const variant = colon < 0 ? '' : rest.slice(colon);
  if (base === '' || variant === ':') return undefined;
  const model = `${base}${variant}`;
  return { provider, model, key: `${provider}:${model}` };
};

/** Suffixes that name a snapshot of a model rather than another model, by provider. */
const SNAPSHOT_SUFFIXES: Readonly<Record<PricedProvider, readonly RegExp[]>> = {
  // gpt-4o-2024-08-06, gpt-4-0613 / gpt-3.5-turbo-0125 (MMDD), …-latest
  openai: [/-latest$/, /-\d{4}-\d{2}-\d{2}$/, /-(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])$/],
  // claude-3-5-sonnet-20241022, claude-3-5-sonnet-latest
  anthropic: [/-latest$/, /-\d{8}$/],
  // gemini-1.5-pro-002, gemini-1.5-flash-latest, gemini-2.5-pro-preview-05-06 → …-preview
  google: [/-latest$/, /-\d{3}$/, /(?<=-preview)-\d{2}-\d{2}$/],
  ollama: [],
  demo: [],
};

/**
 * The keys to look a model up by, most specific first: the normalised id, then the id with its
 * snapshot suffixes (dates, `-latest`, Gemini's `-002`) removed one at a time, then the
 * provider's wildcard (`ollama:*`). A variant suffix is never removed: `claude-3-7-sonnet:thinking`
 * is not priced as `claude-3-7-sonnet`. Empty when the id names no provider.
 */
export const modelKeyCandidates = (raw: string): string[] => {
  const id = normaliseModelId(raw);
  if (!id) return [];
  const colon = id.model.indexOf(':');
  const variant = colon < 0 || id.provider === 'ollama' ? '' : id.model.slice(colon);
  let base = variant === '' ? id.model : id.model.slice(0, colon);
  const candidates = [id.key];
  for (let changed = true; changed;) {
    changed = false;
    for (const suffix of SNAPSHOT_SUFFIXES[id.provider]) {
      const stripped = base.replace(suffix, '');
      if (stripped !== base && stripped !== '') {
        base = stripped;
        candidates.push(`${id.provider}:${base}${variant}`);
        changed = true;
      }
    }
  }
  candidates.push(`${id.provider}:*`);
  return [...new Set(candidates)];
};
